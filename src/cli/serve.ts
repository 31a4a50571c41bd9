/**
 * `bootwright serve`: run the service in the foreground, or with `--detach` in the
 * background once it listens. Flags override the matching `BOOTWRIGHT_*` variables,
 * which override the configuration file.
 */
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { serve, PID_FILE } from '../api/serve.js';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { EXIT, type Command, type Parsed } from './commands.js';

/** The service's log file under the data directory, written by `serve --detach`. */
export const LOG_FILE = 'bootwright.log';

/** How long `serve --detach` waits for the service to listen and be ready, milliseconds. */
const DETACH_TIMEOUT_MS = 60_000;
/** How often a detached service asks its own /readyz before reporting, milliseconds. */
const READY_POLL_MS = 50;

/** `bootwright serve`. */
export const SERVE: Command = {
  name: 'serve',
  summary: 'Run the HTTP service',
  usage: ['serve [--host ADDR] [--port PORT] [--data-dir DIR] [--config FILE] [--detach]'],
  positionals: 0,
  flags: [
    { name: 'host', type: 'string', value: 'ADDR', help: 'listen address (BOOTWRIGHT_HOST; default 127.0.0.1)' },
    { name: 'port', type: 'string', value: 'PORT', help: 'listen port, 0 for any free one (BOOTWRIGHT_PORT; default 8080)' },
    { name: 'data-dir', type: 'string', value: 'DIR', help: 'data directory: admin token, SQLite inventory, PID file (BOOTWRIGHT_DATA_DIR; default ./data)' },
    { name: 'config', type: 'string', value: 'FILE', help: 'YAML or JSON configuration file, keys as the variables in camelCase (BOOTWRIGHT_CONFIG)' },
    { name: 'detach', short: 'd', type: 'boolean', help: `start in the background; return once it listens and is ready (exit 0) or with its error (exit 1); logs to DIR/${LOG_FILE}` },
  ],
  details: `Every other setting is a BOOTWRIGHT_* variable (docs/operating.md, Configuration). With no token
configured, the first start writes an admin token to DIR/admin-token (mode 0600).
While it runs, DIR/${PID_FILE} holds its PID; stop it with SIGTERM, which lets in-flight
requests finish:  kill $(cat DIR/${PID_FILE})`,
};

/** The flags that name configuration keys, and the key each sets. */
const CONFIG_FLAGS = { host: 'host', port: 'port', 'data-dir': 'dataDir' } as const satisfies Record<string, keyof Config>;

/** The configuration, with the flags over the environment over the file. */
export function configFrom(parsed: Parsed): Config {
  const overrides: Record<string, unknown> = {};
  const names: Partial<Record<keyof Config, string>> = {};
  for (const [flag, key] of Object.entries(CONFIG_FLAGS)) {
    const v = parsed.values[flag];
    if (typeof v === 'string') {
      overrides[key] = v;
      names[key] = `--${flag}`;
    }
  }
  const env = typeof parsed.values.config === 'string' ? { ...process.env, BOOTWRIGHT_CONFIG: parsed.values.config } : process.env;
  return loadConfig(env, overrides, names);
}

/** The bytes a file gained since `offset`, at most 16 KiB of the end, as text. */
function readSince(file: string, offset: number): string {
  const size = statSync(file).size;
  const start = Math.max(offset, size - 16 * 1024);
  const buf = Buffer.alloc(size - start);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, buf, 0, buf.length, start);
  } finally {
    closeSync(fd);
  }
  return buf.toString('utf8');
}

/**
 * Start this same command line again without `--detach`, as a detached child logging
 * to the data directory, and wait until it reports that it listens and is ready (its
 * /readyz answers 200; over the IPC channel) or exits.
 *
 * @returns 0 once it is ready (it keeps running); 1 when it exits first or is not
 *   ready within 60 s (then it is stopped), after printing what it logged.
 */
async function detach(args: string[], config: Config, out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<number> {
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const logFile = join(config.dataDir, LOG_FILE);
  const log = openSync(logFile, 'a', 0o600);
  const offset = statSync(logFile).size;
  const childArgs = args.filter((a) => a !== '--detach' && a !== '-d');
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, 'serve', ...childArgs], {
    detached: true,
    stdio: ['ignore', log, log, 'ipc'],
    env: { ...process.env, BOOTWRIGHT_DETACHED: '1' },
  });
  closeSync(log);
  const outcome = await new Promise<{ url: string } | { code: number | null } | 'timeout'>((resolve) => {
    const timer = setTimeout(() => resolve('timeout'), DETACH_TIMEOUT_MS);
    child.once('message', (m: { url?: string }) => {
      clearTimeout(timer);
      resolve({ url: String(m.url) });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code });
    });
  });
  if (typeof outcome === 'object' && 'url' in outcome) {
    child.disconnect();
    child.unref();
    out.write(
      `bootwright is serving at ${outcome.url} (PID ${String(child.pid)})\n` +
        `  logs: ${logFile}\n` +
        `  stop: kill $(cat ${join(config.dataDir, PID_FILE)})\n`,
    );
    return EXIT.ok;
  }
  if (outcome === 'timeout') child.kill('SIGTERM');
  err.write(readSince(logFile, offset));
  err.write(outcome === 'timeout' ? `serve: the service was not listening and ready within ${DETACH_TIMEOUT_MS / 1000} s; stopped it\n` : `serve: the service exited (code ${String(outcome.code)}) before listening; its log is above (${logFile})\n`);
  return EXIT.failure;
}

/**
 * Run `serve`.
 *
 * @param args the arguments after `serve`, as given (for `--detach` to pass on).
 * @returns the exit code: 0 once listening (the process then runs until a signal),
 *   1 when the service cannot start (the error printed on `err`).
 * @throws ConfigError naming the flag or variable of a bad setting.
 */
export async function runServe(parsed: Parsed, args: string[], out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<number> {
  const config = configFrom(parsed);
  if (parsed.values.detach) return detach(args, config, out, err);
  try {
    const app = await serve(config);
    if (process.env.BOOTWRIGHT_DETACHED === '1' && process.send) {
      // Report once ready, not merely listening: /readyz is 503 while the render workers
      // load (a second or two), and a caller's first request should not wait behind them.
      // The parent gives up after DETACH_TIMEOUT_MS.
      for (let i = 0; i * READY_POLL_MS < DETACH_TIMEOUT_MS && (await app.inject({ url: '/readyz' })).statusCode !== 200; i++) await sleep(READY_POLL_MS);
      const { port } = app.server.address() as AddressInfo;
      const scheme = 'setSecureContext' in app.server ? 'https' : 'http';
      process.send({ url: `${scheme}://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}` });
      process.disconnect();
    }
    return EXIT.ok;
  } catch (e) {
    if (e instanceof ConfigError) throw e;
    err.write(`cannot start: ${(e as Error).message}\n`);
    return EXIT.failure;
  }
}
