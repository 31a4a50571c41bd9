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
import pino from 'pino';
import { Kube } from '../../src/kube/client.js';
import { type RunningController, startController } from '../../src/controller/run.js';
import { type Cabpk, startCoreManager } from '../support/cabpk.js';
import { controlPlaneSpec } from '../support/capi.js';
import type { ControlPlane } from '../support/controlplane.js';
import { CapiFixtures, CORE, eventually, get, managementSkip, startManagement } from '../support/management.js';

const skip = managementSkip("Cluster API's Machine controller reading bootwright's status", ['cluster-api-manager']);

type Machine = { spec: { bootstrap: { dataSecretName?: string } }; status?: { initialization?: { bootstrapDataSecretCreated?: boolean }; conditions?: { type: string; status: string; reason: string; message?: string }[] } };

describe("Cluster API's Machine controller reads bootwright's KubeadmConfig status", { skip, timeout: 300_000 }, () => {
  let mgmt: ControlPlane;
  let core: Cabpk | undefined;
  let controller: RunningController | undefined;
  let fixtures: CapiFixtures;
  let stop: (() => Promise<void>) | undefined;

  before(async () => {
    const m = await startManagement();
    ({ mgmt, stop } = m);
    fixtures = new CapiFixtures(mgmt, m.workload);
    core = await startCoreManager(mgmt, []);
    controller = await startController(Kube.fromKubeconfig(mgmt.kubeconfig), { tokenTtlMs: 15 * 60_000, ignitionVersion: '2.3', concurrency: 4, identity: 'core', health: { host: '127.0.0.1', port: 0 } }, pino({ level: 'warn' }));
  });
  after(async () => {
    await controller?.stop();
    await core?.stop();
    await stop?.();
  });

  /** The Machine once `until` holds, or fail with its status and the core manager's log. */
  async function machineWhen(name: string, until: (m: Machine) => boolean): Promise<Machine> {
    const read = async () => (await get(mgmt, CORE, 'machines', 'default', name)) as unknown as Machine;
    try {
      return await eventually(`Machine ${name}`, async () => {
        const m = await read();
        return until(m) ? m : undefined;
      }, 60_000);
    } catch (e) {
      assert.fail(`${(e as Error).message}: ${JSON.stringify((await read()).status)}\n${core?.logs().slice(-3000) ?? ''}`);
    }
  }
  const bootstrapReady = (m: Machine) => m.status?.conditions?.find((c) => c.type === 'BootstrapConfigReady');

  it('a config that renders: the Machine names its data Secret and is BootstrapConfigReady', async () => {
    await fixtures.cluster('core');
    await fixtures.clusterStatus('core', { initialization: { infrastructureProvisioned: true } });
    await fixtures.machine('core', 'core-cp-a', 'control-plane');
    // The core manager writes spec (dataSecretName) and status (conditions, initialization)
    // in separate requests, so wait for all three rather than read between the writes.
    const m = await machineWhen(
      'core-cp-a',
      (x) => x.spec.bootstrap.dataSecretName !== undefined && bootstrapReady(x)?.status === 'True' && x.status?.initialization?.bootstrapDataSecretCreated !== undefined,
    );
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
