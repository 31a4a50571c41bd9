/**
 * The HTTP service (DESIGN §4): fastify 5 with zod route schemas, OpenAPI, bearer auth,
 * rate limiting, overload shedding, metrics and RFC 9457 errors. Routes only call the
 * pipeline; errors are mapped to problems here, in one place.
 */
import { randomUUID } from 'node:crypto';
import type { Writable } from 'node:stream';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import underPressure from '@fastify/under-pressure';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { createJsonSchemaTransform, createJsonSchemaTransformObject, serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config, Scope } from '../config.js';
import { RequestError } from '../errors.js';
import { AssemblyError } from '../store/assemble.js';
import { AlreadyExistsError, DuplicateSelectorError, InvalidArgumentError, MissingReferenceError, NotFoundError, PreconditionFailedError, ReferencedError } from '../store/errors.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { Store } from '../store/store.js';
import { hasScope, type Principal, TokenTable } from './auth.js';
import { RenderCache } from './cache.js';
import { createMetrics, type Metrics } from './metrics.js';
import { NotAcceptableError, OFFERED_MEDIA_TYPES } from './negotiate.js';
import { problem, PROBLEM_MEDIA_TYPE, type ProblemKind } from './problems.js';
import { bootstrapRoutes } from './routes/bootstrap.js';
import { healthRoutes } from './routes/health.js';
import { renderRoutes } from './routes/render.js';
import { resourceRoutes } from './routes/resources.js';
import { registerBodyParsers, REQUEST_SYNTAX_OF } from './body.js';
import { bootAdminRoutes } from './routes/boot-admin.js';
import { bootRoutes } from './routes/boot.js';
import { urlSigning, type UrlSigning } from './signing.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Scope a caller needs; routes without one are public. */
    scope?: Scope;
  }
  interface FastifyRequest {
    principal?: Principal;
  }
}

/** Everything a route needs from the service. */
export interface ServiceContext {
  config: Config;
  cache: RenderCache;
  metrics: Metrics;
  /** The inventory. */
  store: Store;
  /** Signed firmware URLs: key, lifetime, base URL. */
  signing: UrlSigning;
}

/** Options for {@link buildServer}. */
export interface ServerOptions {
  config: Config;
  /** Where logs go (default stdout); tests capture them here. */
  logStream?: Writable;
  /**
   * The inventory store; the caller keeps ownership (and closes it after the server).
   * Default: a private in-memory SQLite store, closed with the server, which keeps
   * nothing (for tools that only need the routes, such as OpenAPI generation; `serve`
   * passes the file store under the data directory).
   */
  store?: Store;
}

/** Headers and body paths pino must never print. */
const REDACT = ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-api-key"]', 'res.headers["set-cookie"]'];

const SCHEMA_REF = '#/components/schemas/';

/**
 * Keep only the `components.schemas` the document references (transitively), sorted by
 * name. The zod type provider emits an input and an output twin of every named schema;
 * the unused twins would otherwise be dead components in the OpenAPI document.
 */
function usedSchemasOnly<T extends object>(doc: T): T {
  const { components, ...rest } = doc as { components?: { schemas?: Record<string, unknown> } };
  const schemas = components?.schemas;
  if (!schemas) return doc;
  const used = new Set<string>();
  const visit = (node: unknown): void => {
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith(SCHEMA_REF)) {
        const name = value.slice(SCHEMA_REF.length);
        if (!used.has(name)) {
          used.add(name);
          visit(schemas[name]);
        }
      } else visit(value);
    }
  };
  visit(rest);
  const kept = Object.keys(schemas).filter((name) => used.has(name)).sort();
  return { ...rest, components: { ...components, schemas: Object.fromEntries(kept.map((name) => [name, schemas[name]])) } } as T;
}

/**
 * A signed firmware URL is a bearer credential until it expires: logs keep the route and
 * the machine, never the signature (`sig=` in the query, the signature segment of a
 * NoCloud seed path `/nocloud/ID/EXP/SIG/file`).
 */
export function redactSignedUrl(url: string): string {
  return url.replace(/([?&]sig=)[^&#]*/g, '$1[redacted]').replace(/^(\/nocloud\/[^/]+\/[^/]+\/)[^/?#]+/, '$1[redacted]');
}

/** pino's request serializer, as fastify's default but with signed URLs redacted. */
function serializeRequest(request: FastifyRequest): Record<string, unknown> {
  return { method: request.method, url: redactSignedUrl(request.url), host: request.host, remoteAddress: request.ip, remotePort: request.socket.remotePort };
}

/** Send a problem document. */
export function sendProblem(reply: FastifyReply, kind: ProblemKind, status: number, detail: string, errors?: RequestError['problems']): FastifyReply {
  return reply.code(status).type(PROBLEM_MEDIA_TYPE).header('cache-control', 'no-store').send(problem(kind, status, detail, errors));
}

/** fastify's own error codes for body handling, and what they become. */
const FASTIFY_ERRORS: Record<string, [ProblemKind, number, string]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: ['payload-too-large', 413, 'the request body is larger than the limit'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ['unsupported-media-type', 415, `send the request as ${Object.keys(REQUEST_SYNTAX_OF).join(' or ')}`],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ['malformed-request', 400, 'Content-Length does not match the body'],
  FST_ERR_CTP_EMPTY_JSON_BODY: ['malformed-request', 400, 'the request body is empty'],
  FST_ERR_CTP_EMPTY_TYPE: ['malformed-request', 400, 'the Content-Type header is empty'],
  FST_ERR_CTP_INVALID_TYPE: ['unsupported-media-type', 415, 'the Content-Type header is not a valid media type'],
};

/**
 * Map an error to a problem (the one place errors become statuses): request and store
 * errors are the caller's (4xx, naming the field or resource, never a secret value);
 * anything else is logged with the request id and answered 500 without details.
 */
function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (error instanceof AssemblyError) return sendProblem(reply, 'invalid-request', 422, error.detail, error.problems);
  if (error instanceof NotFoundError) return sendProblem(reply, 'not-found', 404, error.message);
  if (error instanceof AlreadyExistsError) return sendProblem(reply, 'conflict', 409, `${error.message}; replace it with PUT`);
  if (error instanceof DuplicateSelectorError) {
    return sendProblem(reply, 'conflict', 409, `${error.message}: two machines would race for one machine's boot; remove it from one of them`, [
      { path: error.field, message: `is already a selector of machine "${error.machine}"` },
    ]);
  }
  if (error instanceof ReferencedError) return sendProblem(reply, 'conflict', 409, `${error.message}; delete them or move them to another ${error.kind.toLowerCase()} first`);
  if (error instanceof PreconditionFailedError) return sendProblem(reply, 'precondition-failed', 412, `If-Match does not name the current revision: ${error.message}; read it again and retry`);
  if (error instanceof MissingReferenceError) {
    return sendProblem(
      reply,
      'invalid-request',
      422,
      'the machine names a cluster or profile that does not exist',
      error.missing.map((m) => ({ path: m.path, message: `${m.kind.toLowerCase()} "${m.name}" does not exist` })),
    );
  }
  if (error instanceof InvalidArgumentError) return sendProblem(reply, 'malformed-request', 400, `${error.field} is not valid`, [{ path: error.field, message: error.reason }]);
  if (error instanceof RequestError) {
    return sendProblem(reply, error.status === 400 ? 'malformed-request' : 'invalid-request', error.status, error.status === 400 ? 'the request body could not be read' : 'the request is not valid', error.problems);
  }
  if (error instanceof NotAcceptableError) {
    return sendProblem(reply, 'not-acceptable', 406, `${error.detail}; offered: ${OFFERED_MEDIA_TYPES.join(', ')}`);
  }
  const known = error.code ? FASTIFY_ERRORS[error.code] : undefined;
  if (known) return sendProblem(reply, known[0], known[1], known[2]);
  if (error.validation) {
    const where = error.validationContext ?? 'request';
    return sendProblem(
      reply,
      'malformed-request',
      400,
      `the ${where} is not valid`,
      error.validation.map((v) => ({ path: `${where}${v.instancePath.replaceAll('/', '.')}`, message: v.message ?? 'invalid' })),
    );
  }
  if (error.statusCode === 429) return sendProblem(reply, 'too-many-requests', 429, 'rate limit exceeded; retry after the time in Retry-After');
  if (error.statusCode === 503) return sendProblem(reply, 'overloaded', 503, 'the service is overloaded; retry after the time in Retry-After');
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return sendProblem(reply, 'malformed-request', error.statusCode, 'the request could not be handled');
  }
  request.log.error({ err: { type: error.name, message: error.message, stack: error.stack } }, 'unhandled error');
  return sendProblem(reply, 'internal', 500, 'internal error; see the service log for the request id');
}

/**
 * Build the service (not yet listening).
 *
 * @param options.config validated configuration ({@link ../config.ts}); must already
 *   hold at least one token (see `ensureAdminToken`).
 * @param options.store the inventory (see {@link ServerOptions.store}).
 */
export async function buildServer(options: ServerOptions): Promise<FastifyInstance> {
  const { config } = options;
  const app = Fastify({
    logger: {
      level: config.logLevel,
      redact: { paths: REDACT, censor: '[redacted]' },
      serializers: { req: serializeRequest },
      ...(options.logStream ? { stream: options.logStream } : {}),
    },
    bodyLimit: config.bodyLimit,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  registerBodyParsers(app, 'document');
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) => sendProblem(reply, 'not-found', 404, `no route for ${request.method} ${request.url.split('?')[0]!}`));

  const store = options.store ?? (await openSqliteStore(':memory:'));
  if (!options.store) app.addHook('onClose', async () => store.close());
  const cache = new RenderCache(config.renderCacheBytes);
  const metrics = createMetrics(cache);
  const tokens = new TokenTable(config.tokens);
  const context: ServiceContext = { config, cache, metrics, store, signing: urlSigning(config) };

  // Callback-style hooks (no promise per request): this is the hot path of every route.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    const scope = request.routeOptions.config.scope;
    if (!scope) {
      done();
      return;
    }
    const principal = tokens.authenticate(request.headers.authorization);
    if (!principal) {
      reply.header('www-authenticate', 'Bearer realm="bootwright"');
      sendProblem(reply, 'unauthorized', 401, 'a valid bearer token is required (Authorization: Bearer <token>)');
      return;
    }
    if (!hasScope(principal, scope)) {
      sendProblem(reply, 'forbidden', 403, `the token lacks the "${scope}" scope`);
      return;
    }
    request.principal = principal;
    done();
  });
  // While closing, responses finishing in flight say `Connection: close`, so keep-alive
  // clients do not hold the process open until the idle timeout.
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    metrics.requestDuration.observe(
      { method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
    done();
  });

  if (config.maxEventLoopDelayMs > 0) {
    await app.register(underPressure, {
      maxEventLoopDelay: config.maxEventLoopDelayMs,
      // Sample four times a second, so overload is noticed (and its end too) within ~250 ms.
      sampleInterval: 250,
      retryAfter: config.retryAfterSeconds,
      exposeStatusRoute: false,
    });
  }
  if (config.rateLimitMax > 0) {
    await app.register(rateLimit, {
      max: config.rateLimitMax,
      timeWindow: config.rateLimitWindowSeconds * 1000,
      keyGenerator: (request) => request.principal?.name ?? request.ip,
      hook: 'preHandler',
      errorResponseBuilder: (_request, ctx) => ({ ...problem('too-many-requests', 429, `rate limit of ${ctx.max} requests per ${config.rateLimitWindowSeconds} s exceeded; retry after ${Math.ceil(ctx.ttl / 1000)} s`), statusCode: 429 }),
    });
  }
  const toComponents = createJsonSchemaTransformObject({ zodToJsonConfig: { unrepresentable: 'any' } });
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'bootwright',
        version: '1.0.0',
        description: 'Turns a Kubernetes node bootstrap request into cloud-init or Ignition bootstrap data.',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      servers: [{ url: 'http://127.0.0.1:8080', description: 'local default' }],
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      tags: [
        { name: 'render', description: 'Stateless rendering of bootstrap data' },
        { name: 'inventory', description: 'Stored clusters, profiles and machines, with revisions' },
        { name: 'operations', description: 'Health, readiness and metrics' },
        { name: 'boot', description: 'Firmware-facing routes for booting machines (no token; secret-bearing ones need a signed URL)' },
      ],
    },
    transform: createJsonSchemaTransform({ skipList: ['/docs', '/docs/*', '/openapi.json'], zodToJsonConfig: { unrepresentable: 'any' } }),
    // Named zod schemas (`.meta({ id })`) become components; without this their $refs dangle.
    transformObject: (doc) => usedSchemasOnly(toComponents(doc)),
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());

  await app.register(healthRoutes, context);
  await app.register(renderRoutes, context);
  await app.register(resourceRoutes, context);
  await app.register(bootstrapRoutes, context);
  await app.register(bootAdminRoutes, context);
  // Firmware-facing (no /v1, no token): under-pressure above sheds them too (503 + Retry-After).
  await app.register(bootRoutes, context);
  return app;
}
