/**
 * Pointer configs for platforms whose user data is too small for a full bootstrap config
 * (EC2 allows 16 KiB; issue 4, "Small user data"): a tiny document that makes the node
 * fetch the full one from a signed URL (sign.ts `signedUrl`).
 */
import type { IgnitionOutputVersion } from '../render.js';
import { LEGACY_IGNITION_SPEC } from '../provision/ignition/v2/version.js';
import { IGNITION_SPEC_VERSIONS } from '../provision/ignition/versions.js';

/** The specs a pointer can be written in: `ignition.config.replace` has the same shape in 2.3.0 and every 3.x. */
const POINTER_VERSIONS: readonly string[] = [LEGACY_IGNITION_SPEC, ...IGNITION_SPEC_VERSIONS];

/** A pointer config as served: the same shape as the Ignition renderer's output. */
export interface IgnitionPointer {
  version: IgnitionOutputVersion;
  config: Record<string, unknown>;
  /** `JSON.stringify(config)` plus a newline: the bytes to put in user data. */
  body: string;
}

function checkUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError('pointer URL is not an absolute URL');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new TypeError(`pointer URL must be http or https, not ${parsed.protocol}`);
  if (/[\s\x00-\x1f\x7f]/.test(url)) throw new TypeError('pointer URL must not contain white space or control characters');
}

/**
 * An Ignition config that replaces itself with the config at `url`, verified by hash:
 * `{"ignition": {"version": V, "config": {"replace": {"source": url, "verification":
 * {"hash": "sha512-<hex>"}}}}}` (Ignition spec 3.x and 2.3.0, `ignition.config.replace`; Ignition
 * fetches the source, checks the SHA-512 of the bytes it received against the hash and
 * refuses the config on a mismatch, then uses it instead of this one).
 *
 * With `ca` (issue 16), the pointer also pins the CA of the service's HTTPS certificate:
 * `ignition.security.tls.certificateAuthorities: [{"source": "data:;base64,<PEM>"}]`
 * (spec 3.x and 2.3.0 alike). Ignition adds those CAs to the system pool for every HTTPS
 * fetch it makes, the `replace` source included, so a node whose image does not trust a
 * private CA still fetches its full config over verified TLS. An inline data URL needs
 * no fetch of its own, so it cannot be swapped on the way.
 *
 * @param url the signed full-config URL (absolute http or https)
 * @param sha512Hex SHA-512 of the exact bytes that URL serves (the full config's `body`),
 *   128 hex digits, any case
 * @param version the Ignition spec version to write, one of 3.0.0–3.6.0 or 2.3.0
 * @param ca PEM of the CA to trust for the fetch, if any
 * @returns the config, its version and its serialised `body`
 * @throws TypeError for a version outside 3.0.0–3.6.0 and 2.3.0, a hash that is not 128 hex digits,
 *   a URL that is not absolute http(s), or a `ca` that is not a PEM certificate
 */
export function ignitionPointer(url: string, sha512Hex: string, version: string, ca?: string): IgnitionPointer {
  if (!POINTER_VERSIONS.includes(version)) {
    throw new TypeError(`Ignition spec version ${JSON.stringify(version)} is not one of ${POINTER_VERSIONS.join(', ')}`);
  }
  if (!/^[0-9a-fA-F]{128}$/.test(sha512Hex)) throw new TypeError('sha512Hex must be 128 hex digits');
  checkUrl(url);
  if (ca !== undefined && !/^-----BEGIN CERTIFICATE-----\r?\n/.test(ca.trimStart())) throw new TypeError('ca must be a PEM certificate');
  const config = {
    ignition: {
      version,
      config: { replace: { source: url, verification: { hash: `sha512-${sha512Hex.toLowerCase()}` } } },
      ...(ca !== undefined ? { security: { tls: { certificateAuthorities: [{ source: `data:;base64,${Buffer.from(ca, 'utf8').toString('base64')}` }] } } } : {}),
    },
  };
  return { version: version as IgnitionOutputVersion, config, body: `${JSON.stringify(config)}\n` };
}

/** Options for {@link cloudConfigInclude}. */
export interface IncludeOptions {
  /**
   * `#include-once` (default true) rather than `#include`. cloud-init fetches an
   * `#include` URL every time it processes user data, and (since 20.3,
   * `ERROR_ON_USER_DATA_FAILURE`) a failed fetch is an error; a signed URL that has
   * expired or used up `maxFetches` would then fail later boots. `#include-once` fetches
   * once and afterwards reads the copy cloud-init keeps under the instance's data
   * directory (`urlcache/`, mode 0600): cloud-init `user_data.py` `_do_include`.
   */
  once?: boolean;
}

/**
 * A cloud-init include file pointing at the full user data: `#include-once\n<url>\n`
 * (or `#include\n<url>\n`). cloud-init recognises the document by its first line
 * (`#include` → `text/x-include-url`, `#include-once` → `text/x-include-once-url`),
 * fetches each URL line and processes what it gets (here a `#cloud-config`) as if it had
 * been the user data.
 *
 * @param url the signed full user-data URL (absolute http or https)
 * @param options `once` (default true)
 * @returns the document text
 * @throws TypeError when `url` is not an absolute http(s) URL or contains white space
 */
export function cloudConfigInclude(url: string, options: IncludeOptions = {}): string {
  checkUrl(url);
  return `${options.once === false ? '#include' : '#include-once'}\n${url}\n`;
}
