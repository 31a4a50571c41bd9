/**
 * Prometheus metrics (prom-client), one registry per service instance. Labels never
 * carry secrets: routes are route patterns, not URLs.
 */
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { RequestDurations } from './durations.js';
import type { RenderPool } from '../work/pool.js';
import { PHASES, type FleetCounts } from '../store/status.js';
import type { RenderCache } from './cache.js';
import type { Prerenderer } from './prerender.js';

/** The service's metrics. */
export interface Metrics {
  registry: Registry;
  /** `http_request_duration_seconds{method, route, status_code}` (src/api/durations.ts). */
  requestDuration: RequestDurations;
  /** `bootwright_renders_total{format, version}`: renders served (cache hits included). */
  renders: Counter<'format' | 'version'>;
  /** `bootwright_storage_faults_total{code}`: requests answered 503 because the store failed (src/store/faults.ts codes). */
  storageFaults: Counter<'code'>;
  /**
   * `bootwright_unauthenticated_writes_dropped_total{table, reason}`: store writes that
   * unauthenticated requests caused and that were not made (src/api/unauthenticated.ts).
   */
  droppedWrites: Counter<'table' | 'reason'>;
  /** `bootwright_signed_url_refused_total{route, reason}` (issue 16): signed URLs refused by binding or first-fetch-wins; alert on any increase. */
  signedUrlRefused: Counter<'route' | 'reason'>;
  /** `bootwright_firmware_fetches_total{route, status}`: answers of the firmware routes about known machines (route patterns, never URLs). */
  firmwareFetches: Counter<'route' | 'status'>;
  /** `bootwright_boot_reports_total{outcome}`: boot reports accepted, by outcome. */
  bootReports: Counter<'outcome'>;
  /**
   * `bootwright_tolerated_total{rule}` (issue 27): bootstrap data served to a machine
   * whose stored documents break a rule that came in after they were written, by rule
   * (src/rules.ts); `bootwright upgrade check` lists the machines.
   */
  tolerated: Counter<'rule'>;
  /** `bootwright_bootstrap_tokens_total{outcome}`: per-machine bootstrap tokens minted, refreshed, deleted, or failed to refresh or delete (src/boot/tokens.ts). */
  bootstrapTokens: Counter<'outcome'>;
}

/** Where the `bootwright_machines` gauge reads the fleet from at scrape time (set once the store is known). */
export type FleetSource = () => Promise<FleetCounts>;

/**
 * Create the registry: default process metrics, the request histogram, renders by
 * format and version, and the render cache's hits, misses and bytes (read at scrape time);
 * firmware fetches by route and status, boot reports by outcome, and, with `fleet`,
 * `bootwright_machines{phase}` read from the store at scrape time.
 */
export function createMetrics(cache: RenderCache, pool?: RenderPool, prerender?: Prerenderer, fleet?: FleetSource): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requestDuration = new RequestDurations([0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]);
  registry.registerMetric(requestDuration.asMetric());
  const renders = new Counter({
    name: 'bootwright_renders_total',
    help: 'Bootstrap data served, by format and Ignition spec version (empty for cloud-config)',
    labelNames: ['format', 'version'] as const,
    registers: [registry],
  });
  const storageFaults = new Counter({
    name: 'bootwright_storage_faults_total',
    help: 'Requests answered 503 because the inventory store failed (disk full, I/O error, database unavailable), by fault code',
    labelNames: ['code'] as const,
    registers: [registry],
  });
  const droppedWrites = new Counter({
    name: 'bootwright_unauthenticated_writes_dropped_total',
    help: 'Writes of discovered machines (table "discovered") and refusal audit rows (table "audit") not made, by reason: rate-limited (per client address), sampled (an identical refusal was just recorded), full (the discovered cap), storage-fault',
    labelNames: ['table', 'reason'] as const,
    registers: [registry],
  });
  new Counter({
    name: 'bootwright_render_cache_hits_total',
    help: 'Render cache hits',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(cache.stats.hits);
    },
  });
  new Counter({
    name: 'bootwright_render_cache_misses_total',
    help: 'Render cache misses',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(cache.stats.misses);
    },
  });
  new Gauge({
    name: 'bootwright_render_cache_bytes',
    help: 'Bytes of rendered bodies held by the render cache',
    registers: [registry],
    collect() {
      this.set(cache.bytes);
    },
  });
  const signedUrlRefused = new Counter({
    name: 'bootwright_signed_url_refused_total',
    help: 'Genuine signed URLs refused because they were fetched from another client address than the one they are bound to (reason client-address) fetched a second time under first-fetch-wins (reason already-fetched), or issued for an earlier incarnation of the machine (reason incarnation), by route: someone else may hold the URL',
    labelNames: ['route', 'reason'] as const,
    registers: [registry],
  });
  if (pool) {
    new Counter({
      name: 'bootwright_render_tasks_total',
      help: 'Parse, assembly and render tasks of cache misses, by where they ran: inline (the main thread), pool (a worker), shed (refused: the queue was full, 503), timeout (abandoned, its worker terminated, 503)',
      labelNames: ['outcome'] as const,
      registers: [registry],
      collect() {
        this.reset();
        this.inc({ outcome: 'inline' }, pool.stats.inline);
        this.inc({ outcome: 'pool' }, pool.stats.pooled);
        this.inc({ outcome: 'shed' }, pool.stats.shed);
        this.inc({ outcome: 'timeout' }, pool.stats.timedOut);
      },
    });
    new Gauge({
      name: 'bootwright_render_queue_tasks',
      help: 'Tasks waiting for a render worker',
      registers: [registry],
      collect() {
        this.set(pool.queued);
      },
    });
  }
  if (prerender) {
    new Gauge({
      name: 'bootwright_prerender_queued_machines',
      help: 'Machines waiting to be pre-rendered (plus those rendering now)',
      registers: [registry],
      collect() {
        this.set(prerender.queued + (prerender.idle ? 0 : 1));
      },
    });
    new Counter({
      name: 'bootwright_prerender_total',
      help: 'Pre-rendering, by outcome: rendered (a render put into the cache ahead of a boot), skipped (the queue or three quarters of the render cache was full), failed (the machine cannot be rendered; its boot answers why)',
      labelNames: ['outcome'] as const,
      registers: [registry],
      collect() {
        this.reset();
        this.inc({ outcome: 'rendered' }, prerender.stats.rendered);
        this.inc({ outcome: 'skipped' }, prerender.stats.skipped);
        this.inc({ outcome: 'failed' }, prerender.stats.failed);
      },
    });
  }
  const firmwareFetches = new Counter({
    name: 'bootwright_firmware_fetches_total',
    help: 'Answers of the firmware routes about known machines (/ipxe matched, /ignition, /nocloud/<file>, /report), by route and HTTP status',
    labelNames: ['route', 'status'] as const,
    registers: [registry],
  });
  const bootReports = new Counter({
    name: 'bootwright_boot_reports_total',
    help: 'Boot reports accepted, by outcome (success or failure)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  const tolerated = new Counter({
    name: 'bootwright_tolerated_total',
    help: 'Bootstrap data served to machines whose stored documents break a refusal rule that came in after they were written (served as before; refused on the next write), by rule',
    labelNames: ['rule'] as const,
    registers: [registry],
  });
  const bootstrapTokens = new Counter({
    name: 'bootwright_bootstrap_tokens_total',
    help: 'Per-machine bootstrap tokens in workload clusters, by outcome: minted, refreshed, deleted, failed (a sweep could not refresh or delete one)',
    labelNames: ['outcome'] as const,
    registers: [registry],
  });
  if (fleet) {
    new Gauge({
      name: 'bootwright_machines',
      help: 'Machines by lifecycle phase (Stalled: fetched their config and did not report within BOOTWRIGHT_REPORT_TIMEOUT_SECONDS)',
      labelNames: ['phase'] as const,
      registers: [registry],
      async collect() {
        // A store that cannot answer leaves the last values (the scrape still succeeds;
        // bootwright_storage_faults_total and /readyz say why).
        const counts = await fleet().catch(() => undefined);
        if (counts) for (const phase of PHASES) this.set({ phase }, counts.phases[phase]);
      },
    });
  }
  return { registry, requestDuration, renders, storageFaults, droppedWrites, signedUrlRefused, firmwareFetches, bootReports, tolerated, bootstrapTokens };
}
