/**
 * `bootwright serve` as a separate process for the benchmarks, run from the build
 * (`dist/`): loopback, logs at warn, rate limits and overload shedding off, a known
 * admin token, and the process's memory figures from /proc (Linux).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

/**
 * The node arguments that start `bootwright serve` as it ships: the built JavaScript
 * (`dist/cli.js`, the container image's command), not the TypeScript sources under tsx.
 * On Node.js 24 a cold storm under tsx took 3–11 % longer than the same code built
 * (three alternating pairs, 10,000 machines: 9.4–9.7 s against 8.5–9.2 s; `/ignition`
 * p99 272–319 ms against 220–296 ms; bench/README.md, the runs of 2026-12-03
 * 06:00–06:40 UTC on commit f95a1fa). `npm run bench` builds first.
 *
 * @throws Error when `dist/cli.js` is missing (run `npm run build`)
 */
export function serveArgs(): string[] {
  const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
  if (!existsSync(cli)) throw new Error('dist/cli.js is missing: run `npm run build` (npm run bench builds first)');
  return [cli, 'serve'];
}

/** The admin token every benchmark server accepts. */
export const BENCH_TOKEN = 'bench-admin-token-0123456789abcdef';

/**
 * Kill `child` (SIGKILL) if this process exits first: a bench that dies (an uncaught
 * error, its output pipe closed by `| head`) takes its servers with it, where an orphan
 * would go on loading the cores every later figure shares.
 */
export function reapOnExit(child: ChildProcess): void {
  const reap = () => child.kill('SIGKILL');
  process.once('exit', reap);
  child.once('exit', () => process.removeListener('exit', reap));
}

/** A running service process. */
export interface BenchServer {
  child: ChildProcess;
  port: number;
  base: string;
}

/**
 * Start `bootwright serve` ({@link serveArgs}) on `port` and wait until `/readyz`
 * answers 200 (at most 30 s).
 *
 * @param env extra BOOTWRIGHT_* variables: BOOTWRIGHT_DATA_DIR, and
 *   BOOTWRIGHT_DATABASE_URL / BOOTWRIGHT_URL_SIGNING_KEY / BOOTWRIGHT_PUBLIC_URL (the
 *   proxy's; default the server's own address) for PostgreSQL replicas.
 * `BENCH_SERVE_NODE_ARGS` (space-separated) goes before the script: Node flags for
 * profiling a bench's servers, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`.
 * @throws Error when `dist/cli.js` is missing, or the process exits or is not ready in
 *   time (it is killed).
 */
export async function startServe(port: number, env: Record<string, string>): Promise<BenchServer> {
  const nodeArgs = (process.env.BENCH_SERVE_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  const child = spawn(process.execPath, [...nodeArgs, ...serveArgs()], {
    env: {
      ...process.env,
      BOOTWRIGHT_HOST: '127.0.0.1',
      BOOTWRIGHT_PORT: String(port),
      BOOTWRIGHT_LOG_LEVEL: 'warn',
      BOOTWRIGHT_RATE_LIMIT_MAX: '0',
      BOOTWRIGHT_MAX_EVENT_LOOP_DELAY_MS: '0',
      BOOTWRIGHT_TOKENS: JSON.stringify([{ name: 'bench', token: BENCH_TOKEN, scopes: ['admin'] }]),
      // As a deployment sets it: the report URL in a machine's data is then known ahead
      // of its boot, so pre-rendering can fill the cache (replicas behind the proxy get
      // the proxy's URL from `env`).
      BOOTWRIGHT_PUBLIC_URL: `http://127.0.0.1:${port}`,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  reapOnExit(child);
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`server exited (${String(child.exitCode ?? child.signalCode)})`);
    try {
      if ((await fetch(`${base}/readyz`)).ok) return { child, port, base };
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  child.kill('SIGKILL');
  throw new Error('server not ready within 30 s');
}

/** Stop a server with SIGTERM and wait for it to exit. */
export async function stopServe(server: BenchServer): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  const exited = new Promise((resolve) => server.child.once('exit', resolve));
  server.child.kill('SIGTERM');
  await exited;
}

/**
 * A process's resident set size now and at its peak, MiB (Linux VmRSS and VmHWM).
 *
 * @returns NaN for a figure /proc does not give.
 */
export function rss(pid: number): { rssMiB: number; peakMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
  return { rssMiB: kb('VmRSS'), peakMiB: kb('VmHWM') };
}
