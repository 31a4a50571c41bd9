/**
 * Boot storm (issue: machine inventory): N registered machines each do what a PXE-booted
 * machine does — GET /boot.ipxe, GET /ipxe with its own MAC, UUID and serial, then the
 * signed Ignition URL from its script with Ignition's own Accept header — C at a time, on
 * loopback, against a `bootwright serve` process on SQLite. Reports total time, p50/p99
 * per route, errors, the server's peak RSS, and the ratio of /ignition requests/s to the
 * POST /v1/render cache-hit path (both measured by autocannon against the same process).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { freePort } from './net.js';
import { load } from 'js-yaml';
import { openSqliteStore } from '../src/store/sqlite.js';

const TOKEN = 'storm-token-0123456789abcdef';
const IGNITION_ACCEPT = 'application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1';

/** Latency summary of one route, milliseconds. */
export interface RouteFigure {
  route: string;
  count: number;
  p50Ms: number;
  p99Ms: number;
}

/** The storm's figures. */
export interface StormFigures {
  machines: number;
  concurrency: number;
  totalSeconds: number;
  errors: number;
  routes: RouteFigure[];
  peakRssMiB: number;
  ignitionRps: number;
  renderHitRps: number;
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
const macOf = (i: number) => `52:54:${[(i >> 24) & 255, (i >> 16) & 255, (i >> 8) & 255, i & 255].map((b) => b.toString(16).padStart(2, '0')).join(':')}`;
const uuidOf = (i: number) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
const hex = (text: string) => [...Buffer.from(text)].map((b) => b.toString(16).padStart(2, '0')).join(':');

/** Register the cluster, one profile and `n` machines directly in the SQLite file. */
async function register(dataDir: string, n: number): Promise<void> {
  const worker = load(readFileSync(new URL('../examples/worker.yaml', import.meta.url), 'utf8')) as { spec: { cluster: unknown } };
  const store = await openSqliteStore(join(dataDir, 'bootwright.db'));
  try {
    await store.create('Cluster', { name: 'prod', spec: worker.spec.cluster as never });
    await store.create('Profile', {
      name: 'worker',
      spec: { role: 'worker', kubernetesVersion: 'v1.33.2', output: { format: 'ignition' }, boot: { kernel: '/assets/vmlinuz', initrd: ['/assets/initrd.img'], args: ['console=ttyS0'] } } as never,
    });
    for (let i = 0; i < n; i++) {
      await store.create('Machine', {
        name: `node-${i}`,
        spec: { selectors: { mac: [macOf(i)], uuid: uuidOf(i), serial: `SN ${i}/A&B`, labels: {} }, cluster: 'prod', profile: 'worker', nodeLabels: {}, taints: [] },
      });
    }
  } finally {
    await store.close();
  }
}

async function start(dataDir: string, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve'], {
    env: {
      ...process.env,
      BOOTWRIGHT_PORT: String(port),
      BOOTWRIGHT_DATA_DIR: dataDir,
      BOOTWRIGHT_LOG_LEVEL: 'warn',
      BOOTWRIGHT_RATE_LIMIT_MAX: '0',
      BOOTWRIGHT_MAX_EVENT_LOOP_DELAY_MS: '0',
      BOOTWRIGHT_TOKENS: JSON.stringify([{ name: 'storm', token: TOKEN, scopes: ['admin'] }]),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/readyz`)).ok) return child;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  child.kill();
  throw new Error('server did not start within 10 s');
}

/** Peak resident set size of a process, MiB (Linux VmHWM). */
function peakRss(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

/** Run the storm: `n` machines, `concurrency` at a time. */
export async function stormBenchmark(n = 10_000, concurrency = 200): Promise<StormFigures> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bootwright-storm-'));
  await register(dataDir, n);
  const port = await freePort();
  const server = await start(dataDir, port);
  const base = `http://127.0.0.1:${port}`;
  const times: Record<string, number[]> = { '/boot.ipxe': [], '/ipxe': [], '/ignition': [] };
  let errors = 0;
  let lastIgnitionUrl = '';
  const timed = async (route: string, url: string, init?: RequestInit): Promise<string> => {
    const t0 = performance.now();
    const res = await fetch(url, init);
    const text = await res.text();
    times[route]!.push(performance.now() - t0);
    if (res.status !== 200) throw new Error(`${route}: ${res.status}`);
    return text;
  };
  const boot = async (i: number) => {
    try {
      await timed('/boot.ipxe', `${base}/boot.ipxe`);
      const script = await timed('/ipxe', `${base}/ipxe?mac=${macOf(i).replaceAll(':', '-')}&uuid=${uuidOf(i)}&serial_hex=${hex(`SN ${i}/A&B`)}&buildarch=x86_64&platform=pcbios`);
      const url = /ignition\.config\.url=(\S+)/.exec(script)?.[1];
      if (!url) throw new Error(`node-${i}: no Ignition URL in its script`);
      const config = await timed('/ignition', url, { headers: { accept: IGNITION_ACCEPT } });
      if ((JSON.parse(config) as { ignition: { version: string } }).ignition.version !== '3.4.0') throw new Error('wrong spec');
      lastIgnitionUrl = url;
    } catch {
      errors++;
    }
  };
  try {
    const t0 = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < n) await boot(next++);
    }));
    const totalSeconds = (performance.now() - t0) / 1000;
    const worker = JSON.stringify(load(readFileSync(new URL('../examples/worker.yaml', import.meta.url), 'utf8')));
    const ign = await autocannon({ url: lastIgnitionUrl, headers: { accept: IGNITION_ACCEPT }, duration: 5, connections: 32 });
    const render = await autocannon({
      url: `${base}/v1/render`,
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: IGNITION_ACCEPT },
      body: worker,
      duration: 5,
      connections: 32,
    });
    return {
      machines: n,
      concurrency,
      totalSeconds,
      errors: errors + ign.non2xx + render.non2xx,
      routes: Object.entries(times).map(([route, list]) => {
        const sorted = [...list].sort((a, b) => a - b);
        return { route, count: list.length, p50Ms: pct(sorted, 50), p99Ms: pct(sorted, 99) };
      }),
      peakRssMiB: peakRss(server.pid!),
      ignitionRps: ign.requests.average,
      renderHitRps: render.requests.average,
    };
  } finally {
    server.kill('SIGTERM');
  }
}
