import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import request from 'supertest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { startProcess } from '../support/process.js';
import { worker } from '../support/requests.js';
import { RENDERER, testService } from '../support/server.js';

describe('configuration', () => {
  it('defaults, then file, then environment', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bootwright-config-'));
    const file = join(dir, 'config.yaml');
    writeFileSync(file, 'port: 9000\nlogLevel: debug\nbodyLimit: 2048\n');
    const c = loadConfig({ BOOTWRIGHT_CONFIG: file, BOOTWRIGHT_PORT: '9100', BOOTWRIGHT_TOKENS: '[{"name":"ci","sha256":"' + 'a'.repeat(64) + '","scopes":["render"]}]' });
    assert.equal(c.port, 9100);
    assert.equal(c.logLevel, 'debug');
    assert.equal(c.bodyLimit, 2048);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.dataDir, './data');
    assert.deepEqual(c.tokens, [{ name: 'ci', sha256: 'a'.repeat(64), scopes: ['render'] }]);
  });

  it('names the variable of a bad value and never quotes a token', () => {
    assert.throws(() => loadConfig({ BOOTWRIGHT_PORT: 'eighty' }), (e: ConfigError) => e.message.startsWith('port (BOOTWRIGHT_PORT):'));
    assert.throws(() => loadConfig({ BOOTWRIGHT_TOKENS: 'not json secret-value' }), (e: ConfigError) => !e.message.includes('secret-value') && e.message.startsWith('BOOTWRIGHT_TOKENS: must be JSON'));
    assert.throws(
      () => loadConfig({ BOOTWRIGHT_TOKENS: '[{"name":"x","token":"short-secret","scopes":["god"]}]' }),
      (e: ConfigError) => !e.message.includes('short-secret') && e.message.includes('tokens[0].scopes[0] (BOOTWRIGHT_TOKENS)'),
    );
  });
});

describe('overload and rate limits', () => {
  /**
   * Block the event loop for `ms`. under-pressure's verdict is the mean delay of the
   * 10 ms ticks since its last sample (250 ms apart), less the 10 ms resolution: at most
   * 25 quick ticks beside this block's one, so 1500 ms reads at least 47 ms, over the
   * tests' 20 ms limit wherever the sampling period falls (600 ms against 50 was not).
   */
  const blockLoop = (ms = 1500) => {
    const end = Date.now() + ms;
    while (Date.now() < end); // blocked
  };

  it('503 with Retry-After while the event loop is blocked; /healthz stays 200', async () => {
    const svc = await testService({ maxEventLoopDelayMs: 20, retryAfterSeconds: 7 });
    try {
      blockLoop();
      await sleep(30); // let under-pressure take its sample
      const res = await request(svc.app.server).post('/v1/render').set('authorization', `Bearer ${RENDERER}`).send(worker());
      assert.equal(res.status, 503);
      assert.equal(res.headers['retry-after'], '7');
      assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
      assert.equal(res.body.type, 'https://bootwright.dev/problems/overloaded');
      assert.equal((await request(svc.app.server).get('/healthz')).status, 200);
    } finally {
      await svc.app.close();
    }
  });

  it("a delay measured before listening does not shed: a fresh process's own start is not overload", async () => {
    // A clean-clone CI run: a fresh `serve`'s first request was answered 503, because the
    // delay sample after listening held the service's own start on a loaded machine.
    const svc = await testService({ maxEventLoopDelayMs: 20, retryAfterSeconds: 7 });
    try {
      blockLoop(); // as loading the routes does on a loaded machine
      await svc.app.listen({ host: '127.0.0.1', port: 0 });
      await sleep(30); // under-pressure takes its sample: it holds the block
      const url = `http://127.0.0.1:${(svc.app.server.address() as { port: number }).port}`;
      const send = () => request(url).post('/v1/render').set('authorization', `Bearer ${RENDERER}`).send(worker());
      const first = await send();
      assert.equal(first.status, 200, first.text);
      await sleep(600); // past the samples that could hold the start
      blockLoop();
      await sleep(30);
      const shed = await send();
      assert.equal(shed.status, 503, shed.text);
      assert.equal(shed.headers['retry-after'], '7');
      assert.equal(shed.body.type, 'https://bootwright.dev/problems/overloaded');
    } finally {
      await svc.app.close();
    }
  });

  it('429 problem with Retry-After past the rate limit, counted per token', async () => {
    const svc = await testService({ rateLimitMax: 2, rateLimitWindowSeconds: 60 });
    try {
      const send = () => request(svc.app.server).post('/v1/render').set('authorization', `Bearer ${RENDERER}`).send(worker());
      assert.equal((await send()).status, 200);
      assert.equal((await send()).status, 200);
      const limited = await send();
      assert.equal(limited.status, 429);
      assert.equal(limited.headers['content-type'], 'application/problem+json; charset=utf-8');
      assert.equal(limited.body.type, 'https://bootwright.dev/problems/too-many-requests');
      assert.match(limited.headers['retry-after']!, /^\d+$/);
    } finally {
      await svc.app.close();
    }
  });
});

describe('serve', () => {
  it('first start writes an admin token (0600) and logs its path, never the token', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'bootwright-data-'));
    const p = startProcess({ BOOTWRIGHT_DATA_DIR: dataDir });
    const port = await p.port;
    const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    assert.equal(statSync(join(dataDir, 'admin-token')).mode & 0o777, 0o600);
    assert.match(token, /^[A-Za-z0-9_-]{43}$/);
    const res = await request(`http://127.0.0.1:${port}`).post('/v1/render').set('authorization', `Bearer ${token}`).send(worker());
    assert.equal(res.status, 200, res.text);
    p.child.kill('SIGTERM');
    assert.equal(await p.exited, 0);
    assert.ok(p.logs().includes(join(dataDir, 'admin-token')));
    assert.ok(!p.logs().includes(token), 'the token reached the log');
  });

  it('SIGTERM: the in-flight request finishes, new connections are refused, exit 0', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'bootwright-data-'));
    const p = startProcess({ BOOTWRIGHT_DATA_DIR: dataDir, BOOTWRIGHT_TOKENS: JSON.stringify([{ name: 't', token: RENDERER, scopes: ['render'] }]) });
    const port = await p.port;
    const body = Buffer.from(JSON.stringify(worker()));
    // Start a request and send only half of its body: it is in flight when SIGTERM arrives.
    const inflight = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port, method: 'POST', path: '/v1/render', headers: { authorization: `Bearer ${RENDERER}`, 'content-type': 'application/json', 'content-length': body.length } },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, text }));
        },
      );
      req.on('error', reject);
      req.write(body.subarray(0, 100));
      setTimeout(() => {
        p.child.kill('SIGTERM');
        setTimeout(() => req.end(body.subarray(100)), 500);
      }, 200);
    });
    await sleep(450);
    await assert.rejects(request(`http://127.0.0.1:${port}`).get('/healthz'), /ECONNREFUSED/);
    const res = await inflight;
    assert.equal(res.status, 200);
    assert.ok(res.text.startsWith('#cloud-config\n'));
    assert.equal(await p.exited, 0);
  });
});
