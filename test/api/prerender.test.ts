/**
 * Pre-rendering (issue 15, src/api/prerender.ts): a machine written through the API,
 * or whose profile is replaced, has its boot data in the render cache before it boots:
 * its first `/ignition` fetch is a cache hit, byte-identical to a service that renders
 * on demand; and a change affecting more machines than `prerenderMax` queues only that
 * many.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { example } from '../support/requests.js';
import { ADMIN, RENDERER, testService, type TestService } from '../support/server.js';
import { LOAD_SAMPLE_MS } from '../../src/work/pool.js';
import { openSqliteStore } from '../../src/store/sqlite.js';

const API = 'bootwright.dev/v1alpha1';
const IGNITION_ACCEPT = 'application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1';
const CLUSTER = (example('init').spec as { cluster: Record<string, unknown> }).cluster;
/** The data carries a report URL built from the public URL: only with one can it be rendered ahead (src/api/prerender.ts). */
const PUBLIC_URL = 'http://boot.example.test:8080';
const PROFILE = { role: 'worker', kubernetesVersion: 'v1.33.2', output: { format: 'ignition' }, boot: { kernel: 'http://images.example.com/vmlinuz', initrd: [], args: [] } };

const write = async (svc: TestService, method: 'POST' | 'PUT', path: string, kind: string, name: string, spec: unknown) => {
  const r = await svc.app.inject({ method, url: path, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, payload: JSON.stringify({ apiVersion: API, kind, metadata: { name }, spec }) });
  assert.ok(r.statusCode === 201 || r.statusCode === 200, r.body);
};
const metric = async (svc: TestService, line: string): Promise<number> => {
  const body = (await svc.app.inject({ url: '/metrics' })).body;
  const m = new RegExp(`^${line.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm').exec(body);
  return m ? Number(m[1]) : 0;
};
/** Until the pre-renderer has nothing queued or in flight (at most 30 s: workers load first). */
const settled = async (svc: TestService) => {
  for (let i = 0; i < 3000; i++) {
    if ((await metric(svc, 'bootwright_prerender_queued_machines')) === 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.fail('pre-rendering did not finish');
};
/** A machine's first /ignition fetch, as its firmware and Ignition make it. */
const boot = async (svc: TestService, mac: string, accept = IGNITION_ACCEPT) => {
  const script = (await svc.app.inject({ url: `/ipxe?mac=${mac}` })).body;
  const url = new URL(/ignition\.config\.url=(\S+)/.exec(script)![1]!);
  return svc.app.inject({ url: `${url.pathname}${url.search}`, headers: { accept } });
};
const inventory = async (svc: TestService, machines: number) => {
  await write(svc, 'POST', '/v1/clusters', 'Cluster', 'prod', CLUSTER);
  await write(svc, 'POST', '/v1/profiles', 'Profile', 'worker', PROFILE);
  for (let i = 0; i < machines; i++) await write(svc, 'POST', '/v1/machines', 'Machine', `m${i}`, { selectors: { mac: [`52:54:00:00:00:0${i}`] }, cluster: 'prod', profile: 'worker' });
};

describe('pre-rendering', () => {
  it('makes the first boot a cache hit, with the bytes an on-demand render gives', async () => {
    // One store under both, so both serve the same incarnation of m0 (its URLs are bound
    // to it); the service that renders on demand does not ask for the URL's claim, which
    // the pre-rendering one makes first.
    const store = await openSqliteStore(':memory:');
    // Two boots of one machine within a second get the same signed URL (its expiry is in
    // seconds), which first fetch wins would refuse the second time: not what is tested here.
    const svc = await testService({ publicUrl: PUBLIC_URL, firstFetchWins: false }, { store });
    const plain = await testService({ prerenderMax: 0, publicUrl: PUBLIC_URL, firstFetchWins: false }, { store });
    try {
      await inventory(svc, 1);
      await settled(svc);
      assert.ok((await metric(svc, 'bootwright_prerender_total{outcome="rendered"}')) >= 1);
      const misses = await metric(svc, 'bootwright_render_cache_misses_total');
      const hits = await metric(svc, 'bootwright_render_cache_hits_total');
      const first = await boot(svc, '52-54-00-00-00-00');
      assert.equal(first.statusCode, 200, first.body);
      assert.equal(await metric(svc, 'bootwright_render_cache_misses_total'), misses, 'the first boot rendered nothing');
      assert.equal(await metric(svc, 'bootwright_render_cache_hits_total'), hits + 1);
      const onDemand = await boot(plain, '52-54-00-00-00-00');
      assert.ok(first.rawPayload.equals(onDemand.rawPayload), 'pre-rendered bytes differ from an on-demand render');
      assert.equal(first.headers.etag, onDemand.headers.etag);
      assert.equal(first.headers['content-type'], onDemand.headers['content-type']);

      // A profile change renders the machine's new data ahead of its next boot.
      await write(svc, 'PUT', '/v1/profiles/worker', 'Profile', 'worker', { ...PROFILE, provisioning: { preKubeadmCommands: ['swapoff -a'] } });
      await settled(svc);
      const before = await metric(svc, 'bootwright_render_cache_misses_total');
      const next = await boot(svc, '52-54-00-00-00-00');
      assert.equal(next.statusCode, 200);
      assert.notEqual(next.headers.etag, first.headers.etag);
      assert.equal(await metric(svc, 'bootwright_render_cache_misses_total'), before);
    } finally {
      await svc.app.close();
      await plain.app.close();
      await store.close();
    }
  });

  it('renders ahead the Ignition specs machines asked for, not only the configured one', async () => {
    const svc = await testService({ publicUrl: PUBLIC_URL, firstFetchWins: false });
    // What an Ignition that accepts spec 3.5.0 sends (the configured default is 3.4.0).
    const accept35 = 'application/vnd.coreos.ignition+json;version=3.5.0, */*;q=0.1';
    try {
      await inventory(svc, 1);
      await settled(svc);
      // m0 asks for 3.5.0 before anything was rendered in that spec: a miss, and noted.
      // Its second fetch, the same Accept header again, is a hit.
      let misses = await metric(svc, 'bootwright_render_cache_misses_total');
      for (const expectMiss of [true, false]) {
        const r = await boot(svc, '52-54-00-00-00-00', accept35);
        assert.equal(r.statusCode, 200, r.body);
        assert.equal((JSON.parse(r.body) as { ignition: { version: string } }).ignition.version, '3.5.0');
        assert.equal(await metric(svc, 'bootwright_render_cache_misses_total'), misses + (expectMiss ? 1 : 0));
        misses = await metric(svc, 'bootwright_render_cache_misses_total');
      }
      // A machine written afterwards is pre-rendered in both specs: its first boots in
      // either are cache hits.
      await write(svc, 'POST', '/v1/machines', 'Machine', 'm1', { selectors: { mac: ['52:54:00:00:00:11'] }, cluster: 'prod', profile: 'worker' });
      await settled(svc);
      const before = await metric(svc, 'bootwright_render_cache_misses_total');
      for (const accept of [accept35, IGNITION_ACCEPT]) assert.equal((await boot(svc, '52-54-00-00-00-11', accept)).statusCode, 200);
      assert.equal(await metric(svc, 'bootwright_render_cache_misses_total'), before, 'a first boot rendered on demand');
    } finally {
      await svc.app.close();
    }
  });

  it('renders in a worker even what a request would render inline', async () => {
    // Every request's task is small enough for the main thread here; pre-rendering's are not.
    const svc = await testService({ publicUrl: PUBLIC_URL, renderInlineBytes: 1 << 20 });
    try {
      await inventory(svc, 2);
      await settled(svc);
      assert.ok((await metric(svc, 'bootwright_prerender_total{outcome="rendered"}')) >= 2);
      // Two assemblies, each rendering in the same trip, in the pool; nothing inline.
      assert.equal(await metric(svc, 'bootwright_render_tasks_total{outcome="inline"}'), 0);
      assert.equal(await metric(svc, 'bootwright_render_tasks_total{outcome="pool"}'), 2);
      // A fetch of a spec not pre-rendered (Ignition 3.3.0) renders on demand, inline (it
      // is small) once the main thread is not busy (src/work/pool.ts: a busy one pools it).
      await new Promise((resolve) => setTimeout(resolve, 3 * LOAD_SAMPLE_MS));
      const script = (await svc.app.inject({ url: '/ipxe?mac=52-54-00-00-00-00' })).body;
      const url = new URL(/ignition\.config\.url=(\S+)/.exec(script)![1]!);
      const older = await svc.app.inject({ url: `${url.pathname}${url.search}`, headers: { accept: 'application/vnd.coreos.ignition+json;version=3.3.0' } });
      assert.equal(older.statusCode, 200, older.body);
      assert.equal(older.json<{ ignition: { version: string } }>().ignition.version, '3.3.0');
      assert.equal(await metric(svc, 'bootwright_render_tasks_total{outcome="inline"}'), 1);
      assert.equal(await metric(svc, 'bootwright_render_tasks_total{outcome="pool"}'), 2);
    } finally {
      await svc.app.close();
    }
  });

  it('steps aside while requests miss the cache', async () => {
    const svc = await testService({ publicUrl: PUBLIC_URL });
    try {
      await inventory(svc, 1);
      await settled(svc);
      const rendered = await metric(svc, 'bootwright_prerender_total{outcome="rendered"}');
      // A request's miss, then a write that queues a machine: nothing is rendered ahead
      // until 100 ms after the miss, then the queue drains. The miss happened after
      // `sent`, so the pre-render cannot have finished before sent + 100 ms (a loaded
      // machine only delays it). The body is parsed first, so the miss is one quick render.
      const ask = (accept: string) =>
        svc.app.inject({ method: 'POST', url: '/v1/render', headers: { authorization: `Bearer ${RENDERER}`, 'content-type': 'application/json', accept }, payload: JSON.stringify(example('worker')) });
      assert.equal((await ask('text/cloud-config')).statusCode, 200);
      const sent = performance.now();
      assert.equal((await ask(IGNITION_ACCEPT)).statusCode, 200);
      await write(svc, 'POST', '/v1/machines', 'Machine', 'm9', { selectors: { mac: ['52:54:00:00:00:09'] }, cluster: 'prod', profile: 'worker' });
      let done = NaN;
      for (let i = 0; i < 5000 && Number.isNaN(done); i++) {
        if ((await metric(svc, 'bootwright_prerender_total{outcome="rendered"}')) > rendered) done = performance.now();
        else await new Promise((r) => setTimeout(r, 2));
      }
      assert.ok(done - sent >= 100, `pre-rendered ${(done - sent).toFixed(1)} ms after a request's miss`);
    } finally {
      await svc.app.close();
    }
  });

  it('queues at most prerenderMax machines of one change', async () => {
    const svc = await testService({ prerenderMax: 1 });
    try {
      await inventory(svc, 3);
      await settled(svc);
      const skipped = await metric(svc, 'bootwright_prerender_total{outcome="skipped"}');
      await write(svc, 'PUT', '/v1/profiles/worker', 'Profile', 'worker', { ...PROFILE, provisioning: { preKubeadmCommands: ['swapoff -a'] } });
      await settled(svc);
      assert.equal(await metric(svc, 'bootwright_prerender_total{outcome="skipped"}'), skipped + 2);
      // The machines not pre-rendered still boot: their first fetch renders.
      for (const mac of ['52-54-00-00-00-00', '52-54-00-00-00-01', '52-54-00-00-00-02']) assert.equal((await boot(svc, mac)).statusCode, 200);
    } finally {
      await svc.app.close();
    }
  });
});
