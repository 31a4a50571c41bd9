/**
 * The SQLite store against the shared suite, each test on a fresh file in a temporary
 * directory; plus what only SQLite has: the file, WAL mode, migrations, the query plans.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import type { MachineSpec } from '../../src/store/resources.js';
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
      assert.deepEqual(db.prepare('SELECT version, name FROM schema_version WHERE version > 0').all(), [{ version: 1, name: 'inventory' }, { version: 2, name: 'bounded-unauthenticated' }, { version: 3, name: 'machine-status' }]);
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
      const rev = db.prepare("INSERT INTO resource_revisions VALUES ('Machine', ?, 1, '{}', ?, 1, 1, '2030-01-01T00:00:00.000Z', '2030-01-01T00:00:00.000Z')");
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
