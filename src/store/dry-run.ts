/**
 * Dry-run writes (`CreateOptions.dryRun`): the write runs in its transaction with every
 * check it makes, then the transaction is rolled back by throwing {@link DryRunRollback},
 * which carries what the write would have stored; {@link dryRunAnswer} turns that back
 * into the write's answer. The Kubernetes API's `dryRun=All` behaves the same way: every
 * admission and storage check, nothing persisted.
 */
import type { CreateOptions } from './store.js';

/** Thrown inside a write's transaction to roll a dry run back; `result` is the would-be answer. */
export class DryRunRollback extends Error {
  constructor(readonly result: unknown) {
    super('dry run: rolled back');
    this.name = 'DryRunRollback';
  }
}

/**
 * `result`, the last step of a write's transaction: returned to commit, or thrown inside
 * a {@link DryRunRollback} to roll back when `options.dryRun`.
 */
export function commitUnlessDryRun<T>(options: CreateOptions, result: T): T {
  if (options.dryRun === true) throw new DryRunRollback(result);
  return result;
}

/** The answer of a write: what it stored, or (rolled back as a dry run) what it would have stored. */
export async function dryRunAnswer<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (e) {
    if (e instanceof DryRunRollback) return e.result as T;
    throw e;
  }
}
