/**
 * Starting the service for real: configuration, the generated admin token when none is
 * configured, listening, and graceful shutdown on SIGTERM/SIGINT (close-with-grace:
 * in-flight requests finish, new connections are refused, exit 0).
 */
import closeWithGrace from 'close-with-grace';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { ensureAdminToken } from './auth.js';
import { buildServer } from './server.js';

/**
 * Build and start the service.
 *
 * @param config validated configuration; with no tokens, an admin token is generated
 *   into `<dataDir>/admin-token` (mode 0600) on first start, and its path (never the
 *   token) is logged.
 * @param graceMs how long in-flight requests may take after SIGTERM, milliseconds.
 * @returns the listening server.
 */
export async function serve(config: Config, graceMs = 10_000): Promise<FastifyInstance> {
  let generated: ReturnType<typeof ensureAdminToken> | undefined;
  if (config.tokens.length === 0) generated = ensureAdminToken(config.dataDir);
  const app = await buildServer({ config: generated ? { ...config, tokens: [generated.token] } : config });
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
