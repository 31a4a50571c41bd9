/**
 * Renders off the main thread, over HTTP (issue 15): `POST /v1/render` answers the same
 * bytes and ETags with a pool of workers as on the main thread; a full render queue is
 * a 503 problem with Retry-After; closing the service lets a render in flight finish.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { example } from '../support/requests.js';
import { RENDERER, testService } from '../support/server.js';

const ACCEPTS = ['text/cloud-config', 'application/vnd.coreos.ignition+json;version=3.4.0', 'application/vnd.coreos.ignition+json;version=2.2.0', 'application/json'];

describe('POST /v1/render with a worker pool', () => {
  it('answers byte-identical to the main thread, whichever role and media type', async () => {
    const inline = await testService({ renderWorkers: 0 });
    const pooled = await testService({ renderWorkers: 2 });
    try {
      for (const role of ['init', 'control-plane', 'worker'] as const) {
        for (const accept of ACCEPTS) {
          const ask = (app: typeof inline.app) =>
            app.inject({ method: 'POST', url: '/v1/render', headers: { authorization: `Bearer ${RENDERER}`, accept, 'content-type': 'application/json' }, payload: JSON.stringify(example(role)) });
          const [a, b] = [await ask(inline.app), await ask(pooled.app)];
          assert.equal(a.statusCode, 200, `${role} ${accept}: ${a.body}`);
          assert.equal(b.statusCode, a.statusCode);
          assert.ok(b.rawPayload.equals(a.rawPayload), `${role} ${accept}: bytes differ`);
          for (const h of ['etag', 'content-type', 'vary', 'cache-control']) assert.equal(b.headers[h], a.headers[h], `${role} ${accept}: ${h}`);
        }
      }
    } finally {
      await inline.app.close();
      await pooled.app.close();
    }
  });

  it('renders a new body in the trip that parses it: one worker task per miss', async () => {
    const { app } = await testService({ renderWorkers: 1 });
    const count = async (name: string) => Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm').exec((await app.inject({ url: '/metrics' })).body)?.[1] ?? 'NaN');
    const ask = (body: unknown, accept: string) =>
      app.inject({ method: 'POST', url: '/v1/render', headers: { authorization: `Bearer ${RENDERER}`, accept, 'content-type': 'application/json' }, payload: JSON.stringify(body) });
    try {
      const first = await ask(example('init'), 'text/cloud-config');
      assert.equal(first.statusCode, 200, first.body);
      assert.equal(await count('bootwright_render_tasks_total{outcome="pool"}'), 1);
      assert.equal(await count('bootwright_render_cache_misses_total'), 1);
      // The same body asked another way: parsed already, one render task.
      const ignition = await ask(example('init'), 'application/vnd.coreos.ignition+json;version=3.4.0');
      assert.equal(ignition.statusCode, 200, ignition.body);
      assert.equal(await count('bootwright_render_tasks_total{outcome="pool"}'), 2);
      assert.equal(await count('bootwright_render_cache_misses_total'), 2);
      // Asked again: a hit, no task.
      const again = await ask(example('init'), 'text/cloud-config');
      assert.ok(again.rawPayload.equals(first.rawPayload));
      assert.equal(await count('bootwright_render_tasks_total{outcome="pool"}'), 2);
      assert.equal(await count('bootwright_render_cache_hits_total'), 1);
      // A new body nothing acceptable is offered for: parsed in one task, then the 406 as ever.
      const refused = await ask({ ...example('init'), metadata: { name: 'other' } }, 'image/png');
      assert.equal(refused.statusCode, 406, refused.body);
      assert.equal(await count('bootwright_render_tasks_total{outcome="pool"}'), 3);
    } finally {
      await app.close();
    }
  });

  it('sheds cache misses with 503 and Retry-After when the queue is full', async () => {
    const { app } = await testService({ renderWorkers: 1, renderQueue: 1, retryAfterSeconds: 7 });
    try {
      // 24 different bodies at once: one renders, one waits, the rest find the queue full.
      const answers = await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          app.inject({
            method: 'POST',
            url: '/v1/render',
            headers: { authorization: `Bearer ${RENDERER}`, 'content-type': 'application/json' },
            payload: JSON.stringify({ ...example('init'), metadata: { name: `init-${i}` } }),
          }),
        ),
      );
      const shed = answers.filter((r) => r.statusCode === 503);
      assert.deepEqual([...new Set(answers.map((r) => r.statusCode))].sort(), [200, 503]);
      assert.ok(answers.filter((r) => r.statusCode === 200).length >= 2, 'the running and the queued render are served');
      for (const r of shed) {
        assert.equal(r.headers['retry-after'], '7');
        assert.match(String(r.headers['content-type']), /^application\/problem\+json/);
        const p = r.json<{ status: number; detail: string }>();
        assert.equal(p.status, 503);
        assert.match(p.detail, /BOOTWRIGHT_RENDER_QUEUE/);
      }
      const metrics = await app.inject({ method: 'GET', url: '/metrics' });
      assert.match(metrics.body, new RegExp(`bootwright_render_tasks_total\\{outcome="shed"\\} ${shed.length}\\n`));
    } finally {
      await app.close();
    }
  });

  it('close waits for a render in flight, then stops the workers', async () => {
    const { app } = await testService({ renderWorkers: 1 });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    // The listening service started its worker; the render waits for it to load.
    const answer = fetch(`http://127.0.0.1:${port}/v1/render`, { method: 'POST', headers: { authorization: `Bearer ${RENDERER}`, 'content-type': 'application/json' }, body: JSON.stringify(example('init')) });
    // Close once the render is in the pool (counted), not before the request arrived.
    for (let i = 0; i < 500 && !(await app.inject({ url: '/metrics' })).body.includes('bootwright_render_tasks_total{outcome="pool"} 1\n'); i++) await new Promise((r) => setTimeout(r, 10));
    await app.close();
    const r = await answer;
    assert.equal(r.status, 200);
    assert.match(await r.text(), /^#cloud-config\n/);
  });
});
