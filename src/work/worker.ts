/**
 * The render worker's entry (issue 15): piscina imports this module in each worker thread
 * and calls its default export once per task. A task's error is returned as a
 * {@link TaskFailure} (structured cloning would keep only an Error's message), and
 * rebuilt into its class on the calling thread (src/work/pool.ts).
 */
import { failure, runTask, type Task, type TaskFailure, type TaskValue } from './task.js';

/** Run one task (src/work/task.ts `runTask`); a failure is returned, not thrown. */
export default function work(task: Task): TaskValue<Task> | TaskFailure {
  try {
    return runTask(task);
  } catch (e) {
    return failure(e);
  }
}
