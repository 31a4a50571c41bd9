/**
 * What is kept of a machine does not depend on what an unauthenticated client does, on
 * SQLite and PostgreSQL alike: a flood of `/ipxe` requests with the machine's MAC (anyone
 * on the boot network knows it) neither pushes the audit row of its secret-serving
 * `user-data` fetch out of the per-machine bound (the scripts are bounded apart), nor its
 * phase history out of the transitions (repeated boots are one), nor restarts its report
 * count.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { applyEvent, type StatusEvent } from '../../src/store/status.js';
import type { Store } from '../../src/store/store.js';
import { onBothStores } from '../support/postgres.js';
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
    const script = (await svc.app.inject({ url: '/ipxe?mac=52-54-00-00-0e-01&buildarch=x86_64&platform=efi' })).body;
    const seed = /ds=nocloud(?:-net)?;s=(\S+)/.exec(script)![1]!;
    const fetched = await svc.app.inject({ url: `${new URL(seed).pathname}user-data` });
    assert.equal(fetched.statusCode, 200);
    // It reboots into iPXE (Booting again), then anyone who knows its MAC asks /ipxe, many
    // times, reporting other firmware: the same request again and again is counted in the
    // reboot's own row, which keeps its time.
    const ipxe = (ua?: string) => svc.app.inject({ url: '/ipxe?mac=52-54-00-00-0e-01&buildarch=arm64&platform=pcbios', ...(ua ? { headers: { 'user-agent': ua } } : {}) });
    assert.equal((await svc.app.inject({ url: '/ipxe?mac=52-54-00-00-0e-01&buildarch=x86_64&platform=efi' })).statusCode, 200);
    const reboot = ((await api('GET', '/v1/machines/m1/audit?limit=1')).json.items as { id: number; at: string }[])[0]!;
    for (let i = 0; i < 2 * KEEP; i++) assert.equal((await ipxe()).statusCode, 200);
    const merged = (await api('GET', '/v1/machines/m1/audit?limit=1000')).json.items as { id: number; route: string; at: string; repeats?: number; lastAt?: string }[];
    assert.equal(merged.filter((r) => r.route === '/ipxe').length, 2, 'the first boot and the reboot, each its own row');
    assert.deepEqual([merged[0]!.id, merged[0]!.at, merged[0]!.repeats], [reboot.id, reboot.at, 1 + 2 * KEEP], 'the repeats are counted in the reboot row');
    assert.ok(merged[0]!.lastAt! >= reboot.at);
    // Requests that differ each time add rows, within the scripts' own bound.
    for (let i = 0; i < 5 * KEEP; i++) assert.equal((await ipxe(`flood/${i}`)).statusCode, 200);

    const audit = (await api('GET', '/v1/machines/m1/audit?limit=1000')).json.items as { route: string; status: number }[];
    assert.ok(audit.some((r) => r.route === '/nocloud/user-data' && r.status === 200), `the user-data fetch is still audited: ${audit.map((r) => r.route).join(', ')}`);
    assert.equal(audit.filter((r) => r.route === '/ipxe').length, KEEP, 'the scripts have a bound of their own');
    const status = (await api('GET', '/v1/machines/m1')).json.status as { phase: string; transitions: { phase: string }[]; firmware?: { buildarch?: string; platform?: string } };
    assert.deepEqual(status.transitions.map((t) => t.phase), ['Booting', 'Provisioning', 'Booting'], 'one boot, one fetch, one boot: the flood is one transition');
    assert.deepEqual([status.firmware?.buildarch, status.firmware?.platform], ['x86_64', 'efi'], 'what the firmware that started the boot reported: the flood overwrites none of it');
  } finally {
    await svc.app.close();
  }
}

describe('an /ipxe flood erases no evidence', () => {
  onBothStores('the fetch row and the phase history hold', probe);

  it('a boot does not restart the report count (a signed fetch does), nor repeats a transition while Booting', () => {
    const at = '2026-12-04T00:00:00.000Z';
    const report: StatusEvent = { kind: 'report', report: { outcome: 'success', output: '', exitCode: 0 }, maxReports: 2 };
    const served: StatusEvent = { kind: 'served', served: { revision: 1, sha256: 'a', format: 'cloud-config' } };
    let r = applyEvent(undefined, served, at).record;
    r = applyEvent(r, report, at).record;
    r = applyEvent(r, report, at).record;
    for (let i = 0; i < 5; i++) r = applyEvent(r, { kind: 'booting', firmware: { buildarch: i === 0 ? 'x86_64' : 'arm64' } }, at).record;
    assert.equal(applyEvent(r, { kind: 'booting' }, at).accepted, false, 'a boot while Booting has nothing to write');
    assert.equal(r.firmware?.buildarch, 'x86_64', 'the firmware of the /ipxe that started the boot');
    assert.equal(applyEvent(r, report, at).accepted, false, 'two reports since the fetch: the third is refused, however many boots came between');
    assert.deepEqual(r.transitions.map((t) => t.phase), ['Provisioning', 'Joined', 'Joined', 'Booting']);
    const fetched = applyEvent(r, served, at).record;
    assert.equal(applyEvent(fetched, report, at).accepted, true, 'a new fetch restarts the count');
  });
});
