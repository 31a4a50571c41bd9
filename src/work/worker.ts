/**
 * The render worker's entry (issue 15): piscina imports this module in each worker thread
 * and calls its default export once per task, which first marks when it started (the
 * pool's timeout counts from there, not from the time the task waited for a thread). A task's error is returned as a
 * {@link TaskFailure} (structured cloning would keep only an Error's message), and
 * rebuilt into its class on the calling thread (src/work/pool.ts).
 */
import { threadId } from 'node:worker_threads';
import { failure, runTask, type Task, type TaskFailure, type TaskValue } from './task.js';
import { type WarmUp, warmUpThread } from './warmup.js';

/** A task as the pool hands it over: with the cells the worker marks it started in ({@link markStarted}). */
export interface Envelope {
  task: Task;
  /**
   * A `BigInt64Array` over a SharedArrayBuffer of two elements: the start instant (ms
   * since the epoch) and the id of the thread running the task; the pool times the task
   * from the first and terminates the second when it runs out of time.
   */
  started: BigInt64Array;
}

/**
 * What the pool sends a thread to learn it has loaded this module (and so the render
 * pipeline), and which thread it is; with `warmUp`, the thread first runs that warm-up
 * (src/work/warmup.ts).
 */
export interface Ping {
  ping: true;
  warmUp?: WarmUp;
}

/** Write this thread's id and the instant now into a task's `started` cells (the pool times and, past its time, terminates from them). */
export function markStarted(started: BigInt64Array): void {
  Atomics.store(started, 1, BigInt(threadId));
  Atomics.store(started, 0, BigInt(Date.now()));
}

/** What a thread answers a {@link Ping} carrying a warm-up: its id, and the rounds it ran to the end. */
export interface WarmedUp {
  thread: number;
  rounds: number;
}

/**
 * Run one task (src/work/task.ts `runTask`); a failure is returned, not thrown. A
 * {@link Ping} is answered with this thread's id: it has loaded the pipeline; one
 * carrying a warm-up, once the thread has run it ({@link WarmedUp}).
 */
export default function work(envelope: Envelope | Ping): TaskValue<Task> | TaskFailure | number | WarmedUp {
  if ('ping' in envelope) return envelope.warmUp ? { thread: threadId, rounds: warmUpThread(envelope.warmUp) } : threadId;
  const { task, started } = envelope;
  markStarted(started);
  try {
    return runTask(task);
  } catch (e) {
    return failure(e);
  }
}
