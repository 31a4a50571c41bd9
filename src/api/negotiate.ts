/**
 * Content negotiation for bootstrap data (DESIGN §4, contract): `?format=` wins, then
 * `Accept` (RFC 9110 §12.5.1, q-values honoured), then the request's `spec.output`, then
 * cloud-config.
 */
import { IGNITION_MEDIA_TYPE } from '../render.js';
import { CLOUD_CONFIG_MEDIA_TYPE } from '../provision/cloudinit/render.js';
import type { OutputFormat } from '../request/schema.js';

/** The JSON envelope's media type, for OpenAPI clients. */
export const ENVELOPE_MEDIA_TYPE = 'application/json';

/** Media types offered for bootstrap data, in server preference order. */
export const OFFERED_MEDIA_TYPES = [CLOUD_CONFIG_MEDIA_TYPE, IGNITION_MEDIA_TYPE, ENVELOPE_MEDIA_TYPE] as const;

/** What negotiation decided. */
export interface Negotiated {
  /** The payload format. */
  format: OutputFormat;
  /** Wrap the payload in the JSON envelope. */
  envelope: boolean;
  /** The Ignition spec the client asked for (`version=` parameter), when it named one. */
  ignitionVersion?: string;
}

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
  mediaType: (typeof OFFERED_MEDIA_TYPES)[number];
  q: number;
  specificity: number;
  range: MediaRange;
}

const MEDIA_TYPE_OF: Record<OutputFormat, (typeof OFFERED_MEDIA_TYPES)[number]> = {
  'cloud-config': CLOUD_CONFIG_MEDIA_TYPE,
  ignition: IGNITION_MEDIA_TYPE,
};

/**
 * Among several exact Ignition ranges (`…; version=2.4.0; q=0.5, …; version=3.4.0`), the
 * one the client prefers (RFC 9110 §12.5.1: highest q, the first on a tie) among those
 * whose spec bootwright serves or that name none; when none is servable, the most
 * preferred one (so the refusal names it). Undefined when no exact range has q > 0.
 */
function preferredIgnitionRange(ranges: readonly MediaRange[], supportsIgnition: (version: string) => boolean): Match | undefined {
  const exact = ranges.filter((r) => specificity(r, IGNITION_MEDIA_TYPE) === 3 && r.q > 0);
  const servable = exact.filter((r) => {
    const v = r.params.get('version');
    return v === undefined || supportsIgnition(v);
  });
  const pool = servable.length > 0 ? servable : exact;
  const range = pool.reduce<MediaRange | undefined>((a, r) => (a === undefined || r.q > a.q ? r : a), undefined);
  return range && { mediaType: IGNITION_MEDIA_TYPE, q: range.q, specificity: 3, range };
}

/**
 * Choose what to send.
 *
 * @param format the `?format=` query value, if any: it wins over everything for the
 *   payload; an explicit `application/json` Accept still wraps it in the envelope.
 * @param accept the Accept header, if any.
 * @param defaultFormat the request's `spec.output.format`, else cloud-config: used when
 *   Accept is absent or names no offered type more specifically than a wildcard.
 * @param supportsIgnition whether an Ignition `version=` parameter can be served.
 * @returns the format, whether to wrap it in the JSON envelope, and the Ignition
 *   version the client named (an exact `application/vnd.coreos.ignition+json` range only).
 * @throws NotAcceptableError when no offered type is acceptable; also when the client's
 *   most preferred explicit choice is Ignition at a spec bootwright does not serve, since a
 *   wildcard fallback could only answer with a format that client cannot read.
 */
export function negotiate(
  format: OutputFormat | undefined,
  accept: string | undefined,
  defaultFormat: OutputFormat,
  supportsIgnition: (version: string) => boolean,
): Negotiated {
  if (!accept || accept.trim() === '') return { format: format ?? defaultFormat, envelope: false };
  const ranges = parseAccept(accept);
  if (format) {
    // `?format=` picks the payload; an explicit application/json still asks for the envelope.
    const json = ranges.find((r) => specificity(r, ENVELOPE_MEDIA_TYPE) === 3);
    const envelope = json !== undefined && json.q > 0 && ranges.every((r) => specificity(r, ENVELOPE_MEDIA_TYPE) === 3 || r.q <= json.q);
    const v = format === 'ignition' ? preferredIgnitionRange(ranges, supportsIgnition)?.range.params.get('version') : undefined;
    return { format, envelope, ...(v !== undefined ? { ignitionVersion: v } : {}) };
  }
  let matches: Match[] = [];
  for (const mediaType of OFFERED_MEDIA_TYPES) {
    let best: Match | undefined;
    for (const range of ranges) {
      const s = specificity(range, mediaType);
      if (s > 0 && (!best || s > best.specificity)) best = { mediaType, q: range.q, specificity: s, range };
    }
    if (mediaType === IGNITION_MEDIA_TYPE && best?.specificity === 3) best = preferredIgnitionRange(ranges, supportsIgnition) ?? best;
    if (best && best.q > 0) matches.push(best);
  }
  const ignition = matches.find((m) => m.mediaType === IGNITION_MEDIA_TYPE && m.specificity === 3);
  const version = ignition?.range.params.get('version');
  if (ignition && version !== undefined && !supportsIgnition(version)) {
    const alternative = matches.some((m) => m.specificity === 3 && m !== ignition && m.q >= ignition.q);
    if (!alternative) throw new NotAcceptableError(`Ignition spec ${version} is not served; bootwright serves Ignition 2.3.0 and 3.0.0 to 3.6.0`);
    matches = matches.filter((m) => m !== ignition);
  }
  if (matches.length === 0) throw new NotAcceptableError(`none of the offered media types is acceptable: ${OFFERED_MEDIA_TYPES.join(', ')}`);
  const topQ = Math.max(...matches.map((m) => m.q));
  const top = matches.filter((m) => m.q === topQ);
  const exact = top.filter((m) => m.specificity === 3);
  const pool = exact.length > 0 ? exact : top;
  const chosen =
    pool.find((m) => m.mediaType === MEDIA_TYPE_OF[defaultFormat]) ?? pool.find((m) => m.mediaType !== ENVELOPE_MEDIA_TYPE) ?? pool[0]!;
  if (chosen.mediaType === ENVELOPE_MEDIA_TYPE) return { format: defaultFormat, envelope: true };
  if (chosen.mediaType === IGNITION_MEDIA_TYPE) {
    const v = chosen.specificity === 3 ? chosen.range.params.get('version') : undefined;
    return { format: 'ignition', envelope: false, ...(v !== undefined ? { ignitionVersion: v } : {}) };
  }
  return { format: 'cloud-config', envelope: false };
}
