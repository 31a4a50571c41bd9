/**
 * Binding signed URLs (issue 16), through the firmware routes on a SQLite file store and
 * on PostgreSQL shared by two stores (replicas):
 *
 * - `bindClientAddress`: the URLs `/ipxe` hands out name the address that fetched it and
 *   the signature covers it; a fetch from another address is a 403 whose audit row says
 *   `client-address`, counted in `bootwright_signed_url_refused_total`; editing the
 *   address in the URL voids the signature.
 * - `firstFetchWins`: the second fetch of a secret-bearing URL is a 403 (`already-fetched`),
 *   also after a restart (a new store on the same file) and across replicas (exactly one
 *   of two concurrent claims wins).
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildServer } from '../../src/api/server.js';
import { loadConfig } from '../../src/config.js';
import { openPostgresStore } from '../../src/store/postgres.js';
import { openSqliteStore, SQLITE_FILE } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { testDatabase } from '../support/postgres.js';
import { example } from '../support/requests.js';

const TOKEN = 'binding-admin-token-0123456789ab';
const API = 'bootwright.dev/v1alpha1';
const BOOT = { kernel: 'http://images.example.com/vmlinuz', initrd: ['http://images.example.com/initrd.img'], args: ['console=ttyS0'] };

async function service(dataDir: string, store: Store, overrides: Record<string, unknown>): Promise<FastifyInstance> {
  const config = loadConfig({}, { dataDir, tokens: [{ name: 'admin', token: TOKEN, scopes: ['admin'] }], maxEventLoopDelayMs: 0, rateLimitMax: 0, logLevel: 'silent', publicUrl: 'http://10.0.0.1:8080', refusedAuditIntervalSeconds: 0, ...overrides });
  const app = await buildServer({ config, store });
  await app.ready();
  return app;
}

async function seed(app: FastifyInstance): Promise<void> {
  const post = async (collection: string, kind: string, name: string, spec: unknown) => {
    const r = await app.inject({ method: 'POST', url: `/v1/${collection}`, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, payload: JSON.stringify({ apiVersion: API, kind, metadata: { name }, spec }) });
    assert.equal(r.statusCode, 201, r.body);
  };
  await post('clusters', 'Cluster', 'prod', (example('worker').spec as { cluster: unknown }).cluster);
  for (const format of ['ignition', 'cloud-config'] as const) {
    await post('profiles', 'Profile', format, { role: 'worker', kubernetesVersion: 'v1.33.2', output: { format }, boot: BOOT });
  }
  await post('machines', 'Machine', 'ign-1', { cluster: 'prod', profile: 'ignition', selectors: { mac: ['52:54:00:00:00:01'] } });
  await post('machines', 'Machine', 'cc-1', { cluster: 'prod', profile: 'cloud-config', selectors: { mac: ['52:54:00:00:00:02'] } });
}

/** The signed URL in the /ipxe script a machine gets from `address`. */
async function bootUrl(app: FastifyInstance, mac: string, address: string): Promise<URL> {
  const r = await app.inject({ method: 'GET', url: `/ipxe?mac=${mac}`, remoteAddress: address });
  assert.equal(r.statusCode, 200, r.body);
  const m = /(?:ignition\.config\.url=|ds=nocloud-net;s=)(\S+)/.exec(r.body);
  assert.ok(m, r.body);
  return new URL(m[1]!);
}

const get = (app: FastifyInstance, url: URL | string, address: string) => {
  const u = typeof url === 'string' ? new URL(url, 'http://x') : url;
  return app.inject({ method: 'GET', url: `${u.pathname}${u.search}`, remoteAddress: address });
};
const audit = async (app: FastifyInstance, name: string) =>
  (await app.inject({ method: 'GET', url: `/v1/machines/${name}/audit`, headers: { authorization: `Bearer ${TOKEN}` } })).json<{ items: { route: string; status: number; client: string; reason?: string }[] }>().items;
const refusedMetric = async (app: FastifyInstance, route: string, reason: string) => {
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  const line = text.split('\n').find((l) => l.startsWith(`bootwright_signed_url_refused_total{route="${route}",reason="${reason}"}`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
};

describe('bindClientAddress', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bw-binding-'));
  let store: Store;
  let app: FastifyInstance;
  before(async () => {
    store = await openSqliteStore(join(dir, SQLITE_FILE));
    app = await service(dir, store, { bindClientAddress: true });
    await seed(app);
  });
  after(async () => {
    await app.close();
    await store.close();
  });

  it('Ignition: the URL names the address that fetched /ipxe; only that address may fetch it', async () => {
    const url = await bootUrl(app, '52-54-00-00-00-01', '10.0.0.5');
    assert.equal(url.searchParams.get('client'), '10.0.0.5');
    assert.deepEqual([...url.searchParams.keys()], ['machine', 'inc', 'exp', 'client', 'sig']);
    const before = await refusedMetric(app, '/ignition', 'client-address');
    const elsewhere = await get(app, url, '10.0.0.6');
    assert.equal(elsewhere.statusCode, 403);
    assert.match(elsewhere.json<{ detail: string }>().detail, /bound to the address that fetched \/ipxe/);
    assert.equal(await refusedMetric(app, '/ignition', 'client-address'), before + 1);
    const rows = await audit(app, 'ign-1');
    assert.deepEqual(rows[0], { ...rows[0], route: '/ignition', status: 403, client: '10.0.0.6', reason: 'client-address' });
    // Editing the address in the URL voids the signature: a plain 403, audited with its
    // detail as the reason, never client-address (the URL is not genuine).
    const forged = new URL(url);
    forged.searchParams.set('client', '10.0.0.6');
    const f = await get(app, forged, '10.0.0.6');
    assert.equal(f.statusCode, 403);
    assert.match(f.json<{ detail: string }>().detail, /not valid/);
    assert.equal((await audit(app, 'ign-1'))[0]!.reason, 'the signature is not valid for this machine and route');
    // Dropping it voids it too.
    const unbound = new URL(url);
    unbound.searchParams.delete('client');
    assert.equal((await get(app, unbound, '10.0.0.6')).statusCode, 403);
    const home = await get(app, url, '10.0.0.5');
    assert.equal(home.statusCode, 200, home.body);
    assert.equal((await audit(app, 'ign-1'))[0]!.status, 200);
  });

  it('NoCloud: the seed path carries <exp>.<inc>~<client>; user-data from elsewhere is refused and audited', async () => {
    const seedUrl = await bootUrl(app, '52-54-00-00-00-02', '10.0.0.7');
    const segments = seedUrl.pathname.split('/');
    assert.match(segments[3]!, /^\d+\.[0-9a-f]{16}~10\.0\.0\.7$/);
    const other = await get(app, `${seedUrl.pathname}user-data`, '10.0.0.8');
    assert.equal(other.statusCode, 403);
    assert.equal((await audit(app, 'cc-1'))[0]!.reason, 'client-address');
    for (const file of ['meta-data', 'user-data', 'vendor-data', 'network-config']) assert.equal((await get(app, `${seedUrl.pathname}${file}`, '10.0.0.7')).statusCode, 200, file);
  });
});

describe('firstFetchWins', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bw-ffw-'));

  it('the second fetch of a secret-bearing URL is refused, audited and counted, also after a restart', async () => {
    let store = await openSqliteStore(join(dir, SQLITE_FILE));
    let app = await service(dir, store, { firstFetchWins: true });
    await seed(app);
    const url = await bootUrl(app, '52-54-00-00-00-01', '10.0.0.5');
    assert.equal((await get(app, url, '10.0.0.5')).statusCode, 200);
    const again = await get(app, url, '10.0.0.5');
    assert.equal(again.statusCode, 403);
    assert.match(again.json<{ detail: string }>().detail, /fetched before, and first fetch wins/);
    assert.equal((await audit(app, 'ign-1'))[0]!.reason, 'already-fetched');
    assert.equal(await refusedMetric(app, '/ignition', 'already-fetched'), 1);
    // NoCloud: meta-data may be read again and again; user-data once.
    const seedUrl = await bootUrl(app, '52-54-00-00-00-02', '10.0.0.7');
    for (let i = 0; i < 2; i++) assert.equal((await get(app, `${seedUrl.pathname}meta-data`, '10.0.0.7')).statusCode, 200);
    assert.equal((await get(app, `${seedUrl.pathname}user-data`, '10.0.0.7')).statusCode, 200);
    assert.equal((await get(app, `${seedUrl.pathname}user-data`, '10.0.0.7')).statusCode, 403);
    // A restart remembers the claims.
    await app.close();
    await store.close();
    store = await openSqliteStore(join(dir, SQLITE_FILE));
    app = await service(dir, store, { firstFetchWins: true });
    try {
      assert.equal((await get(app, url, '10.0.0.5')).statusCode, 403, 'still refused after a restart');
      // A fresh URL from /ipxe works once. Expiries are whole seconds, so a URL signed
      // in the same second as the first is the same URL (claimed): a machine's next boot
      // comes seconds later, and so does this one.
      await sleep(1000 - (Date.now() % 1000) + 10);
      const fresh = await bootUrl(app, '52-54-00-00-00-01', '10.0.0.5');
      assert.notEqual(fresh.href, url.href);
      assert.equal((await get(app, fresh, '10.0.0.5')).statusCode, 200);
    } finally {
      await app.close();
      await store.close();
    }
  });

  it('of concurrent fetches of one URL exactly one is served; the others are 403 already-fetched, each audited', async () => {
    const d = mkdtempSync(join(tmpdir(), 'bw-ffw-race-'));
    const store = await openSqliteStore(join(d, SQLITE_FILE));
    const app = await service(d, store, {});
    try {
      await seed(app);
      for (const mac of ['52-54-00-00-00-01', '52-54-00-00-00-02']) {
        const url = await bootUrl(app, mac, '10.0.0.5');
        const target = url.pathname.endsWith('/') ? `${url.pathname}user-data` : url;
        const answers = await Promise.all(Array.from({ length: 12 }, () => get(app, target, '10.0.0.5')));
        assert.deepEqual(answers.map((r) => r.statusCode).sort(), [200, ...Array.from({ length: 11 }, () => 403)], mac);
        for (const r of answers.filter((a) => a.statusCode === 403)) assert.match(r.json<{ detail: string }>().detail, /first fetch wins/);
      }
      const rows = [...(await audit(app, 'ign-1')), ...(await audit(app, 'cc-1'))].filter((r) => r.route !== '/ipxe');
      assert.equal(rows.filter((r) => r.status === 200).length, 2);
      assert.ok(rows.filter((r) => r.status === 403).every((r) => r.reason === 'already-fetched'));
    } finally {
      await app.close();
      await store.close();
    }
  });

  it('on by default (the URL stays in the node\'s /proc/cmdline); false lets a URL be fetched again until it expires', async () => {
    const d = mkdtempSync(join(tmpdir(), 'bw-ffw-off-'));
    const store = await openSqliteStore(join(d, SQLITE_FILE));
    let app = await service(d, store, {});
    try {
      await seed(app);
      const url = await bootUrl(app, '52-54-00-00-00-01', '10.0.0.5');
      assert.equal(url.searchParams.get('client'), null, 'not bound by default');
      assert.deepEqual([(await get(app, url, '10.0.0.9')).statusCode, (await get(app, url, '10.0.0.9')).statusCode], [200, 403], 'replayed by default');
      await app.close();
      app = await service(d, store, { firstFetchWins: false });
      await sleep(1000 - (Date.now() % 1000) + 10);
      const again = await bootUrl(app, '52-54-00-00-00-01', '10.0.0.5');
      for (let i = 0; i < 2; i++) assert.equal((await get(app, again, '10.0.0.9')).statusCode, 200);
    } finally {
      await app.close();
      await store.close();
    }
  });
});

describe('first-fetch claims on PostgreSQL shared by two replicas', async () => {
  const url = await testDatabase('first-fetch-wins claims across two PostgreSQL replicas');
  if (url === undefined) return;
  it('of concurrent claims from two stores exactly one wins; expired claims are deleted', async () => {
    const a = await openPostgresStore(url);
    const b = await openPostgresStore(url);
    try {
      const exp = Math.floor(Date.now() / 1000) + 3600;
      const served = { machine: 'claims', route: '/ignition', client: '10.0.0.5', status: 200 };
      const claim = (store: Store, key: string, expiresAt: number) => store.recordAudit(served, {}, undefined, { key, expiresAt });
      // What the stores read with a fetch (fetchParts): an unexpired claim of the key.
      const claimed = async (key: string) => {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          return (await client.query('SELECT 1 FROM claimed_urls WHERE key = $1 AND expires_at > $2', [key, Math.floor(Date.now() / 1000)])).rows.length > 0;
        } finally {
          await client.end();
        }
      };
      for (let i = 0; i < 20; i++) {
        const results = await Promise.all([claim(a, `k${i}`, exp), claim(b, `k${i}`, exp), claim(a, `k${i}`, exp), claim(b, `k${i}`, exp)]);
        assert.equal(results.filter(Boolean).length, 1, `key k${i}: ${JSON.stringify(results)}`);
      }
      assert.equal((await a.audit('claims', { limit: 1000 })).length, 20, 'one audit row per claim: the losers wrote nothing');
      // An expired claim is gone at the next claim, so its key may be claimed again.
      assert.equal(await claim(a, 'old', Math.floor(Date.now() / 1000) - 1), true);
      assert.equal(await claimed('old'), false, 'an expired claim is no claim');
      assert.equal(await claim(b, 'other', exp), true);
      assert.equal(await claim(b, 'old', exp), true);
      assert.equal(await claimed('old'), true);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
