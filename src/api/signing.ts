/**
 * What the firmware-facing routes and the pointer configs need to build signed URLs
 * (DESIGN §5, issue 4): the URL-signing key, the lifetime, and the base URL machines
 * reach the service at.
 */
import type { FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import { decodeConfiguredKey, loadOrCreateKey, machineIncarnation, reportUrl } from '../boot/sign.js';
import type { Config } from '../config.js';
import { RequestError } from '../errors.js';
import type { MachineSpec, StoredResource } from '../store/resources.js';

/** Signed-URL settings of one service instance. */
export interface UrlSigning {
  /** The key: the configured one, else `<dataDir>/url-signing-key` (read or created on first use). */
  key(): Buffer;
  /** Lifetime of a signed URL, seconds. */
  lifetimeSeconds: number;
  /**
   * The base URL for URLs handed to a machine: `publicUrl` when configured, else the
   * request's scheme and Host header (inside qemu's user network the host is 10.0.2.2,
   * and that is what the Host header carries).
   *
   * @throws RequestError (400) when the Host header does not make an absolute URL
   */
  baseUrl(request: FastifyRequest): string;
}

/** One DNS label (RFC 1123 §2.1): letters, digits and inner hyphens, 1 to 63 characters. */
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
/** `host[:port]`: a DNS name, an IPv4 address or a bracketed IPv6 address (RFC 9110 §7.2, RFC 3986 §3.2.2), and a port. */
const HOST_HEADER = new RegExp(`^(?:${LABEL}(?:\\.${LABEL})*\\.?|\\[[0-9A-Fa-f:.]+\\])(?::(\\d{1,5}))?$`);

/**
 * Whether a Host header can go into the URLs bootwright hands out (iPXE scripts, kernel
 * command lines, NoCloud seeds, Ignition pointers): a DNS name of at most 253 characters,
 * an IPv4 address or a bracketed IPv6 address that parses, and a port up to 65535.
 * Anything else (`a;b`, white space, quotes, `_`) would change what those carry.
 */
export function isHostHeader(host: string): boolean {
  const m = HOST_HEADER.exec(host);
  if (!m || (m[1] !== undefined && Number(m[1]) > 65535)) return false;
  const name = host.replace(/:\d+$/, '');
  if (!name.startsWith('[')) return name.length <= 253;
  try {
    new URL(`http://${name}`); // an IPv6 address WHATWG's parser takes
    return true;
  } catch {
    return false;
  }
}

/**
 * The signing settings for a configuration. A configured key is decoded at once (a bad
 * one fails the start); the key file is read or written on first use only, so building
 * the server for tools (OpenAPI generation) touches no data directory.
 *
 * @throws ConfigError for an unusable `urlSigningKey`
 */
export function urlSigning(config: Config): UrlSigning {
  let key: Buffer | undefined = config.urlSigningKey !== undefined && config.urlSigningKey.trim() !== '' ? decodeConfiguredKey(config.urlSigningKey) : undefined;
  return {
    key: () => (key ??= loadOrCreateKey(config.dataDir).key),
    lifetimeSeconds: config.signedUrlSeconds,
    baseUrl(request) {
      if (config.publicUrl !== undefined) return config.publicUrl;
      if (!isHostHeader(request.host)) throw new RequestError([{ path: 'headers.host', message: 'the Host header does not name a host; set publicUrl (BOOTWRIGHT_PUBLIC_URL)' }], 400);
      return `${request.protocol}://${request.host}`;
    },
  };
}

/**
 * Report URLs expire on this grid, seconds: the fetch URL's expiry rounded up to it, so
 * every fetch URL of a machine signed within one grid step carries the same report URL
 * and the data can be rendered before the machine boots (src/api/prerender.ts).
 */
export const REPORT_EXPIRY_GRID_SECONDS = 3600;

/**
 * The boot report URL carried in data fetched with a signed URL expiring at `exp`
 * (decimal unix seconds): it works until `exp` rounded up to
 * {@link REPORT_EXPIRY_GRID_SECONDS}, plus `reportUrlSeconds`. It is the same for every
 * fetch of that URL, so the bytes, their ETag and a pointer's hash are too. It is bound
 * to the incarnation of the stored machine the data is rendered from (sign.ts
 * `machineIncarnation`), so it reports for that incarnation only.
 *
 * @throws TypeError for a bad base URL or machine id (sign.ts `reportUrl`)
 */
export function reportUrlFor(
  ctx: { signing: UrlSigning; config: Pick<Config, 'reportUrlSeconds'> },
  base: string,
  machine: StoredResource<MachineSpec>,
  exp: string,
): string {
  const expiresAt = Math.ceil(Number(exp) / REPORT_EXPIRY_GRID_SECONDS) * REPORT_EXPIRY_GRID_SECONDS + ctx.config.reportUrlSeconds;
  const key = ctx.signing.key();
  let made = reportUrls.get(key);
  if (!made) reportUrls.set(key, (made = new LRUCache({ max: REPORT_URLS_KEPT })));
  // Everything the URL is made of (its incarnation from createdAt and the cluster).
  const of = `${base}\n${machine.name}\n${machine.createdAt}\n${machine.spec.cluster}\n${expiresAt}`;
  let url = made.get(of);
  if (url === undefined) made.set(of, (url = reportUrl(base, machine.name, key, expiresAt, machineIncarnation(machine))));
  return url;
}

/**
 * Report URLs made, per signing key: a machine's is the same for every fetch within a
 * grid step, so a fetch after the first signs nothing (an HMAC and a SHA-256 less on the
 * `/ignition` path, issue 32). Bounded: one per machine of a boot storm.
 */
const reportUrls = new WeakMap<Buffer, LRUCache<string, string>>();

/** Report URLs kept per signing key. */
const REPORT_URLS_KEPT = 10_000;
