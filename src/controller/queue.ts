/**
 * The controller's work queue, with the guarantees of client-go's `workqueue` that
 * controller-runtime's controllers rely on:
 *
 * - a key is queued at most once (adding a queued key does nothing);
 * - a key is processed by one worker at a time: added while it is processed, it is
 *   processed again once after (never concurrently);
 * - a failed key is retried after an exponential backoff per key (`5 ms · 2^failures`,
 *   at most 1000 s: `ItemExponentialFailureRateLimiter(5ms, 1000s)`, controller-runtime's
 *   default), reset by a success;
 * - `addAfter` adds a key after a delay (a requeue); only the earliest pending delay of
 *   a key is kept.
 *
 * Work is bounded: the queue holds each key once, and at most one timer per key.
 */

/** One unit of work: a key's reconcile. Its result asks for a requeue, in milliseconds. */
export type Work = (key: string) => Promise<{ requeueAfterMs?: number }>;

/** What the queue reports for metrics (controller-runtime's names). */
export interface QueueObserver {
  /** A reconcile finished: `success`, `error` or `requeue_after`, and its duration in seconds. */
  reconciled(result: 'success' | 'error' | 'requeue_after', seconds: number): void;
  /** The error of a failed reconcile (the queue retries it). */
  failed(key: string, error: unknown, retryInMs: number): void;
}

/** controller-runtime's default per-key backoff. */
export const BACKOFF_BASE_MS = 5;
export const BACKOFF_MAX_MS = 1_000_000;

/** A deduplicating, rate-limited work queue processed by `workers` concurrent workers. */
export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  /** Keys added while they were processed: queued again when done. */
  private readonly dirty = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private active = 0;
  private stopped = false;
  private idle: (() => void)[] = [];

  /**
   * @param work the reconcile of one key
   * @param workers how many keys are processed at once (`--kubeadmconfig-concurrency`; CABPK's default is 100, bootwright's 10: renders share one event loop)
   */
  constructor(
    private readonly work: Work,
    private readonly workers: number,
    private readonly observer: QueueObserver,
  ) {}

  /** Keys waiting (not counting those being processed or delayed): `workqueue_depth`. */
  get depth(): number {
    return this.queue.length;
  }

  /** Queue a key now. */
  add(key: string): void {
    if (this.stopped) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.add(key);
    this.queue.push(key);
    this.pump();
  }

  /** Queue a key after `ms` milliseconds (an earlier pending delay of the key wins). */
  addAfter(key: string, ms: number): void {
    if (this.stopped) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = Date.now() + ms;
    const pending = this.timers.get(key);
    if (pending && pending.at <= at) return;
    if (pending) clearTimeout(pending.timer);
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref();
    this.timers.set(key, { at, timer });
  }

  /** Stop: no new work starts; resolves once the reconciles under way finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.queue.length = 0;
    this.queued.clear();
    if (this.active > 0) await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  private pump(): void {
    while (!this.stopped && this.active < this.workers && this.queue.length > 0) {
      const key = this.queue.shift()!;
      this.queued.delete(key);
      this.processing.add(key);
      this.active++;
      void this.run(key);
    }
  }

  private async run(key: string): Promise<void> {
    const started = performance.now();
    let retryInMs: number | undefined;
    let requeueAfterMs: number | undefined;
    try {
      ({ requeueAfterMs } = await this.work(key));
      this.failures.delete(key);
      this.observer.reconciled(requeueAfterMs !== undefined ? 'requeue_after' : 'success', (performance.now() - started) / 1000);
    } catch (e) {
      const n = this.failures.get(key) ?? 0;
      this.failures.set(key, n + 1);
      retryInMs = Math.min(BACKOFF_BASE_MS * 2 ** n, BACKOFF_MAX_MS);
      this.observer.reconciled('error', (performance.now() - started) / 1000);
      this.observer.failed(key, e, retryInMs);
    } finally {
      this.processing.delete(key);
      this.active--;
    }
    if (this.dirty.delete(key)) this.add(key);
    else if (retryInMs !== undefined) this.addAfter(key, retryInMs);
    else if (requeueAfterMs !== undefined) this.addAfter(key, requeueAfterMs);
    if (this.stopped && this.active === 0) for (const resolve of this.idle.splice(0)) resolve();
    this.pump();
  }
}
