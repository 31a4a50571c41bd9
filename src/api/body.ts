/**
 * Request body parsing. Bodies arrive as JSON or YAML and are read by the same parser the
 * CLI uses (duplicate keys refused, errors without echoing the input).
 *
 * Two modes: `document` parses in the content-type parser (ordinary routes, validated
 * by their zod schema); `raw` hands the route the text itself, so a route with a cache
 * in front (`POST /v1/render`) can answer a repeated body without parsing it again.
 */
import type { FastifyInstance } from 'fastify';
import { parseDocument, type RequestSyntax } from '../request/parse.js';

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

/**
 * Replace fastify's body parsers, in `app`'s encapsulation context, with ours: each
 * accepted media type is read as a UTF-8 string within the body limit, then either
 * parsed by {@link parseDocument} (`document`) or passed on as a {@link RawBody} (`raw`).
 * Any other media type is a 415.
 */
export function registerBodyParsers(app: FastifyInstance, mode: 'document' | 'raw'): void {
  app.removeAllContentTypeParsers();
  for (const [mediaType, syntax] of Object.entries(REQUEST_SYNTAX_OF)) {
    app.addContentTypeParser(mediaType, { parseAs: 'string' }, (_request, body, done) => {
      const text = body as string;
      if (mode === 'raw') {
        done(null, { text, syntax } satisfies RawBody);
        return;
      }
      try {
        done(null, parseDocument(text, syntax));
      } catch (e) {
        done(e as Error, undefined);
      }
    });
  }
}
