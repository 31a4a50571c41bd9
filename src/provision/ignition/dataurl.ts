/**
 * File contents as RFC 2397 `data:` URLs for Ignition resources (DESIGN §3: "file
 * contents as `data:` URLs (percent-encoded or padded base64, gzip where smaller)").
 */
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import { gzipSync } from 'fflate';
import { LRUCache } from 'lru-cache';
import type { IgnitionResource } from './config.js';

const PERCENT_PREFIX = 'data:,';
const BASE64_PREFIX = 'data:;base64,';
/** What `compression` adds to the serialised resource: `,"compression":"gzip"`. */
const COMPRESSION_COST = ',"compression":"gzip"'.length;
/** The smallest gzip stream (10-byte header, empty deflate block, 8-byte trailer). */
const MIN_GZIP_BYTES = 20;

/** Bytes `encodeURIComponent` leaves as they are: `A-Z a-z 0-9 - _ . ! ~ * ' ( )`. */
const UNRESERVED = new Uint8Array(128);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.!~*'()") UNRESERVED[c.charCodeAt(0)] = 1;

function base64Length(bytes: number): number {
  return 4 * Math.ceil(bytes / 3);
}

/** Length of the percent-encoded URL, or undefined when the bytes are not UTF-8 text. */
function percentLength(contents: Uint8Array): number | undefined {
  if (!isUtf8(contents)) return undefined;
  let n = PERCENT_PREFIX.length;
  for (const b of contents) n += UNRESERVED[b] ? 1 : 3;
  return n;
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Deterministic gzip (RFC 1952) of `contents`: fflate at level 9 with mtime 0 and no
 * file name, so the bytes do not depend on the clock or on Node's zlib version.
 */
export function gzipDeterministic(contents: Uint8Array): Uint8Array {
  return gzipSync(contents, { level: 9, mtime: 0 });
}

/** Bytes of gzip streams {@link gzipShared} remembers per thread. */
const GZIP_MEMO_BYTES = 8 << 20;
const gzipped = new LRUCache<string, Uint8Array>({ maxSize: GZIP_MEMO_BYTES, sizeCalculation: (gz) => gz.length + 64 });

/**
 * {@link gzipDeterministic}, remembered per thread by a SHA-256 of `contents` in a
 * bounded LRU ({@link GZIP_MEMO_BYTES}; the inputs are not kept): the files most
 * machines share (scripts, units, the cluster's CA) are compressed once, not once per
 * machine's render. In a cold boot storm, pure-JS deflate was a third of each Ignition
 * render. The bytes are the same either way; the returned array is shared, so callers
 * must not modify it.
 */
export function gzipShared(contents: Uint8Array): Uint8Array {
  const key = createHash('sha256').update(contents).digest('base64url');
  let gz = gzipped.get(key);
  if (!gz) {
    gz = gzipDeterministic(contents);
    gzipped.set(key, gz);
  }
  return gz;
}

/** How a resource may be encoded. */
export interface EncodeOptions {
  /**
   * Whether `compression: "gzip"` may be used (spec ≥ 3.1.0: Ignition decompresses
   * `data:` URLs from 2.3.0 on, the release that brought spec 3.1.0).
   */
  gzip: boolean;
}

/**
 * Encode bytes as the shortest of:
 * - `data:,` + `encodeURIComponent(text)`, only for valid UTF-8 (a BOM is kept); the
 *   characters it leaves raw (`A-Z a-z 0-9 - _ . ! ~ * ' ( )`) are legal in a data URL,
 *   and nothing else is raw: no space, no control character, no non-ASCII;
 * - `data:;base64,` + padded base64 (RFC 4648 §4);
 * - when `options.gzip`: the same base64 form of a gzip stream with
 *   `compression: "gzip"`, only when strictly smaller counting the extra field. The
 *   stream is `suppliedGzip` when given (the request's own, reused byte for byte, so the
 *   output does not depend on any zlib), else {@link gzipShared}.
 *
 * Ties go to percent-encoding (readable), then to plain over gzip. Decoding the URL
 * (and gunzipping when compressed) gives exactly `contents`, provided `suppliedGzip`
 * decompresses to `contents` (the plan's contract for `PlanFile.gzip`).
 *
 * @param contents the bytes the node must end up with
 * @param suppliedGzip a gzip stream of exactly `contents`, when the request gave one
 */
export function dataUrlResource(contents: Uint8Array, options: EncodeOptions, suppliedGzip?: Uint8Array): IgnitionResource {
  const percent = percentLength(contents);
  const base64 = BASE64_PREFIX.length + base64Length(contents.length);
  const plainLength = percent !== undefined && percent <= base64 ? percent : base64;

  if (options.gzip && plainLength > BASE64_PREFIX.length + base64Length(MIN_GZIP_BYTES) + COMPRESSION_COST) {
    const gz = suppliedGzip ?? gzipShared(contents);
    if (BASE64_PREFIX.length + base64Length(gz.length) + COMPRESSION_COST < plainLength) {
      return { compression: 'gzip', source: BASE64_PREFIX + toBuffer(gz).toString('base64') };
    }
  }
  if (plainLength === percent) return { source: PERCENT_PREFIX + encodeURIComponent(toBuffer(contents).toString('utf8')) };
  return { source: BASE64_PREFIX + toBuffer(contents).toString('base64') };
}

/**
 * The bytes a `data:` URL holds, as Ignition reads them (RFC 2397; vincent-petithory/dataurl,
 * which Ignition uses): after the first `,`, base64 (RFC 4648 §4, padded) when the
 * metadata ends in `;base64`, else percent-decoded to bytes (`%XX` → one byte, no UTF-8
 * interpretation). The media type and its parameters are ignored.
 *
 * @param source the URL
 * @returns the bytes, or undefined when `source` is not a well-formed `data:` URL (no
 *   `data:` prefix or `,`, a `%` without two hex digits, base64 that does not round-trip)
 */
export function decodeDataUrl(source: string): Uint8Array | undefined {
  if (!source.startsWith('data:')) return undefined;
  const comma = source.indexOf(',');
  if (comma < 0) return undefined;
  const meta = source.slice('data:'.length, comma);
  const payload = percentDecode(source.slice(comma + 1));
  if (!payload) return undefined;
  if (!/;base64$/i.test(meta)) return payload;
  const text = payload.toString('latin1');
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : undefined;
}

/** RFC 3986 percent-decoding to bytes; undefined on a `%` not followed by two hex digits. */
function percentDecode(text: string): Buffer | undefined {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x25) {
      if (c > 0xff) return undefined;
      bytes.push(c);
      continue;
    }
    const hex = text.slice(i + 1, i + 3);
    if (!/^[0-9A-Fa-f]{2}$/.test(hex)) return undefined;
    bytes.push(parseInt(hex, 16));
    i += 2;
  }
  return Buffer.from(bytes);
}
