/**
 * Hostile-input benchmark (issue 11): a `serve` process on loopback gets each of the
 * worst inputs of the hostile suite (test/hostile/inputs.ts) while `/healthz` is asked
 * every 5 ms on its own connection. Per input: the status, the time to the answer, and
 * the worst and p99 `/healthz` latency while it ran. Aim: every hostile request answered
 * in under 2 s, `/healthz` p99 under 100 ms throughout.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as hostile from '../test/hostile/inputs.js';
import { freePort } from './net.js';
import { reapOnExit, serveArgs } from './serve.js';

/** One hostile request's figures. */
export interface HostileFigure {
  name: string;
  status: number;
  requestMs: number;
  healthzMaxMs: number;
  healthzP99Ms: number;
  healthzSamples: number;
}

const TOKEN = 'bench-token-0123456789abcdef';

/** A hostile request: an HTTP/1.1 request written raw (so a slow body can be trickled). */
interface Hostile {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  contentType?: string;
  body?: string | Buffer;
  /** Write the body a byte at a time, this many ms apart. */
  trickleMs?: number;
}

function hostileInputs(): Hostile[] {
  const post = (name: string, body: string | Buffer, contentType = 'application/json', path = '/v1/render'): Hostile => ({ name, method: 'POST', path, contentType, body });
  return [
    post('alias bomb (YAML, 1 KB)', hostile.aliasBomb(), 'application/yaml'),
    post('alias bomb → POST /v1/profiles', hostile.aliasBomb(), 'application/yaml', '/v1/profiles'),
    post('merge-key bomb (YAML)', hostile.mergeBomb(), 'application/yaml'),
    post('additional config merge bomb', hostile.additionalConfigBomb()),
    post('JSON 400,000 deep', hostile.deepJson(400_000)),
    post('YAML 100,000 deep', hostile.deepYaml(100_000), 'application/yaml'),
    post('5,000 files', hostile.manyFiles(5000)),
    post('5,000 mounts', hostile.manyMounts(5000)),
    post('256 files (allowed)', hostile.manyFiles(256)),
    post('900 KB string', hostile.hugeString(900 * 1024)),
    post('invalid UTF-8', hostile.invalidUtf8(), 'application/yaml'),
    post('__proto__ key', hostile.prototypeKey('__proto__', 'top')),
    { name: 'labelSelector 4,000 chars', method: 'GET', path: `/v1/machines?labelSelector=${'a=b,'.repeat(1000)}` },
    { name: 'labelSelector 20,000 chars', method: 'GET', path: `/v1/machines?labelSelector=${'a=b,'.repeat(5000)}` },
    { name: 'labelSelector 33 terms', method: 'GET', path: `/v1/machines?labelSelector=${hostile.labelSelector(33)}` },
    { name: '/v1/machines, 1,000 parameters', method: 'GET', path: `/v1/machines?${hostile.queryFlood(1000)}` },
    { name: '/ipxe, 1,000 parameters', method: 'GET', path: `/ipxe?mac=52:54:00:12:34:56&${hostile.queryFlood(1000)}` },
    { name: 'slow body (1 B / 50 ms)', method: 'POST', path: '/v1/render', contentType: 'application/json', body: '{"a": 1}'.repeat(100), trickleMs: 50 },
  ];
}

/** Send one raw request; resolves with the status and the ms until the server answered (or closed). */
function sendRaw(port: number, h: Hostile): Promise<{ status: number; ms: number }> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = connect({ host: '127.0.0.1', port });
    let text = '';
    let timer: NodeJS.Timeout | undefined;
    const finish = () => {
      clearInterval(timer);
      socket.destroy();
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), ms: performance.now() - started });
    };
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      const head = text.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: (\d+)/i.exec(text)?.[1];
      if (head >= 0 && length !== undefined && text.length >= head + 4 + Number(length)) finish();
    });
    socket.on('close', finish);
    socket.on('error', finish);
    socket.on('connect', () => {
      const body = h.body === undefined ? Buffer.alloc(0) : Buffer.isBuffer(h.body) ? h.body : Buffer.from(h.body, 'utf8');
      const head =
        `${h.method} ${h.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\n` +
        (h.contentType ? `Content-Type: ${h.contentType}\r\nContent-Length: ${body.length}\r\n` : '') +
        '\r\n';
      socket.write(head);
      if (!h.trickleMs) {
        socket.write(body);
        return;
      }
      let i = 0;
      timer = setInterval(() => {
        if (i < body.length && socket.writable) socket.write(body.subarray(i, ++i));
      }, h.trickleMs);
    });
  });
}

/** Ask /healthz every 5 ms on a keep-alive connection until `stop` resolves; the latencies, ms. */
async function pollHealthz(port: number, stop: Promise<unknown>): Promise<number[]> {
  const latencies: number[] = [];
  let done = false;
  void stop.then(() => (done = true));
  while (!done) {
    const started = performance.now();
    const res = await fetch(`http://127.0.0.1:${port}/healthz`);
    await res.arrayBuffer();
    latencies.push(performance.now() - started);
    await sleep(5);
  }
  return latencies;
}

/**
 * Run every hostile input once against a fresh `serve` process (request timeout 1.5 s, so
 * the slow body is cut within the aim), after a warm-up of four allowed renders.
 */
export async function hostileBenchmark(): Promise<HostileFigure[]> {
  const port = await freePort();
  const child = spawn(process.execPath, serveArgs(), {
    env: {
      ...process.env,
      BOOTWRIGHT_PORT: String(port),
      BOOTWRIGHT_LOG_LEVEL: 'warn',
      BOOTWRIGHT_RATE_LIMIT_MAX: '0',
      BOOTWRIGHT_REQUEST_TIMEOUT_SECONDS: '1.5',
      BOOTWRIGHT_DATA_DIR: mkdtempSync(join(tmpdir(), 'bootwright-bench-')),
      BOOTWRIGHT_TOKENS: JSON.stringify([{ name: 'bench', token: TOKEN, scopes: ['admin'] }]),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  reapOnExit(child);
  try {
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}`);
      try {
        await fetch(`http://127.0.0.1:${port}/healthz`);
        break;
      } catch {
        if (i > 100) throw new Error('server did not start');
        await sleep(100);
      }
    }
    // Warm up (JIT) with allowed renders of other sizes, so figures are the steady state.
    for (const n of [1, 50, 100, 200]) await sendRaw(port, { name: 'warm-up', method: 'POST', path: '/v1/render', contentType: 'application/json', body: hostile.manyFiles(n) });
    const figures: HostileFigure[] = [];
    for (const h of hostileInputs()) {
      const request = sendRaw(port, h);
      const latencies = await pollHealthz(port, request);
      const { status, ms } = await request;
      const sorted = [...latencies].sort((a, b) => a - b);
      figures.push({
        name: h.name,
        status,
        requestMs: ms,
        healthzMaxMs: sorted.at(-1) ?? 0,
        healthzP99Ms: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? 0,
        healthzSamples: sorted.length,
      });
    }
    // Still serving after all of them (a crash would have failed the last fetch too).
    const alive = await fetch(`http://127.0.0.1:${port}/healthz`);
    if (alive.status !== 200) throw new Error(`/healthz answered ${alive.status} after the run`);
    return figures;
  } finally {
    child.kill('SIGTERM');
  }
}
