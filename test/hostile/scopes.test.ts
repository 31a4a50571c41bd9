/**
 * Scopes that mean what they say (issue 11 B): the scope matrix in README.md (route ×
 * scope → status) is read and every cell asserted against the real service; every
 * route the service has is in the table; no `read` answer carries a secret; and a
 * `write`-only token cannot reach a cluster's secrets by writing a machine and fetching
 * its signed firmware URL, by any route.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import request from 'supertest';
import { IGNITION_PATH, nocloudPrefix, reportUrl, signedUrl } from '../../src/boot/sign.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite.js';
import { example, worker } from '../support/requests.js';
import { ADMIN, READER, RENDERER, testService, type TestService, WRITER } from '../support/server.js';

const API = 'bootwright.dev/v1alpha1';
const KEY = Buffer.alloc(32, 9);
const BASE = 'http://boot.example';
const CLUSTER = (example('init').spec as { cluster: Record<string, unknown> & { bootstrapToken: string; certificateKey: string } }).cluster;
const BOOT = { kernel: 'http://images.example.com/vmlinuz', initrd: [], args: [] };
const PROFILE = { role: 'worker', kubernetesVersion: 'v1.33.2', output: { format: 'ignition' }, boot: BOOT };
const WRITE_RENDER = 'write-render-token-0123456789abcdef';

const SCOPES = ['none', 'read', 'render', 'write', 'admin'] as const;
type ScopeColumn = (typeof SCOPES)[number];
const TOKEN: Record<ScopeColumn, string | undefined> = { none: undefined, read: READER, render: RENDERER, write: WRITER, admin: ADMIN };

/** The scope matrix rows of README.md: route (as written) → status per scope column. */
function readmeMatrix(): Map<string, Record<ScopeColumn, number>> {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const rows = new Map<string, Record<ScopeColumn, number>>();
  for (const line of readme.split('\n')) {
    const m = /^\| `([A-Z]+ [^`]+)`(?: \(signed\))? \| (\d{3}) \| (\d{3}) \| (\d{3}) \| (\d{3}) \| (\d{3}) \|$/.exec(line);
    if (!m) continue;
    rows.set(m[1]!, Object.fromEntries(SCOPES.map((s, i) => [s, Number(m[i + 2])])) as Record<ScopeColumn, number>);
  }
  return rows;
}

const doc = (kind: string, name: string, spec: unknown) => JSON.stringify({ apiVersion: API, kind, metadata: { name }, spec });
const macOf = (n: number) => `52:54:00:77:00:${n.toString(16).padStart(2, '0')}`;
const relative = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};

/** Every secret value of the cluster fixture that must never reach a read-scope answer. */
const SECRETS = [CLUSTER.bootstrapToken, CLUSTER.certificateKey, 'PRIVATE KEY'];

let store: SqliteStore;
let svc: TestService;
const http = () => request(svc.app.server);

before(async () => {
  store = await openSqliteStore(':memory:');
  svc = await testService(
    {
      urlSigningKey: KEY.toString('hex'),
      publicUrl: BASE,
      // Each token presents the same signed URLs: first fetch wins is off (test/api/binding.test.ts tests it).
      firstFetchWins: false,
      tokens: [
        { name: 'admin', token: ADMIN, scopes: ['admin'] },
        { name: 'renderer', token: RENDERER, scopes: ['render'] },
        { name: 'reader', token: READER, scopes: ['read'] },
        { name: 'writer', token: WRITER, scopes: ['write'] },
        { name: 'operator', token: WRITE_RENDER, scopes: ['write', 'render'] },
      ],
    },
    { store },
  );
  await store.create('Cluster', { name: 'prod', spec: CLUSTER as never });
  await store.create('Profile', { name: 'ign', spec: PROFILE as never });
  await store.create('Profile', { name: 'cc', spec: { ...PROFILE, output: {} } as never });
  await store.create('Machine', { name: 'm1', spec: { selectors: { mac: [macOf(1)], labels: {} }, cluster: 'prod', profile: 'ign', nodeLabels: {}, taints: [] } });
  await store.create('Machine', { name: 'c1', spec: { selectors: { mac: [macOf(2)], labels: {} }, cluster: 'prod', profile: 'cc', nodeLabels: {}, taints: [] } });
});
after(async () => {
  await svc.app.close();
  await store.close();
});

let serial = 10;
/** A valid request for a route, as `scope` (fresh names where a success would change state). */
async function cell(route: string, scope: ScopeColumn): Promise<request.Response> {
  const n = serial++;
  const [method, target] = route.split(' ') as [string, string];
  const kind = /^\/v1\/(clusters|profiles|machines)/.exec(target)?.[1];
  const Kind = kind === 'clusters' ? 'Cluster' : kind === 'profiles' ? 'Profile' : 'Machine';
  const specOf = () => (Kind === 'Cluster' ? CLUSTER : Kind === 'Profile' ? PROFILE : { selectors: { mac: [macOf(n)] }, cluster: 'prod', profile: 'ign' });
  const existing = Kind === 'Cluster' ? 'prod' : Kind === 'Profile' ? 'ign' : 'm1';
  let r: request.Test;
  if (target === '/v1/discovered/{id}') {
    // A fresh unknown machine asks /ipxe, which records it under /v1/discovered.
    const mac = `52:54:00:78:${(n >> 8).toString(16).padStart(2, '0')}:${(n & 255).toString(16).padStart(2, '0')}`;
    await http().get(`/ipxe?mac=${mac}`);
    const entry = (await store.listDiscovered()).find((d) => d.mac === mac);
    assert.ok(entry, `the unknown machine ${mac} was not recorded`);
    r = method === 'DELETE' ? http().delete(`/v1/discovered/${entry.id}`) : http().get(`/v1/discovered/${entry.id}`);
  } else if (method === 'POST' && target === '/report') {
    r = http().post(relative(reportUrl(BASE, 'm1', KEY, Math.floor(Date.now() / 1000) + 3600))).set('content-type', 'application/x-www-form-urlencoded').send('outcome=success&exitCode=0');
  } else if (method === 'POST' && target === '/v1/render') r = http().post(target).set('content-type', 'application/json').send(JSON.stringify(worker()));
  else if (method === 'POST') r = http().post(target).set('content-type', 'application/json').send(doc(Kind, `new-${n}`, specOf()));
  else if (method === 'PUT') r = http().put(target.replace('{name}', existing)).set('content-type', 'application/json').send(doc(Kind, existing, specOf()));
  else if (method === 'DELETE' && target.endsWith('/fetches')) r = http().delete(target.replace('{name}', 'm1'));
  else if (method === 'DELETE') {
    const victim = `gone-${n}`;
    const spec = Kind === 'Machine' ? { selectors: { mac: [macOf(n)], labels: {} }, cluster: 'prod', profile: 'ign', nodeLabels: {}, taints: [] } : specOf();
    await store.create(Kind as 'Cluster', { name: victim, spec: spec as never });
    r = http().delete(target.replace('{name}', victim));
  } else if (target === '/ipxe') r = http().get(`/ipxe?mac=${macOf(1)}`);
  else if (target === '/ignition') r = http().get(relative(signedUrl(BASE, IGNITION_PATH, 'm1', KEY, 3600))).set('accept', 'application/vnd.coreos.ignition+json;version=3.4.0');
  else if (target.startsWith('/nocloud/')) r = http().get(`${relative(signedUrl(BASE, nocloudPrefix('c1'), 'c1', KEY, 3600))}user-data`);
  else r = http().get(target.replace('{name}', existing));
  const token = TOKEN[scope];
  if (token !== undefined) r.set('authorization', `Bearer ${token}`);
  return r;
}

describe('the scope matrix (README.md)', () => {
  const matrix = readmeMatrix();

  it('lists every route the service has, and nothing else', () => {
    const openapi = JSON.parse(readFileSync(new URL('../../openapi/openapi.json', import.meta.url), 'utf8')) as { paths: Record<string, Record<string, unknown>> };
    const routes = new Set(Object.entries(openapi.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)));
    routes.add('GET /openapi.json');
    const documented = new Set([...matrix.keys()].map((r) => r.replace(/\?.*$/, '')));
    assert.deepEqual([...documented].sort(), [...routes].sort());
  });

  for (const [route, expected] of readmeMatrix()) {
    it(route, async () => {
      for (const scope of SCOPES) {
        const res = await cell(route, scope);
        assert.equal(res.status, expected[scope], `${route} as ${scope}: ${res.status} ${res.text.slice(0, 300)}`);
        if (res.status === 401 || res.status === 403) {
          assert.match(res.headers['content-type'] ?? '', /^application\/problem\+json/);
          if (res.status === 403 && TOKEN[scope] !== undefined) assert.match(res.body.detail, /^the token lacks the "(read|render|write)"/);
        }
        // The firmware routes take no token: their answers are the signed URL's, not a scope's.
        if (scope === 'read' && res.status === 200 && route.includes(' /v1/')) for (const secret of SECRETS) assert.ok(!res.text.includes(secret), `${route} as read carries a secret`);
      }
    });
  }
});

describe('write alone never obtains a secret', () => {
  it('a write-only machine create or replace is a 403 naming render and why; write and render together may', async () => {
    const create = await http().post('/v1/machines').set('authorization', `Bearer ${WRITER}`).set('content-type', 'application/json').send(doc('Machine', 'evil', { selectors: { mac: ['52:54:00:66:66:66'] }, cluster: 'prod', profile: 'ign' }));
    assert.equal(create.status, 403, create.text);
    assert.equal(create.body.detail, 'the token lacks the "render" scope: a machine\'s signed firmware URLs serve its cluster\'s secrets to whoever presents its selectors, so writing one needs the render scope that may obtain them');
    // Moving an existing machine's selectors to an identity the writer controls is the same route.
    const replace = await http().put('/v1/machines/m1').set('authorization', `Bearer ${WRITER}`).set('content-type', 'application/json').send(doc('Machine', 'm1', { selectors: { mac: ['52:54:00:66:66:66'] }, cluster: 'prod', profile: 'ign' }));
    assert.equal(replace.status, 403, replace.text);
    // Neither left a machine the attacker's identity matches: /ipxe has no signed URL for it.
    const script = await http().get('/ipxe?mac=52-54-00-66-66-66');
    assert.equal(script.status, 200);
    assert.doesNotMatch(script.text, /ignition\.config\.url=|ds=nocloud/);
    assert.match(script.text, /52:54:00:66:66:66/);

    const operator = await http().post('/v1/machines').set('authorization', `Bearer ${WRITE_RENDER}`).set('content-type', 'application/json').send(doc('Machine', 'legit', { selectors: { mac: ['52:54:00:66:66:67'] }, cluster: 'prod', profile: 'ign' }));
    assert.equal(operator.status, 201, operator.text);
  });

  it('nothing a write-only token can read back carries a secret (writes answer redacted documents)', async () => {
    const put = await http().put('/v1/clusters/prod').set('authorization', `Bearer ${WRITER}`).set('content-type', 'application/json').send(doc('Cluster', 'prod', { ...CLUSTER, bootstrapToken: '<redacted>', certificateKey: '<redacted>' }));
    assert.equal(put.status, 200, put.text);
    for (const secret of SECRETS) assert.ok(!put.text.includes(secret), 'a write answer carries a secret');
    for (const path of ['/v1/machines/m1/bootstrap', '/v1/machines/m1/bootstrap?pointer=true', '/v1/clusters/prod', '/v1/machines/m1/audit']) {
      const res = await http().get(path).set('authorization', `Bearer ${WRITER}`);
      assert.equal(res.status, 403, path);
    }
  });
});
