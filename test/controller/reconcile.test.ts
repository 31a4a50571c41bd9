/**
 * The KubeadmConfig reconciler (src/controller/reconcile.ts) on real API servers: a
 * management cluster with Cluster API's CRDs, a workload cluster reached through
 * `<cluster>-kubeconfig`, objects made the way Cluster API's controllers make them
 * (test/support/management.ts), the Cluster API quick start's KubeadmControlPlane spec
 * and worker KubeadmConfigTemplate (test/support/capi.ts) as the configs. Each scenario
 * of the contract: the init race, workers waiting, tokens in the workload cluster and
 * their refresh, pause, status restored after a move, a lock whose Machine is gone, a
 * restart, an unrenderable config; the data passes the real validators.
 */
import assert from 'node:assert/strict';
import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadAll } from 'js-yaml';
import { EventRecorder } from '../../src/controller/events.js';
import { Kube } from '../../src/kube/client.js';
import { Reconciler, type ReconcilerOptions } from '../../src/controller/reconcile.js';
import { tokenSecretName } from '../../src/kube/token.js';
import { workerTemplate } from '../support/capi.js';
import type { ControlPlane } from '../support/controlplane.js';
import { cloudConfigFiles, ignitionFiles } from '../support/decode.js';
import { capturedLog } from '../support/logs.js';
import { BOOT, CapiFixtures, type Config, CORE, create, get, managementSkip, mergePatch, objectPath, ownerRef, remove, startManagement } from '../support/management.js';
import { example } from '../support/requests.js';
import { validateCloudConfigSchema, validateIgnitionSchema } from '../support/validators.js';

const skip = managementSkip('the Cluster API controller');

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> & { name: string } };
const CA_HASH = (example('worker').spec.cluster as { caCertHashes: string[] }).caCertHashes[0]!;

describe('the KubeadmConfig reconciler on a real API server', { skip, timeout: 300_000 }, () => {
  let mgmt: ControlPlane;
  let workload: ControlPlane;
  let stop: (() => Promise<void>) | undefined;
  const { log, lines: logLines } = capturedLog();
  const reconciler = (options: Partial<ReconcilerOptions> = {}) => {
    const kube = Kube.fromKubeconfig(mgmt.kubeconfig);
    return new Reconciler(kube, { tokenTtlMs: 15 * 60_000, ignitionVersion: '2.3', ...options }, new EventRecorder(kube, log, 'test'), log);
  };

  before(async () => {
    ({ mgmt, workload, stop } = await startManagement());
  });
  after(async () => {
    await stop?.();
  });

  const fixtures = () => new CapiFixtures(mgmt, workload);
  const cluster = (name: string, spec?: Record<string, unknown>) => fixtures().cluster(name, spec);
  const clusterStatus = (name: string, status: Record<string, unknown>) => fixtures().clusterStatus(name, status);
  const machine = (clusterName: string, name: string, role: 'control-plane' | 'worker', configSpec?: Record<string, unknown>, annotations?: Record<string, string>) => fixtures().machine(clusterName, name, role, configSpec, annotations);

  const config = async (name: string) => (await get(mgmt, BOOT, 'kubeadmconfigs', 'default', name)) as Config;
  const dataSecret = async (name: string) => get(mgmt, 'v1', 'secrets', 'default', name) as Promise<(Obj & { type: string; data: Record<string, string> }) | undefined>;
  const decoded = (s: { data: Record<string, string> }, k: string) => Buffer.from(s.data[k]!, 'base64').toString('utf8');
  const condition = (c: Config, type: string) => c.status?.conditions?.find((x) => x.type === type);
  const tokenSecrets = async () => {
    const res = await workload.request('GET', '/api/v1/namespaces/kube-system/secrets');
    return ((res.body as { items: (Obj & { type: string; data: Record<string, string> })[] }).items).filter((s) => s.type === 'bootstrap.kubernetes.io/token');
  };
  /** The kubeadm documents of a cloud-config (the file CABPK's layout runs kubeadm with). */
  const kubeadmDocs = (text: string) => {
    const files = cloudConfigFiles(text);
    const file = [...files.keys()].find((p) => p.startsWith('/run/kubeadm/') || p.endsWith('kubeadm.yaml') || p.endsWith('kubeadm-join-config.yaml'));
    assert.ok(file, `a kubeadm configuration file among ${[...files.keys()].join(', ')}`);
    return loadAll(files.get(file)!.toString('utf8')).filter(Boolean) as Record<string, unknown>[];
  };

  it('three control-plane Machines race: one kubeadm init, then two joins and a worker after ControlPlaneInitialized', async () => {
    const c = await cluster('prod');
    const cps = [await machine('prod', 'prod-cp-a', 'control-plane'), await machine('prod', 'prod-cp-b', 'control-plane'), await machine('prod', 'prod-cp-c', 'control-plane')];
    const w = await machine('prod', 'prod-md-0-x', 'worker');
    const names = [...cps, w].map((x) => x.config.metadata.name);

    // Infrastructure not provisioned: nothing is written, the condition says why.
    await Promise.all(names.map((n) => reconciler().reconcile('default', n)));
    for (const n of names) {
      assert.equal(await dataSecret(n), undefined);
      const got = condition(await config(n), 'DataSecretAvailable');
      assert.equal(got?.status, 'False');
      assert.match(got.message!, /infrastructureProvisioned/);
    }

    await clusterStatus('prod', { initialization: { infrastructureProvisioned: true } });
    // Three controllers (one per Machine) race for the lock at once.
    const results = await Promise.all(names.map((n) => reconciler().reconcile('default', n)));
    const written = (await Promise.all(names.map(dataSecret))).map((s, i) => (s ? names[i] : undefined)).filter(Boolean);
    assert.equal(written.length, 1, `exactly one init, got ${written.join(', ')}`);
    const initName = written[0]!;
    assert.ok(initName.startsWith('prod-cp-'));
    const lock = await get(mgmt, 'v1', 'configmaps', 'default', 'prod-lock');
    assert.deepEqual(JSON.parse((lock!.data as Record<string, string>)['lock-information']!), { machineName: initName });
    assert.deepEqual((lock!.metadata.ownerReferences as { kind: string; uid: string }[]).map((r) => [r.kind, r.uid]), [['Cluster', c.metadata.uid]]);
    assert.equal(results[names.indexOf('prod-md-0-x')]!.requeueAfterMs, 30_000, 'the worker waits 30 s');

    // The init data Secret, exactly per the contract.
    const initConfig = await config(initName);
    const secret = (await dataSecret(initName))!;
    assert.equal(secret.type, 'cluster.x-k8s.io/secret');
    assert.equal((secret.metadata.labels as Record<string, string>)['cluster.x-k8s.io/cluster-name'], 'prod');
    assert.deepEqual(secret.metadata.ownerReferences, [{ apiVersion: BOOT, kind: 'KubeadmConfig', name: initName, uid: initConfig.metadata.uid, controller: true }]);
    assert.deepEqual(Object.keys(secret.data).sort(), ['format', 'value']);
    assert.equal(decoded(secret, 'format'), 'cloud-config');
    const initData = decoded(secret, 'value');
    assert.ok(initData.startsWith('#cloud-config\n'));
    assert.deepEqual(validateCloudConfigSchema(initData), []);
    const initDocs = kubeadmDocs(initData);
    const clusterConfiguration = initDocs.find((d) => d.kind === 'ClusterConfiguration')!;
    assert.equal(clusterConfiguration.controlPlaneEndpoint, '192.0.2.10:6443');
    assert.deepEqual(clusterConfiguration.networking, { podSubnet: '192.168.0.0/16', serviceSubnet: '10.96.0.0/12', dnsDomain: 'cluster.local' });
    assert.ok(cloudConfigFiles(initData).has('/etc/kubernetes/pki/ca.key'), 'init carries the cluster CA key');
    assert.equal(initConfig.status?.dataSecretName, initName);
    assert.equal(initConfig.status.initialization?.dataSecretCreated, true);
    assert.equal(initConfig.status.observedGeneration, initConfig.metadata.generation);
    const ready = condition(initConfig, 'Ready')!;
    // And the v1beta1 conditions CABPK writes beside them, for v1beta1 clients.
    const v1beta1 = (initConfig.status as { deprecated?: { v1beta1?: { conditions?: { type: string; status: string }[] } } }).deprecated?.v1beta1?.conditions;
    assert.deepEqual(v1beta1?.map((c) => `${c.type}=${c.status}`), ['CertificatesAvailable=True', 'DataSecretAvailable=True', 'Ready=True']);
    assert.equal(ready.status, 'True');
    assert.equal(ready.observedGeneration, initConfig.metadata.generation);
    for (const n of names.filter((x) => x !== initName)) assert.equal(condition(await config(n), 'Ready')?.status, 'False');

    // The control plane comes up: the lock goes, the others join.
    await clusterStatus('prod', { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true } });
    for (const n of names.filter((x) => x !== initName)) {
      const r = await reconciler().reconcile('default', n);
      assert.equal(r.requeueAfterMs, 5 * 60_000, 'the token is looked at again after TTL/3');
    }
    assert.equal(await get(mgmt, 'v1', 'configmaps', 'default', 'prod-lock'), undefined);
    const tokens = await tokenSecrets();
    assert.equal(tokens.length, 3, 'one token per join');
    for (const n of names.filter((x) => x !== initName)) {
      const cfg = await config(n);
      const bt = (cfg.spec.joinConfiguration as { discovery: { bootstrapToken: { token: string; apiServerEndpoint: string; caCertHashes: string[] } } }).discovery.bootstrapToken;
      assert.match(bt.token, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
      assert.equal(bt.apiServerEndpoint, '192.0.2.10:6443');
      assert.deepEqual(bt.caCertHashes, [CA_HASH]);
      const tokenSecret = tokens.find((t) => t.metadata.name === tokenSecretName(bt.token))!;
      assert.ok(tokenSecret, 'the token Secret is in the workload cluster');
      assert.deepEqual(Object.keys(tokenSecret.data).sort(), ['auth-extra-groups', 'description', 'expiration', 'token-id', 'token-secret', 'usage-bootstrap-authentication', 'usage-bootstrap-signing']);
      assert.equal(decoded(tokenSecret, 'token-id') + '.' + decoded(tokenSecret, 'token-secret'), bt.token);
      assert.equal(decoded(tokenSecret, 'auth-extra-groups'), 'system:bootstrappers:kubeadm:default-node-token');
      const expires = Date.parse(decoded(tokenSecret, 'expiration')) - Date.now();
      assert.ok(expires > 14 * 60_000 && expires <= 15 * 60_000, `expires in about 15 minutes (${expires} ms)`);

      const data = decoded((await dataSecret(n))!, 'value');
      assert.deepEqual(validateCloudConfigSchema(data), []);
      const join = kubeadmDocs(data).find((d) => d.kind === 'JoinConfiguration')!;
      const discovery = (join.discovery as { bootstrapToken: Record<string, unknown> }).bootstrapToken;
      assert.equal(discovery.token, bt.token);
      assert.deepEqual(discovery.caCertHashes, [CA_HASH]);
      const files = cloudConfigFiles(data);
      if (n.startsWith('prod-cp-')) {
        assert.ok(join.controlPlane !== undefined, 'a control-plane join');
        assert.ok(files.has('/etc/kubernetes/pki/etcd/ca.key') && files.has('/etc/kubernetes/pki/sa.key'), 'a control-plane join carries the shared keys');
      } else {
        assert.equal(join.controlPlane, undefined);
        assert.ok(![...files.keys()].some((p) => p.endsWith('.key')), 'a worker carries no key');
        const taints = (join.nodeRegistration as { taints: { key: string }[] }).taints;
        assert.ok(taints.some((t) => t.key === 'node.cluster.x-k8s.io/uninitialized'), "CABPK's uninitialized taint");
      }
      assert.equal(condition(await config(n), 'Ready')?.status, 'True');
    }

    // A restart in the middle (a new controller, nothing cached): no second token, no lost status.
    for (const n of names) await reconciler().reconcile('default', n);
    assert.equal((await tokenSecrets()).length, 3);
    for (const n of names) assert.equal((await config(n)).status?.dataSecretName, n);

    // No secret reached a log line.
    const logged = logLines.join('');
    for (const t of await tokenSecrets()) assert.ok(!logged.includes(decoded(t, 'token-secret')), 'a token secret was logged');
    assert.ok(!logged.includes('PRIVATE KEY'));

    // The Events on each config, as kubectl describe shows them, and none carries a secret.
    const listed = await mgmt.request('GET', objectPath('v1', 'events', 'default'));
    assert.equal(listed.status, 200);
    const events = (listed.body as { items: { involvedObject: { kind: string; name: string }; reason: string; type: string; message: string }[] }).items.filter((e) => e.involvedObject.kind === 'KubeadmConfig');
    const reasons = (n: string) => new Set(events.filter((e) => e.involvedObject.name === n).map((e) => e.reason));
    assert.ok(reasons(initName).has('InitLockAcquired') && reasons(initName).has('DataSecretCreated'), JSON.stringify([...reasons(initName)]));
    for (const n of names.filter((x) => x !== initName)) assert.ok(reasons(n).has('BootstrapTokenCreated') && reasons(n).has('DataSecretCreated'), `${n}: ${JSON.stringify([...reasons(n)])}`);
    for (const t of await tokenSecrets()) assert.ok(!events.some((e) => e.message.includes(decoded(t, 'token-secret'))), 'an event carries a token secret');
  });

  it('refreshes a join token before it expires until the Machine has a nodeRef, then leaves it', async () => {
    await cluster('refresh');
    await clusterStatus('refresh', { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true } });
    const { machine: m } = await machine('refresh', 'refresh-md-0-a', 'worker');
    const ttl = 6_000;
    await reconciler({ tokenTtlMs: ttl }).reconcile('default', 'refresh-md-0-a');
    const token = ((await config('refresh-md-0-a')).spec.joinConfiguration as { discovery: { bootstrapToken: { token: string } } }).discovery.bootstrapToken.token;
    const secretName = tokenSecretName(token);
    const expiration = async () => Date.parse(decoded((await get(workload, 'v1', 'secrets', 'kube-system', secretName)) as unknown as { data: Record<string, string> }, 'expiration'));
    const first = await expiration();
    await sleep(2_200); // past 1/6 of the TTL: due for a refresh
    const r = await reconciler({ tokenTtlMs: ttl }).reconcile('default', 'refresh-md-0-a');
    assert.equal(r.requeueAfterMs, ttl / 3);
    const second = await expiration();
    assert.ok(second > first, `refreshed: ${new Date(first).toISOString()} → ${new Date(second).toISOString()}`);

    await mergePatch(mgmt, CORE, 'machines', 'default', m.metadata.name, { status: { nodeRef: { name: 'refresh-md-0-a' } } }, true);
    await sleep(2_200);
    assert.deepEqual(await reconciler({ tokenTtlMs: ttl }).reconcile('default', 'refresh-md-0-a'), {});
    assert.equal(await expiration(), second, 'a joined Machine’s token is not refreshed');
  });

  it("keeps a MachinePool's join token alive until all its replicas joined, then rotates it once a sixth of its life is gone: a new token, its Secret, new data", async () => {
    await cluster('pool');
    await clusterStatus('pool', { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true } });
    // As the MachinePool controller makes them: the pool, and its config cloned from the template.
    const pool = await create(mgmt, CORE, 'machinepools', {
      kind: 'MachinePool',
      metadata: { name: 'pool-mp-0', namespace: 'default', labels: { 'cluster.x-k8s.io/cluster-name': 'pool' } },
      spec: {
        clusterName: 'pool',
        replicas: 2,
        template: {
          spec: {
            clusterName: 'pool',
            version: 'v1.33.2',
            bootstrap: { configRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfig', name: 'pool-mp-0' } },
            infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DockerMachinePool', name: 'pool-mp-0' },
          },
        },
      },
    });
    await create(mgmt, BOOT, 'kubeadmconfigs', {
      kind: 'KubeadmConfig',
      metadata: { name: 'pool-mp-0', namespace: 'default', labels: { 'cluster.x-k8s.io/cluster-name': 'pool' }, ownerReferences: [ownerRef(pool)] },
      spec: (workerTemplate('v1beta2') as { spec: { template: { spec: Record<string, unknown> } } }).spec.template.spec,
    });
    // A sixth of it is 5 s: room for the immediate second reconcile on a loaded machine.
    const ttl = 30_000;
    const tokenOf = async () => ((await config('pool-mp-0')).spec.joinConfiguration as { discovery: { bootstrapToken: { token: string } } }).discovery.bootstrapToken.token;
    const data = async () => decoded((await dataSecret('pool-mp-0'))!, 'value');
    await reconciler({ tokenTtlMs: ttl }).reconcile('default', 'pool-mp-0');
    const first = await tokenOf();
    assert.ok((await data()).includes(first));
    assert.equal(await reconciler({ tokenTtlMs: ttl }).reconcile('default', 'pool-mp-0').then(async () => tokenOf()), first, 'not yet: less than a sixth of the TTL is gone');
    const expiration = async (token: string) => Date.parse(decoded((await get(workload, 'v1', 'secrets', 'kube-system', tokenSecretName(token))) as unknown as { data: Record<string, string> }, 'expiration'));
    // One of its two replicas joined: as CABPK (HasNodeRefs), the token is refreshed, not rotated.
    await mergePatch(mgmt, CORE, 'machinepools', 'default', 'pool-mp-0', { status: { nodeRefs: [{ apiVersion: 'v1', kind: 'Node', name: 'pool-a' }] } }, true);
    const before = await expiration(first);
    await sleep(5_200); // past a sixth of the TTL
    await reconciler({ tokenTtlMs: ttl }).reconcile('default', 'pool-mp-0');
    assert.equal(await tokenOf(), first, 'a pool still scaling up keeps its token');
    assert.ok((await expiration(first)) > before, 'and its expiration moves on');
    // Its token Secret gone before the pool is complete: a new token, as CABPK recreates it.
    await remove(workload, 'v1', 'secrets', 'kube-system', tokenSecretName(first));
    await reconciler({ tokenTtlMs: ttl }).reconcile('default', 'pool-mp-0');
    const recreated = await tokenOf();
    assert.notEqual(recreated, first);
    assert.ok((await data()).includes(recreated));
    // Both joined: now the token is rotated once it is due, for the next scale-up.
    await mergePatch(mgmt, CORE, 'machinepools', 'default', 'pool-mp-0', { status: { nodeRefs: [{ apiVersion: 'v1', kind: 'Node', name: 'pool-a' }, { apiVersion: 'v1', kind: 'Node', name: 'pool-b' }] } }, true);
    assert.equal(await reconciler({ tokenTtlMs: ttl }).reconcile('default', 'pool-mp-0').then(async () => tokenOf()), recreated, 'not yet due');
    await sleep(5_200); // past a sixth of the TTL
    const r = await reconciler({ tokenTtlMs: ttl }).reconcile('default', 'pool-mp-0');
    assert.equal(r.requeueAfterMs, ttl / 3);
    const second = await tokenOf();
    assert.notEqual(second, recreated);
    assert.ok((await data()).includes(second), "the pool's next nodes get the new token");
    assert.ok(!(await data()).includes(recreated));
    assert.ok((await tokenSecrets()).some((t) => t.metadata.name === tokenSecretName(second)), 'its Secret is in the workload cluster');
    assert.equal(condition(await config('pool-mp-0'), 'Ready')?.status, 'True');
  });

  it('generates the certificate authorities of a Cluster without a control plane provider, as CABPK does, and joins with them', async () => {
    await fixtures().cluster('standalone', {}, {}, true);
    await clusterStatus('standalone', { initialization: { infrastructureProvisioned: true } });
    const { config: initCfg } = await machine('standalone', 'standalone-cp-a', 'control-plane');
    await reconciler().reconcile('default', 'standalone-cp-a');
    const made = await Promise.all(['ca', 'etcd', 'proxy', 'sa'].map(async (s) => (await get(mgmt, 'v1', 'secrets', 'default', `standalone-${s}`)) as (Obj & { type: string; data: Record<string, string> }) | undefined));
    for (const secret of made) {
      assert.ok(secret, 'generated');
      assert.equal(secret.type, 'cluster.x-k8s.io/secret');
      assert.deepEqual(secret.metadata.labels, { 'cluster.x-k8s.io/cluster-name': 'standalone' });
      assert.deepEqual(secret.metadata.ownerReferences, [{ apiVersion: BOOT, kind: 'KubeadmConfig', name: 'standalone-cp-a', uid: initCfg.metadata.uid, controller: true }]);
      assert.deepEqual(Object.keys(secret.data).sort(), ['tls.crt', 'tls.key']);
    }
    const ca = new X509Certificate(decoded(made[0]!, 'tls.crt'));
    assert.equal(ca.subject, 'CN=kubernetes');
    assert.ok(ca.ca);
    assert.ok(ca.checkPrivateKey(createPrivateKey(decoded(made[0]!, 'tls.key'))));
    const init = decoded((await dataSecret('standalone-cp-a'))!, 'value');
    assert.equal(cloudConfigFiles(init).get('/etc/kubernetes/pki/ca.crt')?.toString('utf8'), decoded(made[0]!, 'tls.crt'), 'init carries the generated CA');
    assert.equal(condition(await config('standalone-cp-a'), 'CertificatesAvailable')?.status, 'True');

    // A worker then joins pinned to the generated CA.
    await clusterStatus('standalone', { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true } });
    await machine('standalone', 'standalone-md-0-a', 'worker');
    await reconciler().reconcile('default', 'standalone-md-0-a');
    const hash = `sha256:${createHash('sha256').update(ca.publicKey.export({ type: 'spki', format: 'der' })).digest('hex')}`;
    const join = ((await config('standalone-md-0-a')).spec.joinConfiguration as { discovery: { bootstrapToken: { caCertHashes: string[] } } }).discovery.bootstrapToken;
    assert.deepEqual(join.caCertHashes, [hash]);
  });

  it('leaves a paused cluster untouched but for the Paused condition', async () => {
    await cluster('paused', { paused: true });
    await clusterStatus('paused', { initialization: { infrastructureProvisioned: true } });
    await machine('paused', 'paused-cp-a', 'control-plane');
    assert.deepEqual(await reconciler().reconcile('default', 'paused-cp-a'), {});
    assert.equal(await dataSecret('paused-cp-a'), undefined);
    assert.equal(await get(mgmt, 'v1', 'configmaps', 'default', 'paused-lock'), undefined);
    const cfg = await config('paused-cp-a');
    assert.equal(condition(cfg, 'Paused')?.status, 'True');
    assert.equal(cfg.status?.dataSecretName, undefined);
  });

  it('gives a config restored without status (clusterctl move) its status back from the Machine', async () => {
    await cluster('moved');
    await clusterStatus('moved', { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true } });
    // As clusterctl move recreates them: the Machine names its data Secret, the config has no status.
    const { machine: m } = await machine('moved', 'moved-md-0-a', 'worker');
    const before = (await tokenSecrets()).length;
    await mergePatch(mgmt, CORE, 'machines', 'default', m.metadata.name, { spec: { bootstrap: { dataSecretName: 'moved-md-0-a' } } });
    await reconciler().reconcile('default', 'moved-md-0-a');
    const cfg = await config('moved-md-0-a');
    assert.equal(cfg.status?.dataSecretName, 'moved-md-0-a');
    assert.equal(cfg.status.initialization?.dataSecretCreated, true);
    assert.equal(condition(cfg, 'Ready')?.status, 'True');
    assert.equal((await tokenSecrets()).length, before, 'no token for a restored config');
    assert.equal(await dataSecret('moved-md-0-a'), undefined, 'its data Secret is moved with it, not written again');
  });

  it('takes over an init lock whose Machine was deleted', async () => {
    await cluster('lockc');
    await clusterStatus('lockc', { initialization: { infrastructureProvisioned: true } });
    const a = await machine('lockc', 'lockc-cp-a', 'control-plane');
    await reconciler().reconcile('default', 'lockc-cp-a');
    const lock = await get(mgmt, 'v1', 'configmaps', 'default', 'lockc-lock');
    assert.match(JSON.stringify(lock!.data), /lockc-cp-a/);
    await machine('lockc', 'lockc-cp-b', 'control-plane');
    assert.equal((await reconciler().reconcile('default', 'lockc-cp-b')).requeueAfterMs, 30_000, 'b waits while a holds the lock');
    await remove(mgmt, CORE, 'machines', 'default', a.machine.metadata.name);
    await reconciler().reconcile('default', 'lockc-cp-b');
    assert.match(JSON.stringify((await get(mgmt, 'v1', 'configmaps', 'default', 'lockc-lock'))!.data), /lockc-cp-b/);
    assert.ok(await dataSecret('lockc-cp-b'), 'b initialises the control plane');
  });

  it('says Ready=False with the field path for a config that cannot render, and does not throw', async () => {
    await cluster('broken');
    await clusterStatus('broken', { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true } });
    await machine('broken', 'broken-md-0-a', 'worker', { files: [{ path: '/etc/kubernetes/pki/ca.crt', content: 'not mine' }] });
    await reconciler().reconcile('default', 'broken-md-0-a');
    const cfg = await config('broken-md-0-a');
    const ready = condition(cfg, 'Ready')!;
    assert.equal(ready.status, 'False');
    assert.equal(ready.reason, 'NotReady');
    assert.match(ready.message!, /^cannot render the bootstrap data: spec\.files\[0\]\.path: /);
    assert.equal(await dataSecret('broken-md-0-a'), undefined);
  });

  it('writes Ignition v3 for format: ignition with the ignition-version annotation, Ignition 2.3 without it', async () => {
    await cluster('ign');
    await clusterStatus('ign', { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true } });
    const spec = { ...(workerTemplate('v1beta2') as { spec: { template: { spec: Record<string, unknown> } } }).spec.template.spec, format: 'ignition' };
    await machine('ign', 'ign-md-0-v3', 'worker', spec, { 'bootstrap.bootwright.dev/ignition-version': '3.4.0' });
    await machine('ign', 'ign-md-0-v2', 'worker', spec);
    await reconciler().reconcile('default', 'ign-md-0-v3');
    await reconciler().reconcile('default', 'ign-md-0-v2');
    const v3 = (await dataSecret('ign-md-0-v3'))!;
    assert.equal(decoded(v3, 'format'), 'ignition');
    const doc = JSON.parse(decoded(v3, 'value')) as { ignition: { version: string } };
    assert.equal(doc.ignition.version, '3.4.0');
    assert.deepEqual(validateIgnitionSchema(decoded(v3, 'value'), '3.4.0'), []);
    assert.ok([...ignitionFiles(doc).keys()].some((p) => p.includes('kubeadm')), 'the kubeadm configuration is a file of the config');
    const v2 = JSON.parse(decoded((await dataSecret('ign-md-0-v2'))!, 'value')) as { ignition: { version: string } };
    assert.equal(v2.ignition.version, '2.3.0');
  });
});
