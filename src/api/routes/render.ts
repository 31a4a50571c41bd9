/**
 * `POST /v1/render` (DESIGN §4): a NodeBootstrap in, bootstrap data out, chosen by
 * content negotiation, with a strong ETag, `If-None-Match` → 304 and the render cache.
 */
import { createHash } from 'node:crypto';
import { type FastifyPluginCallbackZod, validatorCompiler } from 'fastify-type-provider-zod';
import { type ZodType, z } from 'zod';
import { CLOUD_CONFIG_MEDIA_TYPE } from '../../provision/cloudinit/render.js';
import { highestSpecAtMost } from '../../provision/ignition/versions.js';
import { IGNITION_MEDIA_TYPE, renderNodeBootstrap, type RenderResult } from '../../render.js';
import { parseNodeBootstrap } from '../../request/parse.js';
import { nodeBootstrapSchema, OUTPUT_FORMATS } from '../../request/schema.js';
import { type RawBody, registerBodyParsers } from '../body.js';
import { renderKey } from '../cache.js';
import { ENVELOPE_MEDIA_TYPE, negotiate } from '../negotiate.js';
import { PROBLEM_MEDIA_TYPE, problemSchema } from '../problems.js';
import type { ServiceContext } from '../server.js';

/** The JSON envelope for OpenAPI clients. */
export const envelopeSchema = z
  .object({
    format: z.enum(OUTPUT_FORMATS),
    mediaType: z.string().describe('media type of data, e.g. application/vnd.coreos.ignition+json; version=3.4.0'),
    data: z.string().describe('the bootstrap data exactly as a node would receive it'),
    sha256: z.string().describe('hex SHA-256 of data (UTF-8)'),
    size: z.int().describe('size of data in bytes'),
    kubeadmApiVersion: z.string(),
    ignitionVersion: z.string().optional(),
    warnings: z.array(z.string()),
  })
  .meta({ id: 'RenderEnvelope' });

/** Envelope bytes, keys in a fixed order. */
function envelope(r: RenderResult): string {
  return JSON.stringify({
    format: r.format,
    mediaType: r.mediaType,
    data: r.body,
    sha256: r.sha256,
    size: r.size,
    kubeadmApiVersion: r.kubeadmApiVersion,
    ...(r.ignitionVersion ? { ignitionVersion: r.ignitionVersion } : {}),
    warnings: r.warnings,
  });
}

/** A strong entity tag from the body's SHA-256 (RFC 9110 §8.8.3). */
export function strongEtag(sha256Hex: string): string {
  return `"${Buffer.from(sha256Hex, 'hex').toString('base64url')}"`;
}

/**
 * `If-None-Match` evaluation (RFC 9110 §13.1.2): `*` or any listed tag equal to ours
 * under weak comparison means the client already has it.
 */
export function noneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  const ours = etag.replace(/^W\//, '');
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === ours);
}

/** The request body as a named OpenAPI component (`NodeBootstrapInput`), documented once for both media types. */
const nodeBootstrapBody = nodeBootstrapSchema.meta({ id: 'NodeBootstrap', description: 'A node bootstrap request (YAML or JSON)' });

const problemContent = { content: { [PROBLEM_MEDIA_TYPE]: { schema: problemSchema } } };

/** The render route. Needs the `render` scope. */
export const renderRoutes: FastifyPluginCallbackZod<ServiceContext> = (app, ctx, done) => {
  // In this plugin's scope only: bodies stay raw text, and the body "validator" passes
  // them through (the schema still documents the body in OpenAPI).
  registerBodyParsers(app, 'raw');
  app.setValidatorCompiler<ZodType>((route) => (route.httpPart === 'body' ? (data: unknown) => ({ value: data }) : validatorCompiler(route)));
  app.post(
    '/v1/render',
    {
      config: { scope: 'render' },
      schema: {
        tags: ['render'],
        operationId: 'renderNodeBootstrap',
        summary: 'Render bootstrap data for a NodeBootstrap',
        description:
          'Format: `?format=` wins, then `Accept` (q-values honoured), then `spec.output.format`, then cloud-config. ' +
          '`application/vnd.coreos.ignition+json; version=X` serves the highest supported Ignition spec not above X; ' +
          '`application/json` wraps the payload in an envelope.',
        security: [{ bearer: [] }],
        consumes: ['application/json', 'application/yaml'],
        querystring: z.object({
          format: z.enum(OUTPUT_FORMATS).optional().describe('payload format; wins over Accept'),
          ignitionVersion: z.string().regex(/^\d+\.\d+(\.\d+)?$/).optional().describe('Ignition spec to serve (highest supported not above it)'),
        }),
        body: nodeBootstrapBody,
        headers: z.object({
          accept: z.string().optional().describe('media types wanted, e.g. application/vnd.coreos.ignition+json;version=3.4.0'),
          'if-none-match': z.string().optional().describe('an ETag from an earlier response; a match answers 304'),
        }),
        response: {
          200: {
            description: 'Bootstrap data',
            content: {
              [CLOUD_CONFIG_MEDIA_TYPE]: { schema: z.string().describe('a #cloud-config document') },
              [IGNITION_MEDIA_TYPE]: { schema: z.record(z.string(), z.unknown()).describe('an Ignition config (spec in the media type version parameter)') },
              [ENVELOPE_MEDIA_TYPE]: { schema: envelopeSchema },
            },
          },
          304: z.undefined().describe('Not modified: If-None-Match matched the ETag'),
          400: { description: 'Malformed body', ...problemContent },
          401: { description: 'Missing or unknown bearer token', ...problemContent },
          403: { description: 'Token lacks the render scope', ...problemContent },
          406: { description: 'No acceptable media type', ...problemContent },
          413: { description: 'Body over the size limit', ...problemContent },
          415: { description: 'Body media type not JSON or YAML', ...problemContent },
          422: { description: 'Invalid request: errors[] names each field', ...problemContent },
          429: { description: 'Rate limit exceeded (Retry-After)', ...problemContent },
          503: { description: 'Overloaded (Retry-After)', ...problemContent },
        },
      },
    },
    async (request, reply) => {
      reply.header('vary', 'Accept');
      // The body arrives unparsed (see registerBodyParsers below): a repeated body is served
      // from the cache without parsing; a new one is parsed and validated exactly as the CLI does.
      const raw = request.body as unknown as RawBody;
      const { req, digest } = ctx.cache.request(raw.text, raw.syntax, () => parseNodeBootstrap(raw.text, raw.syntax));
      const n = negotiate(request.query.format, request.headers.accept, req.spec.output?.format ?? 'cloud-config', (v) => highestSpecAtMost(v) !== undefined);
      const requestedVersion = request.query.ignitionVersion ?? n.ignitionVersion;
      const result = ctx.cache.render(renderKey(digest, n.format, requestedVersion), () =>
        renderNodeBootstrap(req, {
          format: n.format,
          ...(requestedVersion !== undefined ? { ignitionVersion: requestedVersion, ignitionVersionField: request.query.ignitionVersion ? 'ignitionVersion' : 'Accept' } : {}),
        }),
      );
      ctx.metrics.renders.inc({ format: result.format, version: result.ignitionVersion ?? '' });
      const body = n.envelope ? envelope(result) : result.body;
      const etag = strongEtag(n.envelope ? createHash('sha256').update(body).digest('hex') : result.sha256);
      reply.header('etag', etag).header('cache-control', 'private, no-cache');
      if (noneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send();
      const type = n.envelope ? ENVELOPE_MEDIA_TYPE : result.format === 'ignition' ? result.mediaType : `${CLOUD_CONFIG_MEDIA_TYPE}; charset=utf-8`;
      // Bytes, not a string: fastify then sends the media type exactly as given (no added charset).
      return reply.header('content-type', type).send(Buffer.from(body, 'utf8') as unknown as string);
    },
  );
  done();
};
