/**
 * Boot storm on three setups, one run, so the ratios compare like with like: SQLite
 * with one process, PostgreSQL with one process, and PostgreSQL with two processes behind
 * a round-robin TCP proxy in a process of its own (bench/proxy-process.ts); and the same
 * machines on matchbox, the peer (bench/storm-matchbox.ts), when it is built. Each setup starts cold (fresh processes, so
 * empty render caches); the two PostgreSQL setups share one database filled once.
 */
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { type Inventory, postgresInventory, sqliteInventory } from './inventory.js';
import { ipxeQuery } from './machines.js';
import { freePort } from './net.js';
import { startProxyProcess } from './proxy-process.js';
import { BENCH_TOKEN, type BenchServer, rss, startServe, stopServe } from './serve.js';
import { referenceTool } from '../test/support/tools.js';
import { type MatchboxStorm, matchboxStorm } from './storm-matchbox.js';
import { bootStorm, IGNITION_ACCEPT, ROUTES, scriptConfigUrl, type StormRun } from './storm.js';

/** One setup's storm. */
export interface SetupStorm {
  name: string;
  run: StormRun;
  /** Peak RSS of each serving process, MiB. */
  peakRssMiB: number[];
  /**
   * Per route, the service's own p99 of its 200 answers, milliseconds, as the bucket
   * bound of `http_request_duration_seconds` it falls under (summed over replicas):
   * from the request's arrival to its answer, without the client's or the kernel's time.
   */
  serverP99Ms: Record<string, number>;
}

/**
 * The upper bucket bound, in ms, under which 99% of a route's 200 answers fall, from
 * Prometheus text expositions of `http_request_duration_seconds` (one per replica).
 */
export function serverP99(expositions: string[], route: string): number {
  const counts = new Map<number, number>();
  const line = new RegExp(`^http_request_duration_seconds_bucket\\{le="([^"]+)",method="GET",route="${route.replace(/[.]/g, '\\.')}",status_code="200"\\} (\\d+)$`, 'gm');
  for (const text of expositions) for (const m of text.matchAll(line)) counts.set(m[1] === '+Inf' ? Infinity : Number(m[1]), (counts.get(m[1] === '+Inf' ? Infinity : Number(m[1])) ?? 0) + Number(m[2]));
  const bounds = [...counts.keys()].sort((a, b) => a - b);
  const total = counts.get(Infinity) ?? 0;
  const bound = bounds.find((b) => counts.get(b)! >= 0.99 * total);
  return bound === undefined || total === 0 ? NaN : bound * 1000;
}

/** The three storms, and the /ignition vs POST /v1/render cache-hit throughput on SQLite. */
export interface StoreStorms {
  machines: number;
  setups: SetupStorm[];
  registerSeconds: { sqlite: number; postgres: number };
  ignitionRps: number;
  renderHitRps: number;
  /** SQLite, one process, pre-rendering finished before the storm: the first boot and a repeated boot. */
  prerendered: { first: StormRun; repeat: StormRun; prerenderSeconds: number };
  /** matchbox on the same machines, or why it did not run (not built: `scripts/tools.sh matchbox`). */
  matchbox: MatchboxStorm | { missing: string };
}

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/**
 * Machines matchbox boots out of its `n` (BENCH_MATCHBOX_BOOTS, default 2000): its storm's
 * time grows with the square of the machines (bench/storm-matchbox.ts), 10,000 of 10,000
 * would take half an hour here.
 */
const MATCHBOX_BOOTS = Number(process.env.BENCH_MATCHBOX_BOOTS ?? 2000);

/**
 * Start `count` replicas of one inventory (sharing a URL-signing key; `publicUrl` their
 * public URL, default each its own; `env` more settings).
 */
async function replicas(inventory: Inventory, count: number, publicUrl?: string, env: Record<string, string> = {}): Promise<BenchServer[]> {
  const key = randomBytes(32).toString('hex');
  const servers: BenchServer[] = [];
  for (let i = 0; i < count; i++) {
    servers.push(await startServe(await freePort(), { ...inventory.env, BOOTWRIGHT_URL_SIGNING_KEY: key, ...(publicUrl ? { BOOTWRIGHT_PUBLIC_URL: publicUrl } : {}), ...env }));
  }
  return servers;
}

/** Storm one setup: `count` replicas, behind a proxy (their public URL) when more than one. */
async function stormSetup(name: string, inventory: Inventory, count: number, n: number): Promise<SetupStorm> {
  process.stderr.write(`  … storm: ${name}\n`);
  const proxyPort = count > 1 ? await freePort() : undefined;
  const servers = await replicas(inventory, count, proxyPort ? `http://127.0.0.1:${proxyPort}` : undefined);
  const proxy = proxyPort ? await startProxyProcess(servers.map((s) => s.port), 1000, proxyPort) : undefined;
  try {
    const run = await bootStorm(proxy ? `http://127.0.0.1:${proxy.port}` : servers[0]!.base, range(n));
    const expositions = await Promise.all(servers.map(async (s) => (await fetch(`${s.base}/metrics`)).text()));
    const serverP99Ms = Object.fromEntries(ROUTES.map((r) => [r, serverP99(expositions, r)]));
    return { name, run, peakRssMiB: servers.map((s) => rss(s.child.pid!).peakMiB), serverP99Ms };
  } finally {
    await proxy?.close();
    for (const s of servers) await stopServe(s);
  }
}

/**
 * /ignition (one machine, cached) vs POST /v1/render cache hit, requests/s, autocannon 5 s
 * each, once the process has pre-rendered every machine; and machine 0's config as
 * served (matchbox's file). One URL fetched again and
 * again: the replica lets a signed URL be fetched more than once
 * (`BOOTWRIGHT_FIRST_FETCH_WINS=false`, 0.2.0's behaviour), so that every fetch is
 * answered, counted and audited as a first fetch is.
 */
async function ignitionVsRender(inventory: Inventory): Promise<{ ignitionRps: number; renderHitRps: number; config: string }> {
  const [server] = await replicas(inventory, 1, undefined, { BOOTWRIGHT_FIRST_FETCH_WINS: 'false' });
  try {
    // Both measured on a quiet process: pre-rendering the inventory would otherwise take
    // the CPU from the first measured (the /ignition one) and not from the second.
    await prerendered(server!);
    const script = await (await fetch(`${server!.base}/ipxe?${ipxeQuery(0)}`)).text();
    const url = scriptConfigUrl(script);
    if (!url) throw new Error('no Ignition URL in the script');
    const config = await (await fetch(url, { headers: { accept: IGNITION_ACCEPT } })).text();
    const ign = await autocannon({ url, headers: { accept: IGNITION_ACCEPT }, duration: 5, connections: 32 });
    const worker = JSON.stringify(load(readFileSync(new URL('../examples/worker.yaml', import.meta.url), 'utf8')));
    const render = await autocannon({
      url: `${server!.base}/v1/render`,
      method: 'POST',
      headers: { authorization: `Bearer ${BENCH_TOKEN}`, 'content-type': 'application/json', accept: IGNITION_ACCEPT },
      body: worker,
      duration: 5,
      connections: 32,
    });
    if (ign.non2xx + render.non2xx + ign.errors + render.errors > 0) throw new Error('autocannon saw errors');
    return { ignitionRps: ign.requests.average, renderHitRps: render.requests.average, config };
  } finally {
    await stopServe(server!);
  }
}

/** The value of an unlabelled metric in a Prometheus text exposition (NaN when absent). */
const metricValue = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

/**
 * Wait until `server` has pre-rendered every machine (nothing queued); resolves with the
 * seconds it took.
 */
async function prerendered(server: BenchServer): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const text = await (await fetch(`${server.base}/metrics`)).text();
    if (metricValue(text, 'bootwright_prerender_queued_machines') === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return (performance.now() - t0) / 1000;
}

/**
 * A fresh SQLite process that has pre-rendered every machine (waits until nothing is
 * queued), then the storm, then the same storm again: first-boot against repeated-boot
 * latencies, both cache hits when pre-rendering did its job.
 */
async function prerenderedStorms(inventory: Inventory, n: number): Promise<StoreStorms['prerendered']> {
  process.stderr.write('  … storm: SQLite, pre-rendered, first and repeated boot\n');
  const [server] = await replicas(inventory, 1);
  try {
    const prerenderSeconds = await prerendered(server!);
    const first = await bootStorm(server!.base, range(n));
    const repeat = await bootStorm(server!.base, range(n));
    return { first, repeat, prerenderSeconds };
  } finally {
    await stopServe(server!);
  }
}

/** Run the three storms of `n` machines, 200 at a time. */
export async function storeStorms(n = 10_000): Promise<StoreStorms> {
  const sqlite = await sqliteInventory(n);
  let postgres: Inventory | undefined;
  try {
    const setups = [await stormSetup('SQLite, 1 process', sqlite, 1, n)];
    const { ignitionRps, renderHitRps, config } = await ignitionVsRender(sqlite);
    const prerendered = await prerenderedStorms(sqlite, n);
    postgres = await postgresInventory(n);
    setups.push(await stormSetup('PostgreSQL, 1 process', postgres, 1, n));
    setups.push(await stormSetup('PostgreSQL, 2 + proxy', postgres, 2, n));
    const binary = referenceTool('matchbox');
    process.stderr.write(`  … storm: matchbox${binary ? '' : ' (not built)'}\n`);
    const matchbox = binary ? await matchboxStorm(binary, n, config, Math.min(n, MATCHBOX_BOOTS)) : { missing: 'matchbox is not built (scripts/tools.sh matchbox): no side-by-side figures' };
    return { machines: n, setups, registerSeconds: { sqlite: sqlite.registerSeconds, postgres: postgres.registerSeconds }, ignitionRps, renderHitRps, prerendered, matchbox };
  } finally {
    await sqlite.remove();
    await postgres?.remove();
  }
}
