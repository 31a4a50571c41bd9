/**
 * The SQLite store against the shared suite, each test on a fresh file in a temporary
 * directory; plus what only SQLite has: the file, WAL mode, migrations, the query plans.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import type { MachineSpec } from '../../src/store/resources.js';
import { nextServedSeqSql, trimServedAuditSql } from '../../src/store/rows.js';
import { openSqliteStore, SQLITE_FILE, SqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { storeSuite } from './suite.js';

const root = mkdtempSync(join(tmpdir(), 'bootwright-store-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const newPath = () => join(root, `s${++n}`, SQLITE_FILE);

storeSuite(
  'sqlite',
  () => openSqliteStore(newPath()),
  (closed: Store) => {
    assert.ok(closed instanceof SqliteStore);
    return openSqliteStore(closed.path);
  },
);

// The same suite with the boot routes' writes batched (as `serve` opens the store).
storeSuite(
  'sqlite, batched writes',
  () => openSqliteStore(newPath(), { batchMs: 2 }),
  (closed: Store) => {
    assert.ok(closed instanceof SqliteStore);
    return openSqliteStore(closed.path, { batchMs: 2 });
  },
);

describe('SQLite batched boot-route writes', () => {
  it('commits concurrent writes together, each settled alone, the fetch limit exact', async () => {
    const path = newPath();
    const store = await openSqliteStore(path, { batchMs: 5 });
    try {
      const takes = Array.from({ length: 40 }, () => store.takeFetch('m1', 25));
      const audits = Array.from({ length: 30 }, (_, i) => store.recordAudit({ machine: 'm1', route: '/ignition', client: '127.0.0.1', status: 200, at: `2026-01-01T00:00:${String(i).padStart(2, '0')}.000Z` }));
      // A write that fails (NOT NULL) rejects alone; its neighbours in the batch commit.
      const bad = store.recordAudit({ machine: null as unknown as string, route: '/ignition', client: '127.0.0.1', status: 200 });
      // A signed URL is claimed once, however many of its fetches share the batch: one audit row.
      const claims = Array.from({ length: 5 }, () => store.recordAudit({ machine: 'm1', route: '/nocloud/user-data', client: '127.0.0.1', status: 200 }, {}, undefined, { key: 'url-1', expiresAt: 4_000_000_000 }));
      assert.deepEqual(await Promise.all(claims), [true, false, false, false, false]);
      const reader = new Database(path, { readonly: true });
      assert.ok(reader.prepare("SELECT 1 FROM claimed_urls WHERE key = 'url-1'").get(), 'claimed');
      reader.close();
      const taken = await Promise.all(takes);
      assert.equal(taken.filter(Boolean).length, 25);
      assert.deepEqual(taken.slice(25), Array.from({ length: 15 }, () => false));
      await Promise.all(audits);
      await assert.rejects(bad, /NOT NULL/);
      assert.equal((await store.audit('m1', { limit: 1000 })).length, 31);
      assert.equal(await store.fetchCount('m1'), 25);
      // Read by another connection: committed, not only visible to this one.
      const db = new Database(path, { readonly: true });
      try {
        assert.equal(db.prepare<[], { n: number }>("SELECT count(*) AS n FROM audit WHERE machine = 'm1'").get()!.n, 31);
      } finally {
        db.close();
      }
    } finally {
      await store.close();
    }
  });

  it('close commits the writes still waiting for their batch', async () => {
    const path = newPath();
    const store = await openSqliteStore(path, { batchMs: 100 });
    const pending = store.recordAudit({ machine: 'm2', route: '/ignition', client: '127.0.0.1', status: 200 });
    await store.close();
    await pending;
    const again = await openSqliteStore(path);
    try {
      assert.equal((await again.audit('m2')).length, 1);
    } finally {
      await again.close();
    }
  });
});

describe('SQLite signed-fetch reads, remembered while unchanged', () => {
  const spec = (nodeName: string) => ({ selectors: { mac: ['aa:bb:cc:dd:ee:01'], labels: {} }, cluster: 'prod', profile: 'worker', nodeName, nodeLabels: {}, taints: [] }) as unknown as MachineSpec;
  const inventory = async (store: Store) => {
    await store.create('Cluster', { name: 'prod', spec: { name: 'prod', controlPlaneEndpoint: 'api.prod.example.com:6443', bootstrapToken: 'abcdef.0123456789abcdef' } });
    await store.create('Profile', { name: 'worker', spec: { role: 'worker', kubernetesVersion: 'v1.33.2' } });
    await store.create('Machine', { name: 'node-1', spec: spec('n1') });
  };
  const seen = async (store: Store) => {
    const p = await store.fetchParts('node-1');
    return [p.machine.revision, p.machine.spec.nodeName, p.profile.revision, p.profile.spec.kubernetesVersion];
  };

  it("serves a repeated fetch the parts it read, frozen; a write of its own, a dry run's or another connection's is read anew", async () => {
    const path = newPath();
    const store = await openSqliteStore(path);
    const other = await openSqliteStore(path);
    try {
      await inventory(store);
      const first = await store.fetchParts('node-1');
      const again = await store.fetchParts('node-1');
      assert.equal(again.machine, first.machine, 'the same objects: nothing read again');
      assert.equal(again.profile, first.profile);
      assert.ok(Object.isFrozen(first.machine.spec.selectors.mac) && Object.isFrozen(first.cluster.spec), 'frozen, deeply');
      assert.throws(() => {
        (first.machine.spec as { nodeName?: string }).nodeName = 'changed';
      }, TypeError);
      // The claim is read at every fetch, remembered parts or not.
      await store.recordAudit({ machine: 'node-1', route: '/ignition', client: '10.0.0.1', status: 200 }, {}, undefined, { key: 'url-a', expiresAt: 4_000_000_000 });
      assert.equal((await store.fetchParts('node-1', 'url-a')).claimed, true);
      assert.equal((await store.fetchParts('node-1', 'url-a')).machine, first.machine);
      // /ipxe's lookup shares what is remembered: the same profile object.
      assert.equal((await store.bootCandidates({ mac: 'aa:bb:cc:dd:ee:01' })).profiles.get('worker'), first.profile);
      await store.replace('Profile', { name: 'worker', spec: { role: 'worker', kubernetesVersion: 'v1.34.1' } });
      assert.equal((await store.bootCandidates({ mac: 'aa:bb:cc:dd:ee:01' })).profiles.get('worker')!.spec.kubernetesVersion, 'v1.34.1');
      assert.deepEqual(await seen(store), [1, 'n1', 2, 'v1.34.1']);
      await store.replace('Machine', { name: 'node-1', spec: spec('n1-dry') }, { dryRun: true });
      assert.deepEqual(await seen(store), [1, 'n1', 2, 'v1.34.1'], 'a dry run changes nothing');
      // Another connection to the file (another process, say), seen by PRAGMA data_version.
      await other.replace('Machine', { name: 'node-1', spec: spec('n1-other') });
      assert.deepEqual(await seen(store), [2, 'n1-other', 2, 'v1.34.1']);
      await store.delete('Machine', 'node-1');
      await assert.rejects(store.fetchParts('node-1'), (e: Error) => e.name === 'NotFoundError');
    } finally {
      await other.close();
      await store.close();
    }
  });
});

describe('SQLite store specifics', () => {
  it('creates the file mode 0600 in WAL mode, and migrations run once', async () => {
    const path = newPath();
    const store = await openSqliteStore(path);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    await store.create('Profile', { name: 'worker', spec: { role: 'worker', kubernetesVersion: 'v1.33.2' } });
    await store.close();
    const again = await openSqliteStore(path);
    await again.close();
    const db = new Database(path, { readonly: true });
    try {
      assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
      assert.deepEqual(db.prepare('SELECT version, name FROM schema_version WHERE version > 0').all(), [{ version: 1, name: 'inventory' }, { version: 2, name: 'bounded-unauthenticated' }, { version: 3, name: 'transport-security' }, { version: 4, name: 'discovered-enrolled' }, { version: 5, name: 'machine-status' }, { version: 6, name: 'rules-version' }, { version: 7, name: 'discovered-why' }, { version: 8, name: 'minted-tokens' }, { version: 9, name: 'rollback-needs' }, { version: 10, name: 'audit-repeats' }, { version: 11, name: 'status-check' }, { version: 12, name: 'served-seq' }]);
    } finally {
      db.close();
    }
  });

  it('migration 004 keeps the discovered rows of a schema-2 inventory, numbered in the order first seen', async () => {
    const path = newPath();
    mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    // Schema 2 as postgrator leaves it: the two migrations applied and recorded.
    db.exec(readFileSync(new URL('../../src/store/migrations/sqlite/001.do.inventory.sql', import.meta.url), 'utf8'));
    db.exec(readFileSync(new URL('../../src/store/migrations/sqlite/002.do.bounded-unauthenticated.sql', import.meta.url), 'utf8'));
    db.exec("CREATE TABLE schema_version (version BIGINT PRIMARY KEY, name TEXT, md5 TEXT, run_at TEXT); INSERT INTO schema_version (version, name, md5, run_at) VALUES (0, '', '', ''), (1, 'inventory', '', ''), (2, 'bounded-unauthenticated', '', '')");
    db.prepare("INSERT INTO discovered VALUES ('52:54:00:00:00:02', '', '', 'b', '2026-01-02T00:00:00.000Z', '2026-01-02T00:00:00.000Z', 3)").run();
    db.prepare("INSERT INTO discovered VALUES ('52:54:00:00:00:01', '', '', 'a', '2026-01-01T00:00:00.000Z', '2026-01-03T00:00:00.000Z', 1)").run();
    db.close();
    const store = await openSqliteStore(path);
    try {
      assert.deepEqual(
        (await store.listDiscovered()).map((d) => [d.id, d.mac, d.count]),
        [['1', '52:54:00:00:00:01', 1], ['2', '52:54:00:00:00:02', 3]],
      );
      assert.equal((await store.recordDiscovered({ mac: '52:54:00:00:00:02', hostname: 'b' }))?.count, 4, 'the unique identity still upserts');
      assert.equal((await store.recordDiscovered({ mac: '52:54:00:00:00:03' }))?.id, '3');
    } finally {
      await store.close();
    }
  });

  it('migration 012 numbers the served rows of a schema-11 inventory per machine and class; rows an earlier release adds later are numbered before they are counted', async () => {
    const path = newPath();
    mkdirSync(dirname(path), { recursive: true });
    const db = new Database(path);
    // Schema 11 as postgrator leaves it, with audit rows as 0.2.0 writes them (no number).
    const names = ['inventory', 'bounded-unauthenticated', 'transport-security', 'discovered-enrolled', 'machine-status', 'rules-version', 'discovered-why', 'minted-tokens', 'rollback-needs', 'audit-repeats', 'status-check'];
    names.forEach((name, i) => db.exec(readFileSync(new URL(`../../src/store/migrations/sqlite/${String(i + 1).padStart(3, '0')}.do.${name}.sql`, import.meta.url), 'utf8')));
    db.exec('CREATE TABLE schema_version (version BIGINT PRIMARY KEY, name TEXT, md5 TEXT, run_at TEXT)');
    const version = db.prepare("INSERT INTO schema_version (version, name, md5, run_at) VALUES (?, ?, '', '')");
    ['', ...names].forEach((name, i) => version.run(i, name));
    const earlier = db.prepare("INSERT INTO audit (machine, route, client, status, at) VALUES (?, ?, ?, ?, '2026-11-01T00:00:00.000Z')");
    const rows: [string, string, string, number][] = [['node-1', '/ipxe', 'a', 200], ['node-1', '/ignition', 'b', 200], ['node-2', '/ipxe', 'c', 200], ['node-1', '/ignition', 'd', 403], ['node-1', '/report', 'e', 204], ['node-1', '/boot.ipxe', 'f', 200]];
    for (const r of rows) earlier.run(...r);
    db.close();
    const numbers = () => {
      const raw = new Database(path, { readonly: true });
      try {
        return raw.prepare('SELECT client, served_seq FROM audit ORDER BY id').all();
      } finally {
        raw.close();
      }
    };
    let store = await openSqliteStore(path);
    try {
      await store.close();
      assert.deepEqual(numbers(), [
        { client: 'a', served_seq: 1 },
        { client: 'b', served_seq: 1 },
        { client: 'c', served_seq: 1 },
        { client: 'd', served_seq: null },
        { client: 'e', served_seq: 2 },
        { client: 'f', served_seq: 2 },
      ]);
      // A rolled-back 0.2.0 wrote two more /ignition rows, unnumbered.
      const again = new Database(path);
      again.prepare("INSERT INTO audit (machine, route, client, status, at) VALUES ('node-1', '/ignition', ?, 200, '2026-11-02T00:00:00.000Z')").run('g');
      again.prepare("INSERT INTO audit (machine, route, client, status, at) VALUES ('node-1', '/ignition', ?, 200, '2026-11-02T00:00:00.000Z')").run('h');
      again.close();
      store = await openSqliteStore(path);
      await store.recordAudit({ machine: 'node-1', route: '/ignition', client: 'i', status: 200 }, { maxServedPerMachine: 3 });
      assert.deepEqual((await store.audit('node-1')).map((r) => r.client), ['i', 'h', 'g', 'f', 'd', 'a'], 'the newest 3 of the class: b and e gone, the /ipxe class and the refusal kept');
      await store.close();
      assert.deepEqual(numbers().filter((r) => ['g', 'h', 'i'].includes((r as { client: string }).client)), [
        { client: 'g', served_seq: 3 },
        { client: 'h', served_seq: 4 },
        { client: 'i', served_seq: 5 },
      ]);
    } finally {
      await store.close();
    }
  });

  it('finds the next number and the rows beyond the served bound in the audit_served index, not by walking the rows kept', () => {
    const db = new Database(':memory:');
    try {
      const names = readdirSync(new URL('../../src/store/migrations/sqlite/', import.meta.url)).sort();
      for (const name of names) db.exec(readFileSync(new URL(`../../src/store/migrations/sqlite/${name}`, import.meta.url), 'utf8'));
      const of = { machine: 'node-1', route: '/ignition', seq: 1001, keep: 1000 };
      const plan = (sql: string) => db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(of).map((r) => (r as { detail: string }).detail);
      for (const sql of [nextServedSeqSql('@machine', '@route'), trimServedAuditSql('@machine', '@route', '@seq', '@keep')]) {
        const details = plan(sql);
        assert.ok(details.length > 0 && details.every((d) => !d.startsWith('SCAN')), `${sql}: ${details.join('; ')}`);
        const searches = details.filter((d) => d.startsWith('SEARCH audit'));
        assert.ok(searches.length > 0 && searches.every((d) => d.includes('USING COVERING INDEX audit_served') || d.includes('USING INDEX audit_served')), details.join('; '));
      }
    } finally {
      db.close();
    }
  });

  it('an in-memory store works and keeps nothing', async () => {
    const store = await openSqliteStore(':memory:');
    await store.create('Profile', { name: 'worker', spec: { role: 'worker', kubernetesVersion: 'v1.33.2' } });
    assert.equal((await store.list('Profile')).items.length, 1);
    await store.close();
    await assert.rejects(store.ping());
  });

  it('finds one machine among 100,000 by an index lookup, not a scan', async () => {
    const path = newPath();
    const store = await openSqliteStore(path);
    await store.create('Cluster', { name: 'prod', spec: { name: 'prod' } });
    await store.create('Profile', { name: 'worker', spec: { role: 'worker', kubernetesVersion: 'v1.33.2' } });
    await store.close();
    // Bulk-load the rows a create would write (100,000 creates one by one take minutes).
    const db = new Database(path);
    db.transaction(() => {
      const rev = db.prepare("INSERT INTO resource_revisions VALUES ('Machine', ?, 1, '{}', ?, 1, 1, '2030-01-01T00:00:00.000Z', '2030-01-01T00:00:00.000Z', 1)");
      const cur = db.prepare("INSERT INTO resources VALUES ('Machine', ?, 1, 'prod', 'worker')");
      const sel = db.prepare("INSERT INTO machine_selectors VALUES ('mac', ?, ?)");
      for (let i = 0; i < 100_000; i++) {
        const name = `m-${i}`;
        const mac = `02:00:${[i >> 16, (i >> 8) & 255, i & 255, 1].map((b) => b.toString(16).padStart(2, '0')).join(':')}`;
        const spec: MachineSpec = { selectors: { mac: [mac], labels: {} }, cluster: 'prod', profile: 'worker', nodeLabels: {}, taints: [] };
        rev.run(name, JSON.stringify(spec));
        cur.run(name);
        sel.run(mac, name);
      }
    })();
    const plan = db
      .prepare("EXPLAIN QUERY PLAN SELECT v.* FROM resources r JOIN resource_revisions v ON v.kind = r.kind AND v.name = r.name AND v.revision = r.revision WHERE r.kind = 'Machine' AND r.name IN (SELECT machine FROM machine_selectors WHERE (selector = ? AND value = ?) OR (selector = ? AND value = ?)) ORDER BY r.name")
      .all('mac', 'x', 'uuid', 'y') as { detail: string }[];
    db.close();
    const details = plan.map((p) => p.detail).join('\n');
    assert.doesNotMatch(details, /SCAN (r|v|resources|resource_revisions|machine_selectors)\b(?! USING)/, details);
    const reopened = await openSqliteStore(path);
    try {
      const started = process.hrtime.bigint();
      const found = await reopened.findMachinesBy({ mac: '02-00-01-86-9F-01' });
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      assert.deepEqual(found.map((m) => m.name), ['m-99999']);
      assert.ok(ms < 50, `lookup took ${ms} ms`);
    } finally {
      await reopened.close();
    }
  });
});
