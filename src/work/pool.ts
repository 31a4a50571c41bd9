/**
 * The render pool (issue 15): parsing, validation, assembly and rendering off the main
 * thread, in a piscina pool of worker threads (src/work/worker.ts), so the event loop
 * keeps serving HTTP, auth, the caches and the store while renders run on the other
 * cores.
 *
 * - Sized: a task whose input is at most `inlineBytes` runs inline on the calling thread
 *   (a worker's round trip costs more than a tiny render); a pool of 0 workers runs
 *   every task inline (the CLI does, through the same {@link runTask}).
 * - Bounded: at most `queue` tasks wait for a worker; one more is refused at once with
 *   {@link RenderOverloadedError} (the routes answer 503 + Retry-After).
 * - Timed: a task not done `timeoutMs` after a worker started it is abandoned, its
 *   worker terminated and replaced (piscina aborts a running task by terminating its
 *   thread), and {@link RenderTimeoutError} thrown (503 + Retry-After), so one stuck
 *   render never wedges the pool.
 * - Threads start on the first task handed to the pool or on {@link RenderPool.warm}
 *   (which resolves once every thread has loaded the pipeline; the service is not ready
 *   until then, see {@link RenderPool.starting}), and {@link RenderPool.close} lets queued
 *   and running tasks finish.
 *
 * Worker threads load this module's sibling `worker.ts` under tsx (development, tests)
 * or `worker.js` (dist/): whichever this module itself was loaded as. Workers inherit
 * the process's `execArgv`, so `node --import tsx` reaches them too.
 */
import { Piscina } from 'piscina';
import { rebuildError, runTask, type Task, type TaskFailure, type TaskValue } from './task.js';
import type { Envelope, Ping } from './worker.js';

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
  private piscina: Piscina<Envelope | Ping, TaskValue<Task> | TaskFailure | 'pong'> | undefined;
  private closed = false;
  private warming = false;

  constructor(readonly options: RenderPoolOptions) {}

  /**
   * Start the worker threads now and wait until they have loaded the render pipeline:
   * one ping per thread, at once, so each idle thread answers one (a thread that loads
   * late may leave its ping to another: then at least one thread serves). No-op without
   * workers. Never rejects (a failure to start shows on the first task).
   */
  async warm(): Promise<void> {
    if (this.options.workers === 0 || this.closed) return;
    const pool = this.threads();
    this.warming = true;
    try {
      await Promise.all(Array.from({ length: this.options.workers }, () => pool.run({ ping: true })));
    } catch {
      // reported by the tasks that follow
    } finally {
      this.warming = false;
    }
  }

  /** Whether {@link warm} is still waiting for the threads to load (the service answers /readyz 503 meanwhile). */
  get starting(): boolean {
    return this.warming;
  }

  private threads(): Piscina<Envelope | Ping, TaskValue<Task> | TaskFailure | 'pong'> {
    this.piscina ??= new Piscina({
      filename: (this.options.filename ?? WORKER_MODULE).href,
      minThreads: this.options.workers,
      maxThreads: this.options.workers,
      maxQueue: this.options.queue,
      // Renders are short and CPU-bound: one at a time per thread.
      concurrentTasksPerWorker: 1,
      idleTimeout: Number.MAX_SAFE_INTEGER,
    });
    return this.piscina;
  }

  /** Tasks waiting for a worker now. */
  get queued(): number {
    return this.piscina?.queueSize ?? 0;
  }

  /**
   * Run a task, inline or in a worker (see the module comment).
   *
   * @param size the task's input in bytes (a body's length, a request's JSON length).
   * @throws what {@link runTask} throws, in its own class; RenderOverloadedError;
   *   RenderTimeoutError; Error when the pool is closed.
   */
  async run<T extends Task>(task: T, size: number): Promise<TaskValue<T>> {
    if (this.options.workers === 0 || size <= this.options.inlineBytes) {
      this.stats.inline++;
      return runTask(task);
    }
    if (this.closed) throw new Error('the render pool is closed');
    const pool = this.threads();
    if (pool.queueSize >= this.options.queue && pool.idleThreads === 0) {
      this.stats.shed++;
      throw new RenderOverloadedError(this.options.queue);
    }
    this.stats.pooled++;
    const started = new BigInt64Array(new SharedArrayBuffer(8));
    const abort = new AbortController();
    const timer = this.deadline(started, abort);
    let value: TaskValue<Task> | TaskFailure | 'pong';
    try {
      value = await pool.run({ task, started }, { signal: abort.signal });
    } catch (e) {
      if (abort.signal.aborted) {
        this.stats.timedOut++;
        throw new RenderTimeoutError(this.options.timeoutMs);
      }
      if (e instanceof Error && e.message === 'Task queue is at limit') {
        this.stats.shed++;
        throw new RenderOverloadedError(this.options.queue);
      }
      throw e;
    } finally {
      clearTimeout(timer.current);
    }
    if (isFailure(value)) throw rebuildError(value, task);
    return value as TaskValue<T>;
  }

  /**
   * Abort the task `timeoutMs` after it started in a worker (the worker writes the
   * instant into `started`): the timer looks at that cell when it fires and waits on
   * while the task is still queued or has time left.
   */
  private deadline(started: BigInt64Array, abort: AbortController): { current: NodeJS.Timeout | undefined } {
    const { timeoutMs } = this.options;
    const timer: { current: NodeJS.Timeout | undefined } = { current: undefined };
    const check = () => {
      const at = Number(Atomics.load(started, 0));
      const left = at === 0 ? timeoutMs : at + timeoutMs - Date.now();
      if (at !== 0 && left <= 0) abort.abort();
      else timer.current = setTimeout(check, Math.max(1, left)).unref();
    };
    timer.current = setTimeout(check, timeoutMs).unref();
    return timer;
  }

  /** Let queued and running tasks finish, then stop the threads (idempotent). */
  async close(): Promise<void> {
    this.closed = true;
    const pool = this.piscina;
    this.piscina = undefined;
    await pool?.close();
  }
}
