/**
 * `POST /v1/render` (DESIGN §4): a NodeBootstrap in, bootstrap data out, chosen by
 * content negotiation, with a strong ETag, `If-None-Match` → 304 and the render cache.
 */
import { RequestError } from '../../errors.js';
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { PASSED, routeValidator } from '../validation.js';
import { type ZodType, z } from 'zod';
import { documentLimits } from '../../config.js';
import { nodeBootstrapInputSchema } from '../../request/capi/schema.js';
import { type RawBody, rawText, registerBodyParsers } from '../body.js';
import { deliveryHeaders, deliveryQuery, deliveryResponses, sendBootstrapData } from '../deliver.js';
import { PROBLEM_MEDIA_TYPE, problemSchema } from '../problems.js';
import type { ServiceContext } from '../context.js';

export { envelopeSchema, noneMatch, strongEtag } from '../deliver.js';

/** The request body as a named OpenAPI component (`NodeBootstrapInput`), documented once for both media types. */
const nodeBootstrapBody = nodeBootstrapInputSchema.meta({
  id: 'NodeBootstrap',
  description: 'A node bootstrap request (YAML or JSON); spec.kubeadmConfigSpec or spec.kubeadmConfig take Cluster API input in place of spec.kubeadm and spec.provisioning',
});

const problemContent = { content: { [PROBLEM_MEDIA_TYPE]: { schema: problemSchema } } };

/** The render route. Needs the `render` scope. */
export const renderRoutes: FastifyPluginCallbackZod<ServiceContext> = (app, ctx, done) => {
  // In this plugin's scope only: bodies stay raw text, and the body "validator" passes
  // them through (the schema still documents the body in OpenAPI): on a cache hit the
  // body is neither parsed nor validated, since the cache key is the body itself.
  const limits = documentLimits(ctx.config);
  registerBodyParsers(app, 'raw', limits);
  // The headers schema (Accept, If-None-Match: optional strings) documents them; Node
  // hands every header over as a string already, so validating it would only cost.
  // Neither is assigned back (PASSED, src/api/validation.ts).
  app.setValidatorCompiler<ZodType>((route) => (route.httpPart === 'body' || route.httpPart === 'headers' ? () => PASSED : routeValidator(route)));
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
          '`application/vnd.coreos.ignition+json; version=X` serves the highest supported Ignition 3.x spec not above X, or 2.3.0 when X is 2.3 or later 2.x (older Flatcar; below 2.3 is 406); ' +
          '`application/json` wraps the payload in an envelope.',
        security: [{ bearer: [] }],
        consumes: ['application/json', 'application/yaml'],
        querystring: z.object(deliveryQuery),
        body: nodeBootstrapBody,
        headers: z.object(deliveryHeaders),
        response: {
          ...deliveryResponses,
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
    (request, reply) => {
      // The body arrives undecoded (see registerBodyParsers above): a repeated body is served
      // from the cache by the digest of its bytes, neither decoded nor parsed; a new one is
      // decoded here, then parsed and validated exactly as the CLI does. Parsing and
      // validation of a new body run in the worker pool, sized by the body, and render it
      // as this client negotiates in the same trip.
      const raw = request.body as unknown as RawBody | undefined;
      // No body at all (no Content-Type, or an empty one): fastify calls no parser.
      if (raw === undefined) throw new RequestError([{ path: '', message: 'a NodeBootstrap is required as the body (application/json or application/yaml)' }], 400);
      const key = ctx.cache.bodyKey(raw.bytes, raw.syntax);
      const known = ctx.cache.peekBody(key);
      if (known) return sendBootstrapData(ctx, request, reply, known, request.query);
      const text = rawText(raw);
      return ctx.cache
        .request(key, () => ctx.pool.run({ op: 'parse', text, syntax: raw.syntax, limits, render: { accept: request.headers.accept, query: request.query } }, raw.bytes.length))
        .then((loaded) => sendBootstrapData(ctx, request, reply, loaded, request.query));
    },
  );
  done();
};
