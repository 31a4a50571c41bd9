/** Catching the RequestError a call must throw, for tests that assert its problems. */
import assert from 'node:assert/strict';
import { type FieldProblem, RequestError } from '../../src/errors.js';

/** The RequestError `fn` throws; fails the test when it returns or throws anything else. */
export function requestError(fn: () => unknown): RequestError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof RequestError, `expected a RequestError, got ${String(e)}`);
    return e;
  }
  assert.fail('expected a RequestError');
}

/** The problems of the RequestError `fn` throws (see {@link requestError}). */
export function problemsOf(fn: () => unknown): FieldProblem[] {
  return requestError(fn).problems;
}
