/**
 * The service context: what every route of the HTTP API is given (configuration, store,
 * caches, metrics, signing, render workers). Its own module, so that routes depend on it
 * and not on the server that builds it (src/api/server.ts imports the routes).
 */
import type { MintedTokens } from '../boot/tokens.js';
import type { Config } from '../config.js';
import type { WorkloadClusters } from '../kube/workload.js';
import type { Store } from '../store/store.js';
import type { RenderPool } from '../work/pool.js';
import type { TokenTable } from './auth.js';
import type { RenderCache } from './cache.js';
import type { Metrics } from './metrics.js';
import type { Prerenderer } from './prerender.js';
import type { UrlSigning } from './signing.js';

/** The cut-off before which a machine still `Provisioning` is `Stalled` (`reportTimeoutSeconds` before `now`). */
export function stalledBefore(config: Pick<Config, 'reportTimeoutSeconds'>, now: Date): string {
  return new Date(now.getTime() - config.reportTimeoutSeconds * 1000).toISOString();
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
  /**
   * The CA that issued the HTTPS certificate (PEM), when known (`tls: auto`, or `tlsCa`):
   * served at `GET /ca.crt` and pinned by Ignition pointer configs.
   */
  tlsCa?: string;
  /** Whether this server listens with TLS (its plain-HTTP listener, if any, serves the iPXE routes). */
  https: boolean;
  /** Parsing, assembly and rendering of cache misses, off the main thread (src/work/pool.ts). */
  pool: RenderPool;
  /** Machines' data rendered ahead of their boot (src/api/prerender.ts). */
  prerender: Prerenderer;
  /** The bearer tokens (the status page authenticates its cookie with them). */
  tokens: TokenTable;
  /** The workload clusters that clusters' `workloadKubeconfig` name (src/kube/workload.ts). */
  workloads: WorkloadClusters;
  /** Machines' per-machine bootstrap tokens (src/boot/tokens.ts). */
  mintedTokens: MintedTokens;
}
