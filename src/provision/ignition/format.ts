/** The Ignition payload format (DESIGN §4): one media type, the spec in its `version=` parameter. */
import type { PayloadFormat } from '../format.js';

/** The media type of Ignition configs (Ignition's own `Accept` names it). */
export const IGNITION_MEDIA_TYPE = 'application/vnd.coreos.ignition+json';

/**
 * Ignition: `application/vnd.coreos.ignition+json; version=X` (Ignition sends the highest
 * spec it reads in `version=`); written by the 3.x and the 2.3 provisioners. Ignition
 * reads no compressed user data, so a config over a platform's limit cannot be fitted.
 */
export const IGNITION_FORMAT: PayloadFormat<'ignition'> = {
  name: 'ignition',
  title: 'Ignition',
  mediaType: IGNITION_MEDIA_TYPE,
  body: 'json',
  description: 'an Ignition config (spec in the media type version parameter)',
  versions: { noun: 'Ignition spec', served: '2.3.0 and 3.0.0 to 3.6.0', reader: 'Ignition' },
  userData: { noun: 'Ignition config', reader: 'Ignition', gzip: false },
};
