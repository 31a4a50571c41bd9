/**
 * Pre-rendering (issue 15): a machine's bootstrap data is rendered into the render cache
 * before the machine asks for it, so the first boot of a storm is a cache hit. Machines
 * are queued when the service starts (every registered machine, by pages), when a
 * machine is written, and when its cluster or profile is replaced (every machine naming
 * it, `Store.referencedBy`).
 *
 * What is rendered is exactly what the boot routes will look up (the same negotiation
 * and render-cache key, src/api/deliver.ts `renderPlan`): for a profile whose format is
 * Ignition, `/ignition` with Ignition's Accept header for each spec in
 * `prerenderIgnitionVersions` plus those machines asked for since the start (at most
 * four); for cloud-config, the NoCloud `user-data`. The data carries the machine's boot
 * report URL, which is the same for every fetch URL signed within one
 * `REPORT_EXPIRY_GRID_SECONDS` step (src/api/signing.ts) and built from
 * `BOOTWRIGHT_PUBLIC_URL`: without a public URL the report URL takes the fetch's Host, so
 * nothing can be rendered ahead and boots render on demand, as without pre-rendering.
 *
 * Bounded, and off the request path:
 * - the queue holds machine names only, at most `prerenderMax` (a write affecting
 *   more, say a profile of 10,000 machines, queues the first `prerenderMax`; the others
 *   render on their first boot, as without pre-rendering) and a name once;
 * - assembly and rendering always run in the worker pool (never on the main thread,
 *   whatever their size), at most one machine per worker at a time, and only while no
 *   request's task waits for a worker and no request has missed the cache for
 *   `QUIET_MS`: requests go first (a storm of first boots renders on demand, and
 *   pre-rendering resumes once it is over);
 * - it stops filling the render cache at three quarters of its bound (the LRU keeps the
 *   last quarter for requests), so pre-rendering never evicts what is being served.
 * A machine that cannot be rendered is skipped (its boot answers the 422 as before).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { bootFormat } from '../boot/ipxe.js';
import type { FastifyBaseLogger } from 'fastify';
import { IGNITION_MEDIA_TYPE, servedIgnitionVersion } from '../render.js';
import { assembledRequest, machineParts, storedLevels } from './routes/bootstrap.js';
import { mintsToken } from '../store/assemble.js';
import { cachedRender } from './deliver.js';
import { renderPlan } from './render-plan.js';
import type { FollowingRender } from '../work/task.js';
import { reportUrlFor } from './signing.js';
import type { ServiceContext } from './context.js';

/** Ignition specs pre-rendered at most (configured plus asked for). */
const MAX_VERSIONS = 4;
/** Requested versions remembered as already pre-rendered, at most (the request's text: bounded, as a client sends any). */
const MAX_NOTED = 64;
/** Machines listed per page when queueing every registered machine. */
const PAGE = 1000;
/** How long a pre-render waits for requests' tasks to leave the pool's queue. */
const YIELD_MS = 5;
/** Milliseconds without a request's cache miss before pre-rendering goes on. */
const QUIET_MS = 100;

/** Counters the metrics read. */
export interface PrerenderStats {
  /** Renders put into the cache ahead of a boot. */
  rendered: number;
  /** Machines not queued: the queue was full, or the render cache three quarters full. */
  skipped: number;
  /** Machines whose data could not be rendered (their boot answers why). */
  failed: number;
}

/** The pre-renderer; see the module comment. */
export class Prerenderer {
  readonly stats: PrerenderStats = { rendered: 0, skipped: 0, failed: 0 };
  private readonly pending = new Set<string>();
  private readonly versions: string[];
  /** Requested versions already among `versions` (at most {@link MAX_NOTED}; cleared when `versions` changes). */
  private readonly noted = new Set<string>();
  private readonly configured: number;
  private running = 0;
  private closed = false;
  /** When a request last missed the cache (performance.now() ms). */
  private demandAt = -Infinity;

  constructor(
    private readonly ctx: ServiceContext,
    private readonly log: FastifyBaseLogger,
  ) {
    this.versions = ctx.config.prerenderIgnitionVersions.split(',').slice(0, MAX_VERSIONS);
    this.configured = this.versions.length;
  }

  /** Machines waiting to be pre-rendered. */
  get queued(): number {
    return this.pending.size;
  }

  /** Whether nothing is queued or rendering. */
  get idle(): boolean {
    return this.pending.size === 0 && this.running === 0;
  }

  private get enabled(): boolean {
    return this.ctx.config.prerenderMax > 0 && this.ctx.config.renderCacheBytes > 0 && !this.closed;
  }

  /** Queue machines by name (beyond `prerenderMax` waiting, counted as skipped). */
  enqueue(names: Iterable<string>): void {
    if (!this.enabled) return;
    for (const name of names) {
      if (this.pending.has(name)) continue;
      if (this.pending.size >= this.ctx.config.prerenderMax) this.stats.skipped++;
      else this.pending.add(name);
    }
    this.start();
  }

  /** Queue every machine naming a cluster or profile just replaced. Never throws (a failed read is logged). */
  async enqueueReferencing(kind: 'Cluster' | 'Profile', name: string): Promise<void> {
    if (!this.enabled) return;
    try {
      this.enqueue(await this.ctx.store.referencedBy(kind, name));
    } catch (e) {
      this.log.warn({ err: { message: (e as Error).message } }, 'pre-rendering: cannot list the machines to render');
    }
  }

  /** Queue every registered machine, page by page, up to `prerenderMax`. Never throws. */
  async enqueueAll(): Promise<void> {
    let token: string | undefined;
    try {
      do {
        if (!this.enabled || this.pending.size >= this.ctx.config.prerenderMax) return;
        const page = await this.ctx.store.list('Machine', { limit: PAGE, ...(token ? { continue: token } : {}) });
        this.enqueue(page.items.map((m) => m.name));
        token = page.continue;
      } while (token);
    } catch (e) {
      this.log.warn({ err: { message: (e as Error).message } }, 'pre-rendering: cannot list the machines');
    }
  }

  /** Note an Ignition spec a machine asked `/ignition` for, so later pre-renders render it too. */
  noteIgnitionVersion(requested: string | undefined): void {
    // Every signed Ignition fetch asks this: the same Accept header again costs one lookup.
    if (requested === undefined || this.noted.has(requested)) return;
    const version = servedIgnitionVersion(requested);
    if (version === undefined) return;
    if (this.versions.some((v) => servedIgnitionVersion(v) === version)) {
      if (this.noted.size < MAX_NOTED) this.noted.add(requested);
      return;
    }
    // The configured specs stay; the asked-for ones after them, most recent first.
    this.versions.splice(this.configured, 0, version);
    this.versions.length = Math.min(this.versions.length, Math.max(MAX_VERSIONS, this.configured));
    // A spec pushed out may be asked for again: what was noted is noted afresh.
    this.noted.clear();
  }

  /** A request just missed the cache (an assembly or a render on demand): pre-rendering pauses for `QUIET_MS` (100 ms). */
  noteDemand(): void {
    this.demandAt = performance.now();
  }

  /** Stop (queued machines are dropped; renders in flight finish in the pool). */
  close(): void {
    this.closed = true;
    this.pending.clear();
  }

  private start(): void {
    const loops = Math.max(1, this.ctx.config.renderWorkers);
    while (this.running < loops && this.pending.size > 0) {
      this.running++;
      void this.loop().finally(() => this.running--);
    }
  }

  private async loop(): Promise<void> {
    while (!this.closed) {
      const name = this.pending.values().next().value;
      if (name === undefined) return;
      this.pending.delete(name);
      if (this.ctx.cache.bytes >= (this.ctx.cache.maxBytes * 3) / 4) {
        this.stats.skipped += 1 + this.pending.size;
        this.pending.clear();
        return;
      }
      // Requests first: wait while any of theirs waits for a worker, or missed the cache lately.
      while (this.enabled && (this.ctx.pool.queued > 0 || performance.now() - this.demandAt < QUIET_MS)) await sleep(YIELD_MS);
      await this.render(name);
    }
  }

  /** Render one machine's data for every variant its boot may ask; failures are counted, not thrown. */
  private async render(name: string): Promise<void> {
    try {
      const parts = await machineParts(this.ctx.store, name, undefined);
      // Its data carries a token minted at its fetch: nothing to render ahead.
      if (mintsToken(parts.cluster.spec, parts.profile.spec.role)) {
        this.stats.skipped++;
        return;
      }
      // The report URL a fetch URL signed now carries (src/api/signing.ts): known ahead
      // only with a public URL (else it takes the Host of the fetch).
      const base = this.ctx.config.publicUrl;
      const exp = String(Math.floor(Date.now() / 1000) + this.ctx.signing.lifetimeSeconds);
      const report = { ...(base === undefined ? {} : { reportUrl: reportUrlFor(this.ctx, base, parts.machine, exp) }), ...storedLevels(parts) };
      // What a boot asks (Accept and query), per variant; the first is rendered with the assembly.
      const asks: FollowingRender[] =
        bootFormat(parts.profile.spec.output?.format) === 'ignition'
          ? this.versions.map((v) => ({ accept: `${IGNITION_MEDIA_TYPE};version=${v}`, query: { format: 'ignition', ...report } }))
          : [{ accept: undefined, query: { format: 'cloud-config', ...report } }];
      const known = await assembledRequest(this.ctx, parts, true, asks[0]);
      const plans = asks.map((ask) => renderPlan(known, ask.accept, ask.query));
      for (const plan of plans) {
        if (this.ctx.cache.hasRender(plan.key)) continue;
        await cachedRender(this.ctx, known, plan, true);
        this.stats.rendered++;
      }
    } catch {
      // Deleted meanwhile, not renderable (the boot answers the 422), or the pool shed it.
      this.stats.failed++;
    }
  }
}
