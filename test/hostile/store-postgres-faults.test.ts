/**
 * Storage faults on a real PostgreSQL (issue 11 B): a database turned read-only (as a
 * standby, or `default_transaction_read_only`) and a connection terminated in the
 * middle of a write answer 503 with Retry-After; reads, renders and refusals keep
 * working; nothing of a refused write is kept; the service recovers by itself. Skips
 * loudly without BOOTWRIGHT_TEST_DATABASE_URL's server (fails under CI).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import request from 'supertest';
import { IGNITION_PATH, signedUrl } from '../../src/boot/sign.js';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres.js';
import { example, worker } from '../support/requests.js';
import { testDatabase } from '../support/postgres.js';
import { ADMIN, READER, RENDERER, testService, type TestService } from '../support/server.js';

const url = await testDatabase('storage faults on PostgreSQL');
const KEY = Buffer.alloc(32, 3);
const CLUSTER = (example('init').spec as { cluster: Record<string, unknown> }).cluster;
const PROFILE = { role: 'worker', kubernetesVersion: 'v1.33.2', output: { format: 'ignition' }, boot: { kernel: 'http://images.example.com/vmlinuz', initrd: [], args: [] } };
const doc = (name: string) => JSON.stringify({ apiVersion: 'bootwright.dev/v1alpha1', kind: 'Cluster', metadata: { name }, spec: CLUSTER });

if (url) {
  describe('PostgreSQL faults', () => {
    let store: PostgresStore;
    let svc: TestService;
    let admin: pg.Client;
    const database = new URL(url).pathname.slice(1);
    const http = () => request(svc.app.server);
    const post = (name: string) => http().post('/v1/clusters').set('authorization', `Bearer ${ADMIN}`).set('content-type', 'application/json').send(doc(name));
    /**
     * End every client session of the test database but the admin one (the pool
     * reconnects). Client backends only: an autovacuum worker visiting the new database
     * is a superuser process, which only a superuser may terminate (PostgreSQL 15 refused
     * this test's role once, in CI).
     */
    const terminate = () =>
      admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND backend_type = 'client backend'", [database]);

    before(async () => {
      store = await openPostgresStore(url);
      svc = await testService({ urlSigningKey: KEY.toString('hex'), publicUrl: 'http://boot.example' }, { store });
      await store.create('Cluster', { name: 'prod', spec: CLUSTER as never });
      await store.create('Profile', { name: 'ign', spec: PROFILE as never });
      await store.create('Machine', { name: 'm1', spec: { selectors: { mac: ['52:54:00:00:00:01'], labels: {} }, cluster: 'prod', profile: 'ign', nodeLabels: {}, taints: [] } });
      admin = new pg.Client({ connectionString: url });
      await admin.connect();
    });
    after(async () => {
      await admin.end();
      await svc.app.close();
      await store.close();
    });

    it('a read-only database: writes and served fetches are 503 (25006), reads, renders and refusals work, and writes work again after', async () => {
      await admin.query(`ALTER DATABASE ${database} SET default_transaction_read_only = on`);
      await terminate();
      try {
        // The pool may still hand out a session the termination has not reached yet: that
        // write is a 503 too (57P01); the next ones run on new, read-only sessions.
        let res = await post('ro');
        for (let i = 0; i < 5 && String(res.body.detail).includes('(57P01)'); i++) {
          assert.equal(res.status, 503, res.text);
          res = await post('ro');
        }
        assert.equal(res.status, 503, res.text);
        assert.equal(res.headers['retry-after'], '5');
        assert.match(res.body.detail, /\(25006\)/);
        const ign = new URL(signedUrl('http://boot.example', IGNITION_PATH, 'm1', KEY, 3600));
        const fetch = await http().get(`${ign.pathname}${ign.search}`).set('accept', 'application/vnd.coreos.ignition+json;version=3.4.0');
        assert.equal(fetch.status, 503, fetch.text);
        assert.equal((await http().get('/v1/clusters/prod').set('authorization', `Bearer ${READER}`)).status, 200);
        assert.equal((await http().get('/v1/machines/m1/bootstrap').set('authorization', `Bearer ${RENDERER}`)).status, 200);
        assert.equal((await http().post('/v1/render').set('authorization', `Bearer ${RENDERER}`).set('content-type', 'application/json').send(JSON.stringify(worker()))).status, 200);
        assert.equal((await http().get(`${IGNITION_PATH}?machine=m1&exp=9999999999&sig=${'A'.repeat(43)}`)).status, 403);
        assert.equal((await http().get('/ipxe?mac=02-00-00-00-00-09')).status, 200);
      } finally {
        await admin.query(`ALTER DATABASE ${database} RESET default_transaction_read_only`);
        await terminate();
      }
      assert.equal((await post('ro')).status, 201);
      assert.deepEqual((await store.audit('m1')).filter((r) => r.status === 200), []);
    });

    it('a connection terminated in the middle of a write: 503 (57P01), nothing kept, and the next write works', async () => {
      // Hold the resource's advisory lock, so the store's create waits on it; then end its session.
      const holder = new pg.Client({ connectionString: url });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', ['Cluster/cut']);
        const pending = post('cut').then((r) => r);
        let waiting: number | undefined;
        for (let i = 0; i < 100 && waiting === undefined; i++) {
          const rows = (await admin.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock' AND pid <> $2", [database, (holder as unknown as { processID: number }).processID])).rows;
          waiting = rows[0]?.pid;
          if (waiting === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
        }
        assert.ok(waiting !== undefined, 'the write never waited on the lock');
        await admin.query('SELECT pg_terminate_backend($1)', [waiting]);
        const res = await pending;
        assert.equal(res.status, 503, res.text);
        assert.match(res.body.detail, /\((57P01|connection)\)/);
        await holder.query('COMMIT');
      } finally {
        await holder.end();
      }
      assert.equal((await http().get('/v1/clusters/cut').set('authorization', `Bearer ${READER}`)).status, 404);
      assert.equal((await post('cut')).status, 201);
    });
  });
}
