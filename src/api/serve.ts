/**
 * Starting the service for real: configuration, the generated admin token when none is
 * configured, the SQLite store under the data directory, listening, and graceful
 * shutdown on SIGTERM/SIGINT (close-with-grace: in-flight requests finish, new
 * connections are refused, the store is closed, exit 0).
 */
import { join } from 'node:path';
import closeWithGrace from 'close-with-grace';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { openPostgresStore } from '../store/postgres.js';
import { openSqliteStore, SQLITE_FILE } from '../store/sqlite.js';
import { ensureAdminToken } from './auth.js';
import { buildServer } from './server.js';

/**
 * Build and start the service.
 *
 * @param config validated configuration; with no tokens, an admin token is generated
 *   into `<dataDir>/admin-token` (mode 0600) on first start, and its path (never the
 *   token) is logged. The inventory is `<dataDir>/bootwright.db` (created, mode 0600,
 *   and migrated on start), or PostgreSQL at `databaseUrl` when set (migrated on start).
 * @param graceMs how long in-flight requests may take after SIGTERM, milliseconds.
 * @returns the listening server.
 */
export async function serve(config: Config, graceMs = 10_000): Promise<FastifyInstance> {
  let generated: ReturnType<typeof ensureAdminToken> | undefined;
  if (config.tokens.length === 0) generated = ensureAdminToken(config.dataDir);
  const store = config.databaseUrl ? await openPostgresStore(config.databaseUrl) : await openSqliteStore(join(config.dataDir, SQLITE_FILE));
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
  closeWithGrace({ delay: graceMs, logger: { error: (m: string) => app.log.error(m) } }, async ({ signal, err }) => {
    if (err) app.log.error({ err: { message: err.message } }, 'closing after an error');
    else app.log.info({ signal }, 'closing: finishing in-flight requests');
    await app.close();
  });
  await app.listen({ host: config.host, port: config.port });
  return app;
}
