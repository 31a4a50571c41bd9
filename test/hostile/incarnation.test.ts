/**
 * Signed URLs are bound to the machine's incarnation, on SQLite and PostgreSQL alike: a
 * URL handed to a machine serves nothing to the machine stored under the same name after
 * a delete and re-create, or after a move to another cluster (it would carry the new
 * cluster's bootstrap token), and its report URL does not mark the new one `Joined`. An
 * edit that keeps the incarnation (labels) keeps the URL working, and a URL issued by
 * 0.2.0, which had no incarnation, works until it expires (an upgrade strands no boot).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { bootstrapUrl, isIncarnation, machineIncarnation, splitExpiry, verifySignature } from '../../src/boot/sign.js';
import type { Store } from '../../src/store/store.js';
import { onBothStores } from '../support/postgres.js';
import { example } from '../support/requests.js';
import { ADMIN, testService } from '../support/server.js';

const CLUSTER = (example('worker').spec as { cluster: Record<string, unknown> }).cluster;
const BOOT = { kernel: 'http://images.example.com/vmlinuz', initrd: [], args: [] };
const KEY = 'cd'.repeat(32);
const MAC = '52:54:00:00:0f:01';

async function api(app: FastifyInstance, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown) {
  const headers = { authorization: `Bearer ${ADMIN}`, ...(body ? { 'content-type': 'application/json' } : {}) };
  const res = await app.inject({ method, url, headers, ...(body ? { payload: JSON.stringify(body) } : {}) });
  return { status: res.statusCode, json: res.body ? (JSON.parse(res.body) as Record<string, unknown>) : {} };
}

const machine = (cluster: string, profile: string, labels: Record<string, string> = {}) => ({
  apiVersion: 'bootwright.dev/v1alpha1',
  kind: 'Machine',
  metadata: { name: 'm1', labels },
  spec: { cluster, profile, selectors: { mac: [MAC] } },
});

/** The signed URL the machine's /ipxe script hands its OS: a path and query to inject. */
async function bootUrl(app: FastifyInstance): Promise<string> {
  const script = (await app.inject({ url: `/ipxe?mac=${MAC}` })).body;
  const url = /ignition\.config\.url=(\S+)/.exec(script)?.[1] ?? `${/ds=nocloud(?:-net)?;s=(\S+)/.exec(script)![1]!}user-data`;
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
}

/** The latest audit row's status and reason of `route`. */
async function lastAudit(app: FastifyInstance, route: string) {
  const items = (await api(app, 'GET', '/v1/machines/m1/audit?limit=1000')).json.items as { route: string; status: number; reason?: string }[];
  const row = items.find((r) => r.route === route);
  return [row?.status, row?.reason];
}

async function probe(store: Store): Promise<void> {
  const svc = await testService({ publicUrl: 'http://boot.example', urlSigningKey: KEY }, { store });
  const app = svc.app;
  try {
    for (const name of ['prod', 'staging']) assert.equal((await api(app, 'POST', '/v1/clusters', { apiVersion: 'bootwright.dev/v1alpha1', kind: 'Cluster', metadata: { name }, spec: CLUSTER })).status, 201);
    const profile = { role: 'worker', kubernetesVersion: 'v1.33.2', boot: BOOT };
    assert.equal((await api(app, 'POST', '/v1/profiles', { apiVersion: 'bootwright.dev/v1alpha1', kind: 'Profile', metadata: { name: 'ign' }, spec: { ...profile, output: { format: 'ignition' } } })).status, 201);
    assert.equal((await api(app, 'POST', '/v1/profiles', { apiVersion: 'bootwright.dev/v1alpha1', kind: 'Profile', metadata: { name: 'cc' }, spec: profile })).status, 201);

    for (const format of ['ign', 'cc']) {
      const route = format === 'ign' ? '/ignition' : '/nocloud/user-data';
      assert.equal((await api(app, 'POST', '/v1/machines', machine('prod', format))).status, 201);
      // An edit that keeps the incarnation keeps the URL.
      const first = await bootUrl(app);
      assert.equal((await api(app, 'PUT', '/v1/machines/m1', machine('prod', format, { rack: 'r1' }))).status, 200);
      assert.equal((await app.inject({ url: first })).statusCode, 200, `${format}: a label edit keeps the URL`);

      // A move to another cluster is another incarnation.
      const beforeMove = await bootUrl(app);
      assert.equal((await api(app, 'PUT', '/v1/machines/m1', machine('staging', format))).status, 200);
      const moved = await app.inject({ url: beforeMove });
      assert.equal(moved.statusCode, 403, `${format}: the URL of the machine in prod serves nothing once it is in staging`);
      assert.match((JSON.parse(moved.body) as { detail: string }).detail, /earlier incarnation/);
      assert.deepEqual(await lastAudit(app, route), [403, 'incarnation']);

      // So is a delete and re-create under the same name.
      const beforeDelete = await bootUrl(app);
      assert.equal((await app.inject({ url: beforeDelete })).statusCode, 200);
      assert.equal((await api(app, 'DELETE', '/v1/machines/m1')).status, 204);
      await new Promise((r) => setTimeout(r, 5)); // createdAt has millisecond resolution
      assert.equal((await api(app, 'POST', '/v1/machines', machine('staging', format))).status, 201);
      assert.equal((await app.inject({ url: beforeDelete })).statusCode, 403, `${format}: the URL of the deleted machine serves nothing to the new one`);
      assert.equal((await app.inject({ url: await bootUrl(app) })).statusCode, 200, `${format}: the new incarnation boots with its own URL`);
      assert.equal((await api(app, 'DELETE', '/v1/machines/m1')).status, 204);
    }

    // The report URL an earlier incarnation was served does not mark the new one Joined.
    assert.equal((await api(app, 'POST', '/v1/machines', machine('prod', 'cc'))).status, 201);
    const data = (await app.inject({ url: await bootUrl(app) })).body;
    const report = new URL(/'(http:\/\/boot\.example\/report\?[^']+)'/.exec(data)![1]!);
    assert.ok(isIncarnation(report.searchParams.get('inc') ?? ''), 'the report URL names the incarnation');
    assert.equal((await api(app, 'DELETE', '/v1/machines/m1')).status, 204);
    await new Promise((r) => setTimeout(r, 5));
    assert.equal((await api(app, 'POST', '/v1/machines', machine('prod', 'cc'))).status, 201);
    const stale = await app.inject({ method: 'POST', url: `${report.pathname}${report.search}`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ outcome: 'success', exitCode: 0 }) });
    assert.equal(stale.statusCode, 403);
    assert.deepEqual(await lastAudit(app, '/report'), [403, 'incarnation']);
    assert.equal(((await api(app, 'GET', '/v1/machines/m1')).json.status as { phase: string }).phase, 'Registered', 'the never-booted machine is not Joined');

    // A URL 0.2.0 handed out (no incarnation) still serves the machine it was signed for.
    const legacy = new URL(bootstrapUrl('cloud-config', 'http://boot.example', 'm1', Buffer.from(KEY, 'hex'), 3600));
    assert.equal(legacy.pathname.split('/')[3]!.includes('.'), false);
    assert.equal((await app.inject({ url: `${legacy.pathname}user-data` })).statusCode, 200, 'a URL issued before the upgrade boots');
  } finally {
    await app.close();
  }
}

describe('signed URLs are bound to the machine incarnation', () => {
  onBothStores('a delete and re-create or a move voids them; a label edit and an upgrade do not', probe);

  it('the incarnation changes with createdAt and the cluster only, and is signed', () => {
    const m = { createdAt: '2026-12-04T10:00:00.000Z', spec: { cluster: 'prod', profile: 'a' } };
    const inc = machineIncarnation(m);
    assert.ok(isIncarnation(inc));
    const edited = { ...m, spec: { ...m.spec, profile: 'b' } };
    assert.equal(machineIncarnation(edited), inc);
    assert.notEqual(machineIncarnation({ ...m, createdAt: '2026-12-04T10:00:00.001Z' }), inc);
    assert.notEqual(machineIncarnation({ ...m, spec: { ...m.spec, cluster: 'staging' } }), inc);

    const key = Buffer.from(KEY, 'hex');
    for (const client of [undefined, '10.0.2.15']) {
      const url = new URL(bootstrapUrl('cloud-config', 'http://b', 'm1', key, 60, 1000, client, inc));
      const parts = splitExpiry(url.pathname.split('/')[3]!);
      assert.deepEqual(parts, { exp: '1060', incarnation: inc, ...(client ? { client } : {}) });
      const bound = client ? { client, from: client } : undefined;
      const sig = url.pathname.split('/')[4]!;
      assert.equal(verifySignature(key, 'm1', '/nocloud/m1/', parts.exp, sig, 1000, bound, inc), 'ok');
      assert.equal(verifySignature(key, 'm1', '/nocloud/m1/', parts.exp, sig, 1000, bound, machineIncarnation({ ...m, spec: { cluster: 'x' } })), 'invalid', 'another incarnation');
      assert.equal(verifySignature(key, 'm1', '/nocloud/m1/', parts.exp, sig, 1000, bound), 'invalid', 'the incarnation dropped from the URL');
    }
    const ign = new URL(bootstrapUrl('ignition', 'http://b', 'm1', key, 60, 1000, undefined, inc));
    assert.deepEqual([...ign.searchParams.keys()], ['machine', 'inc', 'exp', 'sig']);
    assert.equal(verifySignature(key, 'm1', '/ignition', '1060', ign.searchParams.get('sig')!, 1000, undefined, 'A'.repeat(16)), 'invalid', 'not lowercase hex');
  });
});
