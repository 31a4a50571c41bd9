/**
 * Platform user data budgets: cloud platforms cap the user data a VM is given, and a
 * kubeadm bootstrap with its PKI easily passes the smallest caps. With a platform named
 * (`?platform=`, `--platform` or `spec.output.platform`), a cloud-config over the limit
 * is delivered gzip-compressed whole, which cloud-init recognises by the gzip magic
 * bytes (cloud-init `user_data` handling, "compressed content"); a document still over
 * the limit, or an Ignition config over it, is refused with the way out: a pointer
 * config, which is a few hundred bytes whatever the data.
 */
import { RequestError } from './errors.js';
import type { UserDataRule } from './provision/format.js';
import { formatNamed } from './provision/formats.js';
import { gzipDeterministic } from './provision/ignition/dataurl.js';
import type { OutputFormat, Platform } from './request/schema.js';

/**
 * User data limits in bytes of the raw data (what the node receives):
 * - EC2: 16 KiB raw, before the API's base64 (`RunInstances` UserData);
 * - Azure: customData is at most 65,535 bytes;
 * - GCE: a metadata value is at most 256 KiB;
 * - OpenStack Nova: `user_data` is at most 65,535 bytes *of base64*, so 49,149 raw;
 * - vSphere: 64 KiB in `guestinfo.userdata`.
 */
export const USER_DATA_LIMITS: Readonly<Record<Platform, { bytes: number; name: string }>> = {
  aws: { bytes: 16 * 1024, name: 'Amazon EC2' },
  azure: { bytes: 65535, name: 'Azure customData' },
  gcp: { bytes: 256 * 1024, name: 'Google Compute Engine' },
  openstack: { bytes: Math.floor(65535 / 4) * 3, name: 'OpenStack Nova, 65535 bytes of base64' },
  vsphere: { bytes: 64 * 1024, name: 'vSphere guestinfo' },
};

/** What fitting a payload into a platform's budget gives. */
export interface Fitted {
  /** The payload gzip-compressed whole, when that is what the node must be given. */
  gzip?: Uint8Array;
  warnings: string[];
}

const POINTER_HINT =
  'give the machine a pointer config instead (GET /v1/machines/{name}/bootstrap?pointer=true: a few hundred bytes that fetch the data from bootwright)';

/**
 * A payload over a platform's user data limit that cannot be made to fit (a 422 at the
 * field that named the platform). Its own class so that the routes serving a pointer
 * config's target, which is fetched over HTTP and is not user data, can tell it apart.
 */
export class UserDataLimitError extends RequestError {
  constructor(field: string, message: string) {
    super([{ path: field, message }]);
    this.name = 'UserDataLimitError';
  }
}

/**
 * Fit a rendered payload into `platform`'s user data limit.
 *
 * @param kind the payload's format (its default rule) or the provisioner's own
 *   {@link UserDataRule}: whether its reader takes user data gzip-compressed whole
 * @param body the payload (UTF-8 text)
 * @param platform the platform whose limit applies
 * @param field the request field or flag that named the platform, for the error
 * @returns nothing to change when the payload fits; for a compressible payload (a
 *   cloud-config) over the limit whose deterministic gzip (RFC 1952, mtime 0) fits, that
 *   gzip and a warning
 * @throws UserDataLimitError (422) at `field` when the payload cannot be made to fit: one
 *   whose reader takes no compressed user data (an Ignition config) over the limit, or a
 *   compressible one over it even compressed; the message suggests the pointer config
 */
export function fitUserData(kind: OutputFormat | UserDataRule, body: string, platform: Platform, field: string): Fitted {
  const rule = typeof kind === 'string' ? formatNamed(kind).userData : kind;
  const { bytes: limit, name } = USER_DATA_LIMITS[platform];
  const size = Buffer.byteLength(body, 'utf8');
  if (size <= limit) return { warnings: [] };
  const over = `over the ${limit}-byte user data limit of ${platform} (${name})`;
  if (!rule.gzip) {
    throw new UserDataLimitError(field, `the ${rule.noun} is ${size} bytes, ${over}, and ${rule.reader} reads no compressed user data: ${POINTER_HINT}`);
  }
  const gzip = gzipDeterministic(Buffer.from(body, 'utf8'));
  if (gzip.length > limit) {
    throw new UserDataLimitError(field, `the ${rule.noun} is ${size} bytes (${gzip.length} gzip-compressed), ${over} even compressed: ${POINTER_HINT}`);
  }
  return {
    gzip,
    warnings: [`the ${rule.noun} is ${size} bytes, ${over}: delivered gzip-compressed whole (${gzip.length} bytes), which ${rule.reader} recognises by its magic bytes`],
  };
}
