/**
 * A Cluster API management cluster for controller tests: the test control plane
 * (controlplane.ts) with Cluster API's own CRDs installed as clusterctl installs them
 * (the CRD bases of core, CABPK and KCP from `../shared/capi-crds/v1.14.0`, plus the
 * contract labels `cluster.x-k8s.io/v1beta1: v1beta1` and `cluster.x-k8s.io/v1beta2:
 * v1beta2` that each `config/crd/kustomization.yaml` adds), and objects created the way
 * Cluster API's controllers create them: control-plane Machines owned by their
 * KubeadmControlPlane (workers carry their MachineDeployment's label; no MachineSet is
 * made), KubeadmConfigs owned by their Machine, labels `cluster.x-k8s.io/cluster-name`
 * and `cluster.x-k8s.io/control-plane`, configs cloned from templates with the
 * `cluster.x-k8s.io/cloned-from-*` annotations, and the cluster's certificate Secrets
 * and `<cluster>-kubeconfig` as KubeadmControlPlane writes them.
 *
 * The CRDs are other projects' files: read from beside the repository, never committed.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import { controlPlaneSpec, workerTemplate } from './capi.js';
import { type ControlPlane, startControlPlane } from './controlplane.js';
import { missingDependency } from './missing.js';
import { example } from './requests.js';
import { referenceTool, type ReferenceToolName } from './tools.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Where Cluster API's CRDs are (`$BOOTWRIGHT_CAPI_CRDS_DIR`, else `../shared/capi-crds/v1.14.0`). */
export const CAPI_CRDS_DIR = process.env.BOOTWRIGHT_CAPI_CRDS_DIR ?? path.resolve(repoRoot, '../shared/capi-crds/v1.14.0');

/** Whether the CRDs are there. */
export const haveCapiCrds = existsSync(path.join(CAPI_CRDS_DIR, 'bootstrap.cluster.x-k8s.io_kubeadmconfigs.yaml'));

type Obj = Record<string, unknown> & { metadata: Record<string, unknown> & { name: string } };

/**
 * For node:test's `skip`: false when kube-apiserver, etcd, the `tools` named and Cluster
 * API's CRDs are all there; else one loud `*** SKIPPED` line saying that `what` is not
 * tested (a failure under CI, test/support/missing.ts).
 */
export function managementSkip(what: string, tools: readonly ReferenceToolName[] = []): string | false {
  const missing = (['kube-apiserver', 'etcd', ...tools] as ReferenceToolName[]).filter((t) => referenceTool(t) === undefined);
  if (missing.length > 0) return missingDependency(`${missing.join(', ')} not built (npm run tools): ${what} is not tested`);
  if (!haveCapiCrds) return missingDependency(`Cluster API's CRDs are not beside the repository (${CAPI_CRDS_DIR}): ${what} is not tested`);
  return false;
}

/** Poll `fn` every 100 ms until it returns a value other than undefined; fail after `ms` naming `what`. */
export async function eventually<T>(what: string, fn: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${String(ms)} ms waiting for ${what}`);
    await sleep(100);
  }
}

/** A management API server with Cluster API's CRDs installed, and a workload API server; stop both when done. */
export async function startManagement(): Promise<{ mgmt: ControlPlane; workload: ControlPlane; stop: () => Promise<void> }> {
  const started = await Promise.allSettled([startControlPlane(), startControlPlane()]);
  const failed = started.find((r) => r.status === 'rejected');
  if (failed) {
    // The one that did start must not outlive the test: its processes would keep the file running.
    await Promise.all(started.flatMap((r) => (r.status === 'fulfilled' ? [r.value.stop()] : [])));
    throw failed.reason;
  }
  const [mgmt, workload] = started.map((r) => (r as PromiseFulfilledResult<ControlPlane>).value) as [ControlPlane, ControlPlane];
  const stop = () => Promise.all([mgmt.stop(), workload.stop()]).then(() => undefined);
  try {
    await installCapiCrds(mgmt);
  } catch (e) {
    await stop();
    throw e;
  }
  return { mgmt, workload, stop };
}

/** Install every CRD of the directory (with the contract labels) and wait until each is Established. */
export async function installCapiCrds(cp: ControlPlane): Promise<void> {
  const names: string[] = [];
  for (const file of readdirSync(CAPI_CRDS_DIR).filter((f) => f.endsWith('.yaml')).sort()) {
    const crd = load(readFileSync(path.join(CAPI_CRDS_DIR, file), 'utf8')) as Obj;
    const versions = (crd.spec as { versions: { name: string }[] }).versions.map((v) => v.name);
    crd.metadata.labels = {
      ...(crd.metadata.labels as Record<string, string> | undefined),
      ...(versions.includes('v1beta1') ? { 'cluster.x-k8s.io/v1beta1': 'v1beta1' } : {}),
      ...(versions.includes('v1beta2') ? { 'cluster.x-k8s.io/v1beta2': 'v1beta2' } : {}),
    };
    const res = await cp.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
    if (res.status !== 201) throw new Error(`installing ${file}: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
    names.push(crd.metadata.name);
  }
  const deadline = Date.now() + 60_000;
  for (const name of names) {
    for (;;) {
      const res = await cp.request('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
      const conditions = ((res.body as { status?: { conditions?: { type: string; status: string }[] } }).status?.conditions ?? []);
      if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not Established within 60 s`);
      await sleep(100);
    }
  }
  // Discovery of the new groups can lag behind Established: wait until the kinds are listed.
  for (;;) {
    const res = await cp.request('GET', '/apis/bootstrap.cluster.x-k8s.io/v1beta2');
    if (res.status === 200) break;
    if (Date.now() > deadline) throw new Error('bootstrap.cluster.x-k8s.io/v1beta2 not served within 60 s');
    await sleep(100);
  }
}

/** The REST path of an object (core `v1` or a group version), `/status` when asked. */
export function objectPath(apiVersion: string, plural: string, namespace: string, name?: string, status = false): string {
  const base = apiVersion === 'v1' ? '/api/v1' : `/apis/${apiVersion}`;
  return `${base}/namespaces/${namespace}/${plural}${name ? `/${name}` : ''}${status ? '/status' : ''}`;
}

/**
 * Create an object; returns what the API server stored. With `fieldValidation=Strict`: a
 * field the schema does not have is refused, never silently pruned.
 *
 * @throws on any status but 201
 */
export async function create(cp: ControlPlane, apiVersion: string, plural: string, object: Obj): Promise<Obj> {
  const namespace = (object.metadata.namespace as string | undefined) ?? 'default';
  const res = await cp.request('POST', `${objectPath(apiVersion, plural, namespace)}?fieldValidation=Strict`, { apiVersion, ...object });
  if (res.status !== 201) throw new Error(`creating ${plural}/${object.metadata.name}: ${res.status} ${JSON.stringify(res.body).slice(0, 800)}`);
  return res.body as Obj;
}

/** Read an object, or undefined on 404. */
export async function get(cp: ControlPlane, apiVersion: string, plural: string, namespace: string, name: string): Promise<Obj | undefined> {
  const res = await cp.request('GET', objectPath(apiVersion, plural, namespace, name));
  if (res.status === 404) return undefined;
  if (res.status !== 200) throw new Error(`reading ${plural}/${name}: ${res.status}`);
  return res.body as Obj;
}

/** A JSON merge patch of an object (or its status). */
export async function mergePatch(cp: ControlPlane, apiVersion: string, plural: string, namespace: string, name: string, patch: unknown, status = false): Promise<Obj> {
  const res = await cp.request('PATCH', objectPath(apiVersion, plural, namespace, name, status), patch, 'application/merge-patch+json');
  if (res.status !== 200) throw new Error(`patching ${plural}/${name}: ${res.status} ${JSON.stringify(res.body).slice(0, 800)}`);
  return res.body as Obj;
}

/** Delete an object (200 or 202, or 404 when already gone). */
export async function remove(cp: ControlPlane, apiVersion: string, plural: string, namespace: string, name: string): Promise<void> {
  const res = await cp.request('DELETE', objectPath(apiVersion, plural, namespace, name));
  if (![200, 202, 404].includes(res.status)) throw new Error(`deleting ${plural}/${name}: ${res.status}`);
}

/** An ownerReference to a stored object. */
export function ownerRef(owner: Obj, controller = true): Record<string, unknown> {
  return { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name, uid: owner.metadata.uid, controller, blockOwnerDeletion: true };
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

/** A Secret as Cluster API writes certificates and kubeconfigs (type `cluster.x-k8s.io/secret`). */
export function clusterSecret(name: string, cluster: string, data: Record<string, string>, owner?: Obj): Obj {
  return {
    kind: 'Secret',
    metadata: { name, namespace: 'default', labels: { 'cluster.x-k8s.io/cluster-name': cluster }, ...(owner ? { ownerReferences: [ownerRef(owner)] } : {}) },
    type: 'cluster.x-k8s.io/secret',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
  };
}

/** The cluster's PKI as KubeadmControlPlane stores it: `<cluster>-ca`, `-etcd`, `-proxy`, `-sa`. */
export async function createCertificateSecrets(cp: ControlPlane, cluster: string, pki: Record<'ca' | 'etcdCA' | 'frontProxyCA' | 'serviceAccount', { cert: string; key: string }>, owner?: Obj): Promise<void> {
  const names = { ca: 'ca', etcdCA: 'etcd', frontProxyCA: 'proxy', serviceAccount: 'sa' } as const;
  for (const [field, suffix] of Object.entries(names) as [keyof typeof names, string][]) {
    await create(cp, 'v1', 'secrets', clusterSecret(`${cluster}-${suffix}`, cluster, { 'tls.crt': pki[field].cert, 'tls.key': pki[field].key }, owner));
  }
}

export const CORE = 'cluster.x-k8s.io/v1beta2';
export const BOOT = 'bootstrap.cluster.x-k8s.io/v1beta2';

/** A KubeadmConfig as the tests read it. */
export type Config = Obj & { spec: Record<string, unknown>; status?: { dataSecretName?: string; initialization?: { dataSecretCreated?: boolean }; observedGeneration?: number; conditions?: { type: string; status: string; reason: string; message?: string; observedGeneration?: number }[] } };

/** The cluster's CA and key pairs: those of the repository's init example. */
const PKI = (example('init').spec.cluster as { certificates: Record<'ca' | 'etcdCA' | 'frontProxyCA' | 'serviceAccount', { cert: string; key: string }> }).certificates;

/** Clusters, Machines and KubeadmConfigs in the namespace `default` of a management cluster whose workload cluster is `workload`. */
export class CapiFixtures {
  constructor(
    private readonly mgmt: ControlPlane,
    private readonly workload: ControlPlane,
  ) {}

  /** A Cluster as the topology (or a user) creates it, with a KubeadmControlPlane reference. */
  /**
   * A Cluster with its KubeadmControlPlane (`<name>-control-plane`, the quick start's, at
   * v1.33.2: CABPK reads its version for `contentFormat: Template` files), certificate
   * Secrets and `<name>-kubeconfig` (the workload cluster's admin). `standalone`: no
   * control plane provider (no `controlPlaneRef`, no KubeadmControlPlane, no certificate
   * Secrets: the bootstrap provider makes them), as with standalone control-plane Machines.
   */
  async cluster(name: string, spec: Record<string, unknown> = {}, labels: Record<string, string> = {}, standalone = false): Promise<Obj> {
    if (!standalone) await create(this.mgmt, 'controlplane.cluster.x-k8s.io/v1beta2', 'kubeadmcontrolplanes', {
      kind: 'KubeadmControlPlane',
      metadata: { name: `${name}-control-plane`, namespace: 'default', labels: { 'cluster.x-k8s.io/cluster-name': name, ...labels } },
      spec: {
        version: 'v1.33.2',
        replicas: 1,
        machineTemplate: { spec: { infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DockerMachineTemplate', name: `${name}-control-plane` } } },
        kubeadmConfigSpec: controlPlaneSpec('v1beta2'),
      },
    });
    const c = await create(this.mgmt, CORE, 'clusters', {
      kind: 'Cluster',
      metadata: { name, namespace: 'default', labels },
      spec: {
        controlPlaneEndpoint: { host: '192.0.2.10', port: 6443 },
        clusterNetwork: { pods: { cidrBlocks: ['192.168.0.0/16'] }, services: { cidrBlocks: ['10.96.0.0/12'] }, serviceDomain: 'cluster.local' },
        ...(standalone ? {} : { controlPlaneRef: { apiGroup: 'controlplane.cluster.x-k8s.io', kind: 'KubeadmControlPlane', name: `${name}-control-plane` } }),
        infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DockerCluster', name },
        ...spec,
      },
    });
    if (!standalone) await createCertificateSecrets(this.mgmt, name, PKI, c);
    await create(this.mgmt, 'v1', 'secrets', clusterSecret(`${name}-kubeconfig`, name, { value: this.workload.kubeconfig }, c));
    return c;
  }

  /**
   * Patch the Cluster's status. `initialization.controlPlaneInitialized: true` comes with
   * the `ControlPlaneInitialized` condition, as Cluster API's Cluster controller writes
   * both (CABPK reads the condition, bootwright either).
   */
  async clusterStatus(name: string, status: Record<string, unknown>): Promise<void> {
    const initialised = (status.initialization as { controlPlaneInitialized?: boolean } | undefined)?.controlPlaneInitialized === true;
    const conditions = initialised ? { conditions: [{ type: 'ControlPlaneInitialized', status: 'True', reason: 'Initialized', message: '', lastTransitionTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') }] } : {};
    await mergePatch(this.mgmt, CORE, 'clusters', 'default', name, { status: { ...status, ...conditions } }, true);
  }

  /**
   * A Machine and its KubeadmConfig, as KubeadmControlPlane (control plane: the Machine
   * owned by the cluster's KubeadmControlPlane, when it has one) or a MachineSet (worker,
   * the config cloned from the KubeadmConfigTemplate, the MachineDeployment's label) makes
   * them. No MachineSet object is made: the core manager some tests run would scale it.
   */
  async machine(clusterName: string, name: string, role: 'control-plane' | 'worker', configSpec?: Record<string, unknown>, annotations: Record<string, string> = {}, extraLabels: Record<string, string> = {}): Promise<{ machine: Obj; config: Config }> {
    const labels: Record<string, string> = { 'cluster.x-k8s.io/cluster-name': clusterName, ...(role === 'control-plane' ? { 'cluster.x-k8s.io/control-plane': '' } : { 'cluster.x-k8s.io/deployment-name': `${clusterName}-md-0` }), ...extraLabels };
    const spec = configSpec ?? (role === 'control-plane' ? controlPlaneSpec('v1beta2') : (workerTemplate('v1beta2') as { spec: { template: { spec: Record<string, unknown> } } }).spec.template.spec);
    const kcp = role === 'control-plane' ? await get(this.mgmt, 'controlplane.cluster.x-k8s.io/v1beta2', 'kubeadmcontrolplanes', 'default', `${clusterName}-control-plane`) : undefined;
    const m = await create(this.mgmt, CORE, 'machines', {
      kind: 'Machine',
      metadata: { name, namespace: 'default', labels, ...(kcp ? { ownerReferences: [ownerRef(kcp)] } : {}) },
      spec: {
        clusterName,
        version: 'v1.33.2',
        bootstrap: { configRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfig', name } },
        infrastructureRef: { apiGroup: 'infrastructure.cluster.x-k8s.io', kind: 'DockerMachine', name },
      },
    });
    const cloned = role === 'worker' ? { 'cluster.x-k8s.io/cloned-from-name': `${clusterName}-md-0`, 'cluster.x-k8s.io/cloned-from-groupkind': 'KubeadmConfigTemplate.bootstrap.cluster.x-k8s.io' } : {};
    const config = (await create(this.mgmt, BOOT, 'kubeadmconfigs', {
      kind: 'KubeadmConfig',
      metadata: { name, namespace: 'default', labels, annotations: { ...cloned, ...annotations }, ownerReferences: [ownerRef(m)] },
      // An empty spec is left out, as the v1beta2 types serialise it (\`omitzero\`).
      ...(Object.keys(spec).length > 0 ? { spec } : {}),
    })) as Config;
    return { machine: m, config };
  }
}
