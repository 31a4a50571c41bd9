/**
 * `bootwright controller` as it runs: two replicas with leader election against a real
 * management API server (kube-apiserver + etcd, Cluster API's CRDs), driven only by
 * watches. Objects are created the way Cluster API's controllers create them; nothing
 * calls the reconciler directly. One replica leads (the Lease names it; its metrics say
 * so, the other's say standby); a control-plane Machine gets its init data, a worker
 * waits until the Cluster reports `ControlPlaneInitialized` and then gets its join data
 * through the Cluster watch; the leader stops and releases the Lease, the standby takes
 * over and serves the next Machine.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kube } from '../../src/kube/client.js';
import { portOf } from '../../src/controller/metrics.js';
import { DEFAULT_LEASE_NAME } from '../../src/controller/defaults.js';
import { type RunningController, startController } from '../../src/controller/run.js';
import type { ControlPlane } from '../support/controlplane.js';
import { capturedLog } from '../support/logs.js';
import { BOOT, CapiFixtures, type Config, CORE, create, eventually, get, managementSkip, ownerRef, startManagement } from '../support/management.js';
import { validateCloudConfigSchema } from '../support/validators.js';

const skip = managementSkip('the controller manager');

describe('bootwright controller: two replicas, leader election, watches', { skip, timeout: 300_000 }, () => {
  let mgmt: ControlPlane;
  let fixtures: CapiFixtures;
  let stop: (() => Promise<void>) | undefined;
  const { log, lines: logLines } = capturedLog();
  const replicas: RunningController[] = [];

  const start = (identity: string) =>
    startController(
      Kube.fromKubeconfig(mgmt.kubeconfig),
      {
        tokenTtlMs: 15 * 60_000,
        ignitionVersion: '2.3',
        concurrency: 4,
        identity,
        health: { host: '127.0.0.1', port: 0 },
        leaderElection: { namespace: 'default', name: DEFAULT_LEASE_NAME, identity, leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 },
      },
      log.child({ replica: identity }),
    );
  const http = async (r: RunningController, path: string) => {
    const res = await fetch(`http://127.0.0.1:${String(portOf(r.health))}${path}`);
    return { status: res.status, text: await res.text() };
  };
  const lease = async () => (await get(mgmt, 'coordination.k8s.io/v1', 'leases', 'default', DEFAULT_LEASE_NAME)) as { spec: { holderIdentity?: string; leaseTransitions?: number } } | undefined;
  const secret = async (name: string) => get(mgmt, 'v1', 'secrets', 'default', name) as Promise<{ data: Record<string, string> } | undefined>;
  const config = async (name: string) => (await get(mgmt, BOOT, 'kubeadmconfigs', 'default', name)) as Config;

  before(async () => {
    const m = await startManagement();
    ({ mgmt, stop } = m);
    fixtures = new CapiFixtures(mgmt, m.workload);
  });
  after(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await stop?.();
  });

  it('one replica leads; it reconciles by watches; the standby takes over when it stops', async () => {
    replicas.push(await start('replica-a'), await start('replica-b'));
    const leader = await eventually('a leader', async () => {
      const holder = (await lease())?.spec.holderIdentity;
      return holder === 'replica-a' || holder === 'replica-b' ? holder : undefined;
    });
    const [first, second] = leader === 'replica-a' ? (replicas as [RunningController, RunningController]) : ([replicas[1], replicas[0]] as [RunningController, RunningController]);
    // Give the standby several retry periods to (wrongly) take the Lease too.
    await sleep(1_500);
    assert.equal((await lease())?.spec.holderIdentity, leader);
    assert.equal(first.isLeader(), true);
    assert.equal(second.isLeader(), false);
    assert.match((await http(first, '/metrics')).text, new RegExp(`^leader_election_master_status\\{name="${DEFAULT_LEASE_NAME}"\\} 1$`, 'm'));
    assert.match((await http(second, '/metrics')).text, new RegExp(`^leader_election_master_status\\{name="${DEFAULT_LEASE_NAME}"\\} 0$`, 'm'));
    assert.equal((await http(second, '/healthz')).status, 200);
    assert.equal((await http(second, '/readyz')).status, 200, 'a standby is ready');
    await eventually('the leader ready (watches listed)', async () => ((await http(first, '/readyz')).status === 200 ? true : undefined));

    // A cluster with its infrastructure provisioned, a control-plane Machine and a worker.
    await fixtures.cluster('watched');
    await fixtures.clusterStatus('watched', { initialization: { infrastructureProvisioned: true } });
    await fixtures.machine('watched', 'watched-cp-a', 'control-plane');
    await fixtures.machine('watched', 'watched-md-0-a', 'worker');
    const init = await eventually('the init data Secret', () => secret('watched-cp-a'));
    assert.ok(Buffer.from(init.data.value!, 'base64').toString('utf8').startsWith('#cloud-config\n'));
    assert.deepEqual(validateCloudConfigSchema(Buffer.from(init.data.value!, 'base64').toString('utf8')), []);
    await eventually('the init config Ready', async () => ((await config('watched-cp-a')).status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? true : undefined));
    assert.equal(await secret('watched-md-0-a'), undefined, 'the worker waits for the control plane');
    const waiting = (await config('watched-md-0-a')).status?.conditions?.find((c) => c.type === 'DataSecretAvailable');
    assert.equal(waiting?.message, 'Waiting for Cluster control plane to be initialized');

    // The Cluster's status change reaches the worker's config through the Cluster watch,
    // well before the 30 s requeue.
    const initialised = Date.now();
    await fixtures.clusterStatus('watched', { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true } });
    const join = await eventually('the worker join data Secret', () => secret('watched-md-0-a'), 20_000);
    assert.ok(Date.now() - initialised < 20_000);
    assert.deepEqual(validateCloudConfigSchema(Buffer.from(join.data.value!, 'base64').toString('utf8')), []);
    const metrics = (await http(first, '/metrics')).text;
    assert.match(metrics, /^controller_runtime_reconcile_total\{controller="kubeadmconfig",result="(success|requeue_after)"\} [1-9]\d*$/m);
    assert.match(metrics, /^workqueue_depth\{name="kubeadmconfig"\} \d+$/m);
    assert.equal(/^controller_runtime_reconcile_total\{/m.exec((await http(second, '/metrics')).text), null, 'the standby reconciled nothing');

    // The leader stops: it releases the Lease; the standby takes over at once (well
    // within one lease duration of the stop) and reconciles the next Machine.
    const transitions = (await lease())?.spec.leaseTransitions ?? 0;
    const stopped = Date.now();
    await first.stop();
    replicas.splice(replicas.indexOf(first), 1);
    await eventually('the standby leading', async () => ((await lease())?.spec.holderIdentity === (leader === 'replica-a' ? 'replica-b' : 'replica-a') ? true : undefined), 10_000);
    assert.equal(second.isLeader(), true);
    assert.ok((await lease())!.spec.leaseTransitions! > transitions);
    await fixtures.machine('watched', 'watched-md-0-b', 'worker');
    await eventually('the next worker join data Secret, from the new leader', () => secret('watched-md-0-b'), 20_000);
    assert.ok(Date.now() - stopped < 20_000);
    assert.equal(logLines.filter((l) => l.includes('"level":50')).length, 0, `no errors logged:\n${logLines.filter((l) => l.includes('"level":50')).join('')}`);
  });

  it('--namespace: only that namespace is watched and reconciled', async () => {
    // No other replica runs: it would reconcile every namespace.
    await Promise.all(replicas.splice(0).map((r) => r.stop()));
    // A Cluster, a Machine and its KubeadmConfig in another namespace, which an unscoped
    // controller reconciles at once (it writes at least the Paused condition).
    assert.equal((await mgmt.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'elsewhere' } })).status, 201);
    const labels = { 'cluster.x-k8s.io/cluster-name': 'other' };
    await create(mgmt, CORE, 'clusters', { kind: 'Cluster', metadata: { name: 'other', namespace: 'elsewhere', labels }, spec: { controlPlaneEndpoint: { host: '192.0.2.11', port: 6443 } } });
    const m = await create(mgmt, CORE, 'machines', {
      kind: 'Machine',
      metadata: { name: 'other-md-0-a', namespace: 'elsewhere', labels },
      spec: {
        clusterName: 'other',
        version: 'v1.33.2',
        bootstrap: { configRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfig', name: 'other-md-0-a' } },
        infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DockerMachine', name: 'other-md-0-a' },
      },
    });
    await create(mgmt, BOOT, 'kubeadmconfigs', { kind: 'KubeadmConfig', metadata: { name: 'other-md-0-a', namespace: 'elsewhere', labels, ownerReferences: [ownerRef(m)] } });
    const scoped = await startController(
      Kube.fromKubeconfig(mgmt.kubeconfig),
      { tokenTtlMs: 15 * 60_000, ignitionVersion: '2.3', concurrency: 4, identity: 'scoped', health: { host: '127.0.0.1', port: 0 }, namespace: 'default' },
      log.child({ replica: 'scoped' }),
    );
    replicas.push(scoped);
    await fixtures.cluster('scoped');
    await fixtures.clusterStatus('scoped', { initialization: { infrastructureProvisioned: true } });
    await fixtures.machine('scoped', 'scoped-cp-a', 'control-plane');
    await eventually('the init data Secret in the watched namespace', () => secret('scoped-cp-a'));
    await sleep(1_000);
    const other = (await get(mgmt, BOOT, 'kubeadmconfigs', 'elsewhere', 'other-md-0-a')) as Config;
    assert.equal(other.status, undefined, 'the other namespace is not reconciled');
  });
});
