/**
 * Hostile connections against a listening service on 127.0.0.1, spoken to over raw
 * sockets: a body trickled slower than the request timeout, headers over the limit, a
 * body over the limit. Each gets its status and the connection closed; the service keeps
 * serving.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ADMIN, testService, type TestService } from '../support/server.js';

let svc: TestService;
let port: number;
before(async () => {
  svc = await testService({ requestTimeoutSeconds: 1, bodyLimit: 4096, maxHeaderBytes: 2048 });
  await svc.app.listen({ host: '127.0.0.1', port: 0 });
  port = (svc.app.server.address() as { port: number }).port;
});
after(async () => {
  await svc.app.close();
});

/** Open a socket; resolves with it and a promise of everything received until the server closes it. */
async function open(): Promise<{ socket: Socket; received: Promise<{ text: string; closedAfterMs: number }> }> {
  const socket = connect({ host: '127.0.0.1', port });
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const started = Date.now();
  let text = '';
  socket.on('data', (d: Buffer) => (text += d.toString('utf8')));
  const received = new Promise<{ text: string; closedAfterMs: number }>((resolve) => socket.once('close', () => resolve({ text, closedAfterMs: Date.now() - started })));
  // A reset after the server closes is expected; the close event reports it.
  socket.on('error', () => undefined);
  return { socket, received };
}

function statusOf(text: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
}

function problemOf(text: string): { status: number; type: string } {
  return JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { status: number; type: string };
}

async function healthz(): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/healthz`);
  return res.status;
}

describe('slow and oversized requests', () => {
  it('a body trickled a byte every 100 ms is cut off at the request timeout: 408 and the connection closed', async () => {
    const { socket, received } = await open();
    socket.write(`POST /v1/render HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ADMIN}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`);
    const timer = setInterval(() => socket.writable && socket.write('{'), 100);
    const { text, closedAfterMs } = await received;
    clearInterval(timer);
    assert.equal(statusOf(text), 408);
    assert.match(text, /\r\nConnection: close\r\n/i);
    assert.equal(problemOf(text).type, 'https://bootwright.dev/problems/malformed-request');
    // Timeout 1 s, checked every 250 ms: cut within 2.5 s, never left to trickle its 100 s.
    assert.ok(closedAfterMs >= 900 && closedAfterMs < 2500, `closed after ${closedAfterMs} ms`);
    assert.equal(await healthz(), 200);
  });

  it('headers trickled slower than the timeout get a 408 too', async () => {
    const { socket, received } = await open();
    socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    const timer = setInterval(() => socket.writable && socket.write('X-A: b\r\n'), 100);
    const { text, closedAfterMs } = await received;
    clearInterval(timer);
    assert.equal(statusOf(text), 408);
    assert.ok(closedAfterMs < 2500, `closed after ${closedAfterMs} ms`);
  });

  it('headers over the limit are a 431 problem and the connection closes', async () => {
    const { socket, received } = await open();
    socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(4096)}\r\n\r\n`);
    const { text } = await received;
    assert.equal(statusOf(text), 431);
    assert.match(text, /\r\nContent-Type: application\/problem\+json\r\n/);
    assert.deepEqual(problemOf(text), {
      type: 'https://bootwright.dev/problems/malformed-request',
      title: 'Malformed request',
      status: 431,
      detail: 'the request line and headers are larger than the limit (BOOTWRIGHT_MAX_HEADER_BYTES)',
    });
    assert.equal(await healthz(), 200);
  });

  it('a Content-Length over the body limit is a 413 before the body is read, and the connection closes', async () => {
    const { socket, received } = await open();
    socket.write(`POST /v1/render HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ADMIN}\r\nContent-Type: application/json\r\nContent-Length: 100000000\r\n\r\n{`);
    const { text, closedAfterMs } = await received;
    assert.equal(statusOf(text), 413);
    assert.match(text, /\r\nconnection: close\r\n/i);
    assert.ok(closedAfterMs < 900, `closed after ${closedAfterMs} ms (before the request timeout)`);
    assert.equal(await healthz(), 200);
  });

  for (const [name, headers, status] of [
    ['an unsupported media type', `Authorization: Bearer ${ADMIN}\r\nContent-Type: text/plain`, 415],
    ['a missing token', 'Content-Type: application/json', 401],
  ] as const) {
    it(`${name} is answered ${status} before the body is read, and the connection closes (the body is not drained)`, async () => {
      const { socket, received } = await open();
      socket.write(`POST /v1/render HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}\r\nContent-Length: 4000\r\n\r\n{`);
      const { text, closedAfterMs } = await received;
      assert.equal(statusOf(text), status);
      assert.match(text, /\r\nconnection: close\r\n/i);
      assert.ok(closedAfterMs < 900, `closed after ${closedAfterMs} ms (before the request timeout)`);
    });
  }

  it('garbage instead of HTTP is a 400 problem', async () => {
    const { socket, received } = await open();
    socket.write('\x00\x01\x02 not http\r\n\r\n');
    const { text } = await received;
    assert.equal(statusOf(text), 400);
    assert.equal(problemOf(text).status, 400);
  });
});
