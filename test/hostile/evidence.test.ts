/**
 * What is kept of a machine does not depend on what an unauthenticated client does, on
 * SQLite and PostgreSQL alike: a flood of `/ipxe` requests with the machine's MAC (anyone
 * on the boot network knows it) neither pushes the audit row of its secret-serving
 * `user-data` fetch out of the per-machine bound (the scripts are bounded apart), nor its
 * phase history out of the transitions (repeated boots are one), nor restarts its report
 * count.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { openPostgresStore } from '../../src/store/postgres.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { testDatabase } from '../support/postgres.js';
import { example } from '../support/requests.js';
import { ADMIN, testService } from '../support/server.js';

const CLUSTER = (example('worker').spec as { cluster: Record<string, unknown> }).cluster;
const BOOT = { kernel: 'http://images.example.com/vmlinuz', initrd: [], args: [] };
const KEEP = 10;

async function admin(app: FastifyInstance, method: 'GET' | 'POST', url: string, body?: unknown) {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, ...(body ? { payload: JSON.stringify(body) } : {}) });
  return { status: res.statusCode, json: res.body ? (JSON.parse(res.body) as Record<string, unknown>) : {} };
}

async function probe(store: Store): Promise<void> {
  const svc = await testService({ publicUrl: 'http://boot.example', servedAuditMaxPerMachine: KEEP, urlSigningKey: 'ab'.repeat(32) }, { store });
  try {
    const api = (m: 'GET' | 'POST', u: string, b?: unknown) => admin(svc.app, m, u, b);
    assert.equal((await api('POST', '/v1/clusters', { apiVersion: 'bootwright.dev/v1alpha1', kind: 'Cluster', metadata: { name: 'prod' }, spec: CLUSTER })).status, 201);
    assert.equal((await api('POST', '/v1/profiles', { apiVersion: 'bootwright.dev/v1alpha1', kind: 'Profile', metadata: { name: 'cc' }, spec: { role: 'worker', kubernetesVersion: 'v1.33.2', boot: BOOT } })).status, 201);
    assert.equal((await api('POST', '/v1/machines', { apiVersion: 'bootwright.dev/v1alpha1', kind: 'Machine', metadata: { name: 'm1' }, spec: { cluster: 'prod', profile: 'cc', selectors: { mac: ['52:54:00:00:0e:01'] } } })).status, 201);
    // The machine boots and fetches its user-data through the signed NoCloud seed.
    const script = (await svc.app.inject({ url: '/ipxe?mac=52-54-00-00-0e-01' })).body;
    const seed = /ds=nocloud(?:-net)?;s=(\S+)/.exec(script)![1]!;
    const fetched = await svc.app.inject({ url: `${new URL(seed).pathname}user-data` });
    assert.equal(fetched.statusCode, 200);
    // Then anyone who knows its MAC asks /ipxe, many times.
    for (let i = 0; i < 5 * KEEP; i++) assert.equal((await svc.app.inject({ url: '/ipxe?mac=52-54-00-00-0e-01' })).statusCode, 200);

    const audit = (await api('GET', '/v1/machines/m1/audit?limit=1000')).json.items as { route: string; status: number }[];
    assert.ok(audit.some((r) => r.route === '/nocloud/user-data' && r.status === 200), `the user-data fetch is still audited: ${audit.map((r) => r.route).join(', ')}`);
    assert.equal(audit.filter((r) => r.route === '/ipxe').length, KEEP, 'the scripts have a bound of their own');
    const status = (await api('GET', '/v1/machines/m1')).json.status as { phase: string; transitions: { phase: string }[] };
    assert.deepEqual(status.transitions.map((t) => t.phase), ['Booting', 'Provisioning', 'Booting'], 'one boot, one fetch, one boot: the flood is one transition');
  } finally {
    await svc.app.close();
  }
}

describe('an /ipxe flood erases no evidence', () => {
  it('SQLite', async () => {
    const store = await openSqliteStore(':memory:');
    try {
      await probe(store);
    } finally {
      await store.close();
    }
  });

  describe('PostgreSQL', async () => {
    const url = await testDatabase('PostgreSQL: an /ipxe flood erases no evidence');
    if (url === undefined) return;
    let store: Store | undefined;
    after(async () => store?.close());
    it('PostgreSQL', async () => {
      store = await openPostgresStore(url);
      await probe(store);
    });
  });
});
