/**
 * The HTTP service (DESIGN §4): fastify 5 with zod route schemas, OpenAPI, bearer auth,
 * rate limiting, overload shedding, metrics and RFC 9457 errors. Routes only call the
 * pipeline; errors are mapped to problems here, in one place.
 */
import { randomUUID } from 'node:crypto';
import { parse as parseQueryString } from 'node:querystring';
import type { Writable } from 'node:stream';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import underPressure from '@fastify/under-pressure';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { createJsonSchemaTransform, createJsonSchemaTransformObject, serializerCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { type Config, documentLimits, type Scope } from '../config.js';
import { RequestError } from '../errors.js';
import { AssemblyError } from '../store/assemble.js';
import { AlreadyExistsError, DiscoveredNotFoundError, DuplicateSelectorError, InvalidArgumentError, MissingReferenceError, NotFoundError, PreconditionFailedError, ReferencedError } from '../store/errors.js';
import { storageFault } from '../store/faults.js';
import { openSqliteStore } from '../store/sqlite.js';
import type { Store } from '../store/store.js';
import { hasScope, type Principal, TokenTable } from './auth.js';
import { RenderCache } from './cache.js';
import { lazyChildLogger } from './logger.js';
import { routeValidator } from './validation.js';
import { BodyDeadlines } from './deadlines.js';
import { Prerenderer } from './prerender.js';
import { MintedTokens, TokenSweep } from '../boot/tokens.js';
import { WorkloadClusters, WorkloadUnavailableError } from '../kube/workload.js';
import { createMetrics, type Metrics } from './metrics.js';
import { NotAcceptableError, OFFERED_MEDIA_TYPES } from './negotiate.js';
import { problem, type ProblemKind } from './problems.js';
import { type ServiceContext, stalledBefore } from './context.js';
import { answerClientError, sendProblem, storageUnavailable } from './replies.js';
import { bootstrapRoutes } from './routes/bootstrap.js';
import { healthRoutes } from './routes/health.js';
import { renderRoutes } from './routes/render.js';
import { resourceRoutes } from './routes/resources.js';
import { registerBodyParsers, REQUEST_SYNTAX_OF, UnsupportedCharsetError } from './body.js';
import { bootAdminRoutes } from './routes/boot-admin.js';
import { bootRoutes } from './routes/boot.js';
import { assetRoutes } from './routes/assets.js';
import { ASSETS_PREFIX } from '../boot/ipxe.js';
import { fleetRoutes } from './routes/fleet.js';
import { uiRoutes } from './routes/ui.js';
import { urlSigning } from './signing.js';
import { PACKAGE_VERSION } from '../version.js';
import { MIN_TLS_VERSION } from '../tls/credentials.js';
import { caRoutes } from './routes/ca.js';
import { cameInPlain, PLAIN_ROUTES } from './plain.js';
import { ANY_HOST_ROUTES, hostAllowed } from './hosts.js';
import { withExamples } from './openapi-examples.js';
import { RenderOverloadedError, RenderPool, RenderTimeoutError } from '../work/pool.js';
import { warmUpTasks } from '../work/warmup.js';
import { REPORT_PATH } from '../boot/sign.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Scope a caller needs, or every scope of a list; routes without one are public. */
    scope?: Scope | readonly Scope[];
    /** Why the route needs more than one scope, for the 403 detail. */
    scopeReason?: string;
  }
  interface FastifyRequest {
    principal?: Principal;
  }
}

/** The HTTPS listener's credentials (src/tls/). */
export interface ServerTls {
  /** PEM: the serving certificate, then its chain. */
  cert: string;
  /** PEM private key. */
  key: string;
  /** PEM of the issuing CA, if known ({@link ServiceContext.tlsCa}). */
  ca?: string;
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
  /** Listen on HTTPS with these (TLS 1.2 and later); default plain HTTP. */
  tls?: ServerTls;
  /** Only the CA, for a plain-HTTP server whose TLS is terminated in front of it (tests, tools). */
  tlsCa?: string;
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

/** The shape of a URL signature (src/boot/sign.ts): HMAC-SHA256 in base64url, 43 characters. */
const SIGNATURE_SHAPE = /^[A-Za-z0-9_-]{43}$/;

/** `text` with its ASCII percent-escapes decoded (the router and the query parser decode them; a signature is ASCII). */
const decodeAscii = (text: string) => text.replace(/%[0-7][0-9A-Fa-f]/g, (e) => String.fromCharCode(parseInt(e.slice(1), 16)));

/** Whether a decoded path segment or query value has a signature's shape and is no DNS-1123 name (it has an upper-case letter or `_`). */
const signatureLike = (decoded: string) => SIGNATURE_SHAPE.test(decoded) && /[A-Z_]/.test(decoded);

/**
 * A signed firmware URL is a bearer credential until it expires: logs keep the route and
 * the machine, never the signature. Judged on the URL as the router and the query parser
 * read it (percent-escapes decoded: `%73ig=` is `sig=`, `/%6eocloud/` is `/nocloud/`),
 * whatever route it reached (a 404 included), and redacted:
 * - the value of every `sig` query parameter;
 * - the signature segment of a NoCloud seed path (`…/nocloud/ID/EXP/SIG/…`);
 * - any other path segment or query value shaped like a signature (43 base64url
 *   characters with an upper-case letter or `_`: never a resource name).
 * What is not redacted is logged as it came.
 */
export function redactSignedUrl(url: string): string {
  const q = url.indexOf('?');
  const segments = (q < 0 ? url : url.slice(0, q)).split('/');
  const decoded = segments.map(decodeAscii);
  const path = segments.map((raw, i) => (signatureLike(decoded[i]!) || (i >= 3 && decoded[i - 3] === 'nocloud') ? '[redacted]' : raw)).join('/');
  if (q < 0) return path;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 0) return pair;
      const key = decodeAscii(pair.slice(0, eq)).replaceAll('+', ' ');
      return key === 'sig' || signatureLike(decodeAscii(pair.slice(eq + 1))) ? `${pair.slice(0, eq)}=[redacted]` : pair;
    })
    .join('&');
  return `${path}?${query}`;
}

/** pino's request serializer, as fastify's default but with signed URLs redacted. */
function serializeRequest(request: FastifyRequest): Record<string, unknown> {
  return { method: request.method, url: redactSignedUrl(request.url), host: request.host, remoteAddress: request.ip, remotePort: request.socket.remotePort };
}

/**
 * The OpenAPI `servers` of a served document: `BOOTWRIGHT_PUBLIC_URL` when configured,
 * else the scheme and Host of the request that asked for it (the address the caller
 * reached, so /docs' "Try it out" calls the same service), else the listen default.
 */
export function serversFor(ctx: ServiceContext, request: FastifyRequest): { url: string; description: string }[] {
  if (ctx.config.publicUrl !== undefined) return [{ url: ctx.config.publicUrl, description: 'this service (BOOTWRIGHT_PUBLIC_URL)' }];
  try {
    return [{ url: ctx.signing.baseUrl(request), description: 'this service, as this request reached it' }];
  } catch {
    return [{ url: 'http://127.0.0.1:8080', description: 'local default' }];
  }
}

/** Whether the request declares a body that Node has not received whole yet. */
function unreadBody(request: FastifyRequest): boolean {
  const { headers } = request;
  const declared = (headers['content-length'] !== undefined && headers['content-length'] !== '0') || headers['transfer-encoding'] !== undefined;
  return declared && !request.raw.complete;
}

/** The `&`-separated pairs of a request target's query (0 without one), by one scan. */
function queryPairs(url: string): number {
  const start = url.indexOf('?');
  if (start < 0 || start === url.length - 1) return 0;
  let pairs = 1;
  for (let i = start + 1; i < url.length; i++) if (url.charCodeAt(i) === 0x26) pairs++;
  return pairs;
}

/** The subject of a schema validation's detail, by fastify's validation context (errors[] paths keep the context's name). */
const VALIDATION_SUBJECT: Record<string, string> = {
  body: 'the request body is',
  params: 'the path parameters are',
  querystring: 'the query string is',
  headers: 'the request headers are',
};

/** fastify's own error codes for body handling, and what they become. */
const FASTIFY_ERRORS: Record<string, [ProblemKind, number, string]> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ['unsupported-media-type', 415, `send the request as ${Object.keys(REQUEST_SYNTAX_OF).join(' or ')}`],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ['malformed-request', 400, 'Content-Length does not match the body'],
  FST_ERR_CTP_EMPTY_JSON_BODY: ['malformed-request', 400, 'the request body is empty'],
  FST_ERR_CTP_EMPTY_TYPE: ['malformed-request', 400, 'the Content-Type header is empty'],
  FST_ERR_CTP_INVALID_TYPE: ['unsupported-media-type', 415, 'the Content-Type header is not a valid media type'],
};

/**
 * Map an error to a problem (the one place errors become statuses): request and store
 * errors are the caller's (4xx, naming the field or resource, never a secret value);
 * storage faults (full disk, I/O error, database down) are 503 with `Retry-After`;
 * anything else is logged with the request id and answered 500 without details.
 */
function handleError(this: { config: Config; metrics: Metrics }, error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const fault = storageFault(error);
  if (fault) return reply.send(storageUnavailable(this, request, reply, fault));
  if (error instanceof AssemblyError) return sendProblem(reply, 'invalid-request', 422, error.detail, error.problems);
  if (error instanceof NotFoundError || error instanceof DiscoveredNotFoundError) return sendProblem(reply, 'not-found', 404, error.message);
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
      [...error.missing.map((m) => ({ path: m.path, message: `${m.kind.toLowerCase()} "${m.name}" does not exist` })), ...error.others],
    );
  }
  if (error instanceof InvalidArgumentError) return sendProblem(reply, 'malformed-request', 400, `${error.field} is not valid`, [{ path: error.field, message: error.reason }]);
  if (error instanceof RequestError) {
    if (error.status === 413) return sendProblem(reply, 'payload-too-large', 413, 'the request is over a configured limit (named in errors[])', error.problems);
    return sendProblem(reply, error.status === 400 ? 'malformed-request' : 'invalid-request', error.status, error.status === 400 ? 'the request body could not be read' : 'the request is not valid', error.problems);
  }
  if (error instanceof UnsupportedCharsetError) return sendProblem(reply, 'unsupported-media-type', 415, `${error.message}: send the body in UTF-8 (charset=utf-8 or none)`, [{ path: 'Content-Type', message: error.message }]);
  if (error instanceof NotAcceptableError) {
    return sendProblem(reply, 'not-acceptable', 406, `${error.detail}; offered: ${OFFERED_MEDIA_TYPES.join(', ')}`);
  }
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    // fastify checks the route's bodyLimit against Content-Length, then while reading.
    const limit = request.routeOptions.bodyLimit;
    const setting = request.routeOptions.url === REPORT_PATH ? 'BOOTWRIGHT_MAX_REPORT_BYTES' : limit === this.config.bodyLimit ? 'BOOTWRIGHT_BODY_LIMIT' : undefined;
    const named = `${limit} bytes${setting ? ` (${setting})` : ''}`;
    return sendProblem(reply, 'payload-too-large', 413, `the request body is larger than this route's limit of ${named}`, [{ path: 'body', message: `is over ${named}` }]);
  }
  const known = error.code ? FASTIFY_ERRORS[error.code] : undefined;
  if (known) return sendProblem(reply, known[0], known[1], known[2]);
  if (error.validation) {
    const where = error.validationContext ?? 'request';
    return sendProblem(
      reply,
      'malformed-request',
      400,
      `${VALIDATION_SUBJECT[where] ?? `the ${where} is`} not valid`,
      error.validation.map((v) => ({ path: `${where}${v.instancePath.replaceAll('/', '.')}`, message: v.message ?? 'invalid' })),
    );
  }
  if (error instanceof WorkloadUnavailableError) {
    void reply.header('retry-after', String(this.config.retryAfterSeconds));
    request.log.warn({ cluster: error.cluster, reason: error.reason }, 'a bootstrap token could not be minted');
    return sendProblem(reply, 'unavailable', 503, `${error.detail}; retry after the time in Retry-After`);
  }
  if (error instanceof RenderOverloadedError || error instanceof RenderTimeoutError) {
    void reply.header('retry-after', String(this.config.retryAfterSeconds));
    return sendProblem(reply, 'overloaded', 503, `${error.message}; retry after the time in Retry-After`);
  }
  if (error.statusCode === 429) return sendProblem(reply, 'too-many-requests', 429, 'rate limit exceeded; retry after the time in Retry-After');
  if (error.statusCode === 503) return sendProblem(reply, 'overloaded', 503, 'the service is overloaded; retry after the time in Retry-After');
  if (error.statusCode === 416) {
    // A Range past the end of an asset (`send`): say how long the file is (RFC 9110 §15.5.17).
    const range = (error as { headers?: Record<string, string> }).headers?.['Content-Range'];
    if (range !== undefined) void reply.header('content-range', range);
    return sendProblem(reply, 'malformed-request', 416, `the requested range is not within the file${range !== undefined ? ` (${range})` : ''}`);
  }
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return sendProblem(reply, 'malformed-request', error.statusCode, 'the request could not be handled');
  }
  request.log.error({ err: { type: error.name, message: error.message, stack: error.stack } }, 'unhandled error');
  return sendProblem(reply, 'internal', 500, 'internal error; see the service log for the request id');
}

/** Milliseconds between under-pressure's samples of the event-loop delay: overload (and its end) is noticed within this. */
const PRESSURE_SAMPLE_MS = 250;

/**
 * Build the service (not yet listening).
 *
 * @param options.config validated configuration ({@link ../config.ts}); must already
 *   hold at least one token (see `ensureAdminToken`).
 * @param options.store the inventory (see {@link ServerOptions.store}).
 */
export async function buildServer(options: ServerOptions): Promise<FastifyInstance> {
  const { config } = options;
  const httpOptions = { maxHeaderSize: config.maxHeaderBytes, connectionsCheckingInterval: Math.min(1000, Math.max(100, Math.round((config.requestTimeoutSeconds * 1000) / 4))) };
  const app = Fastify({
    // HTTPS (issue 16): TLS 1.2 and later; the same header limit and request timer as HTTP.
    // Either way HTTP/1.1 with keep-alive (fastify's default keepAliveTimeout, 72 s).
    ...((options.tls
      ? { https: { ...httpOptions, cert: options.tls.cert, key: options.tls.key, minVersion: MIN_TLS_VERSION } }
      : { http: httpOptions }) as { http: typeof httpOptions }),
    logger: {
      level: config.logLevel,
      redact: { paths: REDACT, censor: '[redacted]' },
      serializers: { req: serializeRequest },
      ...(options.logStream ? { stream: options.logStream } : {}),
    },
    bodyLimit: config.bodyLimit,
    // X-Forwarded-* from the configured proxies only (BOOTWRIGHT_TRUSTED_PROXIES).
    ...(config.trustedProxies.length > 0 ? { trustProxy: config.trustedProxies } : {}),
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    // The request's child logger is made when the request logs, not for every request.
    childLoggerFactory: lazyChildLogger,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // At most maxQueryParameters pairs are read: firmware routes ignore the rest (iPXE
    // gives up on anything but a 503); token routes refuse more (onRequest below).
    routerOptions: { querystringParser: (text) => parseQueryString(text, '&', '=', { maxKeys: config.maxQueryParameters }) },
    // A whole request (headers and body) within requestTimeoutSeconds, else 408 and the
    // connection closed: Node's own timer, which also cuts a body trickled byte by byte.
    requestTimeout: Math.round(config.requestTimeoutSeconds * 1000),
    clientErrorHandler: answerClientError,
    // Router errors as problems, never echoing the path (a NoCloud seed path carries a signature).
    frameworkErrors: (error, _request, reply) => {
      if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') void sendProblem(reply, 'malformed-request', 414, 'a path segment is longer than the router reads (100 characters)');
      else void sendProblem(reply, 'malformed-request', 400, 'the request target is not a valid URL (bad percent-encoding)');
    },
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(routeValidator);
  registerBodyParsers(app, 'document', documentLimits(config));
  app.setSerializerCompiler(serializerCompiler);
  app.setNotFoundHandler((request, reply) => sendProblem(reply, 'not-found', 404, `no route for ${request.method} ${request.url.split('?')[0]!}`));

  const store = options.store ?? (await openSqliteStore(':memory:'));
  if (!options.store) app.addHook('onClose', async () => store.close());
  const cache = new RenderCache(config.renderCacheBytes);
  const pool = new RenderPool({
    workers: config.renderWorkers,
    queue: config.renderQueue,
    timeoutMs: Math.round(config.renderTimeoutSeconds * 1000),
    inlineBytes: config.renderInlineBytes,
  });
  // After in-flight requests (which may wait on the pool): queued renders finish, then the threads stop.
  app.addHook('onClose', async () => pool.close());
  // A listening service loads the render pipeline into its workers up front; routes
  // injected in tests start them on their first miss.
  app.addHook('onListen', (done) => {
    // /readyz answers 503 until the threads have loaded and warmed up (RenderPool.starting).
    const rounds = config.renderWarmupRounds;
    const warmUp = rounds > 0 ? { tasks: warmUpTasks(config.prerenderIgnitionVersions.split(','), config.publicUrl), rounds } : undefined;
    const t0 = performance.now();
    void pool.warm(warmUp).then(() => {
      if (warmUp) app.log.info({ ...pool.warmedUp, ms: Math.round(performance.now() - t0) }, 'render pipeline warmed up (BOOTWRIGHT_RENDER_WARMUP_ROUNDS)');
    });
    // Every registered machine's data into the cache before its first boot (in the background).
    void prerender.enqueueAll();
    done();
  });
  const tokens = new TokenTable(config.tokens);
  const tlsCa = options.tls?.ca ?? options.tlsCa;
  const partial = { config, cache, store, signing: urlSigning(config), pool, tokens, https: options.tls !== undefined, ...(tlsCa !== undefined ? { tlsCa } : {}) } as Omit<ServiceContext, 'metrics' | 'prerender'>;
  const prerender = new Prerenderer(partial as ServiceContext, app.log);
  const metrics = createMetrics(cache, pool, prerender, () => store.fleet(stalledBefore(config, new Date())));
  const workloads = new WorkloadClusters(config);
  const mintedTokens = new MintedTokens(store, workloads, app.log, metrics.bootstrapTokens);
  const context: ServiceContext = Object.assign(partial, { metrics, prerender, workloads, mintedTokens });
  // Minted tokens are refreshed until their nodes join, then deleted (src/boot/tokens.ts).
  const sweep = new TokenSweep(mintedTokens, config.tokenSweepSeconds * 1000, app.log);
  app.addHook('onListen', (done) => {
    sweep.start();
    done();
  });
  app.addHook('preClose', (done) => {
    prerender.close();
    done();
  });
  app.addHook('onClose', async () => sweep.stop());
  app.setErrorHandler(handleError.bind({ config, metrics }));

  // Node's requestTimeout cuts a request whose headers are late, but not a body trickled
  // after them: that is cut here, requestTimeoutSeconds after the headers arrived (408
  // problem, then the connection is closed). One sweep over the bodies still arriving,
  // not a timer per request (src/api/deadlines.ts).
  const requestTimeoutMs = Math.round(config.requestTimeoutSeconds * 1000);
  const bodies = new BodyDeadlines(requestTimeoutMs, (request, reply) => {
    reply.raw.once('finish', () => request.raw.socket.destroy());
    void reply.header('connection', 'close');
    sendProblem(reply, 'malformed-request', 408, `the request body was not received within ${config.requestTimeoutSeconds} s (BOOTWRIGHT_REQUEST_TIMEOUT_SECONDS)`);
  });
  app.addHook('onClose', (_app, done) => {
    bodies.close();
    done();
  });
  // One callback-style onRequest hook (no promise per request, one hook call): this is
  // the hot path of every route. On HTTPS, the plain-HTTP listener (plain.ts) serves the
  // iPXE routes only.
  const tls = options.tls !== undefined;
  const allowedHosts = config.allowedHosts;
  app.addHook('onRequest', (request, reply, done) => {
    if (!request.raw.complete) bodies.watch(request, reply);
    reply.header('x-request-id', request.id);
    if (allowedHosts.length > 0 && !ANY_HOST_ROUTES.has(request.routeOptions.url ?? '') && !hostAllowed(request.host, allowedHosts)) {
      sendProblem(reply, 'misdirected-request', 421, 'the Host header names none of the hosts this service answers to (BOOTWRIGHT_ALLOWED_HOSTS)');
      return;
    }
    if (tls && cameInPlain(request.raw) && !PLAIN_ROUTES.has(request.routeOptions.url ?? '')) {
      sendProblem(reply, 'not-found', 404, `only ${[...PLAIN_ROUTES].join(', ')} are served over plain HTTP; use https`);
      return;
    }
    const scope = request.routeOptions.config.scope;
    if (!scope) {
      done();
      return;
    }
    const principal = tokens.authenticateOn(request.raw.socket, request.headers.authorization);
    if (!principal) {
      reply.header('www-authenticate', 'Bearer realm="bootwright"');
      sendProblem(reply, 'unauthorized', 401, 'a valid bearer token is required (Authorization: Bearer <token>)');
      return;
    }
    const needed: readonly Scope[] = typeof scope === 'string' ? [scope] : scope;
    const missing = needed.filter((s) => !hasScope(principal, s));
    if (missing.length > 0) {
      const reason = request.routeOptions.config.scopeReason;
      sendProblem(reply, 'forbidden', 403, `the token lacks the ${missing.map((s) => `"${s}"`).join(' and ')} scope${missing.length > 1 ? 's' : ''}${reason ? `: ${reason}` : ''}`);
      return;
    }
    request.principal = principal;
    const pairs = queryPairs(request.url);
    if (pairs > config.maxQueryParameters) {
      sendProblem(reply, 'malformed-request', 400, 'too many query parameters', [
        { path: 'query', message: `has ${pairs} parameters; the limit is ${config.maxQueryParameters} (BOOTWRIGHT_MAX_QUERY_PARAMETERS)` },
      ]);
      return;
    }
    done();
  });
  // While closing, responses finishing in flight say `Connection: close`, so keep-alive
  // clients do not hold the process open until the idle timeout.
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  // An answer sent before the request's body was read (auth, 413 by Content-Length, 415)
  // closes the connection too: Node would otherwise read and discard the rest of the body,
  // however long, to keep the connection alive.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (closing || unreadBody(request)) reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    bodies.release(request);
    metrics.requestDuration.observe(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  if (config.maxEventLoopDelayMs > 0) {
    // under-pressure measures from when it is registered, so its first samples after
    // listening hold the service's own start (loading the routes and the store: over a
    // second on a loaded machine, which shed a fresh process's first request). Until a
    // sample has measured only time after listening (two periods), a delay verdict does
    // not shed; the render queue bound still does.
    // Before listening (routes injected in tests) every verdict counts.
    let trustedFrom = Number.NEGATIVE_INFINITY;
    app.addHook('onListen', (done) => {
      trustedFrom = performance.now() + 2 * PRESSURE_SAMPLE_MS;
      done();
    });
    await app.register(underPressure, {
      maxEventLoopDelay: config.maxEventLoopDelayMs,
      sampleInterval: PRESSURE_SAMPLE_MS,
      exposeStatusRoute: false,
      pressureHandler: async (_request, reply, type) => {
        if (type === 'eventLoopDelay' && performance.now() < trustedFrom) return;
        void reply.header('retry-after', String(config.retryAfterSeconds));
        throw Object.assign(new Error('the service is overloaded'), { statusCode: 503 });
      },
    });
  }
  if (config.rateLimitMax > 0) {
    await app.register(rateLimit, {
      max: config.rateLimitMax,
      timeWindow: config.rateLimitWindowSeconds * 1000,
      keyGenerator: (request) => request.principal?.name ?? request.ip,
      // Kernels and initrds, fetched by every machine of a boot storm, often behind one
      // NAT address, by firmware that does not retry a 429: as the other firmware routes.
      allowList: (request) => request.routeOptions.url?.startsWith(ASSETS_PREFIX) === true,
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
        version: PACKAGE_VERSION,
        description: 'Turns a Kubernetes node bootstrap request into cloud-init or Ignition bootstrap data.',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      // As committed (npm run openapi); /openapi.json and /docs name the service itself (serversFor).
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
    transformObject: (doc) => withExamples(usedSchemasOnly(toComponents(doc))),
  });
  /** The document as served: its servers list names this service as the caller reached it. */
  const served = (spec: Readonly<Record<string, unknown>>, request: FastifyRequest) => ({ ...spec, servers: serversFor(context, request) });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    theme: { title: 'bootwright API' },
    transformSpecification: (spec, request) => served(spec, request),
    transformSpecificationClone: false,
  });
  app.get('/openapi.json', { schema: { hide: true } }, (request) => served(app.swagger() as unknown as Record<string, unknown>, request));

  await app.register(healthRoutes, context);
  await app.register(renderRoutes, context);
  await app.register(resourceRoutes, context);
  await app.register(bootstrapRoutes, context);
  await app.register(bootAdminRoutes, context);
  await app.register(fleetRoutes, context);
  // Under /ui, so the page's own not-found handler (an HTML 404) answers its paths.
  await app.register(
    (ui, _options, done) => {
      void ui.register(uiRoutes, context);
      done();
    },
    { prefix: '/ui' },
  );
  // Firmware-facing (no /v1, no token): under-pressure above sheds them too (503 + Retry-After).
  await app.register(bootRoutes, context);
  await app.register(caRoutes, context);
  await app.register(assetRoutes, context);
  return app;
}
