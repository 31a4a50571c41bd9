/**
 * Rollbacks and rules versions in the stores (issue 27, src/store/compat.ts): a release
 * refuses to start on a store a newer release migrated beyond what it can run on, and
 * starts (migrating nothing) on one it can; every revision records the rules version it
 * was accepted under, 0 for revisions written before migration 006.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import pg from 'pg';
import { RULES_VERSION } from '../../src/rules.js';
import { documentNeeds, NewerSchemaError, newestMigration, READABLE_FROM } from '../../src/store/compat.js';
import type { Store } from '../../src/store/store.js';
import { MIGRATIONS_DIR as POSTGRES_MIGRATIONS, openPostgresStore } from '../../src/store/postgres.js';
import { MIGRATIONS_DIR as SQLITE_MIGRATIONS, openSqliteStore, SQLITE_FILE } from '../../src/store/sqlite.js';
import { testDatabase } from '../support/postgres.js';
import { HASH, TOKEN } from '../support/requests.js';

const root = mkdtempSync(join(tmpdir(), 'bootwright-compat-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const newPath = () => join(root, `s${++n}`, SQLITE_FILE);
const cluster = { name: 'prod', controlPlaneEndpoint: 'api.prod.example.com:6443', bootstrapToken: TOKEN, caCertHashes: [HASH] };

/**
 * A document using a field v0.2.0 would misread raises `readable_from` to 7 while it is
 * stored (src/store/compat.ts NEWER_FIELDS, migration 009); a replace without it, or a
 * delete, lowers it again, and a dry run changes nothing.
 */
async function needsScenario(store: Store, readableFrom: () => Promise<number>): Promise<void> {
  const machine = { selectors: { mac: ['52:54:00:27:09:01'], labels: {} }, cluster: 'prod', profile: 'p', nodeLabels: {}, taints: [] };
  const network = { version: 2 as const, ethernets: { nic0: { match: { macaddress: '52:54:00:27:09:01' }, addresses: ['192.0.2.9/24'] } } };
  await store.create('Cluster', { name: 'prod', labels: {}, spec: cluster });
  await store.create('Profile', { name: 'p', labels: {}, spec: { role: 'worker', kubernetesVersion: 'v1.33.2' } });
  await store.create('Machine', { name: 'm', labels: {}, spec: machine });
  assert.equal(await readableFrom(), READABLE_FROM, 'nothing newer stored');
  await store.replace('Machine', { name: 'm', labels: {}, spec: { ...machine, network } }, { dryRun: true }).catch(() => undefined);
  assert.equal(await readableFrom(), READABLE_FROM, 'a dry run writes nothing');
  await store.replace('Machine', { name: 'm', labels: {}, spec: { ...machine, network } });
  assert.equal(await readableFrom(), 7, 'spec.network: releases before schema 7 would boot the machine without it');
  await store.replace('Profile', { name: 'p', labels: {}, spec: { role: 'worker', kubernetesVersion: 'v1.33.2', boot: { kernel: '${publicUrl}/assets/vmlinuz', initrd: [], args: [] } } });
  await store.replace('Machine', { name: 'm', labels: {}, spec: machine });
  assert.equal(await readableFrom(), 7, 'the profile still needs it');
  await store.replace('Profile', { name: 'p', labels: {}, spec: { role: 'worker', kubernetesVersion: 'v1.33.2' } });
  assert.equal(await readableFrom(), READABLE_FROM, 'none is left');
  await store.create('Machine', { name: 'm2', labels: {}, spec: { ...machine, selectors: { mac: ['52:54:00:27:09:02'], labels: {} }, kernelArgs: ['console=ttyS0'] } });
  assert.equal(await readableFrom(), 7);
  await store.delete('Machine', 'm2');
  assert.equal(await readableFrom(), READABLE_FROM, 'deleted');
}

describe('schema compatibility', () => {
  it('documentNeeds names each newer field of its kind only', () => {
    assert.deepEqual(documentNeeds('Machine', { cluster: 'c', profile: 'p' }), { readableFrom: READABLE_FROM, fields: [] });
    assert.deepEqual(documentNeeds('Machine', { network: {}, kernelArgs: [], variables: {} }), { readableFrom: 7, fields: ['spec.network', 'spec.kernelArgs', 'spec.variables'] });
    assert.deepEqual(documentNeeds('Cluster', { workloadKubeconfig: { path: '/k' }, network: {} }), { readableFrom: 7, fields: ['spec.workloadKubeconfig'] });
    assert.deepEqual(documentNeeds('Profile', { boot: { kernel: 'http://h/vmlinuz', args: ['console=ttyS0'] } }), { readableFrom: READABLE_FROM, fields: [] });
    assert.deepEqual(documentNeeds('Profile', { boot: { kernel: 'http://h/vmlinuz', args: ['rack=${rack}'] } }), { readableFrom: 7, fields: ['spec.boot'] });
  });

  it('SQLite: a document a release before schema 7 would misread raises readable_from while it is stored', async () => {
    const path = newPath();
    const store = await openSqliteStore(path);
    try {
      await needsScenario(store, () => {
        const db = new Database(path, { readonly: true });
        try {
          return Promise.resolve((db.prepare('SELECT readable_from FROM schema_compatibility WHERE id = 1').get() as { readable_from: number }).readable_from);
        } finally {
          db.close();
        }
      });
    } finally {
      await store.close();
    }
  });

  it('READABLE_FROM is what migration 006 writes, in both stores, and both stores have the same migrations', () => {
    for (const dir of [SQLITE_MIGRATIONS, POSTGRES_MIGRATIONS]) {
      const sql = readFileSync(join(dir, '006.do.rules-version.sql'), 'utf8');
      assert.match(sql, new RegExp(`VALUES \\(1, ${READABLE_FROM}\\);`));
    }
    assert.equal(newestMigration(SQLITE_MIGRATIONS), newestMigration(POSTGRES_MIGRATIONS));
  });

  it('SQLite: a revision records the rules version it was written under; one written before migration 006 reads 0', async () => {
    const path = newPath();
    const store = await openSqliteStore(path);
    await store.create('Cluster', { name: 'prod', labels: {}, spec: cluster });
    assert.equal((await store.get('Cluster', 'prod')).rules, RULES_VERSION);
    await store.close();
    // An older release writes a revision without the column: the default is 0.
    const db = new Database(path);
    db.prepare("INSERT INTO resource_revisions (kind, name, revision, labels, spec, created_at, updated_at) SELECT kind, name, 2, labels, spec, created_at, updated_at FROM resource_revisions WHERE kind = 'Cluster' AND name = 'prod'").run();
    db.prepare("UPDATE resources SET revision = 2 WHERE kind = 'Cluster' AND name = 'prod'").run();
    db.close();
    const again = await openSqliteStore(path);
    assert.equal((await again.get('Cluster', 'prod')).rules, 0);
    await again.close();
  });

  it('SQLite: a store a newer release migrated is opened as it is when still readable, refused with the reason when not', async () => {
    const path = newPath();
    await (await openSqliteStore(path)).close();
    const newest = newestMigration(SQLITE_MIGRATIONS);
    const db = new Database(path);
    db.prepare("INSERT INTO schema_version (version, name, md5, run_at) VALUES (?, 'from-the-future', '', '2030-01-01')").run(newest + 5);
    db.close();
    const readable = await openSqliteStore(path);
    assert.deepEqual(readable.schema, { database: newest + 5, release: newest, applied: 0 });
    await readable.close();
    const db2 = new Database(path);
    db2.prepare('UPDATE schema_compatibility SET readable_from = ?').run(newest + 3);
    db2.close();
    await assert.rejects(openSqliteStore(path), (e: unknown) => {
      assert.ok(e instanceof NewerSchemaError);
      assert.match(e.message, new RegExp(`schema version ${newest + 5}.*schema ${newest + 3} or later.*this release has schema ${newest}`));
      return true;
    });
  });

  it('SQLite: a fresh store is migrated to the newest schema, and says so', async () => {
    const store = await openSqliteStore(newPath());
    assert.deepEqual(store.schema, { database: 0, release: newestMigration(SQLITE_MIGRATIONS), applied: newestMigration(SQLITE_MIGRATIONS) });
    await store.close();
  });
});

const url = await testDatabase('schema compatibility on PostgreSQL');
if (url !== undefined) {
  describe('schema compatibility on PostgreSQL', () => {
    it('records rules versions, opens a readable newer schema and refuses an unreadable one', async () => {
      const store = await openPostgresStore(url, { schema: 'compat', poolSize: 2 });
      await store.create('Cluster', { name: 'prod', labels: {}, spec: cluster });
      assert.equal((await store.get('Cluster', 'prod')).rules, RULES_VERSION);
      await store.close();
      const newest = newestMigration(POSTGRES_MIGRATIONS);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query("INSERT INTO compat.schema_version (version, name, md5, run_at) VALUES ($1, 'from-the-future', '', now())", [newest + 5]);
        const readable = await openPostgresStore(url, { schema: 'compat', poolSize: 2 });
        assert.deepEqual(readable.schema, { database: newest + 5, release: newest, applied: 0 });
        await readable.close();
        await client.query('UPDATE compat.schema_compatibility SET readable_from = $1', [newest + 3]);
        await assert.rejects(openPostgresStore(url, { schema: 'compat', poolSize: 2 }), NewerSchemaError);
      } finally {
        await client.end();
      }
    });

    it('a document a release before schema 7 would misread raises readable_from while it is stored', async () => {
      const store = await openPostgresStore(url, { schema: 'compat_needs', poolSize: 2 });
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await needsScenario(store, async () => (await client.query<{ readable_from: number }>('SELECT readable_from FROM compat_needs.schema_compatibility WHERE id = 1')).rows[0]!.readable_from);
      } finally {
        await client.query('DROP SCHEMA compat_needs CASCADE');
        await client.end();
        await store.close();
      }
    });
  });
}
