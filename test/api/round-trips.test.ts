/**
 * Round trips to PostgreSQL per firmware request, counted on the client's own query log
 * (every `pg.Client#query` the service makes while one request is answered), so a change
 * that adds one fails here rather than in a boot storm (issue 32). Counted through the
 * service on a real database: `/ipxe` of a registered machine, then its `/ignition` fetch.
 * Each statement is named: the aim was at most 4 round trips; these are 2.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openPostgresStore, type PostgresStore } from '../../src/store/postgres.js';
import { testDatabase, watchQueries } from '../support/postgres.js';
import { example } from '../support/requests.js';
import { ADMIN, testService, type TestService } from '../support/server.js';

const API = 'bootwright.dev/v1alpha1';
const HOST = 'boot.example.test';
const url = await testDatabase('round trips to PostgreSQL per firmware request');

if (url !== undefined) {
  const databaseUrl = url;
  let store: PostgresStore;
  let svc: TestService;
  const log: string[] = [];
  let unwatch: (() => void) | undefined;

  before(async () => {
    store = await openPostgresStore(databaseUrl);
    svc = await testService({ publicUrl: `http://${HOST}`, allowedHosts: [], prerenderMax: 0, firstFetchWins: false }, { store });
    const cluster = (example('worker').spec as { cluster: Record<string, unknown> }).cluster;
    for (const [collection, kind, name, spec] of [
      ['clusters', 'Cluster', 'prod', { ...cluster, name: 'prod' }],
      ['profiles', 'Profile', 'ign', { role: 'worker', kubernetesVersion: 'v1.33.2', output: { format: 'ignition' }, boot: { kernel: 'http://images.example.com/vmlinuz' } }],
      ['machines', 'Machine', 'node-1', { selectors: { mac: ['52:54:00:32:00:01'] }, cluster: 'prod', profile: 'ign' }],
    ] as const) {
      const res = await svc.app.inject({ method: 'POST', url: `/v1/${collection}`, headers: { authorization: `Bearer ${ADMIN}` }, payload: { apiVersion: API, kind, metadata: { name }, spec } });
      assert.equal(res.statusCode, 201, res.body);
    }
    // Every query text the service sends, from here on.
    unwatch = watchQueries((q) => log.push(q.text.replace(/\s+/g, ' ').split(' ').slice(0, 4).join(' ')));
  });
  after(async () => {
    unwatch?.();
    await svc.app.close();
    await store.close();
  });

  /** The statements one request makes: its log, each cut to its first words. */
  const statements = async (path: string, headers: Record<string, string> = {}) => {
    log.length = 0;
    const res = await svc.app.inject({ url: path, headers: { host: HOST, ...headers } });
    assert.equal(res.statusCode, 200, res.body);
    return { body: res.body, log: [...log] };
  };

  describe('round trips per firmware request on PostgreSQL', () => {
    it('/ipxe: 2, also on a first boot; /ignition: 2', async () => {
      // One read: the candidates, their profiles and status records (src/store/postgres.ts
      // bootCandidates, in a batch of reads, here of one).
      // One write: the status transition (checked against the record read), the audit row
      // (or the repeat counted in the newest one) and the trim, in a batch statement
      // (src/store/postgres-served.ts), here of one answer.
      const ipxe = ['WITH terms AS (SELECT', 'WITH answers AS (SELECT'];
      const first = await statements('/ipxe?mac=52:54:00:32:00:01');
      assert.deepEqual(first.log, ipxe);
      const again = await statements('/ipxe?mac=52:54:00:32:00:01');
      assert.deepEqual(again.log, ipxe);
      const config = new URL(/ignition\.config\.url=(\S+)/.exec(again.body)![1]!);
      const fetch = await statements(config.pathname + config.search, { accept: 'application/vnd.coreos.ignition+json;version=3.4.0' });
      assert.deepEqual(fetch.log, [
        // The machine, its cluster, its profile and its status record, and whether the URL
        // was claimed (fetchParts, in a batch of reads, here of one).
        'WITH fetches AS (SELECT',
        // The claim (expired claims dropped), the status, the audit row and the trim.
        'WITH answers AS (SELECT',
      ]);
    });

    it('/ipxe, then /ignition, of ten machines at once (configs rendered before): 2 round trips for the ten, one read and one write', async () => {
      const macs = Array.from({ length: 10 }, (_, i) => `52:54:00:32:01:${String(i).padStart(2, '0')}`);
      for (const [i, mac] of macs.entries()) {
        const payload = { apiVersion: API, kind: 'Machine', metadata: { name: `batch-${i}` }, spec: { selectors: { mac: [mac] }, cluster: 'prod', profile: 'ign' } };
        assert.equal((await svc.app.inject({ method: 'POST', url: '/v1/machines', headers: { authorization: `Bearer ${ADMIN}` }, payload })).statusCode, 201);
      }
      log.length = 0;
      const scripts = await Promise.all(macs.map((mac) => svc.app.inject({ url: `/ipxe?mac=${mac}`, headers: { host: HOST } })));
      assert.deepEqual(log, ['WITH terms AS (SELECT', 'WITH answers AS (SELECT']);
      // Each script its own machine's.
      const urls = scripts.map((r, i) => {
        assert.equal(r.statusCode, 200);
        const url = new URL(/ignition\.config\.url=(\S+)/.exec(r.body)![1]!);
        assert.equal(url.searchParams.get('machine'), `batch-${i}`);
        return url;
      });
      const fetch = (u: URL) => svc.app.inject({ url: u.pathname + u.search, headers: { host: HOST, accept: 'application/vnd.coreos.ignition+json;version=3.4.0' } });
      // Rendered once (a URL may be fetched again here: first-fetch-wins is off), so that
      // no answer waits for a render worker and all ten reach the store in one turn.
      for (const u of urls) assert.equal((await fetch(u)).statusCode, 200);
      log.length = 0;
      const answers = await Promise.all(urls.map(fetch));
      assert.deepEqual(
        answers.map((r) => r.statusCode),
        urls.map(() => 200),
      );
      assert.deepEqual(log, ['WITH fetches AS (SELECT', 'WITH answers AS (SELECT']);
      // Each answer audited, each machine now Provisioning.
      for (let i = 0; i < 10; i++) assert.equal((await store.audit(`batch-${i}`)).filter((r) => r.route === '/ignition').length, 2);
      const records = await store.statuses(urls.map((_u, i) => `batch-${i}`));
      assert.deepEqual(
        [...records.values()].map((r) => r.phase),
        urls.map(() => 'Provisioning'),
      );
    });
  });
}
