/**
 * Bounded unauthenticated writes (issue 11 B): floods of unauthenticated `/ipxe`
 * requests for unknown machines and of forged `/ignition` requests no longer grow the
 * `discovered` and `audit` tables without bound. Per-address limits, sampling of
 * identical refusals and the store's caps each hold, every write not made is counted in
 * `/metrics`, and the answers themselves (and the rows of served fetches) never change.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { IGNITION_PATH, signedUrl } from '../../src/boot/sign.js';
import { type Config, ConfigError, loadConfig } from '../../src/config.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite.js';
import { example } from '../support/requests.js';
import { testService } from '../support/server.js';

const KEY = Buffer.alloc(32, 5);
const CLUSTER = (example('init').spec as { cluster: Record<string, unknown> }).cluster;
const PROFILE = { role: 'worker', kubernetesVersion: 'v1.33.2', output: { format: 'ignition' }, boot: { kernel: 'http://images.example.com/vmlinuz', initrd: [], args: [] } };
const IGN = 'application/vnd.coreos.ignition+json;version=3.4.0';
const mac = (i: number) => `02:00:${[i >> 16, (i >> 8) & 255, i & 255, 7].map((b) => b.toString(16).padStart(2, '0')).join(':')}`;

/** A service with cluster prod, profile ign and machine m1, over its own in-memory store. */
async function service(overrides: Partial<Config>): Promise<{ app: FastifyInstance; store: SqliteStore; close: () => Promise<void> }> {
  const store = await openSqliteStore(':memory:');
  const svc = await testService({ urlSigningKey: KEY.toString('hex'), publicUrl: 'http://boot.example', ...overrides }, { store });
  await store.create('Cluster', { name: 'prod', spec: CLUSTER as never });
  await store.create('Profile', { name: 'ign', spec: PROFILE as never });
  await store.create('Machine', { name: 'm1', spec: { selectors: { mac: ['52:54:00:00:00:01'], labels: {} }, cluster: 'prod', profile: 'ign', nodeLabels: {}, taints: [] } });
  return {
    app: svc.app,
    store,
    close: async () => {
      await svc.app.close();
      await store.close();
    },
  };
}

/** The value of one counter series in the Prometheus text (0 when absent). */
async function counter(app: FastifyInstance, labels: string): Promise<number> {
  const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  const line = text.split('\n').find((l) => l.startsWith(`bootwright_unauthenticated_writes_dropped_total{${labels}} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

const get = (app: FastifyInstance, url: string, remoteAddress = '10.0.0.1', headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, remoteAddress, headers });
const forged = (machine: string) => `${IGNITION_PATH}?machine=${machine}&exp=9999999999&sig=${'A'.repeat(43)}`;

describe('discovered machines', () => {
  it('a flood of unknown identities from one address writes at most the per-minute limit; every answer is still the retry script', async () => {
    const svc = await service({ unauthenticatedWritesPerMinute: 25 });
    try {
      const started = performance.now();
      for (let i = 0; i < 400; i++) {
        const res = await get(svc.app, `/ipxe?mac=${mac(i)}`);
        assert.equal(res.statusCode, 200);
        assert.match(res.body, /^#!ipxe\n/);
      }
      const ms = performance.now() - started;
      assert.equal((await svc.store.listDiscovered({ limit: 1000 })).length, 25);
      assert.equal(await counter(svc.app, 'table="discovered",reason="rate-limited"'), 375);
      // Another address has its own budget.
      assert.equal((await get(svc.app, `/ipxe?mac=${mac(9999)}`, '10.0.0.2')).statusCode, 200);
      assert.equal((await svc.store.listDiscovered({ limit: 1000 })).length, 26);
      console.log(`# 400 unknown /ipxe requests from one address: ${ms.toFixed(0)} ms (${((ms * 1000) / 400).toFixed(0)} µs each)`);
    } finally {
      await svc.close();
    }
  });

  it('many addresses fill the table only to discoveredMax; known identities are still counted, new ones dropped and counted', async () => {
    const svc = await service({ discoveredMax: 30 });
    try {
      for (let i = 0; i < 100; i++) assert.equal((await get(svc.app, `/ipxe?mac=${mac(i)}`, `10.1.${i >> 8}.${i & 255}`)).statusCode, 200);
      const rows = await svc.store.listDiscovered({ limit: 1000 });
      assert.equal(rows.length, 30);
      assert.equal(await counter(svc.app, 'table="discovered",reason="full"'), 70);
      // The first 30 were kept; seeing one again still counts.
      await get(svc.app, `/ipxe?mac=${mac(0)}`, '10.2.0.1');
      assert.equal((await svc.store.listDiscovered({ limit: 1000 })).find((d) => d.mac === mac(0))?.count, 2);
    } finally {
      await svc.close();
    }
  });
});

describe('audit rows of refusals', () => {
  it('identical forged fetches are sampled to one row per interval; the answers stay 403', async () => {
    const svc = await service({});
    try {
      for (let i = 0; i < 200; i++) assert.equal((await get(svc.app, forged('m1'))).statusCode, 403);
      const rows = await svc.store.audit('m1', { limit: 1000 });
      assert.deepEqual(rows.map((r) => [r.route, r.status, r.client]), [[IGNITION_PATH, 403, '10.0.0.1']]);
      assert.equal(await counter(svc.app, 'table="audit",reason="sampled"'), 199);
      // Another address, or another status, is another row.
      await get(svc.app, forged('m1'), '10.0.0.2');
      assert.equal((await svc.store.audit('m1', { limit: 1000 })).length, 2);
    } finally {
      await svc.close();
    }
  });

  it('forged fetches naming ever new machines are limited per address, and capped at refusedAuditMax overall', async () => {
    const svc = await service({ unauthenticatedWritesPerMinute: 40, refusedAuditMax: 50 });
    try {
      for (let i = 0; i < 300; i++) assert.equal((await get(svc.app, forged(`ghost-${i}`))).statusCode, 403);
      let kept = 0;
      for (let i = 0; i < 300; i++) kept += (await svc.store.audit(`ghost-${i}`)).length;
      assert.equal(kept, 40);
      assert.equal(await counter(svc.app, 'table="audit",reason="rate-limited"'), 260);
      // From many addresses: the store keeps the newest refusedAuditMax.
      for (let i = 0; i < 120; i++) await get(svc.app, forged(`wraith-${i}`), `10.3.0.${i}`);
      const wraiths: number[] = [];
      for (let i = 0; i < 120; i++) if ((await svc.store.audit(`wraith-${i}`)).length > 0) wraiths.push(i);
      assert.deepEqual(wraiths, Array.from({ length: 50 }, (_, k) => 70 + k));
    } finally {
      await svc.close();
    }
  });

  it('served fetches are never limited or sampled: each has its row (identical /ipxe answers one after another, one row counting them), and a machine keeps its newest servedAuditMaxPerMachine of each class', async () => {
    // Anyone who knows a registered MAC address can have /ipxe served (an attacker pass
    // wrote 1,000 rows in 7.5 s): the rows each served answer writes are bounded per
    // machine, the unauthenticated scripts apart from the signed fetches they could
    // otherwise push out.
    // One signed URL served ten times: first fetch wins is off (test/api/binding.test.ts tests it).
    const svc = await service({ unauthenticatedWritesPerMinute: 1, refusedAuditMax: 1, servedAuditMaxPerMachine: 8, firstFetchWins: false });
    try {
      for (let i = 0; i < 5; i++) await get(svc.app, forged('m1'));
      const url = new URL(signedUrl('http://boot.example', IGNITION_PATH, 'm1', KEY, 3600));
      for (let i = 0; i < 10; i++) assert.equal((await get(svc.app, `${url.pathname}${url.search}`, '10.0.0.1', { accept: IGN })).statusCode, 200);
      for (let i = 0; i < 20; i++) assert.equal((await get(svc.app, '/ipxe?mac=52-54-00-00-00-01', `10.0.1.${i}`)).statusCode, 200);
      for (let i = 0; i < 30; i++) assert.equal((await get(svc.app, '/ipxe?mac=52-54-00-00-00-01', '10.0.2.1')).statusCode, 200);
      const rows = await svc.store.audit('m1', { limit: 1000 });
      assert.equal(rows.filter((r) => r.status === 200 && r.route === IGNITION_PATH).length, 8, 'the 8 newest of 10, whatever /ipxe did after them');
      const scripts = rows.filter((r) => r.status === 200 && r.route === '/ipxe');
      assert.equal(scripts.length, 8, 'the 8 newest of 21 rows (20 clients, then one client 30 times)');
      assert.deepEqual([scripts[0]!.client, scripts[0]!.repeats], ['10.0.2.1', 30], 'the same answer to the same client, one after another: one row counting 30');
      assert.equal(scripts[1]!.repeats, undefined);
      assert.equal(rows.filter((r) => r.status === 403).length, 1);
    } finally {
      await svc.close();
    }
  });
});

describe('configuration', () => {
  let svc: Awaited<ReturnType<typeof service>>;
  before(async () => {
    svc = await service({ unauthenticatedWritesPerMinute: 0, refusedAuditIntervalSeconds: 0 });
  });
  after(async () => svc.close());

  it('0 turns the per-address limit and sampling off (the store caps still hold)', async () => {
    for (let i = 0; i < 80; i++) await get(svc.app, `/ipxe?mac=${mac(i)}`);
    for (let i = 0; i < 80; i++) await get(svc.app, forged('m1'));
    assert.equal((await svc.store.listDiscovered({ limit: 1000 })).length, 80);
    assert.equal((await svc.store.audit('m1', { limit: 1000 })).length, 80);
    assert.equal(await counter(svc.app, 'table="audit",reason="sampled"'), 0);
  });
});

describe('the bounds’ variables', () => {
  it('are read from BOOTWRIGHT_*, with their defaults, and a bad value names the variable', () => {
    const defaults = loadConfig({});
    assert.deepEqual(
      [defaults.unauthenticatedWritesPerMinute, defaults.refusedAuditIntervalSeconds, defaults.discoveredMax, defaults.refusedAuditMax, defaults.unauthenticatedRetentionSeconds, defaults.servedAuditMaxPerMachine],
      [60, 60, 10_000, 10_000, 2_592_000, 1000],
    );
    const set = loadConfig({
      BOOTWRIGHT_UNAUTHENTICATED_WRITES_PER_MINUTE: '0',
      BOOTWRIGHT_REFUSED_AUDIT_INTERVAL_SECONDS: '5',
      BOOTWRIGHT_DISCOVERED_MAX: '100',
      BOOTWRIGHT_REFUSED_AUDIT_MAX: '200',
      BOOTWRIGHT_UNAUTHENTICATED_RETENTION_SECONDS: '3600',
      BOOTWRIGHT_SERVED_AUDIT_MAX_PER_MACHINE: '50',
    });
    assert.deepEqual([set.unauthenticatedWritesPerMinute, set.refusedAuditIntervalSeconds, set.discoveredMax, set.refusedAuditMax, set.unauthenticatedRetentionSeconds, set.servedAuditMaxPerMachine], [0, 5, 100, 200, 3600, 50]);
    assert.throws(() => loadConfig({ BOOTWRIGHT_DISCOVERED_MAX: '0' }), (e: Error) => e instanceof ConfigError && e.message.startsWith('discoveredMax (BOOTWRIGHT_DISCOVERED_MAX):'));
    assert.throws(() => loadConfig({ BOOTWRIGHT_UNAUTHENTICATED_WRITES_PER_MINUTE: 'lots' }), (e: Error) => e instanceof ConfigError && e.message.startsWith('unauthenticatedWritesPerMinute (BOOTWRIGHT_UNAUTHENTICATED_WRITES_PER_MINUTE):'));
  });
});
