/**
 * Request body parsing: NodeBootstrap bodies arrive as JSON or YAML and are read by the
 * same parser the CLI uses (duplicate keys refused, errors without echoing the input).
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

/**
 * Replace fastify's body parsers with ours: each accepted media type is read as a
 * UTF-8 string (within the body limit) and parsed by {@link parseDocument}; any other
 * media type is a 415.
 */
export function registerBodyParsers(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  for (const [mediaType, syntax] of Object.entries(REQUEST_SYNTAX_OF)) {
    app.addContentTypeParser(mediaType, { parseAs: 'string' }, (_request, body, done) => {
      try {
        done(null, parseDocument(body as string, syntax));
      } catch (e) {
        done(e as Error, undefined);
      }
    });
  }
}
