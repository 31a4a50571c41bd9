/**
 * Content negotiation for bootstrap data (DESIGN §4, contract): `?format=` wins, then
 * `Accept` (RFC 9110 §12.5.1, q-values honoured), then the request's `spec.output`, then
 * the default format. The formats and their media types are the registered ones
 * (`src/provision/formats.ts`); a versioned format's `version=` parameter (Ignition's
 * spec) is checked against its provisioners (`src/provision/registry.ts`).
 */
import { FORMATS, formatNamed } from '../provision/formats.js';
import { servedVersion } from '../provision/registry.js';
import type { OutputFormat } from '../request/schema.js';

/** The JSON envelope's media type, for OpenAPI clients. */
export const ENVELOPE_MEDIA_TYPE = 'application/json';

/** Media types offered for bootstrap data, in server preference order: the formats', then the envelope. */
export const OFFERED_MEDIA_TYPES: readonly string[] = [...FORMATS.map((f) => f.mediaType), ENVELOPE_MEDIA_TYPE];

/** What negotiation decided. */
export interface Negotiated {
  /** The payload format. */
  format: OutputFormat;
  /** Wrap the payload in the JSON envelope. */
  envelope: boolean;
  /**
   * The version the client asked for (the `version=` parameter of a versioned format's
   * exact range: the Ignition spec), when it named one.
   */
  ignitionVersion?: string;
}

/** The format whose media type is `mediaType`, if one is. */
const FORMAT_OF_MEDIA_TYPE = new Map<string, OutputFormat>(FORMATS.map((f) => [f.mediaType, f.name]));

/** Negotiation failed: nothing acceptable is offered (HTTP 406). */
export class NotAcceptableError extends Error {
  constructor(readonly detail: string) {
    super(detail);
    this.name = 'NotAcceptableError';
  }
}

/** One media range of an Accept header. */
interface MediaRange {
  type: string;
  subtype: string;
  params: Map<string, string>;
  q: number;
}

/**
 * Parse an Accept header (RFC 9110 §12.5.1): comma-separated media ranges, each with
 * parameters and an optional `q` weight (0–1, default 1). Malformed ranges are ignored.
 */
export function parseAccept(header: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  for (const part of header.split(',')) {
    const [mediaType, ...paramParts] = part.split(';').map((s) => s.trim());
    const m = /^([\w.+*-]+)\/([\w.+*-]+)$/.exec(mediaType ?? '');
    if (!m) continue;
    const params = new Map<string, string>();
    let q = 1;
    for (const p of paramParts) {
      const eq = p.indexOf('=');
      if (eq < 1) continue;
      const name = p.slice(0, eq).trim().toLowerCase();
      const value = p.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
      if (name === 'q') {
        const n = Number(value);
        q = Number.isFinite(n) ? Math.min(1, Math.max(0, n)) : 0;
      } else params.set(name, value);
    }
    ranges.push({ type: m[1]!.toLowerCase(), subtype: m[2]!.toLowerCase(), params, q });
  }
  return ranges;
}

/** How specifically a range matches a media type: 3 exact, 2 `type/*`, 1 `*\/*`, 0 none. */
function specificity(range: MediaRange, mediaType: string): number {
  const [type, subtype] = mediaType.split('/');
  if (range.type === type && range.subtype === subtype) return 3;
  if (range.type === type && range.subtype === '*') return 2;
  if (range.type === '*' && range.subtype === '*') return 1;
  return 0;
}

interface Match {
  mediaType: string;
  q: number;
  specificity: number;
  range: MediaRange;
}

/** Whether a versioned format serves a `version=` value. */
type Supports = (version: string, format: OutputFormat) => boolean;

/** By default: whether a registered provisioner of the format serves it. */
const registered: Supports = (version, format) => servedVersion(format, version) !== undefined;

/**
 * Among several exact ranges of a versioned format's media type (Ignition:
 * `…; version=2.4.0; q=0.5, …; version=3.4.0`), the one the client prefers (RFC 9110
 * §12.5.1: highest q, the first on a tie) among those whose version bootwright serves or
 * that name none; when none is servable, the most preferred one (so the refusal names
 * it). Undefined when no exact range has q > 0.
 */
function preferredVersionedRange(ranges: readonly MediaRange[], format: OutputFormat, supports: Supports): Match | undefined {
  const mediaType = formatNamed(format).mediaType;
  const exact = ranges.filter((r) => specificity(r, mediaType) === 3 && r.q > 0);
  const servable = exact.filter((r) => {
    const v = r.params.get('version');
    return v === undefined || supports(v, format);
  });
  const pool = servable.length > 0 ? servable : exact;
  const range = pool.reduce<MediaRange | undefined>((a, r) => (a === undefined || r.q > a.q ? r : a), undefined);
  return range && { mediaType, q: range.q, specificity: 3, range };
}

/**
 * Choose what to send.
 *
 * @param format the `?format=` query value, if any: it wins over everything for the
 *   payload; an explicit `application/json` Accept still wraps it in the envelope.
 * @param accept the Accept header, if any.
 * @param defaultFormat the request's `spec.output.format`, else the default format: used
 *   when Accept is absent or names no offered type more specifically than a wildcard.
 * @param supports whether a versioned format's `version=` parameter can be served
 *   (default: by a registered provisioner).
 * @param servable the formats this request's node can get (its OS's provisioners, e.g.
 *   only cloud-config for a Windows node); default all. Accept ranges matching only other
 *   formats are set aside when one matching a servable format remains (`*\/*` gives a
 *   Windows node cloud-config); when none does, they stand, so the render refuses the
 *   format at the field that chose the OS (a 422) rather than a bare 406.
 * @returns the format, whether to wrap it in the JSON envelope, and the version the
 *   client named (an exact range of a versioned format's media type only, e.g.
 *   `application/vnd.coreos.ignition+json; version=3.4.0`).
 * @throws NotAcceptableError when no offered type is acceptable; also when the client's
 *   most preferred explicit choice is a versioned format at a version bootwright does not
 *   serve (Ignition at an unserved spec), since a wildcard fallback could only answer with
 *   a format that client cannot read.
 */
export function negotiate(
  format: OutputFormat | undefined,
  accept: string | undefined,
  defaultFormat: OutputFormat,
  supports: Supports = registered,
  servable?: readonly OutputFormat[],
): Negotiated {
  if (!accept || accept.trim() === '') return { format: format ?? defaultFormat, envelope: false };
  const ranges = parseAccept(accept);
  if (format) {
    // `?format=` picks the payload; an explicit application/json still asks for the envelope.
    const json = ranges.find((r) => specificity(r, ENVELOPE_MEDIA_TYPE) === 3);
    const envelope = json !== undefined && json.q > 0 && ranges.every((r) => specificity(r, ENVELOPE_MEDIA_TYPE) === 3 || r.q <= json.q);
    const v = formatNamed(format).versions ? preferredVersionedRange(ranges, format, supports)?.range.params.get('version') : undefined;
    return { format, envelope, ...(v !== undefined ? { ignitionVersion: v } : {}) };
  }
  let matches: Match[] = [];
  for (const mediaType of OFFERED_MEDIA_TYPES) {
    let best: Match | undefined;
    for (const range of ranges) {
      const s = specificity(range, mediaType);
      if (s > 0 && (!best || s > best.specificity)) best = { mediaType, q: range.q, specificity: s, range };
    }
    const f = FORMAT_OF_MEDIA_TYPE.get(mediaType);
    if (f !== undefined && formatNamed(f).versions && best?.specificity === 3) best = preferredVersionedRange(ranges, f, supports) ?? best;
    if (best && best.q > 0) matches.push(best);
  }
  if (servable) {
    const forNode = matches.filter((m) => {
      const f = FORMAT_OF_MEDIA_TYPE.get(m.mediaType);
      return f !== undefined && servable.includes(f);
    });
    if (forNode.length > 0) matches = matches.filter((m) => !FORMAT_OF_MEDIA_TYPE.has(m.mediaType) || forNode.includes(m));
  }
  // An exact range of a versioned format at a version not served: dropped when the client
  // named something else as good, else refused.
  for (const versioned of [...matches]) {
    const name = FORMAT_OF_MEDIA_TYPE.get(versioned.mediaType);
    const versions = name === undefined ? undefined : formatNamed(name).versions;
    const version = versioned.range.params.get('version');
    if (!versions || versioned.specificity !== 3 || version === undefined || supports(version, name!)) continue;
    const alternative = matches.some((m) => m.specificity === 3 && m !== versioned && m.q >= versioned.q);
    if (!alternative) throw new NotAcceptableError(`${versions.noun} ${version} is not served; bootwright serves ${versions.reader} ${versions.served}`);
    matches = matches.filter((m) => m !== versioned);
  }
  if (matches.length === 0) throw new NotAcceptableError('the Accept header names no media type bootwright serves');
  const topQ = Math.max(...matches.map((m) => m.q));
  const top = matches.filter((m) => m.q === topQ);
  const exact = top.filter((m) => m.specificity === 3);
  const pool = exact.length > 0 ? exact : top;
  const chosen =
    pool.find((m) => m.mediaType === formatNamed(defaultFormat).mediaType) ?? pool.find((m) => m.mediaType !== ENVELOPE_MEDIA_TYPE) ?? pool[0]!;
  const chosenFormat = FORMAT_OF_MEDIA_TYPE.get(chosen.mediaType);
  if (chosenFormat === undefined) return { format: defaultFormat, envelope: true };
  const v = formatNamed(chosenFormat).versions && chosen.specificity === 3 ? chosen.range.params.get('version') : undefined;
  return { format: chosenFormat, envelope: false, ...(v !== undefined ? { ignitionVersion: v } : {}) };
}
