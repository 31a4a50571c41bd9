/**
 * Storage faults: the errors that mean the inventory cannot be written (or read) right
 * now, through no fault of the request — a full disk, an I/O error, a read-only file
 * system or database, a database that is down, restarting, out of connections or out
 * of space. The HTTP layer answers them `503 Service Unavailable` with `Retry-After`
 * (RFC 9110 §15.6.4, §10.2.3), so clients and firmware retry; everything else a store
 * throws that is not a {@link StoreError} stays an internal error.
 */

/** SQLite primary result codes (https://sqlite.org/rescode.html) that are faults of the storage; extended codes (`SQLITE_IOERR_WRITE`) count as their primary code. */
const SQLITE_FAULTS = /^SQLITE_(FULL|IOERR|READONLY|BUSY|LOCKED|CANTOPEN|NOMEM|PROTOCOL|NOLFS)(_|$)/;

/** Operating system error codes (errno names, as Node reports them) of a storage or connection fault. */
const SYSTEM_FAULTS = new Set(['ENOSPC', 'EDQUOT', 'EIO', 'EROFS', 'EMFILE', 'ENFILE', 'EAGAIN', 'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * PostgreSQL SQLSTATEs (https://www.postgresql.org/docs/current/errcodes-appendix.html)
 * of a fault: classes 08 (connection exception), 53 (insufficient resources: 53100
 * disk_full, 53200 out_of_memory, 53300 too_many_connections), 57 (operator
 * intervention: admin_shutdown, crash_shutdown, cannot_connect_now, query_canceled by
 * a statement timeout) and 58 (system error: 58030 io_error); and 25006
 * read_only_sql_transaction (a standby), 40001 serialization_failure, 40P01
 * deadlock_detected and 55P03 lock_not_available, which succeed when retried.
 */
const SQLSTATE_FAULT = /^(08|53|57|58)[0-9A-Z]{3}$|^(25006|40001|40P01|55P03)$/;

/** Messages node-postgres throws, without a code, when the connection fails or the pool cannot give one. */
const PG_CONNECTION_FAULT = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Cannot use a pool after calling end)/;

/**
 * Whether an error is a storage fault, and which.
 *
 * @returns the fault's code, safe to log and to use as a metric label (a SQLite result
 *   code such as `SQLITE_FULL`, an errno name such as `ENOSPC`, a PostgreSQL SQLSTATE such
 *   as `53100`, or `connection` for a lost PostgreSQL connection), or undefined when the
 *   error is not one. Never the error's message, which may quote values.
 */
export function storageFault(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    const sqlite = SQLITE_FAULTS.exec(code);
    if (sqlite) return `SQLITE_${sqlite[1]!}`;
    if (SYSTEM_FAULTS.has(code)) return code;
    if (SQLSTATE_FAULT.test(code)) return code;
  }
  if (PG_CONNECTION_FAULT.test(error.message)) return 'connection';
  return undefined;
}
