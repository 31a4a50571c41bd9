/**
 * Per-machine bootstrap tokens (src/boot/tokens.ts) on a real kube-apiserver (the
 * reference build, `--enable-bootstrap-token-auth`): a join machine's fetch mints a token
 * whose Secret the API server authenticates (`system:bootstrap:<id>`, kubeadm's group),
 * a refetch serves the same token, the sweep extends it while the machine provisions,
 * a success report deletes it, an expiration in the past is refused by the API server
 * itself, and an unreachable workload cluster is a 503 with Retry-After.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { Agent, fetch as undiciFetch } from 'undici';
import { MintedTokens } from '../../src/boot/tokens.js';
import { WorkloadClusters } from '../../src/kube/workload.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { machineParts } from '../../src/api/routes/bootstrap.js';
import { type ControlPlane, freePort, startControlPlane } from '../support/controlplane.js';
import { cloudConfigFiles, ignitionFiles } from '../support/decode.js';
import { example } from '../support/requests.js';
import { ADMIN, testService, type TestService } from '../support/server.js';
import { referenceToolMissing } from '../support/tools.js';

const skip = referenceToolMissing('kube-apiserver', 'per-machine bootstrap tokens are not checked on a real API server') || referenceToolMissing('etcd', 'per-machine bootstrap tokens are not checked on a real API server');
const API = 'bootwright.dev/v1alpha1';
const IGN = 'application/vnd.coreos.ignition+json;version=3.4.0';
const HOST = 'boot.example.test';
const TTL_MS = 10 * 60_000;
const TOKEN = /\b([a-z0-9]{6})\.([a-z0-9]{16})\b/;

/** A published worker request's cluster, without its static token: only minted ones exist. */
function clusterSpec(extra: Record<string, unknown>): Record<string, unknown> {
  const { bootstrapToken: _static, ...cluster } = (example('worker').spec as { cluster: Record<string, unknown> }).cluster;
  return { ...cluster, ...extra };
}

describe('per-machine bootstrap tokens on a real API server', { skip, timeout: 240_000 }, () => {
  let cp: ControlPlane;
  let svc: TestService;
  let store: Store;
  let dir: string;
  let agent: Agent;
  let minted: MintedTokens;
  /** What `before` started, stopped in reverse order (whatever point it reached). */
  const cleanups: (() => Promise<unknown>)[] = [];

  const api = async (method: string, url: string, body?: unknown) => {
    const res = await svc.app.inject({ method: method as 'GET', url, headers: { authorization: `Bearer ${ADMIN}`, host: HOST }, ...(body ? { payload: body as Record<string, unknown> } : {}) });
    return { status: res.statusCode, json: res.body.startsWith('{') ? res.json<Record<string, unknown>>() : {}, text: res.body };
  };
  const create = async (kind: string, collection: string, name: string, spec: unknown) => {
    const res = await api('POST', `/v1/${collection}`, { apiVersion: API, kind, metadata: { name }, spec });
    assert.equal(res.status, 201, res.text);
  };
  /** The token Secret as the API server holds it, or undefined (404). */
  const secret = async (id: string) => {
    const res = await cp.request('GET', `/api/v1/namespaces/kube-system/secrets/bootstrap-token-${id}`);
    if (res.status === 404) return undefined;
    assert.equal(res.status, 200);
    const s = res.body as { type: string; data: Record<string, string> };
    return { type: s.type, data: Object.fromEntries(Object.entries(s.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')])) };
  };
  /** Who the API server says the bearer of `token` is (SelfSubjectReview), or the HTTP status when it is refused. */
  const whoAmI = async (token: string): Promise<{ username: string; groups: string[] } | number> => {
    const res = await undiciFetch(`${cp.url}/apis/authentication.k8s.io/v1/selfsubjectreviews`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }),
      dispatcher: agent,
    });
    if (res.status !== 201) return res.status;
    return ((await res.json()) as { status: { userInfo: { username: string; groups: string[] } } }).status.userInfo;
  };
  /** Boot a machine as iPXE then Ignition or cloud-init would: the served config's text. */
  const boot = async (mac: string, format: 'ignition' | 'cloud-config') => {
    const script = (await svc.app.inject({ url: `/ipxe?mac=${mac}`, headers: { host: HOST } })).body;
    const url = new URL(format === 'ignition' ? /ignition\.config\.url=(\S+)/.exec(script)![1]! : `${/ds=nocloud(?:-net)?;s=(\S+)/.exec(script)![1]!}user-data`);
    const res = await svc.app.inject({ url: url.pathname + url.search, headers: { host: HOST, ...(format === 'ignition' ? { accept: IGN } : {}) } });
    return res;
  };
  /** The join token and report URL in a served config. */
  const servedToken = (body: string, format: 'ignition' | 'cloud-config') => {
    const files = format === 'ignition' ? ignitionFiles(JSON.parse(body)) : cloudConfigFiles(body);
    const text = [...files.values()].map((b) => b.toString('utf8')).join('\n');
    const m = TOKEN.exec(text);
    assert.ok(m, 'the config carries a join token');
    const report = /https?:\/\/[^\s"']+\/report\?[^\s"']+/.exec(text)?.[0];
    return { token: m[0], id: m[1]!, report };
  };

  before(async () => {
    cp = await startControlPlane();
    cleanups.push(() => cp.stop());
    agent = new Agent({ connect: { ca: cp.serverCa } });
    cleanups.push(() => agent.close());
    dir = mkdtempSync(path.join(tmpdir(), 'bootwright-tokens-'));
    cleanups.push(() => {
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    });
    writeFileSync(path.join(dir, 'workload.kubeconfig'), cp.kubeconfig);
    // A kubeconfig whose server listens nowhere: the workload cluster is unreachable.
    writeFileSync(path.join(dir, 'down.kubeconfig'), cp.kubeconfig.replace(cp.url, `https://127.0.0.1:${await freePort()}`));
    store = await openSqliteStore(':memory:');
    cleanups.push(() => store.close());
    // Boots follow each other within a second (the same signed URL): replay is another test's.
    svc = await testService({ workloadKubeconfigDir: dir, publicUrl: `http://${HOST}`, allowedHosts: [], firstFetchWins: false }, { store });
    cleanups.push(() => svc.app.close());
    minted = new MintedTokens(store, new WorkloadClusters({ workloadKubeconfigDir: dir }), pino({ level: 'silent' }), { inc: () => undefined });
    await create('Cluster', 'clusters', 'prod', clusterSpec({ workloadKubeconfig: { file: 'workload.kubeconfig' }, bootstrapTokenTTL: '10m' }));
    await create('Cluster', 'clusters', 'down', clusterSpec({ name: 'down', workloadKubeconfig: { file: 'down.kubeconfig' } }));
    const boot = { kernel: 'http://images.example.com/vmlinuz', initrd: ['http://images.example.com/initrd.img'], args: ['console=ttyS0'] };
    await create('Profile', 'profiles', 'ign', { role: 'worker', kubernetesVersion: 'v1.33.2', output: { format: 'ignition' }, boot });
    await create('Profile', 'profiles', 'cc', { role: 'worker', kubernetesVersion: 'v1.33.2', boot });
    await create('Machine', 'machines', 'node-ign', { selectors: { mac: ['52:54:00:31:00:01'] }, cluster: 'prod', profile: 'ign' });
    await create('Machine', 'machines', 'node-cc', { selectors: { mac: ['52:54:00:31:00:02'] }, cluster: 'prod', profile: 'cc' });
    await create('Machine', 'machines', 'node-down', { selectors: { mac: ['52:54:00:31:00:03'] }, cluster: 'down', profile: 'ign' });
  });
  after(async () => {
    for (const undo of cleanups.reverse()) await undo();
  });

  it('a cluster naming a kubeconfig the service cannot read is refused when written', async () => {
    const res = await api('POST', '/v1/clusters', { apiVersion: API, kind: 'Cluster', metadata: { name: 'nofile' }, spec: clusterSpec({ name: 'nofile', workloadKubeconfig: { file: 'missing.kubeconfig' } }) });
    assert.equal(res.status, 422, res.text);
    const errors = res.json.errors as { path: string; message: string }[];
    assert.equal(errors[0]!.path, 'spec.workloadKubeconfig.file');
    assert.doesNotMatch(JSON.stringify(res.json), new RegExp(dir.replaceAll('/', '\\/')), 'the directory is not told');
    const bad = await api('POST', '/v1/clusters', { apiVersion: API, kind: 'Cluster', metadata: { name: 'slash' }, spec: clusterSpec({ name: 'slash', workloadKubeconfig: { file: '../etc/passwd' } }) });
    assert.equal(bad.status, 422);
    assert.match(bad.text, /spec\.workloadKubeconfig/);
    const ref = await api('POST', '/v1/clusters', { apiVersion: API, kind: 'Cluster', metadata: { name: 'ref' }, spec: clusterSpec({ name: 'ref', workloadKubeconfig: { secretRef: { namespace: 'default', name: 'ref-kubeconfig' } } }) });
    assert.equal(ref.status, 422, 'no BOOTWRIGHT_MANAGEMENT_KUBECONFIG, not in a pod');
    assert.equal((ref.json.errors as { path: string }[])[0]!.path, 'spec.workloadKubeconfig.secretRef');
  });

  it("a Cluster naming its kubeconfig Secret in the management cluster (Cluster API's <cluster>-kubeconfig) mints through it", async () => {
    // The management cluster is this API server too; its Secret holds the workload cluster's kubeconfig.
    const created = await cp.request('POST', '/api/v1/namespaces/default/secrets', {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'capi-kubeconfig', labels: { 'cluster.x-k8s.io/cluster-name': 'capi' } },
      type: 'cluster.x-k8s.io/secret',
      data: { value: Buffer.from(cp.kubeconfig).toString('base64') },
    });
    assert.equal(created.status, 201);
    const managedStore = await openSqliteStore(':memory:');
    const managed = await testService({ managementKubeconfig: path.join(dir, 'workload.kubeconfig'), publicUrl: `http://${HOST}`, allowedHosts: [], firstFetchWins: false }, { store: managedStore });
    try {
      const write = async (kind: string, collection: string, name: string, spec: unknown) => {
        const res = await managed.app.inject({ method: 'POST', url: `/v1/${collection}`, headers: { authorization: `Bearer ${ADMIN}`, host: HOST }, payload: { apiVersion: API, kind, metadata: { name }, spec } });
        assert.equal(res.statusCode, 201, res.body);
      };
      await write('Cluster', 'clusters', 'capi', clusterSpec({ name: 'capi', workloadKubeconfig: { secretRef: { namespace: 'default', name: 'capi-kubeconfig' } } }));
      await write('Profile', 'profiles', 'ign', { role: 'worker', kubernetesVersion: 'v1.33.2', output: { format: 'ignition' }, boot: { kernel: 'http://images.example.com/vmlinuz' } });
      await write('Machine', 'machines', 'node-capi', { selectors: { mac: ['52:54:00:31:00:09'] }, cluster: 'capi', profile: 'ign' });
      // A Secret not there yet is stored (Cluster API writes <cluster>-kubeconfig once the
      // control plane is up); a join machine's fetch waits for it: 503 with Retry-After.
      await write('Cluster', 'clusters', 'later', clusterSpec({ name: 'later', workloadKubeconfig: { secretRef: { namespace: 'default', name: 'later-kubeconfig' } } }));
      await write('Machine', 'machines', 'node-later', { selectors: { mac: ['52:54:00:31:00:0a'] }, cluster: 'later', profile: 'ign' });
      const early = new URL(/ignition\.config\.url=(\S+)/.exec((await managed.app.inject({ url: '/ipxe?mac=52:54:00:31:00:0a', headers: { host: HOST } })).body)![1]!);
      const waiting = await managed.app.inject({ url: early.pathname + early.search, headers: { host: HOST, accept: IGN } });
      assert.equal(waiting.statusCode, 503, waiting.body);
      assert.match(String(waiting.headers['retry-after']), /^\d+$/);
      assert.doesNotMatch(waiting.body, /later-kubeconfig|default\//, 'the Secret is not named to the firmware');
      const script = (await managed.app.inject({ url: '/ipxe?mac=52:54:00:31:00:09', headers: { host: HOST } })).body;
      const url = new URL(/ignition\.config\.url=(\S+)/.exec(script)![1]!);
      const res = await managed.app.inject({ url: url.pathname + url.search, headers: { host: HOST, accept: IGN } });
      assert.equal(res.statusCode, 200, res.body);
      const { token, id } = servedToken(res.body, 'ignition');
      assert.equal((await secret(id))?.type, 'bootstrap.kubernetes.io/token');
      const who = await whoAmI(token);
      assert.ok(typeof who === 'object', `the API server refused the minted token: ${typeof who === 'number' ? who : ''}`);
      assert.equal(who.username, `system:bootstrap:${id}`);
    } finally {
      await managed.app.close();
      await managedStore.close();
    }
  });

  it("a fetch mints a token the API server authenticates as kubeadm's, with the cluster's TTL; a refetch serves the same", async () => {
    const started = Date.now();
    const res = await boot('52:54:00:31:00:01', 'ignition');
    assert.equal(res.statusCode, 200, res.body);
    const { token, id } = servedToken(res.body, 'ignition');
    const s = await secret(id);
    assert.ok(s, 'the Secret exists in kube-system');
    assert.equal(s.type, 'bootstrap.kubernetes.io/token');
    assert.equal([s.data['token-id'], s.data['token-secret']].join('.'), token);
    assert.equal(s.data['auth-extra-groups'], 'system:bootstrappers:kubeadm:default-node-token');
    assert.equal(s.data['usage-bootstrap-authentication'], 'true');
    const expires = Date.parse(s.data.expiration!);
    assert.ok(expires >= Math.floor(started / 1000) * 1000 + TTL_MS && expires <= Date.now() + TTL_MS, `expiration ${String(s.data.expiration)} is the fetch time + 10m`);
    const who = await whoAmI(token);
    assert.notEqual(typeof who, 'number', `the API server refused the token: ${JSON.stringify(who)}`);
    assert.equal((who as { username: string }).username, `system:bootstrap:${id}`);
    assert.ok((who as { groups: string[] }).groups.includes('system:bootstrappers:kubeadm:default-node-token'));

    const again = await boot('52:54:00:31:00:01', 'ignition');
    assert.equal(servedToken(again.body, 'ignition').token, token, 'the same incarnation joins with the same token');
    const preview = await svc.app.inject({ url: '/v1/machines/node-ign/bootstrap', headers: { authorization: `Bearer ${ADMIN}`, host: HOST, accept: IGN } });
    assert.equal(servedToken(preview.body, 'ignition').token, token, 'the admin preview shows the token the firmware gets');

    const cc = await boot('52:54:00:31:00:02', 'cloud-config');
    assert.equal(cc.statusCode, 200, cc.body);
    const other = servedToken(cc.body, 'cloud-config');
    assert.notEqual(other.token, token, 'each machine has its own token');
    assert.ok(await secret(other.id));
  });

  it('the sweep extends a provisioning machine\'s token; a success report deletes it and the API server refuses it after', async () => {
    const res = await boot('52:54:00:31:00:01', 'ignition');
    assert.equal(res.statusCode, 200, res.body);
    const { token, id, report } = servedToken(res.body, 'ignition');
    const later = Date.now() + TTL_MS / 2;
    const counts = await minted.sweep(later);
    assert.ok(counts.refreshed >= 1, JSON.stringify(counts));
    const extended = Date.parse((await secret(id))!.data.expiration!);
    assert.ok(Math.abs(extended - (later + TTL_MS)) < 2000, 'extended to the sweep time + TTL');
    assert.equal((await store.mintedToken('node-ign'))!.token, token);

    assert.ok(report, 'the config carries its report URL');
    const url = new URL(report);
    const sent = await svc.app.inject({ method: 'POST', url: url.pathname + url.search, headers: { host: HOST, 'content-type': 'application/json' }, payload: { outcome: 'success', exitCode: '0', output: `joined with ${token}` } });
    assert.equal(sent.statusCode, 204, sent.body);
    for (let i = 0; i < 100 && (await secret(id)); i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(await secret(id), undefined, 'the Secret is deleted once the node joined');
    assert.equal(await store.mintedToken('node-ign'), undefined);
    // kube-apiserver caches a token's success for 10 s (its token authenticator cache).
    let who = await whoAmI(token);
    for (let i = 0; i < 30 && who !== 401; i++) {
      await new Promise((r) => setTimeout(r, 500));
      who = await whoAmI(token);
    }
    assert.equal(who, 401, 'the API server refuses a deleted token');
    const status = (await api('GET', '/v1/machines/node-ign')).json.status as { lastReport: { output: string } };
    assert.doesNotMatch(status.lastReport.output, TOKEN, 'the report output is scrubbed of the minted token');
  });

  it('a token past its expiration is refused by the API server, and the sweep deletes it', async () => {
    const parts = await machineParts(store, 'node-cc', undefined);
    await store.forgetMintedToken('node-cc', (await store.mintedToken('node-cc'))!.token);
    // Minted as if 11 minutes ago: its expiration (10m TTL) is a minute past.
    const old = await minted.withToken(parts, Date.now() - 11 * 60_000);
    const id = old.mintedToken!.slice(0, 6);
    assert.ok(Date.parse((await secret(id))!.data.expiration!) < Date.now());
    assert.equal(await whoAmI(old.mintedToken!), 401, 'the API server refuses an expired bootstrap token');
    const counts = await minted.sweep();
    assert.ok(counts.deleted >= 1);
    assert.equal(await secret(id), undefined);
    assert.equal(await store.mintedToken('node-cc'), undefined);
    const fresh = await boot('52:54:00:31:00:02', 'cloud-config');
    const next = servedToken(fresh.body, 'cloud-config');
    assert.notEqual(next.token, old.mintedToken);
    assert.notEqual(typeof (await whoAmI(next.token)), 'number', 'the next fetch mints a token that works');
  });

  it('a re-created machine gets a new token and the old one is deleted', async () => {
    const first = servedToken((await boot('52:54:00:31:00:02', 'cloud-config')).body, 'cloud-config');
    assert.equal((await api('DELETE', '/v1/machines/node-cc')).status, 204);
    await create('Machine', 'machines', 'node-cc', { selectors: { mac: ['52:54:00:31:00:02'] }, cluster: 'prod', profile: 'cc' });
    const second = servedToken((await boot('52:54:00:31:00:02', 'cloud-config')).body, 'cloud-config');
    assert.notEqual(second.token, first.token);
    assert.equal(await secret(first.id), undefined, "the old incarnation's Secret is deleted");
    assert.ok(await secret(second.id));
  });

  it('an unreachable workload cluster is a 503 with Retry-After, naming no file', async () => {
    const res = await boot('52:54:00:31:00:03', 'ignition');
    assert.equal(res.statusCode, 503, res.body);
    assert.ok(res.headers['retry-after']);
    assert.match(res.headers['content-type'] as string, /problem\+json/);
    assert.match(res.body, /cluster \\?"down\\?" cannot mint a bootstrap token/);
    assert.doesNotMatch(res.body, /kubeconfig|127\.0\.0\.1/);
    assert.equal(await store.mintedToken('node-down'), undefined, 'nothing is recorded');
  });
});
