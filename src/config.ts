/**
 * Service configuration: defaults, overridden by an optional file (`BOOTWRIGHT_CONFIG`,
 * YAML or JSON), overridden by environment variables. Validated by zod; a bad value is
 * an error naming the variable or key.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { load } from 'js-yaml';
import { z } from 'zod';
import { DEFAULT_DOCUMENT_LIMITS, type DocumentLimits } from './request/bounds.js';
import { zodProblems } from './request/parse.js';
import { DEFAULT_LABEL_SELECTOR_LIMITS } from './store/selector.js';
import { isAllowedHostEntry } from './api/hosts.js';

export const SCOPES = ['read', 'render', 'write', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

const tokenSchema = z
  .strictObject({
    name: z.string().min(1),
    /** The token itself (hashed at load, never kept) … */
    token: z.string().min(16).optional(),
    /** … or its hex SHA-256, so the file need not hold the secret. */
    sha256: z.string().regex(/^[0-9a-f]{64}$/).optional(),
    scopes: z.array(z.enum(SCOPES)).min(1),
  })
  .refine((t) => (t.token === undefined) !== (t.sha256 === undefined), 'give exactly one of token or sha256');

/** A switch: a boolean, or the text `true` / `false` (environment variables). Default false. */
const flag = z
  .union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')], { error: 'must be true or false' })
  .default(false);

export const configSchema = z.strictObject({
  /** Listen address. */
  host: z.string().default('127.0.0.1'),
  /** Listen port (0 picks a free one). */
  port: z.coerce.number().int().min(0).max(65535).default(8080),
  /** Data directory (generated admin token, later the SQLite store). */
  dataDir: z.string().default('./data'),
  /** Largest request body, bytes. */
  bodyLimit: z.coerce.number().int().min(1024).default(1024 * 1024),
  /** Deepest nesting of a body's mappings and sequences, YAML aliases expanded. */
  maxDepth: z.coerce.number().int().min(8).max(1000).default(DEFAULT_DOCUMENT_LIMITS.maxDepth),
  /** Values in a body (mappings, sequences, scalars), YAML aliases expanded. */
  maxNodes: z.coerce.number().int().min(100).default(DEFAULT_DOCUMENT_LIMITS.maxNodes),
  /** Items in any one list of a body (files, users, mounts, commands, …). */
  maxListItems: z.coerce.number().int().min(1).default(DEFAULT_DOCUMENT_LIMITS.maxListItems),
  /** Characters of a body's keys and strings, YAML aliases expanded. */
  maxDocumentChars: z.coerce.number().int().min(1024).default(DEFAULT_DOCUMENT_LIMITS.maxDocumentChars),
  /** YAML aliases in one body. */
  maxAliases: z.coerce.number().int().min(0).default(DEFAULT_DOCUMENT_LIMITS.maxAliases),
  /** Seconds a client has to send a request's headers, and again its body (else 408 and the connection is closed). */
  requestTimeoutSeconds: z.coerce.number().min(0.1).default(30),
  /** Largest request header section (request line and headers), bytes; more is a 431. */
  maxHeaderBytes: z.coerce.number().int().min(1024).max(1024 * 1024).default(16 * 1024),
  /** Characters of a `labelSelector` query parameter. */
  maxLabelSelectorChars: z.coerce.number().int().min(16).default(DEFAULT_LABEL_SELECTOR_LIMITS.maxChars),
  /** Terms (`key=value`) of a `labelSelector`. */
  maxLabelSelectorTerms: z.coerce.number().int().min(1).default(DEFAULT_LABEL_SELECTOR_LIMITS.maxTerms),
  /** Query parameters a request may carry (firmware routes ignore the unknown ones up to this). */
  maxQueryParameters: z.coerce.number().int().min(4).default(32),
  /**
   * Worker threads that parse, validate and render cache misses (src/work/pool.ts);
   * 0 renders on the main thread. Default: the available cores.
   */
  renderWorkers: z.coerce.number().int().min(0).max(256).default(availableParallelism()),
  /** Renders that may wait for a worker; one more is answered 503 with Retry-After. */
  renderQueue: z.coerce.number().int().min(1).default(256),
  /** Seconds a render may run in a worker (time queued not counted); then the worker is terminated and the request answered 503 with Retry-After. */
  renderTimeoutSeconds: z.coerce.number().min(0.01).default(10),
  /**
   * Tasks whose input (a body, a machine's assembly parts or an assembled request, as
   * JSON) is at most this many bytes run on the main thread; 0: none do. Default 4096:
   * measured on 2 cores (bench/README.md), a worker's round trip costs about what a
   * render of a 3 KB body does, so a smaller render is faster inline and blocks the
   * event loop for under a millisecond, while a 7 KB body renders 1.3× faster pooled.
   */
  renderInlineBytes: z.coerce.number().int().min(0).default(4096),
  /**
   * Rounds of the start-up warm-up (src/work/warmup.ts): before /readyz answers 200,
   * each render thread assembles and renders the example machines this many times, so
   * the first boots after a start meet compiled code. 0 skips it. Default 200: about a second
   * more before readiness on 2 cores (bench/README.md).
   */
  renderWarmupRounds: z.coerce.number().int().min(0).max(10_000).default(200),
  /**
   * Machines waiting to be pre-rendered (their bootstrap data rendered into the render
   * cache ahead of their first boot: at start, and when a machine, its cluster or its
   * profile is written); beyond it a machine is not pre-rendered (its first boot renders
   * it). 0 turns pre-rendering off.
   */
  prerenderMax: z.coerce.number().int().min(0).default(10_000),
  /**
   * The Ignition specs pre-rendered for machines whose profile's format is Ignition, as
   * Ignition's `Accept` names them (`version=3.4.0`), comma-separated; the specs
   * machines actually asked for since the start are added (at most four in all).
   */
  prerenderIgnitionVersions: z
    .string()
    .regex(/^\d+\.\d+\.\d+(,\d+\.\d+\.\d+)*$/, 'must be comma-separated Ignition spec versions, e.g. 3.4.0,3.5.0')
    .default('3.4.0'),
  /**
   * Milliseconds the SQLite store gathers the boot routes' writes (audit rows, fetch
   * counters, discovered machines) to commit them in one transaction; an answer that
   * needs its write still waits for its commit. 0 commits each write alone.
   */
  sqliteBatchMs: z.coerce.number().min(0).max(100).default(2),
  /** Render cache bound, bytes of cached bodies. 0 disables the cache. */
  renderCacheBytes: z.coerce.number().int().min(0).default(64 * 1024 * 1024),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  tokens: z.array(tokenSchema).default([]),
  /** Requests per `rateLimitWindowSeconds` per token (or client address); 0 turns rate limiting off. */
  rateLimitMax: z.coerce.number().int().min(0).default(1200),
  rateLimitWindowSeconds: z.coerce.number().int().min(1).default(60),
  /** Event-loop delay, milliseconds, above which requests get 503 + Retry-After. 0 turns it off. */
  maxEventLoopDelayMs: z.coerce.number().int().min(0).default(1000),
  /** Retry-After on overload, seconds. */
  retryAfterSeconds: z.coerce.number().int().min(1).default(5),
  /**
   * The base URL booting machines reach the service at (`http://10.0.0.1:8080`), used in
   * iPXE scripts and signed URLs. Default: the request's own scheme and Host header.
   */
  publicUrl: z
    .string()
    .refine((v) => {
      try {
        const u = new URL(v);
        return (u.protocol === 'http:' || u.protocol === 'https:') && u.username === '' && u.password === '';
      } catch {
        return false;
      }
    }, 'must be an absolute http(s) URL without credentials')
    .optional(),
  /**
   * A PostgreSQL connection URL (`postgres://user:password@host:5432/db`): when set, the
   * inventory is in PostgreSQL (several replicas may share it) instead of SQLite under
   * the data directory.
   */
  databaseUrl: z
    .string()
    .refine((v) => {
      try {
        const u = new URL(v);
        return u.protocol === 'postgres:' || u.protocol === 'postgresql:';
      } catch {
        return false;
      }
    }, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  /**
   * Most connections to PostgreSQL each process opens (node-postgres `Pool` `max`): every
   * replica's, summed, must stay under the server's `max_connections`.
   */
  databasePoolSize: z.coerce.number().int().min(1).max(1000).default(10),
  /** Key for signed firmware URLs, hex or base64 (at least 32 bytes). Default: generated into the data directory. */
  urlSigningKey: z.string().optional(),
  /** Lifetime of signed firmware URLs, seconds. */
  signedUrlSeconds: z.coerce.number().int().min(1).default(3600),
  /** How long a status-page session lasts after signing in, seconds (src/api/session.ts). */
  uiSessionSeconds: z.coerce.number().int().min(60).default(12 * 3600),
  /**
   * Machine (id) that `/ipxe` answers for a machine matching no selector, e.g. a
   * discovery or installer image. Default: none (unknown machines get a retry script).
   */
  /**
   * Most machines a cluster or profile write render-checks (every machine naming it is
   * assembled and rendered before the write is stored); a write affecting more is a 422
   * naming this limit.
   */
  writeCheckMaxMachines: z.coerce.number().int().min(1).default(1000),
  defaultMachine: z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a machine id (DNS-1123 label)').optional(),
  /**
   * Store writes that unauthenticated firmware requests may cause per client address
   * per minute: sightings of unknown machines (`/v1/discovered`) and audit rows of
   * refusals. Beyond it they are not written (the answer is the same) and are counted.
   * 0 turns the limit off.
   */
  unauthenticatedWritesPerMinute: z.coerce.number().int().min(0).default(60),
  /**
   * Identical refusals (same machine, route, client address and status) write one audit
   * row per this many seconds; the rest are counted as sampled. 0 writes every one.
   */
  refusedAuditIntervalSeconds: z.coerce.number().int().min(0).default(60),
  /** A directory served at /assets/ (kernels, initrds, images for profiles' boot sections); unset serves none. */
  assetsDir: z.string().min(1).optional(),
  /**
   * A directory of workload-cluster kubeconfig files, named by clusters'
   * `workloadKubeconfig.file` (src/boot/tokens.ts); unset, no cluster may name a file.
   */
  workloadKubeconfigDir: z.string().min(1).optional(),
  /**
   * A kubeconfig file for the management cluster, where clusters'
   * `workloadKubeconfig.secretRef` Secrets are read; unset, the pod's service account
   * when the service runs in Kubernetes, else no cluster may name a Secret.
   */
  managementKubeconfig: z.string().min(1).optional(),
  /** How often minted bootstrap tokens are refreshed, and deleted once their nodes joined, seconds. */
  tokenSweepSeconds: z.coerce.number().int().min(1).max(3600).default(60),
  /** Most discovered machines kept; sightings of new identities beyond it are counted, not written. */
  discoveredMax: z.coerce.number().int().min(1).default(10_000),
  /** Most audit rows of refusals kept; the oldest beyond it are deleted. */
  refusedAuditMax: z.coerce.number().int().min(1).default(10_000),
  /**
   * Most audit rows of served answers kept per machine (its newest), for each of two
   * classes counted apart: the scripts any client may ask with a MAC (`/ipxe`,
   * `/boot.ipxe`), and the signed fetches and reports, which the first never push out. The
   * oldest beyond it are deleted as each new one is written.
   */
  servedAuditMaxPerMachine: z.coerce.number().int().min(1).default(1000),
  /** Discovered machines not seen, and refusal audit rows older, than this many seconds are deleted. 0 keeps them. */
  unauthenticatedRetentionSeconds: z.coerce.number().int().min(0).default(30 * 24 * 3600),
  /**
   * HTTPS (issue 16): `auto` generates a private CA and a serving certificate for the
   * public URL's host into `<dataDir>/tls/` (mode 0600) and serves the CA at `GET /ca.crt`;
   * `off` (default) serves HTTPS only when `tlsCert` and `tlsKey` are given.
   */
  tls: z.enum(['off', 'auto']).default('off'),
  /** PEM file of the serving certificate (its chain after it); with `tlsKey`, the service listens on HTTPS. Reloaded on SIGHUP and when the file changes. */
  tlsCert: z.string().min(1).optional(),
  /** PEM file of the serving certificate's private key. */
  tlsKey: z.string().min(1).optional(),
  /** PEM file of the CA that issued `tlsCert`, for pointer configs to pin and `GET /ca.crt` to serve. Default with `tls: auto`: the generated CA. */
  tlsCa: z.string().min(1).optional(),
  /** Port of an extra plain-HTTP listener (same host) for the iPXE routes only (`/boot.ipxe`, `/ipxe`), for firmware without TLS. Default: none. */
  httpPort: z.coerce.number().int().min(0).max(65535).optional(),
  /**
   * Addresses or CIDR ranges of reverse proxies in front (one that terminates TLS, say):
   * from them, and only from them, `X-Forwarded-For`, `-Proto` and `-Host` say the client's
   * address, scheme and host (fastify's `trustProxy`), so rate limits, audit rows, address
   * binding and the status page's same-origin check see the client, not the proxy.
   * Comma-separated in the environment. Default none: the headers are ignored.
   */
  trustedProxies: z
    .preprocess((v) => (typeof v === 'string' ? v.split(',').map((x) => x.trim()).filter(Boolean) : v), z.array(z.string().refine((x) => isIP(x.replace(/\/\d{1,3}$/, '')) !== 0, 'must be an IP address or CIDR range')))
    .default([]),
  /**
   * The host names and addresses the service answers to, against DNS rebinding
   * (src/api/hosts.ts): a request whose `Host` names none of them is a 421, except
   * `/healthz`, `/readyz` and `/metrics`. Entries are names, `*.name` (any subdomain) or
   * IP addresses; ports are not compared. Comma-separated in the environment. Default
   * none: any Host is answered, as before 0.3.0 (set it on plain-HTTP deployments).
   */
  allowedHosts: z
    .preprocess(
      (v) => (typeof v === 'string' ? v.split(',').map((x) => x.trim().toLowerCase()).filter(Boolean) : v),
      z.array(z.string().refine(isAllowedHostEntry, 'must be a host name, *.name or an IP address, without a port')),
    )
    .default([]),
  /** Bind the signed URLs `/ipxe` hands out to the client address that fetched it: a fetch from another address is a 403 (audited). */
  bindClientAddress: flag,
  /**
   * First fetch wins: a second fetch of a secret-bearing signed URL (Ignition, NoCloud
   * user-data) is refused with 403 and counted in `bootwright_signed_url_refused_total`.
   * On by default since 0.3.0: the URL stays readable in the booted node's
   * `/proc/cmdline`, and a replay would hand any process there the join token (or a
   * control plane's CA keys). `false` restores the behaviour of 0.2.0.
   */
  firstFetchWins: z
    .union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')], { error: 'must be true or false' })
    .default(true),
  /**
   * How long a boot report URL works after the signed URL the config was fetched with
   * expires, seconds (kubeadm may run, and retry, long after the fetch).
   */
  reportUrlSeconds: z.coerce.number().int().min(60).default(24 * 3600),
  /** A machine that fetched its config and has not reported within this many seconds is `Stalled`. */
  reportTimeoutSeconds: z.coerce.number().int().min(1).default(1800),
  /** Largest boot report body, bytes (413 beyond it). */
  maxReportBytes: z.coerce.number().int().min(1024).max(1024 * 1024).default(16 * 1024),
  /** Boot reports a machine may send per config fetch (a retried report counts); beyond it 429. */
  reportsPerFetch: z.coerce.number().int().min(1).default(10),
});

export type Config = z.infer<typeof configSchema>;
export type TokenConfig = z.infer<typeof tokenSchema>;

/** Environment variables and the config keys they set. */
const ENV: Record<string, keyof Config> = {
  BOOTWRIGHT_HOST: 'host',
  BOOTWRIGHT_PORT: 'port',
  BOOTWRIGHT_DATA_DIR: 'dataDir',
  BOOTWRIGHT_BODY_LIMIT: 'bodyLimit',
  BOOTWRIGHT_RENDER_CACHE_BYTES: 'renderCacheBytes',
  BOOTWRIGHT_RENDER_WORKERS: 'renderWorkers',
  BOOTWRIGHT_RENDER_QUEUE: 'renderQueue',
  BOOTWRIGHT_RENDER_TIMEOUT_SECONDS: 'renderTimeoutSeconds',
  BOOTWRIGHT_RENDER_INLINE_BYTES: 'renderInlineBytes',
  BOOTWRIGHT_RENDER_WARMUP_ROUNDS: 'renderWarmupRounds',
  BOOTWRIGHT_PRERENDER_MAX: 'prerenderMax',
  BOOTWRIGHT_SQLITE_BATCH_MS: 'sqliteBatchMs',
  BOOTWRIGHT_PRERENDER_IGNITION_VERSIONS: 'prerenderIgnitionVersions',
  BOOTWRIGHT_LOG_LEVEL: 'logLevel',
  BOOTWRIGHT_TOKENS: 'tokens',
  BOOTWRIGHT_RATE_LIMIT_MAX: 'rateLimitMax',
  BOOTWRIGHT_RATE_LIMIT_WINDOW_SECONDS: 'rateLimitWindowSeconds',
  BOOTWRIGHT_MAX_EVENT_LOOP_DELAY_MS: 'maxEventLoopDelayMs',
  BOOTWRIGHT_RETRY_AFTER_SECONDS: 'retryAfterSeconds',
  BOOTWRIGHT_PUBLIC_URL: 'publicUrl',
  BOOTWRIGHT_URL_SIGNING_KEY: 'urlSigningKey',
  BOOTWRIGHT_SIGNED_URL_SECONDS: 'signedUrlSeconds',
  BOOTWRIGHT_UI_SESSION_SECONDS: 'uiSessionSeconds',
  BOOTWRIGHT_DEFAULT_MACHINE: 'defaultMachine',
  BOOTWRIGHT_WRITE_CHECK_MAX_MACHINES: 'writeCheckMaxMachines',
  BOOTWRIGHT_DATABASE_URL: 'databaseUrl',
  BOOTWRIGHT_DATABASE_POOL_SIZE: 'databasePoolSize',
  BOOTWRIGHT_UNAUTHENTICATED_WRITES_PER_MINUTE: 'unauthenticatedWritesPerMinute',
  BOOTWRIGHT_REFUSED_AUDIT_INTERVAL_SECONDS: 'refusedAuditIntervalSeconds',
  BOOTWRIGHT_DISCOVERED_MAX: 'discoveredMax',
  BOOTWRIGHT_ASSETS_DIR: 'assetsDir',
  BOOTWRIGHT_WORKLOAD_KUBECONFIG_DIR: 'workloadKubeconfigDir',
  BOOTWRIGHT_MANAGEMENT_KUBECONFIG: 'managementKubeconfig',
  BOOTWRIGHT_TOKEN_SWEEP_SECONDS: 'tokenSweepSeconds',
  BOOTWRIGHT_REFUSED_AUDIT_MAX: 'refusedAuditMax',
  BOOTWRIGHT_SERVED_AUDIT_MAX_PER_MACHINE: 'servedAuditMaxPerMachine',
  BOOTWRIGHT_UNAUTHENTICATED_RETENTION_SECONDS: 'unauthenticatedRetentionSeconds',
  BOOTWRIGHT_MAX_DEPTH: 'maxDepth',
  BOOTWRIGHT_MAX_NODES: 'maxNodes',
  BOOTWRIGHT_MAX_LIST_ITEMS: 'maxListItems',
  BOOTWRIGHT_MAX_DOCUMENT_CHARS: 'maxDocumentChars',
  BOOTWRIGHT_MAX_ALIASES: 'maxAliases',
  BOOTWRIGHT_REQUEST_TIMEOUT_SECONDS: 'requestTimeoutSeconds',
  BOOTWRIGHT_MAX_HEADER_BYTES: 'maxHeaderBytes',
  BOOTWRIGHT_MAX_LABEL_SELECTOR_CHARS: 'maxLabelSelectorChars',
  BOOTWRIGHT_MAX_LABEL_SELECTOR_TERMS: 'maxLabelSelectorTerms',
  BOOTWRIGHT_MAX_QUERY_PARAMETERS: 'maxQueryParameters',
  BOOTWRIGHT_TLS: 'tls',
  BOOTWRIGHT_TLS_CERT: 'tlsCert',
  BOOTWRIGHT_TLS_KEY: 'tlsKey',
  BOOTWRIGHT_TLS_CA: 'tlsCa',
  BOOTWRIGHT_HTTP_PORT: 'httpPort',
  BOOTWRIGHT_BIND_CLIENT_ADDRESS: 'bindClientAddress',
  BOOTWRIGHT_FIRST_FETCH_WINS: 'firstFetchWins',
  BOOTWRIGHT_TRUSTED_PROXIES: 'trustedProxies',
  BOOTWRIGHT_ALLOWED_HOSTS: 'allowedHosts',
  BOOTWRIGHT_REPORT_URL_SECONDS: 'reportUrlSeconds',
  BOOTWRIGHT_REPORT_TIMEOUT_SECONDS: 'reportTimeoutSeconds',
  BOOTWRIGHT_MAX_REPORT_BYTES: 'maxReportBytes',
  BOOTWRIGHT_REPORTS_PER_FETCH: 'reportsPerFetch',
};

/**
 * The command line's client settings (`bootwright get|apply|delete|describe|enroll|status`),
 * each a flag or a variable, the flag winning. Not the service's: `serve` ignores them.
 */
export interface ClientConfig {
  /** The service's base URL (`--server`, `BOOTWRIGHT_URL`; default http://127.0.0.1:8080). */
  server: string;
  /** The bearer token (`--token`, `BOOTWRIGHT_TOKEN`, or read from `--token-file` / `BOOTWRIGHT_TOKEN_FILE`). */
  token?: string;
}

/** The client's variables: the service's URL, its bearer token, or a file holding the token. */
export const CLIENT_ENV = { url: 'BOOTWRIGHT_URL', token: 'BOOTWRIGHT_TOKEN', tokenFile: 'BOOTWRIGHT_TOKEN_FILE' } as const;

/**
 * Load the client settings from the flags over the environment.
 *
 * @param flags `--server`, `--token`, `--token-file` as given (undefined when absent).
 * @throws ConfigError naming the flag or variable: a URL that is not http(s), both a
 *   token and a token file, an unreadable or empty token file (never quoting a token).
 */
export function loadClientConfig(flags: { server?: string; token?: string; tokenFile?: string }, env: NodeJS.ProcessEnv = process.env): ClientConfig {
  /** A variable's value, an empty one as unset. */
  const variable = (name: string): string | undefined => (env[name] === '' ? undefined : env[name]);
  const fromFlag = flags.server !== undefined;
  const server = flags.server ?? variable(CLIENT_ENV.url) ?? 'http://127.0.0.1:8080';
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new ConfigError(`${fromFlag ? '--server' : CLIENT_ENV.url}: must be an http:// or https:// URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${fromFlag ? '--server' : CLIENT_ENV.url}: must be an http:// or https:// URL`);
  // The URL is printed in errors: it must hold no credentials (the token is the credential).
  if (url.username !== '' || url.password !== '') throw new ConfigError(`${fromFlag ? '--server' : CLIENT_ENV.url}: must not carry a user name or password (give the token with --token or --token-file)`);
  const out: ClientConfig = { server: url.href.replace(/\/+$/, '') };
  const token = flags.token ?? (flags.tokenFile === undefined ? variable(CLIENT_ENV.token) : undefined);
  const tokenFile = flags.tokenFile ?? (token === undefined ? variable(CLIENT_ENV.tokenFile) : undefined);
  if (flags.token !== undefined && flags.tokenFile !== undefined) throw new ConfigError('--token and --token-file: give one of them');
  if (token !== undefined) {
    // A bearer token is visible ASCII (RFC 6750 §2.1); anything else would reach an HTTP header or an error message. Never echoed.
    if (!/^[\x21-\x7e]+$/.test(token)) throw new ConfigError(`${flags.token !== undefined ? '--token' : CLIENT_ENV.token}: must be one token of visible ASCII characters, no white space or line breaks`);
    return { ...out, token };
  }
  if (tokenFile !== undefined) {
    const name = flags.tokenFile !== undefined ? '--token-file' : CLIENT_ENV.tokenFile;
    let text: string;
    try {
      text = readFileSync(tokenFile, 'utf8').trim();
    } catch (e) {
      throw new ConfigError(`${name} (${tokenFile}): cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).name}`);
    }
    if (text === '' || /\s/.test(text)) throw new ConfigError(`${name} (${tokenFile}): must hold one token on one line`);
    return { ...out, token: text };
  }
  return out;
}

/** The document limits of a configuration ({@link DocumentLimits}, checked on every parsed body). */
export function documentLimits(config: Config): DocumentLimits {
  return { maxDepth: config.maxDepth, maxNodes: config.maxNodes, maxListItems: config.maxListItems, maxDocumentChars: config.maxDocumentChars, maxAliases: config.maxAliases };
}

/** A configuration problem, naming the variable or key. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * Load the configuration.
 *
 * @param env the environment (`BOOTWRIGHT_*`; `BOOTWRIGHT_TOKENS` is JSON: a list of
 *   `{name, token|sha256, scopes}`; `BOOTWRIGHT_CONFIG` names a YAML or JSON file with
 *   the same keys as {@link configSchema}).
 * @param overrides values that win over both (tests, the CLI's flags).
 * @param overrideNames what to call an override's key in errors, e.g. `{port: '--port'}`.
 * @throws ConfigError naming the key (and the variable or flag that set it); never
 *   quoting a token.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}, overrideNames: Partial<Record<keyof Config, string>> = {}): Config {
  let fromFile: Record<string, unknown> = {};
  if (env.BOOTWRIGHT_CONFIG) {
    try {
      fromFile = (load(readFileSync(env.BOOTWRIGHT_CONFIG, 'utf8')) ?? {}) as Record<string, unknown>;
    } catch (e) {
      throw new ConfigError(`BOOTWRIGHT_CONFIG (${env.BOOTWRIGHT_CONFIG}): cannot read: ${(e as Error).name}`);
    }
  }
  const fromEnv: Record<string, unknown> = {};
  for (const [name, key] of Object.entries(ENV)) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    if (key === 'tokens') {
      try {
        fromEnv.tokens = JSON.parse(value);
      } catch {
        throw new ConfigError('BOOTWRIGHT_TOKENS: must be JSON, a list of {name, token|sha256, scopes}');
      }
    } else fromEnv[key] = value;
  }
  const result = configSchema.safeParse({ ...fromFile, ...fromEnv, ...overrides });
  if (!result.success) {
    const byKey: Record<string, string> = { ...Object.fromEntries(Object.entries(ENV).map(([k, v]) => [v, k])), ...overrideNames };
    throw new ConfigError(
      zodProblems(result.error)
        .map((p) => {
          const key = p.path.split(/[.[]/)[0]!;
          return `${byKey[key] ? `${p.path} (${byKey[key]})` : p.path}: ${p.message}`;
        })
        .join('; '),
    );
  }
  return result.data;
}
