/**
 * The PostgreSQL store against the shared suite: a throwaway database per run (dropped
 * afterwards) and a fresh schema in it per store. Plus what only PostgreSQL has: exact
 * counting and If-Match across two stores (two replicas) on one database.
 *
 * The server comes from BOOTWRIGHT_TEST_DATABASE_URL (default
 * postgres://bootwright:bootwright@127.0.0.1:5432/postgres; the role needs CREATEDB).
 * Without a reachable server the tests skip loudly, except under CI where they fail.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { PreconditionFailedError } from '../../src/store/errors.js';
import { openPostgresStore, PostgresStore } from '../../src/store/postgres.js';
import { BATCH_SQL, batchParams } from '../../src/store/postgres-served.js';
import { nextServedSeqSql, trimServedAuditSql } from '../../src/store/rows.js';
import type { Store } from '../../src/store/store.js';
import { createDatabase, dropDatabase, testDatabase, watchQueries } from '../support/postgres.js';
import { storeSuite } from './suite.js';

const url = await testDatabase('PostgreSQL store');

if (url !== undefined) {
  const dbUrl = url;
  let n = 0;
  const schemas = new WeakMap<Store, string>();
  const open = async (schema: string) => {
    const store = await openPostgresStore(dbUrl, { schema, poolSize: 4 });
    schemas.set(store, schema);
    return store;
  };

  storeSuite(
    'postgres',
    () => open(`s${++n}`),
    (closed: Store) => {
      assert.ok(closed instanceof PostgresStore);
      const schema = schemas.get(closed);
      assert.ok(schema);
      return open(schema);
    },
  );

  describe('PostgreSQL store specifics', () => {
    it("a firmware request's prepared statements survive a newer replica's migration of their tables", async () => {
      const schema = `s${++n}`;
      const store = await open(schema);
      const client = new pg.Client({ connectionString: dbUrl });
      await client.connect();
      try {
        await store.create('Cluster', { name: 'prod', spec: { name: 'prod', controlPlaneEndpoint: 'api.prod.example.com:6443', bootstrapToken: 'abcdef.0123456789abcdef' } });
        await store.create('Profile', { name: 'worker', spec: { role: 'worker', kubernetesVersion: 'v1.33.2' } as never });
        await store.create('Machine', { name: 'node-1', spec: { selectors: { mac: ['aa:bb:cc:dd:ee:01'], labels: {} }, cluster: 'prod', profile: 'worker', nodeLabels: {}, taints: [] } });
        const read = async () => {
          const candidates = await store.bootCandidates({ mac: 'aa:bb:cc:dd:ee:01' });
          const parts = await store.fetchParts('node-1');
          return [candidates.machines.map((m) => m.name), [...candidates.profiles.keys()], parts.cluster.name, parts.profile.name];
        };
        // The reads prepare their statements (SELECT v.* of resource_revisions) on the connections they take.
        for (let i = 0; i < 8; i++) assert.deepEqual(await read(), [['node-1'], ['worker'], 'prod', 'worker']);
        // What a later release's migration may do: a column more in a table the statements read.
        await client.query(`ALTER TABLE ${schema}.resource_revisions ADD COLUMN later_release text`);
        for (let i = 0; i < 8; i++) assert.deepEqual(await read(), [['node-1'], ['worker'], 'prod', 'worker']);
      } finally {
        await client.end();
        await store.close();
      }
    });

    it('numbers the served rows an earlier release left unnumbered before it counts them, and finds the bound in the audit_served index', async () => {
      const schema = `s${++n}`;
      const store = await open(schema);
      const client = new pg.Client({ connectionString: dbUrl });
      await client.connect();
      try {
        const bound = { maxServedPerMachine: 3 };
        for (const c of ['a', 'b']) await store.recordAudit({ machine: 'node-1', route: '/ignition', client: c, status: 200 }, bound, { kind: 'booting' });
        // What a 0.2.0 replica beside this one writes during a rolling upgrade: rows without a number.
        for (const c of ['c', 'd']) await client.query(`INSERT INTO ${schema}.audit (machine, route, client, status, at) VALUES ('node-1', '/ignition', $1, 200, '2026-11-02T00:00:00.000Z')`, [c]);
        // Both paths meet them: the one statement (it gives way) and the transaction (it numbers them).
        assert.equal(await store.recordAudit({ machine: 'node-1', route: '/ignition', client: 'e', status: 200 }, bound, { kind: 'booting' }), true);
        assert.deepEqual((await store.audit('node-1')).map((r) => r.client), ['e', 'd', 'c']);
        await store.recordAudit({ machine: 'node-1', route: '/ignition', client: 'f', status: 200 }, bound);
        assert.deepEqual((await store.audit('node-1')).map((r) => r.client), ['f', 'e', 'd']);
        assert.deepEqual((await client.query(`SELECT client, served_seq FROM ${schema}.audit ORDER BY id`)).rows, [
          { client: 'd', served_seq: 4 },
          { client: 'e', served_seq: 5 },
          { client: 'f', served_seq: 6 },
        ]);
        // The planner can answer both statements from the index (sequential scans off: a
        // small table is otherwise read whole, which is cheaper there).
        await client.query(`SET search_path TO ${schema}; SET enable_seqscan = off`);
        for (const sql of [nextServedSeqSql('$1', '$2::text'), trimServedAuditSql('$1', '$2::text', '$3::integer', '$4::integer')]) {
          const params = sql.includes('$4') ? ['node-1', '/ignition', 1001, 1000] : ['node-1', '/ignition'];
          const plan = (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params)).rows.map((r) => r['QUERY PLAN']).join('\n');
          assert.match(plan, /Index (Only )?Scan (Backward )?using audit_served/, plan);
          assert.doesNotMatch(plan, /Seq Scan|using audit_machine/, plan);
        }
      } finally {
        await client.end();
        await store.close();
      }
    });

    it('served answers of many machines at once go in one batch statement, each with its own outcome', async () => {
      const schema = `s${++n}`;
      const a = await open(schema);
      const b = await open(schema);
      const client = new pg.Client({ connectionString: dbUrl });
      await client.connect();
      let unwatch: (() => void) | undefined;
      const log: string[] = [];
      try {
        const served = { kind: 'served' as const, served: { revision: 1, sha256: 'ab'.repeat(32), format: 'ignition' as const } };
        const row = (machine: string, route = '/ignition') => ({ machine, route, client: '10.0.0.1', status: 200 });
        const claim = (machine: string) => ({ key: `url-${machine}`, expiresAt: Math.floor(Date.now() / 1000) + 3600 });
        // node-0's URL was fetched before (from the other replica); node-1's status record,
        // as `a` last saw it, has changed since (`b` wrote it); node-2 has rows a 0.2.0
        // replica wrote, without a number; the other nine are new.
        assert.equal(await b.recordAudit(row('node-0'), {}, served, claim('node-0')), true);
        assert.equal(await a.recordAudit(row('node-1', '/ipxe'), {}, { kind: 'booting' }), true);
        assert.equal(await b.recordAudit(row('node-1'), {}, served), true);
        for (const c of ['c', 'd']) await client.query(`INSERT INTO ${schema}.audit (machine, route, client, status, at) VALUES ('node-2', '/ignition', $1, 200, '2026-11-02T00:00:00.000Z')`, [c]);
        unwatch = watchQueries((q) => log.push(q.text.split(' ').slice(0, 4).join(' ')));
        const machines = Array.from({ length: 12 }, (_, i) => `node-${i}`);
        const written = await Promise.all(
          machines.map((m) => (m === 'node-1' ? a.recordAudit(row(m, '/ipxe'), { maxServedPerMachine: 3 }, { kind: 'booting' }) : a.recordAudit(row(m), { maxServedPerMachine: 3 }, served, claim(m)))),
        );
        unwatch();
        assert.deepEqual(written, [false, ...Array.from({ length: 11 }, () => true)]);
        // The status records a had not seen, in one query; then one statement for all twelve;
        // then node-1 (its record read again) and node-2 (numbered in a transaction) alone.
        assert.deepEqual(log.slice(0, 2), ['SELECT machine, record FROM', 'WITH answers AS (SELECT']);
        assert.equal(log.filter((l) => l === 'WITH answers AS (SELECT').length, 1, log.join('\n'));
        assert.ok(log.includes('BEGIN'), log.join('\n'));
        const records = await a.statuses(machines);
        assert.deepEqual(records.get('node-1')!.transitions.map((t) => t.phase), ['Booting', 'Provisioning', 'Booting']);
        for (const m of machines.slice(2)) assert.deepEqual(records.get(m)!.transitions.map((t) => t.phase), ['Provisioning'], m);
        // node-0: the one row of the fetch before; node-2: its rows numbered, the oldest trimmed.
        assert.equal((await a.audit('node-0')).length, 1);
        assert.deepEqual((await client.query(`SELECT client, served_seq FROM ${schema}.audit WHERE machine = 'node-2' ORDER BY id`)).rows, [
          { client: 'c', served_seq: 1 },
          { client: 'd', served_seq: 2 },
          { client: '10.0.0.1', served_seq: 3 },
        ]);
        for (const m of machines.slice(3)) assert.deepEqual((await client.query(`SELECT served_seq FROM ${schema}.audit WHERE machine = $1`, [m])).rows, [{ served_seq: 1 }], m);
      } finally {
        unwatch?.();
        await client.end();
        await a.close();
        await b.close();
      }
    });

    it("two replicas' batches of the same machines at once: every answer lands, one transition each, the bound exact", async () => {
      const schema = `s${++n}`;
      const a = await open(schema);
      const b = await open(schema);
      try {
        const machines = Array.from({ length: 20 }, (_, i) => `node-${i}`);
        const bound = { maxServedPerMachine: 6 };
        // Ten first boots of each machine, five from each replica, all at once: the batches
        // meet each other's status rows and served numbers, and give way to single writes.
        const writes = machines.flatMap((machine) => Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).recordAudit({ machine, route: '/boot-check', client: `c${i}`, status: 200 }, bound, { kind: 'booting' })));
        assert.deepEqual(await Promise.all(writes), writes.map(() => true));
        const records = await a.statuses(machines);
        for (const machine of machines) {
          assert.deepEqual(records.get(machine)!.transitions.map((t) => t.phase), ['Booting'], machine);
          const rows = await b.audit(machine, { limit: 100 });
          assert.equal(rows.length, 6, machine);
          assert.equal(new Set(rows.map((r) => r.client)).size, 6, machine);
        }
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('the batch statement finds every row by index: each machine its own lookups in audit_served, the trim by number', async () => {
      const schema = `s${++n}`;
      const store = await open(schema);
      await store.close();
      const client = new pg.Client({ connectionString: dbUrl });
      await client.connect();
      try {
        await client.query(`SET search_path TO ${schema}; SET enable_seqscan = off`);
        const served = (machine: string) => ({
          entry: { machine, route: '/ignition', client: '10.0.0.1', status: 200 },
          at: '2026-12-07T00:00:00.000Z',
          max: 1000,
          merge: false,
          claim: { key: `url-${machine}`, expiresAt: 2_000_000_000 },
          mode: 'update' as const,
          record: { phase: 'Provisioning' as const, since: '2026-12-07T00:00:00.000Z', transitions: [], reports: 0 },
          seen: '{}',
        });
        const plan = (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${BATCH_SQL}`, batchParams([served('node-1'), served('node-2')], 1_900_000_000))).rows.map((r) => r['QUERY PLAN']).join('\n');
        assert.doesNotMatch(plan, /Seq Scan/, plan);
        const lookups = [...plan.matchAll(/using audit_served on audit\b.*\n\s*Index Cond: (.*)/g)].map((m) => m[1]!);
        // The newest number, the unnumbered rows, the trim: each by machine, class and number.
        assert.equal(lookups.length, 3, plan);
        for (const cond of lookups) assert.match(cond, /^\(\(machine = (\$\d+|\w+\.b_machine)\) AND \(\(route = ANY .*\)\) AND \(served_seq (IS NULL|IS NOT NULL|<= .*)\)\)$/, plan);
        assert.ok(lookups.some((c) => c.includes('served_seq <=')), plan);
      } finally {
        await client.end();
      }
    });

    it('at 10,000 machines, the batch statements look every row up by index, on custom and generic plans', async () => {
      const schema = `s${++n}`;
      const store = await open(schema);
      const client = new pg.Client({ connectionString: dbUrl });
      await client.connect();
      let unwatch: (() => void) | undefined;
      try {
        await store.create('Cluster', { name: 'prod', spec: { name: 'prod', controlPlaneEndpoint: 'api.prod.example.com:6443', bootstrapToken: 'abcdef.0123456789abcdef' } });
        await store.create('Profile', { name: 'worker', spec: { role: 'worker', kubernetesVersion: 'v1.33.2' } });
        // As many requests at once as a storm brings (the planner weighs a batch's size: a
        // join that looks 10 rows up by key may hash 100 and scan the table).
        const macs = Array.from({ length: 100 }, (_, i) => `52:54:00:00:00:${i.toString(16).padStart(2, '0')}`);
        for (const [i, mac] of macs.entries()) await store.create('Machine', { name: `node-${i}`, spec: { selectors: { mac: [mac], labels: {} }, cluster: 'prod', profile: 'worker', nodeLabels: {}, taints: [] } });
        const served = { kind: 'served' as const, served: { revision: 1, sha256: 'ab'.repeat(32), format: 'ignition' as const } };
        await Promise.all(macs.map((_m, i) => store.recordAudit({ machine: `node-${i}`, route: '/ipxe', client: '10.0.0.1', status: 200 }, {}, { kind: 'booting' })));
        // 10,000 more machines as the service stores them (node-0's rows copied), each with
        // a status, a claimed URL and two served rows; node-0 with 3,000 served rows more.
        await client.query(`SET search_path TO ${schema}`);
        for (const sql of [
          "INSERT INTO resources SELECT kind, 'bulk-' || g, revision, cluster, profile FROM resources, generate_series(1, 10000) g WHERE kind = 'Machine' AND name = 'node-0'",
          "INSERT INTO resource_revisions SELECT kind, 'bulk-' || g, revision, labels, spec, cluster_revision, profile_revision, created_at, updated_at FROM resource_revisions, generate_series(1, 10000) g WHERE kind = 'Machine' AND name = 'node-0'",
          "INSERT INTO machine_selectors SELECT 'mac', 'bulk-mac-' || g, 'bulk-' || g FROM generate_series(1, 10000) g",
          "INSERT INTO machine_status SELECT 'bulk-' || g, phase, since, record FROM machine_status, generate_series(1, 10000) g WHERE machine = 'node-0'",
          "INSERT INTO claimed_urls SELECT 'url-bulk-' || g, 'bulk-' || g, 2000000000 FROM generate_series(1, 10000) g",
          "INSERT INTO audit (machine, route, client, status, at, served_seq) SELECT 'bulk-' || g, r, '10.0.0.1', 200, '2026-12-07T00:00:00.000Z', 1 FROM generate_series(1, 10000) g, unnest(ARRAY['/ipxe', '/ignition']) r",
          "INSERT INTO audit (machine, route, client, status, at, served_seq) SELECT 'node-0', '/ignition', '10.0.0.1', 200, '2026-12-07T00:00:00.000Z', g FROM generate_series(1, 3000) g",
          'ANALYZE',
        ])
          await client.query(sql);
        // The statements of a hundred requests at once, as the service sends them.
        type Scalar = string | number | boolean | null;
        const sent: { text: string; values: (Scalar | Scalar[])[] }[] = [];
        unwatch = watchQueries((q) => {
          if (q.text.startsWith('WITH')) sent.push({ text: q.text, values: q.values as (Scalar | Scalar[])[] });
        });
        await Promise.all(macs.map((mac) => store.bootCandidates({ mac })));
        await Promise.all(macs.map((_m, i) => store.fetchParts(`node-${i}`, `url-node-${i}`)));
        await Promise.all(macs.map((_m, i) => store.recordAudit({ machine: `node-${i}`, route: '/ignition', client: '10.0.0.1', status: 200 }, { maxServedPerMachine: 1000 }, served, { key: `url-node-${i}`, expiresAt: 2_000_000_000 })));
        unwatch();
        assert.deepEqual(
          sent.map((q) => q.text.split(' ').slice(0, 2).join(' ')),
          ['WITH terms', 'WITH fetches', 'WITH answers'],
        );
        // Parameters as SQL literals, for EXPLAIN EXECUTE of a prepared statement.
        const element = (v: Scalar) => (v === null ? 'NULL' : `"${String(v).replace(/[\\"]/g, '\\$&')}"`);
        const literal = (v: Scalar | Scalar[]) => (v === null ? 'NULL' : client.escapeLiteral(Array.isArray(v) ? `{${v.map(element).join(',')}}` : String(v)));
        for (const [i, { text, values }] of sent.entries()) {
          await client.query(`PREPARE batch_${i} AS ${text}`);
          for (const mode of ['force_custom_plan', 'force_generic_plan']) {
            await client.query(`SET plan_cache_mode = ${mode}`);
            const plan = (await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE batch_${i}(${values.map(literal).join(', ')})`)).rows.map((r) => r['QUERY PLAN']).join('\n');
            const what = `${text.split(' ').slice(0, 2).join(' ')}, ${mode}:\n${plan}`;
            assert.doesNotMatch(plan, /Seq Scan on (resources|resource_revisions|machine_selectors|machine_status|claimed_urls|audit)\b/, what);
            // audit: by number in audit_served, by id, or the newest row of a machine (LIMIT 1).
            for (const line of plan.split('\n').filter((l) => /Scan.* on audit\b/.test(l))) assert.match(line, /using (audit_served|audit_pkey) on|Index Scan Backward using audit_machine on/, what);
            for (const m of plan.matchAll(/using audit_served on audit\b.*\n\s*Index Cond: (.*)/g)) assert.match(m[1]!, /machine = .* AND .*served_seq/, what);
          }
        }
      } finally {
        unwatch?.();
        await client.end();
        await store.close();
      }
    });

    it('migrations run once, also when two replicas start together', async () => {
      const schema = `s${++n}`;
      const [a, b] = await Promise.all([open(schema), open(schema)]);
      await Promise.all([a.close(), b.close()]);
      const c = await open(schema);
      await c.close();
      const client = new pg.Client({ connectionString: dbUrl });
      await client.connect();
      try {
        const rows = (await client.query(`SELECT version::integer AS version, name FROM ${schema}.schema_version WHERE version > 0 ORDER BY version`)).rows;
        assert.deepEqual(rows, [{ version: 1, name: 'inventory' }, { version: 2, name: 'bounded-unauthenticated' }, { version: 3, name: 'transport-security' }, { version: 4, name: 'discovered-enrolled' }, { version: 5, name: 'machine-status' }, { version: 6, name: 'rules-version' }, { version: 7, name: 'discovered-why' }, { version: 8, name: 'minted-tokens' }, { version: 9, name: 'rollback-needs' }, { version: 10, name: 'audit-repeats' }, { version: 11, name: 'status-check' }, { version: 12, name: 'served-seq' }]);
      } finally {
        await client.end();
      }
    });

    it('ping answers while the database is up, and rejects once it is dropped', async () => {
      const other = await createDatabase();
      const store = await openPostgresStore(other.url, { poolSize: 2 });
      try {
        await store.ping();
        await dropDatabase(other.name);
        await assert.rejects(store.ping(), /does not exist|terminat/);
      } finally {
        await store.close();
        await dropDatabase(other.name);
      }
    });

    it('ping rejects within its timeout when the database hangs (no free connection)', async () => {
      const schema = `s${++n}`;
      const store = await openPostgresStore(dbUrl, { schema, poolSize: 1, pingTimeoutMs: 300 });
      const locker = new pg.Client({ connectionString: dbUrl });
      await locker.connect();
      try {
        await store.takeFetch('node-1', 10);
        // Another session holds the counter row: the store's only connection waits on it.
        await locker.query('BEGIN');
        await locker.query(`SELECT * FROM ${schema}.fetch_counts WHERE machine = 'node-1' FOR UPDATE`);
        const blocked = store.takeFetch('node-1', 10);
        const t0 = performance.now();
        await assert.rejects(store.ping(), /did not answer within 300 ms/);
        const waited = performance.now() - t0;
        assert.ok(waited >= 290 && waited < 2000, `waited ${waited} ms`);
        await locker.query('ROLLBACK');
        assert.equal(await blocked, true);
        await store.ping();
      } finally {
        await locker.end();
        await store.close();
      }
    });

    it('two replicas on one database: writes seen at once, fetch counting and If-Match exact', async () => {
      const schema = `s${++n}`;
      const a = await open(schema);
      const b = await open(schema);
      try {
        await a.create('Cluster', { name: 'prod', spec: { name: 'prod' } });
        assert.equal((await b.get('Cluster', 'prod')).revision, 1);
        const takes = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).takeFetch('node-1', 10)));
        assert.equal(takes.filter(Boolean).length, 10);
        assert.equal(await a.fetchCount('node-1'), 10);
        const results = await Promise.allSettled(
          Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).replace('Cluster', { name: 'prod', labels: { writer: String(i) }, spec: { name: 'prod' } }, { ifMatch: 1 })),
        );
        assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
        for (const r of results) if (r.status === 'rejected') assert.ok(r.reason instanceof PreconditionFailedError);
        assert.equal((await a.get('Cluster', 'prod')).revision, 2);
        const creates = await Promise.allSettled([a, b, a, b].map((s) => s.create('Profile', { name: 'worker', spec: { role: 'worker', kubernetesVersion: 'v1.33.2' } })));
        assert.equal(creates.filter((r) => r.status === 'fulfilled').length, 1);
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('two replicas write one machine\'s lifecycle in one statement each: a record changed by the other is read again, never overwritten', async () => {
      const schema = `s${++n}`;
      const a = await open(schema);
      const b = await open(schema);
      try {
        const served = { kind: 'served' as const, served: { revision: 1, sha256: 'ab'.repeat(32), format: 'cloud-config' as const } };
        const row = (route: string) => ({ machine: 'node-1', route, client: '10.0.0.1', status: 200 });
        // Each replica's last seen record is stale at every write after the first: the other wrote since.
        for (let i = 0; i < 4; i++) {
          assert.equal(await (i % 2 ? a : b).recordAudit(row('/ipxe'), {}, { kind: 'booting' }), true);
          assert.equal(await (i % 2 ? b : a).recordAudit(row('/nocloud/user-data'), {}, served), true);
        }
        const record = (await a.statuses(['node-1'])).get('node-1')!;
        assert.deepEqual(record.transitions.map((t) => t.phase), ['Booting', 'Provisioning', 'Booting', 'Provisioning', 'Booting', 'Provisioning', 'Booting', 'Provisioning']);
        // Twenty first boots at once on a new machine, from both: one transition, twenty rows.
        const boots = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).recordAudit({ ...row('/boot-check'), machine: 'node-2' }, {}, { kind: 'booting' })));
        assert.deepEqual(boots, Array.from({ length: 20 }, () => true));
        assert.deepEqual((await b.statuses(['node-2'])).get('node-2')!.transitions.map((t) => t.phase), ['Booting']);
        assert.equal((await a.audit('node-2', { limit: 100 })).length, 20);
        // A URL claimed at once from both: exactly one write.
        const claim = { key: 'url-node-3', expiresAt: Math.floor(Date.now() / 1000) + 3600 };
        const claims = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).recordAudit({ ...row('/ignition'), machine: 'node-3' }, {}, served, claim)));
        assert.equal(claims.filter(Boolean).length, 1);
        assert.equal((await a.audit('node-3', { limit: 100 })).length, 1);
        assert.deepEqual((await b.statuses(['node-3'])).get('node-3')!.transitions.map((t) => t.phase), ['Provisioning']);
      } finally {
        await a.close();
        await b.close();
      }
    });
  });
}
