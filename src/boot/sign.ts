/**
 * Signed URLs for the secret-bearing firmware routes (DESIGN §5, issue 4: "HMAC-SHA256
 * over machine id, path and expiry, key from config or generated into the data
 * directory, default lifetime 1 hour"). A booting machine has no credentials of its
 * own; the iPXE script it fetched carries URLs that only work for that machine, for
 * that route, until they expire.
 *
 * Two URL shapes, because the two fetchers treat URLs differently:
 *
 * - **Ignition** fetches `ignition.config.url` exactly as given, query included:
 *   `<base>/ignition?machine=ID&exp=EXP&sig=SIG`, signed over path `/ignition`.
 * - **cloud-init NoCloud** (`ds=nocloud;s=SEED`) builds each file's URL by appending the
 *   file name to the seed: `util.read_seeded` in canonical/cloud-init does
 *   `"%s%s%s" % (base, "user-data", ext)` for `meta-data`, `user-data`, `vendor-data`
 *   (and `network-config` in 24.x releases). A query string does not survive that
 *   (`?exp=1&sig=Xuser-data`; from 23.1 cloud-init only stops adding its own `/` when
 *   there is one). A `%s` placeholder where the name goes would work, but releases
 *   before 23.1 apply Python %-formatting to the whole seed (any other `%`, such as a
 *   percent-encoded byte, breaks it). Plain path segments need neither, so the expiry
 *   and signature go in the path, before the file name: `<base>/nocloud/ID/EXP/SIG/`,
 *   signed over the directory prefix `/nocloud/ID/`.
 *   One signature covers all four files; the route parses `/nocloud/:id/:exp/:sig/:file`
 *   and verifies `(id, nocloudPrefix(id), exp, sig)`.
 *
 * The signed message is `machine + "\n" + path + "\n" + exp` (UTF-8), so a signature
 * for one machine, route or expiry verifies for no other: machine ids are DNS-1123
 * labels and paths start with `/`, neither contains a newline, and `exp` is decimal.
 *
 * URLs are also bound to the machine's **incarnation** ({@link machineIncarnation}), so
 * a URL handed to one incarnation of a machine serves nothing to the next: after a
 * delete and re-create, or a move to another cluster, it is refused. The incarnation
 * travels in the URL (`inc=` in a query; `<exp>.<inc>` in the NoCloud expiry segment),
 * is signed, and the route compares it with the stored machine's. URLs without one were
 * issued by releases up to 0.2.0 and verify as they did until they expire.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../config.js';

/** Default lifetime of a signed URL, seconds (issue 4: one hour). */
export const DEFAULT_LIFETIME_SECONDS = 3600;

/** The file under the data directory holding the generated key. */
export const KEY_FILE = 'url-signing-key';

/** Key length generated and the minimum accepted from config, bytes (the HMAC-SHA256 output size). */
export const KEY_BYTES = 32;

/** The Ignition route's path (signed as is; machine, exp and sig go in the query). */
export const IGNITION_PATH = '/ignition';

/** The boot report route's path (signed as is; machine, exp and sig go in the query). */
export const REPORT_PATH = '/report';

/** The files cloud-init's NoCloud datasource fetches from a seed URL. */
export const NOCLOUD_FILES = ['meta-data', 'user-data', 'vendor-data', 'network-config'] as const;
export type NocloudFile = (typeof NOCLOUD_FILES)[number];

/**
 * The NoCloud seed prefix of a machine, `/nocloud/<machine>/`: the path that is signed,
 * and the part of the seed URL before `<exp>/<sig>/`.
 */
export function nocloudPrefix(machine: string): string {
  return `/nocloud/${machine}/`;
}

/** Query values (or path segments) that make a URL signed. */
export interface Signature {
  /** Expiry, unix seconds, as decimal text. */
  exp: string;
  /** HMAC-SHA256, base64url without padding (43 characters). */
  sig: string;
}

/**
 * The result of {@link verifySignature}: `elsewhere` is a genuine, unexpired URL bound to
 * another client address than the one presenting it.
 */
export type Verdict = 'ok' | 'expired' | 'invalid' | 'elsewhere';

/**
 * The client address a signed URL is bound to (issue 16, `bindClientAddress`): the
 * address that fetched `/ipxe`, as the service saw it (`request.ip`). Carried in the URL
 * (`client=` in the Ignition query; `<exp>~<client>` in the NoCloud path, since
 * cloud-init appends file names to the seed) and covered by the signature, whose
 * message gains a fourth line: `machine\npath\nexp\nclient`.
 */
const CLIENT = /^[0-9A-Fa-f.:]{2,45}$/;

/** Length of a machine incarnation, hex digits (64 bits). */
export const INCARNATION_HEX = 16;
const INCARNATION = /^[0-9a-f]{16}$/;

/**
 * A stored machine's incarnation: hex of the first 8 bytes of SHA-256 over
 * `createdAt + "\n" + spec.cluster`. `createdAt` is set by the store when the machine is
 * created and kept by every replace, so the incarnation changes on a delete and
 * re-create, and on a move to another cluster, and on nothing else: an edit of labels,
 * selectors or the profile keeps in-flight URLs working (the data they fetch is rendered
 * from the current revision anyway).
 *
 * @param machine the stored machine (its `createdAt`, ISO 8601, and `spec.cluster`)
 * @returns 16 lowercase hex digits
 */
export function machineIncarnation(machine: { createdAt: string; spec: { cluster: string } }): string {
  return createHash('sha256').update(`${machine.createdAt}\n${machine.spec.cluster}`, 'utf8').digest('hex').slice(0, INCARNATION_HEX);
}

/** Whether `text` has the shape of an incarnation ({@link machineIncarnation}). */
export function isIncarnation(text: string): boolean {
  return INCARNATION.test(text);
}

function checkMessageParts(machine: string, path: string): void {
  if (machine === '' || /[\n\r]/.test(machine)) throw new TypeError('machine must be a non-empty id without line breaks');
  if (!path.startsWith('/') || /[\n\r]/.test(path)) throw new TypeError('path must start with "/" and have no line breaks');
}

/**
 * The HMAC of a URL. Without an incarnation the message is the one releases up to 0.2.0
 * signed (`machine\npath\nexp`, `\nclient` appended when bound: three or four lines);
 * with one it is always five lines, `machine\npath\nexp\nclient\ninc` (client empty when
 * unbound), so no message of one shape equals one of the other.
 */
function mac(key: Buffer, machine: string, path: string, exp: string, client?: string, incarnation?: string): string {
  const message =
    incarnation === undefined ? `${machine}\n${path}\n${exp}${client === undefined ? '' : `\n${client}`}` : `${machine}\n${path}\n${exp}\n${client ?? ''}\n${incarnation}`;
  return createHmac('sha256', key).update(message, 'utf8').digest('base64url');
}

/** Whether `client` is an address a URL can be bound to (IPv4 or IPv6 text, no zone). */
export function bindableClient(client: string): boolean {
  return CLIENT.test(client);
}

/**
 * Sign `(machine, path, expiresAt)`.
 *
 * @param key the URL-signing key ({@link loadOrCreateKey})
 * @param machine the machine id the URL is for
 * @param path the route path signed: {@link IGNITION_PATH}, or a {@link nocloudPrefix}
 * @param expiresAt expiry, unix seconds (an integer ≥ 0); the URL is refused from this second on
 * @param client the client address to bind the URL to, if any ({@link bindableClient})
 * @param incarnation the machine's incarnation to bind the URL to ({@link machineIncarnation});
 *   every URL the service hands out has one, only releases up to 0.2.0 signed without
 * @returns `{exp, sig}`: `exp` the decimal expiry, `sig` base64url (RFC 4648 §5, no
 *   padding) of HMAC-SHA256 (RFC 2104) over `machine\npath\nexp\nclient\ninc` (without
 *   an incarnation: `machine\npath\nexp`, `\nclient` appended when bound)
 * @throws TypeError when `machine` is empty, `path` does not start with `/`, either
 *   holds a line break, `expiresAt` is not a non-negative safe integer, `client` is
 *   not an IP address, or `incarnation` is not 16 lowercase hex digits
 */
export function signPath(key: Buffer, machine: string, path: string, expiresAt: number, client?: string, incarnation?: string): Signature {
  checkMessageParts(machine, path);
  if (!Number.isSafeInteger(expiresAt) || expiresAt < 0) throw new TypeError('expiresAt must be a non-negative integer (unix seconds)');
  if (client !== undefined && !bindableClient(client)) throw new TypeError('client must be an IP address');
  if (incarnation !== undefined && !isIncarnation(incarnation)) throw new TypeError('incarnation must be 16 lowercase hex digits');
  const exp = String(expiresAt);
  return { exp, sig: mac(key, machine, path, exp, client, incarnation) };
}

/**
 * Check a signature presented with a request.
 *
 * The signature is checked first, in constant time (`crypto.timingSafeEqual` over the
 * base64url text; only its canonical 43-character spelling is accepted), and only then
 * the expiry, so `expired` is reported for genuine URLs only.
 *
 * @param key the URL-signing key
 * @param machine the machine id the request is for (from the path or the `machine` query parameter)
 * @param path the route path as signed (see {@link signPath})
 * @param exp the `exp` value as received (decimal unix seconds; anything else is `invalid`)
 * @param sig the `sig` value as received
 * @param now the current time, unix seconds
 * @param bound for a bound URL: `client`, the address the URL names (what was signed),
 *   and `from`, the address presenting it
 * @param incarnation the incarnation the URL names, if it names one (what was signed); the
 *   caller compares it with the stored machine's ({@link machineIncarnation})
 * @returns `ok`; `expired` when the signature is genuine but `now >= exp`; `elsewhere`
 *   when it is genuine and unexpired but `from` is not the bound `client`; `invalid` for
 *   a malformed `exp`, `sig`, client or incarnation, or a signature made for another
 *   machine, path, expiry, client address, incarnation or key. Never throws.
 */
export function verifySignature(
  key: Buffer,
  machine: string,
  path: string,
  exp: string,
  sig: string,
  now: number,
  bound?: { client: string; from: string },
  incarnation?: string,
): Verdict {
  if (!/^(0|[1-9][0-9]{0,14})$/.test(exp) || !/^[A-Za-z0-9_-]{43}$/.test(sig)) return 'invalid';
  if (machine === '' || /[\n\r]/.test(machine) || !path.startsWith('/') || /[\n\r]/.test(path)) return 'invalid';
  if (bound !== undefined && !bindableClient(bound.client)) return 'invalid';
  if (incarnation !== undefined && !isIncarnation(incarnation)) return 'invalid';
  const expected = Buffer.from(mac(key, machine, path, exp, bound?.client, incarnation), 'ascii');
  const given = Buffer.from(sig, 'ascii');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
  if (now >= Number(exp)) return 'expired';
  return bound !== undefined && bound.from !== bound.client ? 'elsewhere' : 'ok';
}

/**
 * Join the service's base URL and a route path: the base's own path is kept as a prefix
 * (`http://h/bw` + `/ignition` → `http://h/bw/ignition`); query and fragment of the base
 * are dropped.
 *
 * @throws TypeError when `baseUrl` is not an absolute http(s) URL
 */
export function routeUrl(baseUrl: string, path: string): URL {
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch {
    throw new TypeError('base URL is not an absolute URL');
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new TypeError(`base URL must be http or https, not ${base.protocol}`);
  if (base.username !== '' || base.password !== '') throw new TypeError('base URL must not carry credentials');
  const url = new URL(base.origin);
  url.pathname = `${base.pathname.replace(/\/+$/, '')}${path}`;
  return url;
}

/**
 * Build the absolute signed URL of a secret-bearing route for one machine.
 *
 * - A path ending in `/` is a directory prefix whose files the client appends (NoCloud,
 *   {@link nocloudPrefix}): `exp` and `sig` become two more path segments,
 *   `<base><path><exp>/<sig>/` (the expiry segment `<exp>.<inc>` with an incarnation,
 *   `~<client>` appended when bound), and the machine id must already be in the path.
 * - Any other path (Ignition, {@link IGNITION_PATH}) gets the query
 *   `?machine=<machine>&inc=<inc>&exp=<exp>&sig=<sig>` (`client=` before `sig` when bound).
 *
 * Either way the signature is over `(machine, path, now + lifetime)` ({@link signPath}),
 * and every character of the result is URI-safe (RFC 3986 §2: the id is a DNS-1123
 * label, `exp` decimal, `sig` base64url), so it survives iPXE scripts and kernel
 * command lines unquoted.
 *
 * @param baseUrl the service's external base URL, as machines reach it (`http://10.0.0.1:8080`)
 * @param path the route path to sign
 * @param machine the machine id
 * @param key the URL-signing key
 * @param lifetimeSeconds how long the URL works, seconds from `now` (default one hour)
 * @param now the current time, unix seconds (default the system clock)
 * @param client bind the URL to this client address (issue 16): `client=` joins the
 *   query, or the expiry segment of a prefix gains `~<client>`
 * @param incarnation bind the URL to this incarnation of the machine ({@link machineIncarnation})
 * @returns the URL as a string
 * @throws TypeError for a bad base URL, path, machine id, lifetime, client, incarnation,
 *   or a prefix path that does not contain `/<machine>/`
 */
export function signedUrl(
  baseUrl: string,
  path: string,
  machine: string,
  key: Buffer,
  lifetimeSeconds: number = DEFAULT_LIFETIME_SECONDS,
  now: number = Date.now() / 1000,
  client?: string,
  incarnation?: string,
): string {
  if (!Number.isSafeInteger(lifetimeSeconds) || lifetimeSeconds < 1) throw new TypeError('lifetimeSeconds must be a positive integer');
  if (!Number.isFinite(now) || now < 0) throw new TypeError('now must be unix seconds');
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(machine)) throw new TypeError(`machine id ${JSON.stringify(machine)} is not a DNS-1123 label`);
  const { exp, sig } = signPath(key, machine, path, Math.floor(now) + lifetimeSeconds, client, incarnation);
  if (path.endsWith('/')) {
    if (!path.includes(`/${machine}/`)) throw new TypeError(`prefix path ${JSON.stringify(path)} does not name machine ${machine}`);
    return routeUrl(baseUrl, `${path}${exp}${incarnation === undefined ? '' : `.${incarnation}`}${client === undefined ? '' : `~${client}`}/${sig}/`).href;
  }
  const url = routeUrl(baseUrl, path);
  url.search = new URLSearchParams({ machine, ...(incarnation === undefined ? {} : { inc: incarnation }), exp, ...(client === undefined ? {} : { client }), sig }).toString();
  return url.href;
}

/**
 * The signed URL a machine's boot script hands to its OS: the Ignition route for
 * `ignition`, the NoCloud seed prefix for `cloud-config` ({@link signedUrl} with
 * {@link IGNITION_PATH} or {@link nocloudPrefix}), bound to `client` and `incarnation` when given.
 *
 * @throws TypeError as {@link signedUrl}
 */
export function bootstrapUrl(
  format: 'ignition' | 'cloud-config',
  baseUrl: string,
  machine: string,
  key: Buffer,
  lifetimeSeconds: number = DEFAULT_LIFETIME_SECONDS,
  now: number = Date.now() / 1000,
  client?: string,
  incarnation?: string,
): string {
  const path = format === 'ignition' ? IGNITION_PATH : nocloudPrefix(machine);
  return signedUrl(baseUrl, path, machine, key, lifetimeSeconds, now, client, incarnation);
}

/**
 * The signed boot report URL of a machine: `<base>/report?machine=ID&inc=INC&exp=EXP&sig=SIG`,
 * signed over {@link REPORT_PATH} and bound to the machine's incarnation when given. The expiry is given, not computed from the clock, so
 * the bootstrap data carrying it is the same bytes for the same fetch URL (ETags, the
 * render cache, pointer hashes): the firmware routes pass the expiry of the signed URL
 * the config was fetched with plus the report lifetime.
 *
 * @param expiresAt expiry, unix seconds (a non-negative integer)
 * @param incarnation the machine's incarnation ({@link machineIncarnation})
 * @throws TypeError as {@link signPath}, or for a bad base URL or machine id
 */
export function reportUrl(baseUrl: string, machine: string, key: Buffer, expiresAt: number, incarnation?: string): string {
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(machine)) throw new TypeError(`machine id ${JSON.stringify(machine)} is not a DNS-1123 label`);
  const { exp, sig } = signPath(key, machine, REPORT_PATH, expiresAt, undefined, incarnation);
  const url = routeUrl(baseUrl, REPORT_PATH);
  url.search = new URLSearchParams({ machine, ...(incarnation === undefined ? {} : { inc: incarnation }), exp, sig }).toString();
  return url.href;
}

/** Where a URL-signing key came from. */
export interface SigningKey {
  key: Buffer;
  /** `config` when given, `file` when read from or written to the data directory. */
  source: 'config' | 'file';
  /** The key file (when `source` is `file`): log this, never the key. */
  path?: string;
  /** True when this call generated the key file. */
  created: boolean;
}

/**
 * Decode a configured key: hex when it is only hex digits (even count), else base64 or
 * base64url (RFC 4648 §4/§5, padding optional).
 *
 * @throws ConfigError (never quoting the value) when it decodes to fewer than {@link KEY_BYTES} bytes or is neither form
 */
export function decodeConfiguredKey(text: string): Buffer {
  const t = text.trim();
  let key: Buffer | undefined;
  if (/^([0-9a-fA-F]{2})+$/.test(t)) key = Buffer.from(t, 'hex');
  else if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(t) && !(/[+/]/.test(t) && /[-_]/.test(t))) key = Buffer.from(t.replace(/=+$/, ''), /[-_]/.test(t) ? 'base64url' : 'base64');
  if (!key) throw new ConfigError('urlSigningKey: must be hex or base64');
  if (key.length < KEY_BYTES) throw new ConfigError(`urlSigningKey: must be at least ${KEY_BYTES} bytes (${2 * KEY_BYTES} hex digits), got ${key.length}`);
  return key;
}

/**
 * The URL-signing key: the configured one when given ({@link decodeConfiguredKey}),
 * else `<dataDir>/url-signing-key` (32 raw random bytes, mode 0600), written on first
 * use and reused on every later start so URLs already handed out stay valid across a
 * restart. Several processes starting at once agree: the file is created exclusively
 * (`wx`) and a loser of that race reads the winner's key.
 *
 * @param dataDir the data directory (created with mode 0700 when missing)
 * @param configured the key from configuration (hex or base64), if any: it wins
 * @returns the key, where it came from, and whether this call created the file
 * @throws ConfigError when the configured key is unusable, or the key file exists but
 *   does not hold exactly {@link KEY_BYTES} bytes (it is never silently replaced: that
 *   would void every URL already handed out); file-system errors other than a
 *   missing file as thrown by node:fs
 */
export function loadOrCreateKey(dataDir: string, configured?: string): SigningKey {
  if (configured !== undefined && configured.trim() !== '') return { key: decodeConfiguredKey(configured), source: 'config', created: false };
  const path = join(dataDir, KEY_FILE);
  const read = (): SigningKey => {
    const key = readFileSync(path);
    if (key.length !== KEY_BYTES) throw new ConfigError(`${path}: a URL-signing key file must hold exactly ${KEY_BYTES} bytes, found ${key.length}`);
    return { key, source: 'file', path, created: false };
  };
  try {
    return read();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const key = randomBytes(KEY_BYTES);
  try {
    writeFileSync(path, key, { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return read();
    throw e;
  }
  return { key, source: 'file', path, created: true };
}

/**
 * Split the expiry segment of a NoCloud seed path ({@link signedUrl}): `<exp>`, then
 * `.<inc>` when the URL names an incarnation, then `~<client>` when it is bound to a
 * client address. The parts are checked by {@link verifySignature}, not here.
 */
export function splitExpiry(segment: string): { exp: string; client?: string; incarnation?: string } {
  const tilde = segment.indexOf('~');
  const head = tilde < 0 ? segment : segment.slice(0, tilde);
  const dot = head.indexOf('.');
  return {
    exp: dot < 0 ? head : head.slice(0, dot),
    ...(dot < 0 ? {} : { incarnation: head.slice(dot + 1) }),
    ...(tilde < 0 ? {} : { client: segment.slice(tilde + 1) }),
  };
}
