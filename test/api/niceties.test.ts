/**
 * The inventory niceties of issue 14 over real HTTP: `Accept: application/yaml` on the
 * resource routes (read back by js-yaml, q-values honoured, problems still JSON), YAML
 * request bodies, set-based label selectors (kubectl's grammar), dismissing a
 * discovered machine, and a discovered entry marked enrolled once a machine matches it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { dump, load } from 'js-yaml';
import request from 'supertest';
import { prefersYaml } from '../../src/api/yaml-response.js';
import { assertProblem, clusterSpec, doc, inventory, type Inventory, machineSpec, workerProfileSpec } from '../support/inventory.js';
import { ADMIN, READER, testService } from '../support/server.js';
import { PACKAGE_VERSION } from '../../src/version.js';

let inv: Inventory;
before(async () => {
  inv = await inventory();
  assert.equal((await inv.send('post', '/v1/clusters', doc('Cluster', 'prod', clusterSpec()))).status, 201);
  assert.equal((await inv.send('post', '/v1/profiles', doc('Profile', 'worker', workerProfileSpec()))).status, 201);
});
after(() => inv.close());

const http = () => request(inv.svc.app.server);
const labelled = (name: string, labels: Record<string, string>) => ({ ...doc('Profile', name, workerProfileSpec()), metadata: { name, labels } });

describe('Accept: application/yaml', () => {
  it('prefersYaml follows the q-values: YAML only when it ranks above JSON', () => {
    assert.equal(prefersYaml('application/yaml'), true);
    assert.equal(prefersYaml('text/yaml'), true);
    assert.equal(prefersYaml('application/x-yaml, application/json;q=0.5'), true);
    assert.equal(prefersYaml('application/json, application/yaml'), false, 'a tie is JSON');
    assert.equal(prefersYaml('application/yaml;q=0.2, */*'), false, '*/* gives JSON q=1');
    assert.equal(prefersYaml('application/json;q=0.1, */*'), true, 'the exact range gives JSON 0.1; YAML gets 1 from */*');
    assert.equal(prefersYaml('*/*'), false);
    assert.equal(prefersYaml(undefined), false);
  });

  it('GET one and GET a list answer YAML that reads back to the JSON document, with Vary: Accept', async () => {
    const json = await inv.get('/v1/clusters/prod');
    const yaml = await inv.get('/v1/clusters/prod', { accept: 'application/yaml' });
    assert.equal(yaml.status, 200);
    assert.equal(yaml.headers['content-type'], 'application/yaml; charset=utf-8');
    assert.equal(yaml.headers.vary, 'Accept');
    assert.equal(yaml.headers.etag, json.headers.etag);
    assert.ok(yaml.text.startsWith('apiVersion: bootwright.dev/v1alpha1\nkind: Cluster\n'), yaml.text);
    assert.deepEqual(load(yaml.text), json.body);
    const list = await inv.get('/v1/profiles', { accept: 'application/yaml' });
    assert.equal(list.headers['content-type'], 'application/yaml; charset=utf-8');
    assert.deepEqual(load(list.text), (await inv.get('/v1/profiles')).body);
    const revisions = await inv.get('/v1/profiles/worker/revisions', { accept: 'text/yaml' });
    assert.equal((load(revisions.text) as { kind: string }).kind, 'ProfileRevisionList');
  });

  it('a problem stays application/problem+json under Accept: application/yaml', async () => {
    const res = await inv.get('/v1/clusters/nope', { accept: 'application/yaml' });
    assertProblem(res, 404, []);
  });

  it('a YAML body creates and replaces; the answer is YAML when asked for', async () => {
    const body = dump(labelled('yaml-made', { env: 'prod' }));
    const created = await http().post('/v1/profiles').set('authorization', `Bearer ${ADMIN}`).set('content-type', 'application/yaml').set('accept', 'application/yaml').send(body);
    assert.equal(created.status, 201, created.text);
    assert.equal(created.headers['content-type'], 'application/yaml; charset=utf-8');
    const read = load(created.text) as { metadata: { name: string; revision: number; labels: Record<string, string> } };
    assert.equal(read.metadata.name, 'yaml-made');
    assert.deepEqual(read.metadata.labels, { env: 'prod' });
    const replaced = await http()
      .put('/v1/profiles/yaml-made')
      .set('authorization', `Bearer ${ADMIN}`)
      .set('content-type', 'application/yaml')
      .set('if-match', '"1"')
      .send(dump(labelled('yaml-made', { env: 'dev' })));
    assert.equal(replaced.status, 200, replaced.text);
    assert.equal(replaced.body.metadata.revision, 2);
    await http().delete('/v1/profiles/yaml-made').set('authorization', `Bearer ${ADMIN}`);
  });
});

describe('set-based label selectors', () => {
  before(async () => {
    const labels: Record<string, Record<string, string>> = {
      's-a': { env: 'prod', tier: 'front' },
      's-b': { env: 'prod', tier: 'back' },
      's-c': { env: 'dev', tier: 'front' },
      's-d': { env: 'staging' },
      's-e': { team: 'x' },
    };
    for (const [name, l] of Object.entries(labels)) assert.equal((await inv.send('post', '/v1/profiles', labelled(name, l))).status, 201);
  });
  const names = async (selector: string) => {
    const res = await inv.get(`/v1/profiles?labelSelector=${encodeURIComponent(selector)}`, {}, READER);
    assert.equal(res.status, 200, res.text);
    return (res.body.items as { metadata: { name: string } }[]).map((i) => i.metadata.name).filter((n) => n.startsWith('s-'));
  };

  it('!=, in, notin, exists and !key, as kubectl reads them', async () => {
    assert.deepEqual(await names('env!=prod'), ['s-c', 's-d', 's-e'], '!= also selects resources without the label');
    assert.deepEqual(await names('env in (prod, staging)'), ['s-a', 's-b', 's-d']);
    assert.deepEqual(await names('env notin (prod,staging)'), ['s-c', 's-e']);
    assert.deepEqual(await names('tier'), ['s-a', 's-b', 's-c']);
    assert.deepEqual(await names('!tier'), ['s-d', 's-e']);
    assert.deepEqual(await names('env=prod,tier in (front)'), ['s-a']);
    assert.deepEqual(await names('env,!tier'), ['s-d']);
    assert.deepEqual(await names('tier notin (front),env'), ['s-b', 's-d']);
  });

  it('a malformed selector is a 400 naming labelSelector and what is wrong', async () => {
    const bad = async (selector: string, message: RegExp) => assertProblem(await inv.get(`/v1/profiles?labelSelector=${encodeURIComponent(selector)}`), 400, ['labelSelector'], { labelSelector: message });
    await bad('env in ()', /set of "env" in is empty/);
    await bad('env in (a', /"\(" without its "\)"/);
    await bad('env)', /"\)" without its "\("/);
    await bad('replicas>3', /gt and lt operators are not supported/);
    await bad('-bad=x', /not a label key/);
    await bad('env=-x', /not a label value/);
    await bad('env in (a b)', /not a label value/);
  });

  it('the term cap counts every value of a set: 32 pass, 33 are a 400 naming the limit', async () => {
    const values = (n: number) => Array.from({ length: n }, (_, i) => `v${i}`).join(',');
    assert.equal((await inv.get(`/v1/profiles?labelSelector=${encodeURIComponent(`env in (${values(32)})`)}`)).status, 200);
    const over = await inv.get(`/v1/profiles?labelSelector=${encodeURIComponent(`env in (${values(33)})`)}`);
    assertProblem(over, 400, ['labelSelector'], { labelSelector: /^has 33 terms; the limit is 32 \(BOOTWRIGHT_MAX_LABEL_SELECTOR_TERMS\)$/ });
  });
});

describe('discovered machines: enrolled, dismissed', () => {
  const boot = (query: string) => http().get(`/ipxe?${query}`);
  const discovered = async (query = '') => (await inv.get(`/v1/discovered${query}`, {}, READER)).body.items as { id: string; mac?: string; hostname?: string; enrolled?: string }[];

  it('a machine matching an entry marks it enrolled: gone from the default list, listed with ?enrolled=true naming it', async () => {
    await boot('mac=52:54:00:0e:00:01&hostname=rack1-n1');
    await boot('mac=52:54:00:0e:00:02');
    const before = await discovered();
    const entry = before.find((d) => d.mac === '52:54:00:0e:00:01')!;
    assert.match(entry.id, /^\d+$/);
    assert.equal(entry.enrolled, undefined);
    const one = await inv.get(`/v1/discovered/${entry.id}`, { accept: 'application/yaml' }, READER);
    assert.equal(one.status, 200);
    assert.deepEqual(load(one.text), entry);

    // Another machine with this MAC but a conflicting host name does not match it.
    assert.equal((await inv.send('post', '/v1/machines', doc('Machine', 'other', machineSpec('52:54:00:0e:00:01', { selectors: { mac: ['52:54:00:0e:00:01'], hostname: 'elsewhere' } })))).status, 201);
    assert.equal((await discovered()).find((d) => d.id === entry.id)?.enrolled, undefined);
    assert.equal((await http().delete('/v1/machines/other').set('authorization', `Bearer ${ADMIN}`)).status, 204);

    assert.equal((await inv.send('post', '/v1/machines', doc('Machine', 'n1', machineSpec('52-54-00-0E-00-01')))).status, 201);
    assert.equal((await discovered()).some((d) => d.id === entry.id), false);
    const all = await discovered('?enrolled=true');
    assert.equal(all.find((d) => d.id === entry.id)?.enrolled, 'n1');
    assert.ok(all.some((d) => d.mac === '52:54:00:0e:00:02' && d.enrolled === undefined));
  });

  it('DELETE /v1/discovered/{id} dismisses an entry (write scope); 404 for an unknown id; 400 for one that is not a number', async () => {
    await boot('mac=52:54:00:0e:00:03');
    const entry = (await discovered()).find((d) => d.mac === '52:54:00:0e:00:03')!;
    assert.equal((await http().delete(`/v1/discovered/${entry.id}`).set('authorization', `Bearer ${READER}`)).status, 403);
    assert.equal((await http().delete(`/v1/discovered/${entry.id}`).set('authorization', `Bearer ${ADMIN}`)).status, 204);
    assert.equal((await discovered('?enrolled=true')).some((d) => d.id === entry.id), false);
    assertProblem(await http().delete(`/v1/discovered/${entry.id}`).set('authorization', `Bearer ${ADMIN}`), 404, []);
    assertProblem(await http().delete('/v1/discovered/abc').set('authorization', `Bearer ${ADMIN}`), 400, ['params.id']);
    // Seen again, it is a new entry with a new id.
    await boot('mac=52:54:00:0e:00:03');
    const again = (await discovered()).find((d) => d.mac === '52:54:00:0e:00:03')!;
    assert.ok(Number(again.id) > Number(entry.id));
  });
});

describe('/docs and /openapi.json', () => {
  it("name this service in servers (the request's address, or BOOTWRIGHT_PUBLIC_URL), the package's version and bootwright's name", async () => {
    const doc = (await inv.get('/openapi.json', { host: 'bw.example.test:8443' }, '')).body as { info: { title: string; version: string }; servers: { url: string }[] };
    assert.equal(doc.info.title, 'bootwright');
    assert.equal(doc.info.version, PACKAGE_VERSION);
    assert.deepEqual(doc.servers.map((s) => s.url), ['http://bw.example.test:8443']);
    const ui = await inv.get('/docs/json', { host: 'other.example.test' }, '');
    assert.deepEqual((ui.body as { servers: { url: string }[] }).servers.map((s) => s.url), ['http://other.example.test']);
    const page = await inv.get('/docs/', {}, '');
    assert.match(page.text, /<title>bootwright API<\/title>/);
    const pub = await testService({ publicUrl: 'https://boot.example.test' });
    try {
      const res = await pub.app.inject({ url: '/openapi.json' });
      assert.deepEqual(res.json<{ servers: { url: string }[] }>().servers.map((s) => s.url), ['https://boot.example.test']);
    } finally {
      await pub.app.close();
    }
  });

  it('carry the example files as request and response examples, the responses as the service answers them', async () => {
    type Op = { requestBody?: { content: Record<string, { example?: unknown }> }; responses: Record<string, { content?: Record<string, { example?: unknown }> }> };
    const doc = (await inv.get('/openapi.json', {}, '')).body as { paths: Record<string, Record<string, Op>> };
    const create = doc.paths['/v1/machines']!.post!;
    assert.deepEqual(create.requestBody!.content['application/json']!.example, load(readFileSync(new URL('../../examples/inventory/flatcar/machine.yaml', import.meta.url), 'utf8')));
    const created = create.responses['201']!.content!['application/json']!.example as { metadata: { revision: number }; spec: { selectors: { mac: string[] } }; status: unknown };
    assert.equal(created.metadata.revision, 1);
    assert.deepEqual(created.status, { clusterRevision: 1, profileRevision: 1 });
    // What the service stores and answers for the same file, defaults applied.
    const cluster = (doc.paths['/v1/clusters/{name}']!.get!.responses['200']!.content!['application/json']!.example as { spec: { bootstrapToken: string } });
    assert.equal(cluster.spec.bootstrapToken, '<redacted>');
    const render = doc.paths['/v1/render']!.post!.requestBody!.content['application/yaml']!.example as { kind: string };
    assert.equal(render.kind, 'NodeBootstrap');
    assert.ok((doc.paths['/v1/discovered']!.get!.responses['200']!.content!['application/json']!.example as { items: unknown[] }).items.length > 0);
  });
});
