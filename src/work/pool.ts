/**
 * The render pool (issue 15): parsing, validation, assembly and rendering off the main
 * thread, in a piscina pool of worker threads (src/work/worker.ts), so the event loop
 * keeps serving HTTP, auth, the caches and the store while renders run on the other
 * cores.
 *
 * - Sized: a task whose input is at most `inlineBytes` runs inline on the calling thread
 *   (a worker's round trip costs more than a tiny render) while that thread has time to
 *   spare: once its event loop was busy more than {@link BUSY_UTILIZATION} of the last
 *   {@link LOAD_SAMPLE_MS} (a boot storm of first renders), small tasks go to the
 *   workers too, whose cores were idle while the main thread queued every request
 *   behind its renders. Until every thread has loaded the pipeline (just after start,
 *   when the main thread is busiest), small tasks stay inline however busy it is: a
 *   loading thread would hold them for seconds on a loaded machine. A pool of 0
 *   workers runs every task inline (the CLI does, through the same {@link runTask}).
 * - Bounded: at most `queue` tasks wait for a worker (counted here: tasks handed over
 *   and not done, beyond one running per worker); one more is refused at once with
 *   {@link RenderOverloadedError} (the routes answer 503 + Retry-After).
 * - Kept busy: each worker holds up to {@link TASKS_PER_WORKER} tasks, so it starts the
 *   next the moment one ends. With one task each, a worker that finished sat idle until
 *   the main thread's event loop came round to hand it another: in a boot storm, whose
 *   turns last milliseconds, that left the workers three quarters idle while hundreds
 *   of renders queued.
 * - Timed: a task not done `timeoutMs` after a worker started it is abandoned, its
 *   worker terminated (the worker writes its thread id beside the start instant) and
 *   replaced by piscina, and {@link RenderTimeoutError} thrown (503 + Retry-After), so
 *   one stuck render never wedges the pool. Tasks that were waiting behind it in that
 *   worker had not started: they are handed to the pool once more.
 * - Threads start on the first task handed to the pool or on {@link RenderPool.warm}
 *   (which resolves once every thread has loaded the pipeline; the service is not ready
 *   until then, see {@link RenderPool.starting}), and {@link RenderPool.close} lets queued
 *   and running tasks finish.
 *
 * Worker threads load this module's sibling `worker.ts` under tsx (development, tests)
 * or `worker.js` (dist/): whichever this module itself was loaded as. Workers inherit
 * the process's `execArgv`, so `node --import tsx` reaches them too.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Piscina } from 'piscina';
import { rebuildError, runTask, type Task, type TaskFailure, type TaskValue } from './task.js';
import type { Envelope, Ping, WarmedUp } from './worker.js';
import { type WarmUp, warmUpRound } from './warmup.js';

/**
 * Tasks a worker holds at once (one runs, the others wait in its message port): enough
 * that a worker always has the next while the main thread is slow to answer (a cold
 * storm of 10,000 first boots, every task pooled: 1 per worker 35 s, 4 27 s with 160
 * tasks still queued, 16 22 s). The cost is that tasks behind a long one wait for it
 * rather than for the other worker (piscina hands each task to the least busy worker);
 * the request caps bound the longest allowed render to about 200 ms (bench/README.md,
 * hostile inputs), and a stuck one is cut at the timeout, its followers handed over
 * again.
 */
export const TASKS_PER_WORKER = 16;

/** Milliseconds {@link RenderPool.warm} waits for every thread to load. */
const WARM_MS = 60_000;
/** Pause before the next round of pings when a round found no thread newly loaded (a thread still loading gets none, so the loaded ones would be pinged in a tight loop). */
const WARM_RETRY_MS = 20;

/** Run a warm-up on this thread, one round per turn of the event loop; resolves with the rounds run to the end. */
async function warmUpHere(warmUp: WarmUp): Promise<number> {
  for (let round = 0; round < warmUp.rounds; round++) {
    if (!warmUpRound(warmUp, round)) return round;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return warmUp.rounds;
}

/** The main thread's event-loop utilisation (0–1) above which small tasks are pooled too. */
export const BUSY_UTILIZATION = 0.5;
/** Milliseconds over which that utilisation is measured (sampled this often). */
export const LOAD_SAMPLE_MS = 100;

/** Options of a {@link RenderPool}. */
export interface RenderPoolOptions {
  /** Worker threads; 0 runs every task inline. */
  workers: number;
  /** Tasks that may wait for a worker; beyond it {@link RenderOverloadedError}. */
  queue: number;
  /** Milliseconds a task may run in a worker (time queued not counted); beyond it {@link RenderTimeoutError}. */
  timeoutMs: number;
  /** Tasks sized at most this many bytes run inline (0: none do, unless `workers` is 0). */
  inlineBytes: number;
  /** The worker module (default: src/work/worker.ts or dist/work/worker.js); tests pass their own. */
  filename?: URL;
  /** Whether the calling thread is too busy for small tasks (default: its event loop's utilisation, see the module comment); tests pass their own. */
  busy?: () => boolean;
}

/** The pool's queue is full: answer 503 with Retry-After. */
export class RenderOverloadedError extends Error {
  constructor(readonly queue: number) {
    super(`the render queue is full (${queue} waiting, BOOTWRIGHT_RENDER_QUEUE)`);
    this.name = 'RenderOverloadedError';
  }
}

/** A task outlived its time and its worker was terminated: answer 503 with Retry-After. */
export class RenderTimeoutError extends Error {
  constructor(readonly timeoutMs: number) {
    super(`the render did not finish within ${timeoutMs / 1000} s (BOOTWRIGHT_RENDER_TIMEOUT_SECONDS)`);
    this.name = 'RenderTimeoutError';
  }
}

/** Counters the metrics read. */
export interface RenderPoolStats {
  /** Tasks run on the calling thread. */
  inline: number;
  /** Tasks handed to a worker. */
  pooled: number;
  /** Tasks refused because the queue was full. */
  shed: number;
  /** Tasks abandoned after `timeoutMs` (their worker terminated). */
  timedOut: number;
}

const WORKER_MODULE = new URL(import.meta.url.endsWith('.ts') ? './worker.ts' : './worker.js', import.meta.url);

const isFailure = (v: unknown): v is TaskFailure => typeof v === 'object' && v !== null && (v as { failed?: unknown }).failed === true;

/** The pool; see the module comment. */
export class RenderPool {
  readonly stats: RenderPoolStats = { inline: 0, pooled: 0, shed: 0, timedOut: 0 };
  /** What {@link warm}'s warm-up ran: the threads that ran it (the calling thread counted), and their rounds run to the end, summed. */
  readonly warmedUp = { threads: 0, rounds: 0 };
  private piscina: Piscina<Envelope | Ping, TaskValue<Task> | TaskFailure | number | WarmedUp> | undefined;
  private closed = false;
  private warming = false;
  /** Tasks handed to the workers and not yet settled. */
  private outstanding = 0;
  /** Resolves {@link close}'s wait once nothing is outstanding. */
  private drained: (() => void) | undefined;
  /** What {@link close} returns, every time it is called. */
  private closing: Promise<void> | undefined;
  private readonly busy: () => boolean;
  private sampler: NodeJS.Timeout | undefined;
  /**
   * Threads known to have loaded the worker module: they answered a ping ({@link warm}).
   * Not piscina's `workerCreate`: for the threads it starts with, piscina emits that at
   * once, before they have loaded anything.
   */
  private readonly loaded = new Set<number>();

  constructor(readonly options: RenderPoolOptions) {
    this.busy = options.busy ?? (options.workers > 0 && options.inlineBytes > 0 ? this.sampleLoad() : () => false);
  }

  /** Sample this thread's event-loop utilisation every {@link LOAD_SAMPLE_MS}; the answer is the last sample's verdict. */
  private sampleLoad(): () => boolean {
    let busy = false;
    let last = performance.eventLoopUtilization();
    this.sampler = setInterval(() => {
      const now = performance.eventLoopUtilization();
      busy = performance.eventLoopUtilization(now, last).utilization > BUSY_UTILIZATION;
      last = now;
    }, LOAD_SAMPLE_MS).unref();
    return () => busy;
  }

  /**
   * Start the worker threads now and wait until every one has loaded the render
   * pipeline, at most {@link WARM_MS}: a thread answers a ping (with its id) only once it
   * has imported the worker module, and pings go to the least busy thread, so one ping
   * per thread not yet heard from, round after round, reaches each (a module that fails
   * to load rejects it). Then, given a warm-up (src/work/warmup.ts), every thread runs
   * it: each worker one ping carrying it, and the calling thread too when it renders
   * small tasks inline, one round per turn of its event loop (it answers requests
   * between rounds). No-op without workers, but for the calling thread's warm-up. Never
   * rejects (a failure to start shows on the first task).
   */
  async warm(warmUp?: WarmUp): Promise<void> {
    if (this.closed) return;
    this.warming = true;
    try {
      const here = warmUp && (this.options.workers === 0 || this.options.inlineBytes > 0) ? warmUpHere(warmUp) : undefined;
      await Promise.all([this.loadThreads(warmUp), here?.then((rounds) => this.noteWarmedUp(rounds))]);
    } catch {
      // reported by the tasks that follow
    } finally {
      this.warming = false;
    }
  }

  /** Ping the workers until each has loaded the pipeline (at most {@link WARM_MS}), then hand each the warm-up. */
  private async loadThreads(warmUp: WarmUp | undefined): Promise<void> {
    if (this.options.workers === 0) return;
    const pool = this.threads();
    const until = Date.now() + WARM_MS;
    while (this.loaded.size < this.options.workers && Date.now() < until) {
      const answers = await Promise.all(Array.from({ length: this.options.workers - this.loaded.size }, () => pool.run({ ping: true })));
      const before = this.loaded.size;
      for (const thread of answers) if (typeof thread === 'number') this.loaded.add(thread);
      if (this.loaded.size === before) await sleep(WARM_RETRY_MS);
    }
    if (!warmUp || warmUp.rounds === 0 || warmUp.tasks.length === 0) return;
    const answers = await Promise.all(Array.from({ length: this.options.workers }, () => pool.run({ ping: true, warmUp })));
    for (const answer of answers) if (typeof answer === 'object' && 'rounds' in answer) this.noteWarmedUp(answer.rounds);
  }

  private noteWarmedUp(rounds: number): void {
    this.warmedUp.threads++;
    this.warmedUp.rounds += rounds;
  }

  /** Whether {@link warm} is still waiting for the threads to load (the service answers /readyz 503 meanwhile). */
  get starting(): boolean {
    return this.warming;
  }

  private threads(): Piscina<Envelope | Ping, TaskValue<Task> | TaskFailure | number | WarmedUp> {
    if (this.piscina) return this.piscina;
    const pool = new Piscina<Envelope | Ping, TaskValue<Task> | TaskFailure | number | WarmedUp>({
      filename: (this.options.filename ?? WORKER_MODULE).href,
      minThreads: this.options.workers,
      maxThreads: this.options.workers,
      // The bound is kept in run() (tasks held by workers count as waiting too).
      maxQueue: Infinity,
      concurrentTasksPerWorker: TASKS_PER_WORKER,
      idleTimeout: Number.MAX_SAFE_INTEGER,
    });
    this.piscina = pool;
    return pool;
  }

  /** Tasks waiting for a worker now (handed over, not done, beyond one running per worker). */
  get queued(): number {
    return Math.max(0, this.outstanding - this.options.workers);
  }

  /**
   * Run a task, inline or in a worker (see the module comment).
   *
   * @param size the task's input in bytes (a body's length, a request's JSON length).
   * @throws what {@link runTask} throws, in its own class; RenderOverloadedError;
   *   RenderTimeoutError; Error when the pool is closed.
   */
  async run<T extends Task>(task: T, size: number): Promise<TaskValue<T>> {
    if (this.options.workers === 0 || (size <= this.options.inlineBytes && (!this.busy() || this.loaded.size < this.options.workers))) {
      this.stats.inline++;
      return runTask(task);
    }
    if (this.closed) throw new Error('the render pool is closed');
    if (this.queued >= this.options.queue) {
      this.stats.shed++;
      throw new RenderOverloadedError(this.options.queue);
    }
    this.stats.pooled++;
    this.outstanding++;
    try {
      return await this.hand(task);
    } finally {
      if (--this.outstanding === 0) this.drained?.();
    }
  }

  /** Hand a task to a worker and wait for it; once more if its worker was terminated before it started. */
  private async hand<T extends Task>(task: T, retried = false): Promise<TaskValue<T>> {
    const pool = this.threads();
    // [0]: when the task started (ms since the epoch, 0 while waiting); [1]: the thread running it.
    const started = new BigInt64Array(new SharedArrayBuffer(16));
    const timer = this.deadline(started);
    let value: TaskValue<Task> | TaskFailure | number | WarmedUp;
    try {
      value = await pool.run({ task, started });
    } catch (e) {
      if (timer.expired) {
        this.stats.timedOut++;
        throw new RenderTimeoutError(this.options.timeoutMs);
      }
      // Its worker was terminated for another task's time while this one waited behind it.
      if (!retried && Atomics.load(started, 0) === 0n) return await this.hand(task, true);
      throw e;
    } finally {
      clearTimeout(timer.current);
    }
    if (isFailure(value)) throw rebuildError(value, task);
    return value as TaskValue<T>;
  }

  /**
   * Terminate the task's worker `timeoutMs` after the task started there (the worker
   * writes the instant and its thread id into `started`): the timer looks at that cell
   * when it fires and waits on while the task is still waiting or has time left.
   */
  private deadline(started: BigInt64Array): { current: NodeJS.Timeout | undefined; expired: boolean } {
    const { timeoutMs } = this.options;
    const timer: { current: NodeJS.Timeout | undefined; expired: boolean } = { current: undefined, expired: false };
    const check = () => {
      const at = Number(Atomics.load(started, 0));
      const left = at === 0 ? timeoutMs : at + timeoutMs - Date.now();
      if (at !== 0 && left <= 0) {
        timer.expired = true;
        const thread = Number(Atomics.load(started, 1));
        // piscina then fails the worker's tasks and starts another in its place.
        void this.piscina?.threads.find((w) => w.threadId === thread)?.terminate();
      } else timer.current = setTimeout(check, Math.max(1, left)).unref();
    };
    timer.current = setTimeout(check, timeoutMs).unref();
    return timer;
  }

  /** Let queued and running tasks finish, then stop the threads (idempotent). */
  close(): Promise<void> {
    this.closing ??= this.shutdown();
    return this.closing;
  }

  private async shutdown(): Promise<void> {
    this.closed = true;
    clearInterval(this.sampler);
    // piscina's own close ends threads once each is idle for a moment, even with tasks
    // still waiting for them: wait for every task handed over first.
    if (this.outstanding > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    const pool = this.piscina;
    this.piscina = undefined;
    await pool?.close();
  }
}
