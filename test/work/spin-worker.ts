/**
 * A render worker for the pool tests: the real worker (src/work/worker.ts), plus a task
 * `{ op: 'spin', ms }` that keeps its thread busy (synchronously, as a runaway render
 * would) for `ms` milliseconds, or forever when `ms` is absent, and answers `{ spun: ms,
 * endedAt }` (ms since the epoch).
 */
import { threadId } from 'node:worker_threads';
import work, { type Envelope, markStarted, type Ping } from '../../src/work/worker.js';

// A thread that loads late: with SPIN_WORKER_SLOW_LOAD_MS set, threads of even id take
// that long to import this module.
const slowLoad = Number(process.env.SPIN_WORKER_SLOW_LOAD_MS ?? 0);
if (slowLoad > 0 && threadId % 2 === 0) {
  const until = performance.now() + slowLoad;
  while (performance.now() < until) {
    // loading
  }
}

export default function spinOrWork(envelope: Envelope | Ping): unknown {
  // A ping (RenderPool.warm) and the real tasks go to the real worker.
  if (!('task' in envelope)) return work(envelope);
  const task = envelope.task as Envelope['task'] | { op: 'spin'; ms?: number };
  if (task.op !== 'spin') return work(envelope);
  markStarted(envelope.started);
  const until = task.ms === undefined ? Number.POSITIVE_INFINITY : performance.now() + task.ms;
  while (performance.now() < until) {
    // busy, like a render that does not end
  }
  return { spun: task.ms, endedAt: Date.now() };
}
