/**
 * Request body parsing. Bodies arrive as JSON or YAML in UTF-8 and are read by the same
 * parser the CLI uses (duplicate keys refused, errors without echoing the input, the
 * configured document limits held before anything else looks at the value).
 *
 * Two modes: `document` parses in the content-type parser (ordinary routes, validated
 * by their zod schema); `raw` hands the route the bytes themselves, so a route with a
 * cache in front (`POST /v1/render`) can answer a repeated body without decoding or
 * parsing it again.
 */
import type { FastifyInstance } from 'fastify';
import { RequestError } from '../errors.js';
import type { DocumentLimits } from '../request/bounds.js';
import { decodeUtf8, parseDocument, type RequestSyntax } from '../request/parse.js';

/** Accepted request media types and their syntax. */
export const REQUEST_SYNTAX_OF: Record<string, RequestSyntax> = {
  'application/json': 'json',
  'application/yaml': 'yaml',
  'application/x-yaml': 'yaml',
  'text/yaml': 'yaml',
};

/**
 * A body not yet decoded: its bytes and syntax. The `charset` parameter has been
 * checked; the bytes are checked to be UTF-8 when decoded ({@link rawText}).
 */
export interface RawBody {
  bytes: Buffer;
  syntax: RequestSyntax;
}

/** A `charset` parameter other than UTF-8 (RFC 8259 §8.1 and RFC 9512 §2.1.1 both say UTF-8). */
export class UnsupportedCharsetError extends Error {
  constructor(readonly charset: string) {
    super(`charset ${charset} is not supported`);
    this.name = 'UnsupportedCharsetError';
  }
}

/**
 * The body's text: the `charset` parameter, when given, must name UTF-8; the bytes must
 * be well-formed UTF-8 (a leading byte order mark is dropped).
 *
 * @throws UnsupportedCharsetError (415) for another charset; RequestError (400) for
 *   bytes that are not UTF-8 (never replaced by U+FFFD behind the caller's back).
 */
function decodeBody(contentType: string | undefined, body: Buffer): string {
  checkCharset(contentType);
  return decodeUtf8(body);
}

/**
 * The `charset` parameter of a body's media type, when given, must name UTF-8.
 *
 * @throws UnsupportedCharsetError (415) for another charset.
 */
function checkCharset(contentType: string | undefined): void {
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(contentType ?? '')?.[1];
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) throw new UnsupportedCharsetError(charset.slice(0, 40));
}

/**
 * A raw body's text (a leading byte order mark dropped).
 *
 * @throws RequestError (400) for bytes that are not well-formed UTF-8.
 */
export function rawText(body: RawBody): string {
  return decodeUtf8(body.bytes);
}

/**
 * Replace fastify's body parsers, in `app`'s encapsulation context, with ours: each
 * accepted media type is read as bytes within the body limit, its `charset` checked,
 * then either decoded as UTF-8 ({@link decodeBody}) and parsed by {@link parseDocument}
 * under `limits` (`document`), or passed on undecoded as a {@link RawBody} (`raw`: the
 * route decodes it with {@link rawText} when it needs the text). Any other media type is
 * a 415. A parse error answers before the route runs, with `Connection: close`.
 */
export function registerBodyParsers(app: FastifyInstance, mode: 'document' | 'raw', limits: DocumentLimits): void {
  app.removeAllContentTypeParsers();
  for (const [mediaType, syntax] of Object.entries(REQUEST_SYNTAX_OF)) {
    app.addContentTypeParser(mediaType, { parseAs: 'buffer' }, (request, body, done) => {
      try {
        if (mode === 'raw') {
          checkCharset(request.headers['content-type']);
          done(null, { bytes: body as Buffer, syntax } satisfies RawBody);
        } else done(null, parseDocument(decodeBody(request.headers['content-type'], body as Buffer), syntax, limits));
      } catch (e) {
        done(e as Error, undefined);
      }
    });
  }
}

/** The HTML form media type (boot reports, the status page's forms). */
export const FORM_MEDIA_TYPE = 'application/x-www-form-urlencoded';

/**
 * Parse an HTML form body (WHATWG `application/x-www-form-urlencoded`: `&`-separated
 * `name=value`, `+` for a space, percent-escapes), strictly: the `charset` parameter,
 * when given, must name UTF-8; the bytes, and what every percent-escape decodes to, must
 * be well-formed UTF-8 (URLSearchParams would put U+FFFD in place of what is not, behind
 * the sender's back); each name once.
 *
 * @throws UnsupportedCharsetError (415) for another charset; RequestError (400) for a
 *   body or an escape that is not UTF-8, or a name given more than once (naming it)
 */
export function parseForm(contentType: string | undefined, body: Buffer): Record<string, string> {
  checkCharset(contentType);
  const text = decodeUtf8(body);
  const out = Object.create(null) as Record<string, string>;
  for (const pair of text.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const [rawName, rawValue] = eq < 0 ? [pair, ''] : [pair.slice(0, eq), pair.slice(eq + 1)];
    const name = formDecode(rawName, rawName.slice(0, 40));
    if (Object.hasOwn(out, name)) throw new RequestError([{ path: name, message: 'is given more than once' }], 400);
    out[name] = formDecode(rawValue, name);
  }
  return out;
}

/** One form name or value decoded (`+` as a space, then percent-escapes as UTF-8). @throws RequestError (400) naming `field` */
function formDecode(text: string, field: string): string {
  const spaced = text.replaceAll('+', ' ');
  try {
    // A lone `%` (not an escape) stays as it is, as the WHATWG parser leaves it.
    return decodeURIComponent(spaced.replace(/%(?![0-9A-Fa-f]{2})/g, '%25'));
  } catch {
    throw new RequestError([{ path: field, message: 'has a percent-escape that is not UTF-8' }], 400);
  }
}

/**
 * Take HTML form bodies in `app`'s encapsulation context ({@link parseForm}), within
 * `bodyLimit` bytes when given (else the route's or the server's).
 */
export function registerFormParser(app: FastifyInstance, bodyLimit?: number): void {
  app.addContentTypeParser(FORM_MEDIA_TYPE, { parseAs: 'buffer', ...(bodyLimit !== undefined ? { bodyLimit } : {}) }, (request, body, done) => {
    try {
      done(null, parseForm(request.headers['content-type'], body as Buffer));
    } catch (e) {
      done(e as Error, undefined);
    }
  });
}

