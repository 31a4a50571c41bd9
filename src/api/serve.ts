/**
 * Starting the service for real: configuration, the generated admin token when none is
 * configured, the SQLite store under the data directory, listening, the PID file, and
 * graceful shutdown on SIGTERM/SIGINT (close-with-grace: in-flight requests finish, new
 * connections are refused, the store is closed, the PID file removed, exit 0).
 */
import { X509Certificate } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import closeWithGrace from 'close-with-grace';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { openPostgresStore } from '../store/postgres.js';
import { openSqliteStore, SQLITE_FILE } from '../store/sqlite.js';
import { ensureAdminToken } from './auth.js';
import { buildServer, type ServerTls } from './server.js';
import { ConfigError } from '../config.js';
import { ensureAutoTls, servingHosts } from '../tls/auto.js';
import { type CredentialsWatch, readCredentials, type TlsCredentials, watchCredentials } from '../tls/credentials.js';
import { closePlain, listenPlain } from './plain.js';
import type { Server } from 'node:http';
import type { Server as TlsServer } from 'node:tls';

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

/** The HTTPS setup of a configuration: what the server listens with, and the files to watch. */
interface TlsSetup {
  tls?: ServerTls;
  tlsCa?: string;
  files?: { cert: string; key: string; credentials: TlsCredentials };
  generated?: { ca: boolean; serving: boolean; caFile: string; constrained: boolean; caKeyOnline: boolean; renewalDue: boolean; servingNotAfter: string };
}

/**
 * The certificates of a `tlsCa` file, as they are published (`GET /ca.crt`, pointer
 * configs): its PEM `CERTIFICATE` blocks only, each checked to parse.
 *
 * @throws ConfigError naming `tlsCa` when the file holds a private key (it would be
 *   published: refused, never read further) or no certificate
 */
export function publishableCa(text: string, file: string): string {
  if (/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(text)) throw new ConfigError(`tlsCa (BOOTWRIGHT_TLS_CA) ${file}: holds a private key; it is published at /ca.crt and in pointer configs, so it must hold certificates only`);
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new ConfigError(`tlsCa (BOOTWRIGHT_TLS_CA) ${file}: holds no PEM certificate`);
  for (const block of blocks) {
    try {
      new X509Certificate(block);
    } catch {
      throw new ConfigError(`tlsCa (BOOTWRIGHT_TLS_CA) ${file}: a certificate does not parse`);
    }
  }
  return `${blocks.join('\n')}\n`;
}

/**
 * Read or generate the HTTPS credentials (issue 16): `tlsCert` + `tlsKey` (files), else
 * `tls: auto` (src/tls/auto.ts), else none (plain HTTP; `tlsCa` alone is the CA of a
 * TLS proxy in front, still pinned by pointers and served at /ca.crt).
 *
 * @throws ConfigError when only one of `tlsCert` and `tlsKey` is given or `tlsCa` cannot
 *   be read; TlsCredentialsError for an unusable pair (expired included)
 */
async function tlsSetup(config: Config): Promise<TlsSetup> {
  if ((config.tlsCert === undefined) !== (config.tlsKey === undefined)) throw new ConfigError('tlsCert (BOOTWRIGHT_TLS_CERT) and tlsKey (BOOTWRIGHT_TLS_KEY): give both or neither');
  let ca: string | undefined;
  if (config.tlsCa !== undefined) {
    let text: string;
    try {
      text = readFileSync(config.tlsCa, 'utf8');
    } catch (e) {
      throw new ConfigError(`tlsCa (BOOTWRIGHT_TLS_CA) ${config.tlsCa}: cannot read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    ca = publishableCa(text, config.tlsCa);
  }
  if (config.tlsCert !== undefined && config.tlsKey !== undefined) {
    const credentials = readCredentials(config.tlsCert, config.tlsKey);
    return { tls: { cert: credentials.cert, key: credentials.key, ...(ca !== undefined ? { ca } : {}) }, files: { cert: config.tlsCert, key: config.tlsKey, credentials } };
  }
  if (config.tls === 'auto') {
    const auto = await ensureAutoTls(config.dataDir, servingHosts(config.publicUrl, config.host));
    const credentials = readCredentials(auto.certFile, auto.keyFile);
    return {
      tls: { cert: credentials.cert, key: credentials.key, ca: ca ?? auto.caPem },
      files: { cert: auto.certFile, key: auto.keyFile, credentials },
      generated: { ...auto.created, caFile: auto.caFile, constrained: auto.constrained, caKeyOnline: auto.caKeyOnline, renewalDue: auto.renewalDue, servingNotAfter: auto.servingNotAfter.toISOString() },
    };
  }
  return ca !== undefined ? { tlsCa: ca } : {};
}

/**
 * Build and start the service.
 *
 * @param config validated configuration; with no tokens, an admin token is generated
 *   into `<dataDir>/admin-token` (mode 0600) on first start, and its path (never the
 *   token) is logged. The inventory is `<dataDir>/bootwright.db` (created, mode 0600,
 *   and migrated on start), or PostgreSQL at `databaseUrl` when set (migrated on start).
 *   Once listening, `<dataDir>/bootwright.pid` holds this process's PID until it closes.
 *   With `tlsCert`/`tlsKey` or `tls: auto` it listens on HTTPS (src/tls/), reloading the
 *   certificate on SIGHUP and file change; with `httpPort`, also on plain HTTP for the
 *   iPXE routes (plain.ts).
 * @param graceMs how long in-flight requests may take after SIGTERM, milliseconds.
 * @returns the listening server.
 * @throws Error when the store cannot be opened or the address cannot be bound (e.g.
 *   `EADDRINUSE`); the server and store are closed first. TlsCredentialsError for an
 *   unusable or expired certificate, ConfigError for half a TLS configuration.
 */
export async function serve(config: Config, graceMs = 10_000): Promise<FastifyInstance> {
  let generated: ReturnType<typeof ensureAdminToken> | undefined;
  if (config.tokens.length === 0) generated = ensureAdminToken(config.dataDir);
  const setup = await tlsSetup(config);
  const store = config.databaseUrl ? await openPostgresStore(config.databaseUrl, { poolSize: config.databasePoolSize }) : await openSqliteStore(join(config.dataDir, SQLITE_FILE), { batchMs: config.sqliteBatchMs });
  let app: FastifyInstance;
  try {
    app = await buildServer({
      config: generated ? { ...config, tokens: [generated.token] } : config,
      store,
      ...(setup.tls ? { tls: setup.tls } : {}),
      ...(setup.tlsCa !== undefined ? { tlsCa: setup.tlsCa } : {}),
    });
  } catch (e) {
    await store.close();
    throw e;
  }
  // After the server: in-flight requests may still use the store while it closes.
  app.addHook('onClose', async () => store.close());
  const where = config.databaseUrl ? { database: 'postgresql' } : { path: join(config.dataDir, SQLITE_FILE) };
  const schema = store.schema;
  app.log.info({ ...where, ...(schema ? { schemaVersion: Math.max(schema.database, schema.release), migrationsApplied: schema.applied } : {}) }, 'inventory store opened');
  if (schema && schema.database > schema.release) {
    app.log.warn({ ...where, schemaVersion: schema.database, releaseSchemaVersion: schema.release }, 'the store was migrated by a newer release; this release runs on it (its migrations only added), without what the newer release added');
  }
  if (generated) {
    app.log.info({ path: generated.path, created: generated.created }, 'no token configured: using the generated admin token in this file');
  }
  if (setup.files) {
    const { credentials } = setup.files;
    const fields = { cert: setup.files.cert, notAfter: credentials.notAfter.toISOString(), fingerprint: credentials.fingerprint, ...(setup.generated ? { generated: setup.generated } : {}) };
    if (credentials.expiresSoon) app.log.warn(fields, 'HTTPS: the certificate expires soon; replace the file (it is reloaded on change or SIGHUP)');
    else app.log.info(fields, 'HTTPS: serving with this certificate (reloaded on change or SIGHUP)');
    if (setup.generated?.renewalDue) {
      app.log.warn({ caFile: setup.generated.caFile, notAfter: setup.generated.servingNotAfter }, 'HTTPS: the serving certificate expires soon and the CA key is offline: put ca.key back for one start to renew it (docs/operating.md, "Keeping the CA key offline")');
    } else if (setup.generated?.caKeyOnline) {
      app.log.info({ caFile: setup.generated.caFile }, 'HTTPS: the CA key is next to ca.crt; it is needed only to issue serving certificates and may be kept offline (docs/operating.md, "Keeping the CA key offline")');
    }
    if (setup.generated?.constrained === false) app.log.warn({ caFile: setup.generated.caFile }, 'HTTPS: the generated CA (made before 0.2.0) may sign for any name and lasts ten years; rotate it to one constrained to this service\'s names (docs/operating.md, "Rotating the generated CA")');
  }
  if (config.publicUrl?.startsWith('http:') && setup.tls) app.log.warn({ publicUrl: config.publicUrl }, 'HTTPS is on but the public URL is http: machines are handed http URLs');
  if (!setup.tls && config.allowedHosts.length === 0 && !isLoopback(config.host)) {
    app.log.warn({ host: config.host }, 'plain HTTP answering any Host: set BOOTWRIGHT_ALLOWED_HOSTS to the names machines use, against DNS rebinding (docs/http-api.md, "What an attacker on the boot network can do")');
  }
  const pidFile = join(config.dataDir, PID_FILE);
  app.addHook('onClose', (_app, done) => {
    removePidFile(pidFile);
    done();
  });
  // Hooks cannot be added once listening: these act on what is started below.
  let plain: Server | undefined;
  let watch: CredentialsWatch | undefined;
  app.addHook('preClose', (done) => {
    if (plain) closePlain(plain);
    done();
  });
  app.addHook('onClose', (_app, done) => {
    watch?.stop();
    done();
  });
  try {
    await app.listen({ host: config.host, port: config.port });
    if (config.httpPort !== undefined) {
      if (!setup.tls) app.log.warn({ httpPort: config.httpPort }, 'httpPort is set but the service is not on HTTPS: the extra listener serves what the main one serves');
      plain = await listenPlain(app, config, config.httpPort);
    }
  } catch (e) {
    await app.close();
    throw e;
  }
  if (setup.files) watch = watchCredentials(app.server as unknown as TlsServer, setup.files.cert, setup.files.key, setup.files.credentials, app.log);
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

/** Whether a listen address is a loopback one (only this host can connect: no boot network). */
function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}
