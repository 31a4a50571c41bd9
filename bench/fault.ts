/**
 * Fault run: two PostgreSQL replicas behind the round-robin proxy; halfway through a
 * boot storm one replica is killed with SIGKILL (no drain). Clients retry connection
 * errors and 5xx as Ignition does (200 ms doubling to 5 s); the proxy routes new
 * connections away from the dead replica. Then the checks: every machine got its
 * config, and the audit log (read through the Store API) holds a 200 /ignition row for
 * every config a client received — no acknowledged write lost.
 */
import { randomBytes } from 'node:crypto';
import { postgresInventory } from './inventory.js';
import { nameOf } from './machines.js';
import { freePort } from './net.js';
import type { ProxyStats } from './proxy.js';
import { startProxyProcess } from './proxy-process.js';
import { type BenchServer, startServe, stopServe } from './serve.js';
import { bootStorm, type StormRun } from './storm.js';

/** The fault run's figures and checks. */
export interface FaultFigures {
  run: StormRun;
  proxy: ProxyStats;
  /** Machines finished when the replica was killed. */
  killedAt: number;
  /** Machines that got their config (must be all). */
  booted: number;
  /** /ignition rows with status 200 in the audit log. */
  auditOk: number;
  /** Machines whose received config has no 200 /ignition audit row (must be 0). */
  unaudited: number;
  /** Audited 200s beyond one per machine: answers written to the log whose response never reached the client (the killed replica's in-flight requests; the client retried). */
  auditedNotReceived: number;
}

/** Run the fault storm over `n` machines, 200 at a time. */
export async function faultBenchmark(n = 10_000): Promise<FaultFigures> {
  const inventory = await postgresInventory(n);
  const key = randomBytes(32).toString('hex');
  const servers: BenchServer[] = [];
  try {
    // The replicas' public URL is the proxy's, as behind a load balancer.
    const proxyPort = await freePort();
    for (let i = 0; i < 2; i++) servers.push(await startServe(await freePort(), { ...inventory.env, BOOTWRIGHT_URL_SIGNING_KEY: key, BOOTWRIGHT_PUBLIC_URL: `http://127.0.0.1:${proxyPort}` }));
    const proxy = await startProxyProcess(servers.map((s) => s.port), 1000, proxyPort);
    let killedAt = 0;
    const victim = servers[0]!;
    process.stderr.write('  … fault storm\n');
    const run = await bootStorm(`http://127.0.0.1:${proxy.port}`, Array.from({ length: n }, (_, i) => i), {
      retry: true,
      onProgress: (finished) => {
        if (killedAt === 0 && finished >= n / 2) {
          killedAt = finished;
          victim.child.kill('SIGKILL');
        }
      },
    });
    await proxy.close();
    const store = await inventory.open();
    let auditOk = 0;
    let unaudited = 0;
    try {
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < n) {
            const i = next++;
            const ok = (await store.audit(nameOf(i), { limit: 1000 })).filter((r) => r.route === '/ignition' && r.status === 200).length;
            auditOk += ok;
            if (run.booted.has(i) && ok === 0) unaudited++;
          }
        }),
      );
    } finally {
      await store.close();
    }
    return { run, proxy: proxy.stats, killedAt, booted: run.booted.size, auditOk, unaudited, auditedNotReceived: auditOk - run.booted.size };
  } finally {
    for (const s of servers) await stopServe(s);
    await inventory.remove();
  }
}
