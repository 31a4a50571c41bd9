/**
 * HTTP benchmark (issue: HTTP API): autocannon on loopback against POST /v1/render on the
 * cache-hit path, against a bare fastify route returning the same bytes, and on the
 * cache-miss path (every request a new node name). Servers run as child processes; rate
 * limiting and overload shedding are off. Figures are from one run; compare ratios.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { freePort } from './net.js';
import { reapOnExit, serveArgs } from './serve.js';
import { load } from 'js-yaml';

/** One measured load. */
export interface HttpFigure {
  name: string;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
}

const TOKEN = 'bench-token-0123456789abcdef';

/** Start a server process (`args` after `node`); resolves once it answers on `port`. */
async function start(args: string[], port: number, env: Record<string, string> = {}): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] });
  reapOnExit(child);
  for (let i = 0; i < 100; i++) {
    if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}`);
    try {
      await fetch(`http://127.0.0.1:${port}/healthz`);
      return { child, port };
    } catch {
      await sleep(100);
    }
  }
  child.kill();
  throw new Error('server did not start within 10 s');
}

async function load_(name: string, opts: autocannon.Options): Promise<HttpFigure> {
  const r = await autocannon(opts);
  // No answer within the run at all (a blocked event loop): its latency is the whole run, at least.
  if (r.requests.total === 0) return { name, requestsPerSecond: 0, p50Ms: Infinity, p99Ms: Infinity, non2xx: r.non2xx, errors: r.errors };
  return { name, requestsPerSecond: r.requests.average, p50Ms: r.latency.p50, p99Ms: r.latency.p99, non2xx: r.non2xx, errors: r.errors };
}

/**
 * Two loads measured in alternating rounds (A B B A A B B A): on a shared machine whose
 * other load drifts over a run, back-to-back runs of `seconds` each gave hit / bare
 * ratios from 0.39 to 0.59 for one code; interleaved, both sides see the same drift.
 * Each side runs `seconds` in all, in `rounds` runs; its rate is its requests over its
 * run time, its p50 the median of the rounds' and its p99 the highest.
 */
async function alternating(names: [string, string], opts: [autocannon.Options, autocannon.Options], seconds: number, rounds = 4): Promise<[HttpFigure, HttpFigure]> {
  const results: autocannon.Result[][] = [[], []];
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? [0, 1] : [1, 0];
    for (const i of order) results[i]!.push(await autocannon({ ...opts[i]!, duration: seconds / rounds }));
  }
  const figure = (i: number): HttpFigure => {
    const rs = results[i]!;
    const total = rs.reduce((n, r) => n + r.requests.total, 0);
    const secs = rs.reduce((n, r) => n + r.duration, 0);
    const p50s = rs.map((r) => r.latency.p50).sort((a, b) => a - b);
    return {
      name: names[i]!,
      requestsPerSecond: total / secs,
      p50Ms: p50s[Math.floor(p50s.length / 2)]!,
      p99Ms: Math.max(...rs.map((r) => r.latency.p99)),
      non2xx: rs.reduce((n, r) => n + r.non2xx, 0),
      errors: rs.reduce((n, r) => n + r.errors, 0),
    };
  };
  return [figure(0), figure(1)];
}

/** Run the HTTP benchmark; `seconds` per load, `connections` concurrent clients. */
export async function httpBenchmark(
  seconds = 10,
  connections = 32,
): Promise<{ figures: HttpFigure[]; hitOverBare: number; poolOverInline: { init: number; worker: number; workerAllPooled: number }; healthzP99Ms: { pool: number; inline: number } }> {
  const worker = load(readFileSync(new URL('../examples/worker.yaml', import.meta.url), 'utf8')) as { metadata: { name: string } };
  const body = JSON.stringify(worker);
  const init = load(readFileSync(new URL('../examples/init.yaml', import.meta.url), 'utf8')) as { metadata: { name: string } };
  const serveEnv = (port: number, workers?: number, inlineBytes?: number) => ({
    BOOTWRIGHT_PORT: String(port),
    BOOTWRIGHT_LOG_LEVEL: 'warn',
    BOOTWRIGHT_RATE_LIMIT_MAX: '0',
    BOOTWRIGHT_MAX_EVENT_LOOP_DELAY_MS: '0',
    BOOTWRIGHT_DATA_DIR: mkdtempSync(join(tmpdir(), 'bootwright-bench-')),
    BOOTWRIGHT_TOKENS: JSON.stringify([{ name: 'bench', token: TOKEN, scopes: ['render'] }]),
    ...(workers !== undefined ? { BOOTWRIGHT_RENDER_WORKERS: String(workers) } : {}),
    ...(inlineBytes !== undefined ? { BOOTWRIGHT_RENDER_INLINE_BYTES: String(inlineBytes) } : {}),
  });
  const ourPort = await freePort();
  const ours = await start(serveArgs(), ourPort, serveEnv(ourPort));
  const inlinePort = await freePort();
  const inline = await start(serveArgs(), inlinePort, serveEnv(inlinePort, 0));
  // The default pool with no input small enough to stay on the main thread: what the
  // inline threshold (BOOTWRIGHT_RENDER_INLINE_BYTES) saves on small bodies.
  const allPooledPort = await freePort();
  const allPooled = await start(serveArgs(), allPooledPort, serveEnv(allPooledPort, undefined, 0));
  const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'text/cloud-config' };
  const url = `http://127.0.0.1:${ours.port}/v1/render`;
  const sample = await fetch(url, { method: 'POST', headers, body });
  const bytesFile = join(mkdtempSync(join(tmpdir(), 'bootwright-bench-')), 'user-data');
  writeFileSync(bytesFile, Buffer.from(await sample.arrayBuffer()));
  const barePort = await freePort();
  // The baseline runs under tsx: its one route measured the same under tsx as stripped
  // to plain JavaScript under node (4 alternating rounds of 3 s, Node.js 24, ±10 %).
  const bare = await start(['--import', 'tsx', 'bench/bare-server.ts', String(barePort), bytesFile], barePort);
  try {
    const base: autocannon.Options = { url, method: 'POST', headers, body, duration: seconds, connections };
    // warm both up, then measure
    await autocannon({ ...base, duration: 2 });
    await autocannon({ ...base, url: `http://127.0.0.1:${bare.port}/v1/render`, duration: 2 });
    const [hit, bareFig] = await alternating(['POST /v1/render, cache hit', 'bare fastify, same bytes'], [base, { ...base, url: `http://127.0.0.1:${bare.port}/v1/render` }], seconds);
    let n = 0;
    const missLoad = (port: number, doc: { metadata: { name: string } }): autocannon.Options => ({
      ...base,
      url: `http://127.0.0.1:${port}/v1/render`,
      requests: [{ method: 'POST', setupRequest: (req) => ({ ...req, body: JSON.stringify({ ...doc, metadata: { name: `bench-${n++}` } }) }) }],
    });
    // Every server warmed the same way before its misses are measured (the default one
    // also served the hits above): two seconds of misses of each body.
    for (const port of [ours.port, inline.port, allPooled.port]) {
      for (const doc of [worker, init]) await autocannon({ ...missLoad(port, doc), duration: 2 });
    }
    // Small bodies (examples/worker.yaml, 0.9 KB): under the inline threshold by default.
    const miss = await load_('miss, worker body, default (inline threshold 4096)', missLoad(ours.port, worker));
    const missInline = await load_('miss, worker body, inline (0 workers)', missLoad(inline.port, worker));
    const missAllPooled = await load_('miss, worker body, every task pooled', missLoad(allPooled.port, worker));
    // Large bodies (examples/init.yaml with its PKI, 11 KB): the renders the pool takes.
    const initMiss = await load_('miss, init body, default (pool)', missLoad(ours.port, init));
    const initMissInline = await load_('miss, init body, inline (0 workers)', missLoad(inline.port, init));
    // /healthz on its own connection while 32 clients send cache-miss init renders (PKI).
    const healthz = async (port: number, label: string) => {
      const [, probe] = await Promise.all([
        load_(`${label}: init misses`, missLoad(port, init)),
        load_(`${label}: /healthz meanwhile`, { url: `http://127.0.0.1:${port}/healthz`, duration: seconds, connections: 1 }),
      ]);
      return probe;
    };
    const healthPool = await healthz(ours.port, 'pool');
    const healthInline = await healthz(inline.port, 'inline');
    return {
      figures: [hit, bareFig, miss, missInline, missAllPooled, initMiss, initMissInline, healthPool, healthInline],
      hitOverBare: hit.requestsPerSecond / bareFig.requestsPerSecond,
      poolOverInline: {
        init: initMiss.requestsPerSecond / initMissInline.requestsPerSecond,
        worker: miss.requestsPerSecond / missInline.requestsPerSecond,
        workerAllPooled: missAllPooled.requestsPerSecond / missInline.requestsPerSecond,
      },
      healthzP99Ms: { pool: healthPool.p99Ms, inline: healthInline.p99Ms },
    };
  } finally {
    ours.child.kill('SIGTERM');
    inline.child.kill('SIGTERM');
    allPooled.child.kill('SIGTERM');
    bare.child.kill('SIGTERM');
  }
}
