/**
 * The hardware identity a booting machine reports, as query parameters of `GET /ipxe`
 * (issue 4, "Firmware-facing routes"), parsed and normalised so that matching
 * (`match.ts`) compares like with like. Pure: no HTTP, no store.
 *
 * The parameters come from the chain line of `/boot.ipxe` (ipxe.ts
 * `bootScript`): `mac=${netX/mac:hexhyp}`, `uuid=${uuid}`, `serial_hex=${serial:hex}`,
 * `hostname_hex=${hostname:hex}`, `buildarch=${buildarch:uristring}`,
 * `platform=${platform:uristring}`. Hand-written URLs (matchbox style) may send `serial` and
 * `hostname` as text instead; those are accepted too.
 */

/** A machine's identity as reported at boot. Every field is normalised; absent when not reported. */
export interface MachineIdentity {
  /** Lower-case colon form `00:50:56:ab:cd:ef` ({@link normaliseMac}). */
  mac?: string;
  /** Lower-case canonical 8-4-4-4-12 form ({@link normaliseUuid}). */
  uuid?: string;
  /** SMBIOS system serial number, surrounding white space removed ({@link normaliseSerial}). */
  serial?: string;
  /** Host name, lower-case, without a trailing dot ({@link normaliseHostname}). */
  hostname?: string;
  /** Every other non-empty query parameter (see {@link RESERVED_PARAMETERS}), as reported. */
  labels: Record<string, string>;
  /** iPXE's `${buildarch}` (`x86_64`, `i386`, `arm64`...): reported, not a selector. */
  buildarch?: string;
  /** iPXE's `${platform}` (`pcbios`, `efi`): reported, not a selector. */
  platform?: string;
  /**
   * Names of identity parameters that were present but unusable (`mac=zz`, a
   * `serial_hex` that is not hex or not UTF-8): logged and shown to the operator, never
   * matched.
   */
  ignored: string[];
}

/**
 * Query parameters with a meaning of their own, which are never free labels: the
 * identity parameters, iPXE's platform facts, and the signed-URL parameters of the
 * secret-bearing routes (`machine`, `exp`, `sig`, sign.ts) plus `format`
 * (DESIGN §4 negotiation).
 */
export const RESERVED_PARAMETERS: readonly string[] = [
  'mac',
  'uuid',
  'serial',
  'serial_hex',
  'hostname',
  'hostname_hex',
  'buildarch',
  'platform',
  'machine',
  'exp',
  'sig',
  'format',
];

const HEX12 = /^[0-9a-f]{12}$/;

/**
 * Normalise a MAC address (EUI-48) to lower-case colon form.
 *
 * Accepted spellings, any letter case, surrounding white space ignored:
 * - colon `00:50:56:AB:CD:EF` (Linux, iPXE `${mac}`),
 * - hyphen `00-50-56-ab-cd-ef` (Windows, iPXE `${mac:hexhyp}`),
 * - Cisco dotted `0050.56ab.cdef`,
 * - bare 12 hex digits `005056abcdef` (iPXE `${mac:hexraw}`).
 *
 * Every octet has exactly two digits and one spelling is used throughout (`00:50-56...`
 * is refused). Any 48-bit address is accepted, multicast and locally administered ones
 * included, except all-zero `00:00:00:00:00:00`, which is what firmware reports when
 * it has no address.
 *
 * @param text a MAC address as written by an operator or reported by firmware
 * @returns `xx:xx:xx:xx:xx:xx` in lower case, or undefined when `text` is not one of the
 *   spellings above or is all-zero. Never throws.
 */
export function normaliseMac(text: string): string | undefined {
  const t = text.trim().toLowerCase();
  let hex: string | undefined;
  if (/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/.test(t) || /^[0-9a-f]{2}(-[0-9a-f]{2}){5}$/.test(t)) hex = t.replace(/[:-]/g, '');
  else if (/^[0-9a-f]{4}\.[0-9a-f]{4}\.[0-9a-f]{4}$/.test(t)) hex = t.replace(/\./g, '');
  else if (HEX12.test(t)) hex = t;
  if (hex === undefined || /^0+$/.test(hex)) return undefined;
  return hex.match(/../g)!.join(':');
}

/**
 * Normalise an SMBIOS system UUID to the lower-case canonical 8-4-4-4-12 form (RFC 9562
 * §4: `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`).
 *
 * Accepts 32 hex digits in any case, either bare or with the four hyphens in their
 * canonical places, surrounding white space ignored. iPXE's `${uuid}` already prints the
 * canonical lower-case form (`uuid_ntoa` in iPXE `src/core/uuid.c`, used by the `uuid`
 * setting type in `src/core/settings.c`), having put the SMBIOS byte order right.
 *
 * The nil UUID (all zeros) and all-`f` are refused: SMBIOS (DMTF DSP0134 §7.2.1) uses
 * them for "no UUID present" and "not set", so they identify no machine.
 *
 * @param text a UUID as written by an operator or reported by firmware
 * @returns the canonical lower-case form, or undefined when `text` is not a UUID or is
 *   nil / all-`f`. Never throws.
 */
export function normaliseUuid(text: string): string | undefined {
  const t = text.trim().toLowerCase();
  let hex: string;
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(t)) hex = t.replace(/-/g, '');
  else if (/^[0-9a-f]{32}$/.test(t)) hex = t;
  else return undefined;
  if (/^0+$/.test(hex) || /^f+$/.test(hex)) return undefined;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Characters no reported value may hold: C0 controls (NUL included), DEL, C1 controls,
 * the Unicode line separators and the bidirectional overrides. A client on the boot
 * network sends these values unauthenticated; they reach stores (PostgreSQL refuses a
 * NUL), logs, the status page and terminals.
 */
const REPORTED_CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/**
 * The longest serial number, host name or free label value kept, characters: 255, the
 * most a DHCP option holds (RFC 2132 §2, the host name option 12 among them); SMBIOS
 * strings are far shorter.
 */
export const MAX_REPORTED_CHARS = 255;
/** A free label's name: a short token (longer or other names are dropped and listed as `labels` in `ignored`). */
const LABEL_NAME = /^[A-Za-z0-9_.-]{1,63}$/;
/** iPXE's `${buildarch}` and `${platform}`: short tokens. */
const FACT = /^[A-Za-z0-9_-]{1,32}$/;

/**
 * Normalise a serial number for comparison: surrounding white space removed (SMBIOS
 * strings are often padded with spaces); letter case and inner characters kept.
 *
 * @returns the trimmed text, or undefined when nothing is left, it is longer than
 *   {@link MAX_REPORTED_CHARS} or it holds a control character
 */
export function normaliseSerial(text: string): string | undefined {
  const t = text.trim();
  return t === '' || t.length > MAX_REPORTED_CHARS || REPORTED_CONTROLS.test(t) ? undefined : t;
}

/**
 * Normalise a host name for comparison: surrounding white space and one trailing dot
 * removed, lower-cased (DNS names compare case-insensitively, RFC 4343 §2).
 *
 * Other characters are kept: a host name selector stored by an earlier release (any text)
 * must go on matching what its machine reports.
 *
 * @returns the normalised name, or undefined when nothing is left, it is longer than
 *   {@link MAX_REPORTED_CHARS} or it holds a control character
 */
export function normaliseHostname(text: string): string | undefined {
  const t = text.trim().replace(/\.$/, '').toLowerCase();
  return t === '' || t.length > MAX_REPORTED_CHARS || REPORTED_CONTROLS.test(t) ? undefined : t;
}

/**
 * Decode the output of an iPXE `:hex` (or `:hexhyp`, `:hexraw`) setting expansion to the
 * UTF-8 string it encodes, e.g. `53:4e:20:34:32` → `SN 42`.
 *
 * iPXE's `format_hex_setting` (`src/core/settings.c`) prints each byte of the setting as
 * `%02x` (two lower-case hex digits) joined by `:` for the `hex` type, `-` for `hexhyp`,
 * nothing for `hexraw`; an empty or unset setting expands to the empty string. This
 * accepts exactly those three shapes, in either letter case, with one delimiter used
 * throughout. Using `${serial:hex}` instead of `${serial:uristring}` keeps every byte of the
 * value URI-safe: iPXE builds before 2020 (Debian's 2019 package among them) do not
 * escape `&` in `:uristring`, so `SN 42/A&B` would split the query.
 *
 * @param text the expanded setting as received in a query parameter
 * @returns the decoded string (`''` for `''`), or undefined when `text` is not hex bytes in
 *   one of those shapes or the bytes are not valid UTF-8. Never throws.
 */
export function decodeHexSetting(text: string): string | undefined {
  const t = text.trim().toLowerCase();
  if (t === '') return '';
  let hex: string;
  if (/^[0-9a-f]{2}(:[0-9a-f]{2})*$/.test(t) || /^[0-9a-f]{2}(-[0-9a-f]{2})*$/.test(t)) hex = t.replace(/[:-]/g, '');
  else if (/^([0-9a-f]{2})+$/.test(t)) hex = t;
  else return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Buffer.from(hex, 'hex'));
  } catch {
    return undefined;
  }
}

/** A parsed query string: URLSearchParams, or the object fastify (and node's `querystring`) produce. */
export type QueryInput = URLSearchParams | Readonly<Record<string, unknown>>;

/** The first string value of `name`, or undefined (arrays: the first element). */
function first(query: QueryInput, name: string): string | undefined {
  if (query instanceof URLSearchParams) return query.get(name) ?? undefined;
  const v = query[name];
  if (typeof v === 'string') return v;
  if (Array.isArray(v) && typeof v[0] === 'string') return v[0];
  return undefined;
}

function names(query: QueryInput): string[] {
  return query instanceof URLSearchParams ? [...new Set(query.keys())] : Object.keys(query);
}

/**
 * Build a machine's identity from the query parameters of `GET /ipxe`.
 *
 * - `mac` → {@link normaliseMac}; `uuid` → {@link normaliseUuid}.
 * - `serial_hex` ({@link decodeHexSetting}) wins over `serial`; likewise `hostname_hex` over
 *   `hostname`. The text forms are taken as decoded by the query parser. Serial and host
 *   name are then normalised ({@link normaliseSerial}, {@link normaliseHostname}).
 * - `buildarch` and `platform` are kept as reported facts, not selectors.
 * - Every other parameter with a non-empty value becomes a free label (`rack=r12` →
 *   `labels.rack = "r12"`), except {@link RESERVED_PARAMETERS}; a label whose name is not
 *   a short token or whose value is over {@link MAX_REPORTED_CHARS} characters or holds a
 *   control character is dropped (`ignored` then lists `labels`).
 * - Every kept value is bounded and free of control characters (serial, host name and
 *   label values {@link MAX_REPORTED_CHARS}, `buildarch`/`platform` 32): what a store, a
 *   log line or a terminal gets from an unauthenticated client is never unbounded. A parameter without a value
 *   reports nothing (this also drops the stray `B` an unescaped `&` in an old iPXE's
 *   `${serial:uristring}` leaves behind).
 * - Empty values mean "not reported" (iPXE expands an unset setting to nothing). A
 *   present but unusable identity value is left out and its parameter name listed in
 *   `ignored`.
 * - A repeated parameter counts once: its first value.
 *
 * @param query the parsed query string
 * @returns the identity; never throws
 */
export function machineIdentity(query: QueryInput): MachineIdentity {
  const identity: MachineIdentity = { labels: {}, ignored: [] };
  const take = (name: string, normalise: (text: string) => string | undefined): string | undefined => {
    const raw = first(query, name);
    if (raw === undefined || raw.trim() === '') return undefined;
    const value = normalise(raw);
    if (value === undefined) identity.ignored.push(name);
    return value;
  };
  const viaHex = (normalise: (text: string) => string | undefined) => (text: string) => {
    const decoded = decodeHexSetting(text);
    return decoded === undefined ? undefined : normalise(decoded);
  };

  const mac = take('mac', normaliseMac);
  if (mac !== undefined) identity.mac = mac;
  const uuid = take('uuid', normaliseUuid);
  if (uuid !== undefined) identity.uuid = uuid;
  const serial = take('serial_hex', viaHex(normaliseSerial)) ?? take('serial', normaliseSerial);
  if (serial !== undefined) identity.serial = serial;
  const hostname = take('hostname_hex', viaHex(normaliseHostname)) ?? take('hostname', normaliseHostname);
  if (hostname !== undefined) identity.hostname = hostname;
  const fact = (t: string) => (FACT.test(t.trim()) ? t.trim() : undefined);
  const buildarch = take('buildarch', fact);
  if (buildarch !== undefined) identity.buildarch = buildarch;
  const platform = take('platform', fact);
  if (platform !== undefined) identity.platform = platform;

  let droppedLabel = false;
  for (const name of names(query).sort()) {
    if (RESERVED_PARAMETERS.includes(name)) continue;
    const value = first(query, name);
    if (value === undefined || value === '') continue;
    if (!LABEL_NAME.test(name) || value.length > MAX_REPORTED_CHARS || REPORTED_CONTROLS.test(value)) {
      droppedLabel = true;
      continue;
    }
    // defineProperty: a parameter named `__proto__` is a label like any other.
    Object.defineProperty(identity.labels, name, { value, enumerable: true, writable: true, configurable: true });
  }
  if (droppedLabel) identity.ignored.push('labels');
  return identity;
}
