/** The cloud-config payload format: cloud-init user data (and cloudbase-init's). */
import type { PayloadFormat } from '../format.js';

/** The media type of a cloud-config document (cloud-init user data). */
export const CLOUD_CONFIG_MEDIA_TYPE = 'text/cloud-config';

/**
 * cloud-config: `text/cloud-config`, sent as UTF-8 text; unversioned; over a platform's
 * user data limit it may be delivered gzip-compressed whole, which cloud-init recognises
 * by the gzip magic bytes (cloud-init `user_data` handling, "compressed content").
 */
export const CLOUD_CONFIG_FORMAT: PayloadFormat<'cloud-config'> = {
  name: 'cloud-config',
  title: 'cloud-config',
  mediaType: CLOUD_CONFIG_MEDIA_TYPE,
  body: 'text',
  description: 'a #cloud-config document',
  userData: { noun: 'cloud-config', reader: 'cloud-init', gzip: true },
};
