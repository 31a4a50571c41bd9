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
