/**
 * Cluster API's own core manager (the Machine controller of Cluster API v1.14.0, built
 * from the Go module proxy) reading what bootwright's controller writes, on a real
 * management API server: the Machine takes the data Secret's name from the
 * KubeadmConfig's status (`spec.bootstrap.dataSecretName`,
 * `status.initialization.bootstrapDataSecretCreated`) and mirrors its `Ready` condition
 * into `BootstrapConfigReady`, for a config that renders and, with the field path, for one
 * that cannot. (No infrastructure provider runs: the Machine goes no further.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { Kube } from '../../src/controller/kube.js';
import { type RunningController, startController } from '../../src/controller/run.js';
import { type Cabpk, startCoreManager } from '../support/cabpk.js';
import { controlPlaneSpec } from '../support/capi.js';
import { type ControlPlane, startControlPlane } from '../support/controlplane.js';
import { CapiFixtures, CORE, get, haveCapiCrds, installCapiCrds } from '../support/management.js';
import { missingDependency } from '../support/missing.js';
import { referenceTool } from '../support/tools.js';

const skip =
  !referenceTool('kube-apiserver') || !referenceTool('etcd') || !referenceTool('cluster-api-manager')
    ? missingDependency("kube-apiserver, etcd or cluster-api-manager is not built (npm run tools): Cluster API's Machine controller does not read bootwright's status")
    : !haveCapiCrds
      ? missingDependency("Cluster API's CRDs are not beside the repository: Cluster API's Machine controller does not read bootwright's status")
      : false;

type Machine = { spec: { bootstrap: { dataSecretName?: string } }; status?: { initialization?: { bootstrapDataSecretCreated?: boolean }; conditions?: { type: string; status: string; reason: string; message?: string }[] } };

describe("Cluster API's Machine controller reads bootwright's KubeadmConfig status", { skip, timeout: 300_000 }, () => {
  const planes: ControlPlane[] = [];
  let mgmt: ControlPlane;
  let core: Cabpk | undefined;
  let controller: RunningController | undefined;
  let fixtures: CapiFixtures;

  before(async () => {
    planes.push(...(await Promise.all([startControlPlane(), startControlPlane()])));
    const [m, workload] = planes as [ControlPlane, ControlPlane];
    mgmt = m;
    fixtures = new CapiFixtures(mgmt, workload);
    await installCapiCrds(mgmt);
    core = await startCoreManager(mgmt, []);
    controller = await startController(Kube.fromKubeconfig(mgmt.kubeconfig), { tokenTtlMs: 15 * 60_000, ignitionVersion: '2.3', concurrency: 4, identity: 'core', health: { host: '127.0.0.1', port: 0 } }, pino({ level: 'warn' }));
  });
  after(async () => {
    await controller?.stop();
    await core?.stop();
    await Promise.all(planes.map((p) => p.stop()));
  });

  /** The Machine once `until` holds, or fail with the core manager's log. */
  async function machineWhen(name: string, until: (m: Machine) => boolean): Promise<Machine> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const m = (await get(mgmt, CORE, 'machines', 'default', name)) as unknown as Machine;
      if (until(m)) return m;
      if (Date.now() > deadline) assert.fail(`Machine ${name}: ${JSON.stringify(m.status)}\n${core?.logs().slice(-3000) ?? ''}`);
      await sleep(250);
    }
  }
  const bootstrapReady = (m: Machine) => m.status?.conditions?.find((c) => c.type === 'BootstrapConfigReady');

  it('a config that renders: the Machine names its data Secret and is BootstrapConfigReady', async () => {
    await fixtures.cluster('core');
    await fixtures.clusterStatus('core', { initialization: { infrastructureProvisioned: true } });
    await fixtures.machine('core', 'core-cp-a', 'control-plane');
    const m = await machineWhen('core-cp-a', (x) => x.spec.bootstrap.dataSecretName !== undefined && bootstrapReady(x)?.status === 'True');
    assert.equal(m.spec.bootstrap.dataSecretName, 'core-cp-a');
    assert.equal(m.status?.initialization?.bootstrapDataSecretCreated, true);
    assert.ok(await get(mgmt, 'v1', 'secrets', 'default', 'core-cp-a'));
  });

  it('a config that cannot render: the Machine says why, with the field path', async () => {
    await fixtures.cluster('broken');
    await fixtures.clusterStatus('broken', { initialization: { infrastructureProvisioned: true } });
    const spec = { ...controlPlaneSpec('v1beta2'), files: [{ path: '/etc/kubernetes/pki/ca.key', content: 'not a key\n' }] };
    await fixtures.machine('broken', 'broken-cp-a', 'control-plane', spec);
    const m = await machineWhen('broken-cp-a', (x) => bootstrapReady(x)?.status === 'False' && (bootstrapReady(x)?.message ?? '').includes('spec.files[0].path'));
    assert.equal(m.spec.bootstrap.dataSecretName, undefined);
    assert.match(bootstrapReady(m)!.message!, /cannot render the bootstrap data: spec\.files\[0\]\.path: /);
  });
});
