/**
 * A store whose chosen methods fail on demand, for storage-fault tests: every call goes
 * to a real store, except calls of the methods named in {@link FaultyStore.fail}, which
 * reject with the given error (as the driver would: a SQLite `SqliteError` with its
 * result code, a Node system error with its errno name, a PostgreSQL `DatabaseError`
 * with its SQLSTATE).
 */
import pg from 'pg';
import type { Store } from '../../src/store/store.js';

/** The store methods that write. */
export const WRITE_METHODS = ['create', 'replace', 'delete', 'recordAudit', 'takeFetch', 'resetFetches', 'recordDiscovered', 'claimMintedToken', 'extendMintedToken', 'forgetMintedToken'] as const satisfies readonly (keyof Store)[];

/** A store with switchable faults. */
export interface FaultyStore {
  store: Store;
  /** Make `methods` reject with `error` (an empty list: no faults). */
  fail(error: Error | undefined, methods?: readonly (keyof Store)[]): void;
}

/** Wrap a real store. */
export function faultyStore(real: Store): FaultyStore {
  let failing: { error: Error; methods: ReadonlySet<string> } | undefined;
  const store = new Proxy(real, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (failing?.methods.has(String(property))) return Promise.reject(failing.error);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return {
    store,
    fail(error, methods = WRITE_METHODS) {
      failing = error ? { error, methods: new Set(methods) } : undefined;
    },
  };
}

/** A better-sqlite3 error as it throws one (`SqliteError` with the result code). */
export function sqliteError(code: string, message = 'database or disk is full'): Error {
  return Object.assign(new Error(message), { name: 'SqliteError', code });
}

/** A Node system error (`ENOSPC`, `EIO`…). */
export function systemError(code: string): Error {
  return Object.assign(new Error(`${code}: write failed`), { code, errno: -28, syscall: 'write' });
}

/** A PostgreSQL error as node-postgres reports it, with its SQLSTATE. */
export function postgresError(code: string, message: string): Error {
  const e = new pg.DatabaseError(message, message.length, 'error');
  e.code = code;
  return e;
}
