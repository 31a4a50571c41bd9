/**
 * The published Cluster API templates of the corpus (test/fixtures/capi-templates/,
 * sources in each header) through `bootwright controller`, end to end on real API
 * servers: each KubeadmControlPlane's `kubeadmConfigSpec` becomes the KubeadmConfig of an
 * initialising control-plane Machine (as KubeadmControlPlane clones it: no
 * joinConfiguration), each KubeadmConfigTemplate the KubeadmConfig of a MachineDeployment's
 * worker Machine (joining an initialised control plane), v1beta1 templates converted as
 * CABPK's conversion webhook converts them (test/support/capi-convert.ts) and created with
 * strict field validation; a template's v1beta1 `clusterConfiguration.networking` is its
 * Cluster's `clusterNetwork`, where v1beta2 reads it. Templates with `format: ignition` carry bootwright's
 * annotation `bootstrap.bootwright.dev/ignition-version: "3"` and get Ignition v3.
 *
 * Only the running controller acts (watches, queue, reconciler); each data Secret's
 * `value` then passes the same checks as the corpus rendered directly
 * (test/support/corpus-check.ts): the real validators, kubeadm on the node's
 * configuration, the node name, literal files. The figure printed at the end: templates
 * reconciled / tried.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kube } from '../../src/kube/client.js';
import { type RunningController, startController } from '../../src/controller/run.js';
import { clusterNetworkOf, kubeadmConfigSpecToV1beta2 } from '../support/capi-convert.js';
import type { ControlPlane } from '../support/controlplane.js';
import { CORPUS, type CorpusCase, fixture, haveCloudInit } from '../support/corpus.js';
import { checkServedData } from '../support/corpus-check.js';
import { capturedLog } from '../support/logs.js';
import { BOOT, CapiFixtures, type Config, create, get, managementSkip, startManagement } from '../support/management.js';
import { missingDependency } from '../support/missing.js';

const skip =
  managementSkip('the corpus reconciled by the controller') ||
  (!haveCloudInit() ? missingDependency('cloud-init is not installed: the corpus reconciled by the controller is not checked') : false);

/** The Kubernetes version of the corpus's substitutions (test/fixtures/capi-templates/README.md). */
const KUBERNETES_VERSION = 'v1.33.2';

/** The KubeadmConfigSpec an object of the corpus carries (KubeadmControlPlane[Template] or KubeadmConfigTemplate). */
function configSpec(file: string): Record<string, unknown> {
  const spec = fixture(file).spec as Record<string, unknown>;
  const template = spec.template as { spec: Record<string, unknown> } | undefined;
  return (spec.kubeadmConfigSpec ?? template?.spec.kubeadmConfigSpec ?? template?.spec ?? spec) as Record<string, unknown>;
}

/** The cases a KubeadmConfig can carry: not refused, and not told their OS beside the spec (Cluster API has no such field). */
const CASES = CORPUS.filter((c) => !c.refused && c.os === undefined && c.role !== 'control-plane');

describe('the corpus of published templates, reconciled by bootwright controller', { skip, timeout: 600_000 }, () => {
  let mgmt: ControlPlane;
  let fixtures: CapiFixtures;
  let controller: RunningController | undefined;
  let stop: (() => Promise<void>) | undefined;
  const { log, lines: logLines } = capturedLog('info');
  const reconciled = new Set<string>();

  before(async () => {
    const m = await startManagement();
    ({ mgmt, stop } = m);
    fixtures = new CapiFixtures(mgmt, m.workload);
    controller = await startController(Kube.fromKubeconfig(mgmt.kubeconfig), { tokenTtlMs: 15 * 60_000, ignitionVersion: '2.3', concurrency: 10, identity: 'corpus', health: { host: '127.0.0.1', port: 0 } }, log);
  });
  after(async () => {
    await controller?.stop();
    await stop?.();
  });

  /** Create the case's cluster, Secrets, Machine and KubeadmConfig; returns the config's name. */
  async function arrange(c: CorpusCase, index: number): Promise<string> {
    const cluster = `corpus-${String(index)}`;
    const clusterNetwork = clusterNetworkOf(configSpec(c.file));
    await fixtures.cluster(cluster, clusterNetwork ? { clusterNetwork } : {});
    const initialised = c.role === 'worker' ? { controlPlaneInitialized: true } : {};
    await fixtures.clusterStatus(cluster, { initialization: { infrastructureProvisioned: true, ...initialised } });
    for (const secret of c.secrets?.() ?? []) {
      const name = (secret.metadata as { name: string }).name;
      if (!(await get(mgmt, 'v1', 'secrets', 'default', name))) await create(mgmt, 'v1', 'secrets', secret as Parameters<typeof create>[3]);
    }
    const spec = kubeadmConfigSpecToV1beta2(configSpec(c.file));
    // KubeadmControlPlane's first Machine: its spec without the joinConfiguration.
    if (c.role === 'init') delete spec.joinConfiguration;
    const annotations: Record<string, string> = c.format === 'ignition' ? { 'bootstrap.bootwright.dev/ignition-version': '3' } : {};
    const name = `${cluster}-${c.role === 'init' ? 'cp' : 'md-0'}-a`;
    await fixtures.machine(cluster, name, c.role === 'init' ? 'control-plane' : 'worker', spec, annotations);
    return name;
  }

  /** The data Secret's value once written; fails with the config's conditions when it is refused. */
  async function data(name: string): Promise<string> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const secret = (await get(mgmt, 'v1', 'secrets', 'default', name)) as { data: Record<string, string> } | undefined;
      if (secret) return Buffer.from(secret.data.value!, 'base64').toString('utf8');
      const config = (await get(mgmt, BOOT, 'kubeadmconfigs', 'default', name)) as Config;
      const refused = config.status?.conditions?.find((x) => x.type === 'DataSecretAvailable' && x.message?.startsWith('cannot render'));
      if (refused) assert.fail(`${name}: ${refused.message ?? ''}`);
      if (Date.now() > deadline) assert.fail(`${name}: no data Secret within 60 s; conditions ${JSON.stringify(config.status?.conditions)}`);
      await sleep(100);
    }
  }

  CASES.forEach((c, index) => {
    it(`${c.file}: ${c.role === 'init' ? 'KubeadmControlPlane init' : 'MachineDeployment worker'}, ${c.format === 'ignition' ? 'Ignition v3' : c.format}`, async () => {
      const name = await arrange(c, index);
      const body = await data(name);
      const ignitionVersion = c.format === 'ignition' ? (JSON.parse(body) as { ignition: { version: string } }).ignition.version : undefined;
      if (ignitionVersion !== undefined) assert.match(ignitionVersion, /^3\.\d\.0$/);
      else assert.ok(body.startsWith('#cloud-config\n') || body.startsWith('## template: jinja\n#cloud-config\n'), body.slice(0, 80));
      const secret = (await get(mgmt, 'v1', 'secrets', 'default', name)) as unknown as { type: string; data: Record<string, string> };
      assert.equal(secret.type, 'cluster.x-k8s.io/secret');
      assert.equal(Buffer.from(secret.data.format!, 'base64').toString('utf8'), c.format === 'ignition' ? 'ignition' : 'cloud-config');
      await checkServedData(c, body, ignitionVersion, KUBERNETES_VERSION);
      reconciled.add(c.file);
    });
  });

  it('the figure: templates reconciled / tried, and nothing logged at error level', (t) => {
    t.diagnostic(`controller corpus: ${String(reconciled.size)}/${String(CASES.length)} published templates reconciled end to end (${String(CASES.filter((c) => c.format === 'ignition').length)} in Ignition v3); ${String(CORPUS.length - CASES.length)} not expressible as a KubeadmConfig or refused`);
    assert.equal(reconciled.size, CASES.length);
    assert.deepEqual(logLines.filter((l) => l.includes('"level":50')), []);
  });
});
