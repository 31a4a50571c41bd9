/**
 * Starting the service for real: configuration, the generated admin token when none is
 * configured, the SQLite store under the data directory, listening, the PID file, and
 * graceful shutdown on SIGTERM/SIGINT (close-with-grace: in-flight requests finish, new
 * connections are refused, the store is closed, the PID file removed, exit 0).
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import closeWithGrace from 'close-with-grace';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { openPostgresStore } from '../store/postgres.js';
import { openSqliteStore, SQLITE_FILE } from '../store/sqlite.js';
import { ensureAdminToken } from './auth.js';
import { buildServer } from './server.js';

/** The PID file under the data directory: the PID of the service while it listens. */
export const PID_FILE = 'bootwright.pid';

/**
 * Write this process's PID to `file` (mode 0644) atomically: a reader never sees a
 * partial PID.
 *
 * @returns undefined, or the error code when it cannot be written (a read-only data
 *   directory does not stop the service).
 */
function writePidFile(file: string): string | undefined {
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(tmp, `${process.pid}\n`, { mode: 0o644 });
    renameSync(tmp, file);
    return undefined;
  } catch (e) {
    rmSync(tmp, { force: true });
    return (e as NodeJS.ErrnoException).code ?? 'error';
  }
}

/** Remove the PID file if it still names this process (a later start may have replaced it). */
function removePidFile(file: string): void {
  try {
    if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file, { force: true });
  } catch {
    // already gone
  }
}

/**
 * Build and start the service.
 *
 * @param config validated configuration; with no tokens, an admin token is generated
 *   into `<dataDir>/admin-token` (mode 0600) on first start, and its path (never the
 *   token) is logged. The inventory is `<dataDir>/bootwright.db` (created, mode 0600,
 *   and migrated on start), or PostgreSQL at `databaseUrl` when set (migrated on start).
 *   Once listening, `<dataDir>/bootwright.pid` holds this process's PID until it closes.
 * @param graceMs how long in-flight requests may take after SIGTERM, milliseconds.
 * @returns the listening server.
 * @throws Error when the store cannot be opened or the address cannot be bound (e.g.
 *   `EADDRINUSE`); the server and store are closed first.
 */
export async function serve(config: Config, graceMs = 10_000): Promise<FastifyInstance> {
  let generated: ReturnType<typeof ensureAdminToken> | undefined;
  if (config.tokens.length === 0) generated = ensureAdminToken(config.dataDir);
  const store = config.databaseUrl ? await openPostgresStore(config.databaseUrl) : await openSqliteStore(join(config.dataDir, SQLITE_FILE), { batchMs: config.sqliteBatchMs });
  let app: FastifyInstance;
  try {
    app = await buildServer({ config: generated ? { ...config, tokens: [generated.token] } : config, store });
  } catch (e) {
    await store.close();
    throw e;
  }
  // After the server: in-flight requests may still use the store while it closes.
  app.addHook('onClose', async () => store.close());
  app.log.info(config.databaseUrl ? { database: 'postgresql' } : { path: join(config.dataDir, SQLITE_FILE) }, 'inventory store opened');
  if (generated) {
    app.log.info({ path: generated.path, created: generated.created }, 'no token configured: using the generated admin token in this file');
  }
  const pidFile = join(config.dataDir, PID_FILE);
  app.addHook('onClose', (_app, done) => {
    removePidFile(pidFile);
    done();
  });
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (e) {
    await app.close();
    throw e;
  }
  // Only once listening: close-with-grace also acts on `beforeExit`, which a failed start
  // must not turn into a graceful close and exit 0.
  closeWithGrace({ delay: graceMs, logger: { error: (m: string) => app.log.error(m) } }, async ({ signal, err }) => {
    if (err) app.log.error({ err: { message: err.message } }, 'closing after an error');
    else app.log.info({ signal }, 'closing: finishing in-flight requests');
    await app.close();
  });
  const written = writePidFile(pidFile);
  if (written) app.log.warn({ path: pidFile, code: written }, 'cannot write the PID file');
  return app;
}
