/**
 * A render worker for the pool tests: the real worker (src/work/worker.ts), plus a task
 * `{ op: 'spin', ms }` that keeps its thread busy (synchronously, as a runaway render
 * would) for `ms` milliseconds, or forever when `ms` is absent, and answers `{ spun: ms,
 * endedAt }` (ms since the epoch).
 */
import work, { type Envelope, markStarted } from '../../src/work/worker.js';

export default function spinOrWork(envelope: Envelope): unknown {
  const task = envelope.task as Envelope['task'] | { op: 'spin'; ms?: number };
  if (task.op !== 'spin') return work(envelope);
  markStarted(envelope.started);
  const until = task.ms === undefined ? Number.POSITIVE_INFINITY : performance.now() + task.ms;
  while (performance.now() < until) {
    // busy, like a render that does not end
  }
  return { spun: task.ms, endedAt: Date.now() };
}
