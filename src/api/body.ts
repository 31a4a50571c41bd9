/**
 * Request body parsing. Bodies arrive as JSON or YAML in UTF-8 and are read by the same
 * parser the CLI uses (duplicate keys refused, errors without echoing the input, the
 * configured document limits held before anything else looks at the value).
 *
 * Two modes: `document` parses in the content-type parser (ordinary routes, validated
 * by their zod schema); `raw` hands the route the text itself, so a route with a cache
 * in front (`POST /v1/render`) can answer a repeated body without parsing it again.
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

/** A body not yet parsed: its text and syntax. */
export interface RawBody {
  text: string;
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
export function decodeBody(contentType: string | undefined, body: Buffer): string {
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(contentType ?? '')?.[1];
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) throw new UnsupportedCharsetError(charset.slice(0, 40));
  return decodeUtf8(body);
}

/**
 * Replace fastify's body parsers, in `app`'s encapsulation context, with ours: each
 * accepted media type is read as bytes within the body limit and decoded as UTF-8
 * ({@link decodeBody}), then either parsed by {@link parseDocument} under `limits`
 * (`document`) or passed on as a {@link RawBody} (`raw`). Any other media type is a 415.
 * A parse error answers before the route runs, with `Connection: close`.
 */
export function registerBodyParsers(app: FastifyInstance, mode: 'document' | 'raw', limits: DocumentLimits): void {
  app.removeAllContentTypeParsers();
  for (const [mediaType, syntax] of Object.entries(REQUEST_SYNTAX_OF)) {
    app.addContentTypeParser(mediaType, { parseAs: 'buffer' }, (request, body, done) => {
      try {
        const text = decodeBody(request.headers['content-type'], body as Buffer);
        done(null, mode === 'raw' ? ({ text, syntax } satisfies RawBody) : parseDocument(text, syntax, limits));
      } catch (e) {
        done(e as Error, undefined);
      }
    });
  }
}
