/**
 * The round-robin proxy of bench/proxy.ts in a process of its own, as a load balancer in
 * front of the replicas is: in the bench's own process it shared one event loop with the
 * load generator, so every byte it piped waited behind the client's work and the other
 * way round, and the setups behind it measured the bench as much as the replicas.
 *
 * Run as `node --import tsx bench/proxy-process.ts <json>` it is that process: it listens,
 * prints `listening <port>`, and on SIGTERM closes, prints its counts as JSON and exits.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { type Proxy, type ProxyStats, startProxy } from './proxy.js';

/** What the parent passes the proxy process. */
interface ProxyArgs {
  backends: number[];
  downMs: number;
  port: number;
}

/**
 * Start the proxy in a child process (Node.js with tsx, as the bench runs) and wait until
 * it listens. `stats` holds the proxy's counts once `close` has resolved.
 *
 * @param backends loopback ports of the replicas
 * @param downMs how long a backend that refused stays skipped, milliseconds
 * @param port the port to listen on (0: one the kernel chooses)
 * @throws Error when the process exits before it listens
 */
export async function startProxyProcess(backends: number[], downMs = 1000, port = 0): Promise<Proxy> {
  const args: ProxyArgs = { backends, downMs, port };
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const stats: ProxyStats = { connections: 0, failovers: 0, dropped: 0 };
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const listening = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the proxy process exited (${String(code)}) before it listened`)));
    lines.on('line', (line) => {
      const m = /^listening (\d+)$/.exec(line);
      if (m) resolve(Number(m[1]));
      else if (line.startsWith('{')) Object.assign(stats, JSON.parse(line) as ProxyStats);
    });
  });
  return {
    port: listening,
    stats,
    close: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { backends, downMs, port } = JSON.parse(process.argv[2]!) as ProxyArgs;
  const proxy = await startProxy(backends, downMs, port);
  process.stdout.write(`listening ${proxy.port}\n`);
  process.once('SIGTERM', () => {
    void proxy.close().then(() => {
      process.stdout.write(`${JSON.stringify(proxy.stats)}\n`, () => process.exit(0));
    });
  });
}
