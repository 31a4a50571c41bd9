/**
 * The Cluster API objects the controller reads and writes, in the fields it uses, with
 * Cluster API's own names (core `cluster.x-k8s.io/v1beta2`, CABPK's
 * `bootstrap.cluster.x-k8s.io/v1beta2`; contract in docs/cluster-api.md).
 */
import type { KubeObject } from '../kube/client.js';

export const CORE_API = 'cluster.x-k8s.io/v1beta2';
export const CORE_GROUP = 'cluster.x-k8s.io';
export const BOOTSTRAP_API = 'bootstrap.cluster.x-k8s.io/v1beta2';
export const BOOTSTRAP_GROUP = 'bootstrap.cluster.x-k8s.io';

/** Labels and annotations of Cluster API (`api/core/v1beta2/common_types.go`). */
export const CLUSTER_NAME_LABEL = 'cluster.x-k8s.io/cluster-name';
export const CONTROL_PLANE_LABEL = 'cluster.x-k8s.io/control-plane';
export const WATCH_FILTER_LABEL = 'cluster.x-k8s.io/watch-filter';
export const PAUSED_ANNOTATION = 'cluster.x-k8s.io/paused';

/** The Secret type of Cluster API's bootstrap data and certificates. */
export const CLUSTER_SECRET_TYPE = 'cluster.x-k8s.io/secret';

/**
 * bootwright's annotation on a KubeadmConfig selecting Ignition v3 for `format: ignition`:
 * a spec version (`3.4.0`), or `3` for the lowest 3.x spec that expresses the config.
 * Without it (and without the controller's `--ignition-version`), `format: ignition` is
 * Ignition 2.3, as CABPK writes it.
 */
export const IGNITION_VERSION_ANNOTATION = 'bootstrap.bootwright.dev/ignition-version';

/** A metav1.Condition. */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message?: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** KubeadmConfig (bootstrap.cluster.x-k8s.io/v1beta2). */
export interface KubeadmConfig extends KubeObject {
  spec?: Record<string, unknown> & {
    format?: 'cloud-config' | 'ignition';
    joinConfiguration?: Record<string, unknown> & { discovery?: { bootstrapToken?: { token?: string; apiServerEndpoint?: string; caCertHashes?: string[] }; file?: unknown } };
    initConfiguration?: Record<string, unknown>;
    clusterConfiguration?: Record<string, unknown>;
    files?: { contentFrom?: { secret: { name: string; key: string } } }[];
    users?: { passwdFrom?: { secret: { name: string; key: string } } }[];
  };
  status?: {
    dataSecretName?: string;
    initialization?: { dataSecretCreated?: boolean };
    conditions?: Condition[];
    observedGeneration?: number;
  };
}

/** A reference as v1beta2 writes it (no version: `apiGroup`, `kind`, `name`). */
export interface ContractReference {
  apiGroup: string;
  kind: string;
  name: string;
}

/** Machine (cluster.x-k8s.io/v1beta2). */
export interface Machine extends KubeObject {
  spec: {
    clusterName: string;
    version?: string;
    bootstrap: { configRef?: ContractReference; dataSecretName?: string };
  };
  status?: { nodeRef?: { name: string } };
}

/** MachinePool (cluster.x-k8s.io/v1beta2). */
export interface MachinePool extends KubeObject {
  spec: {
    clusterName: string;
    /** The nodes the pool should have (Cluster API defaults it to 1). */
    replicas?: number;
    template: { spec: { version?: string; bootstrap: { configRef?: ContractReference; dataSecretName?: string } } };
  };
  status?: { nodeRefs?: { name: string }[] };
}

/** Cluster (cluster.x-k8s.io/v1beta2). */
export interface Cluster extends KubeObject {
  spec: {
    paused?: boolean;
    controlPlaneEndpoint?: { host?: string; port?: number };
    controlPlaneRef?: ContractReference;
    clusterNetwork?: { pods?: { cidrBlocks?: string[] }; services?: { cidrBlocks?: string[] }; serviceDomain?: string };
  };
  status?: {
    initialization?: { infrastructureProvisioned?: boolean; controlPlaneInitialized?: boolean };
    conditions?: Condition[];
  };
}

/** The owner of a KubeadmConfig: a Machine or a MachinePool. */
export type ConfigOwner = { kind: 'Machine'; object: Machine } | { kind: 'MachinePool'; object: MachinePool };

/** The owner's Kubernetes version (`spec.version`, `spec.template.spec.version`). */
export function ownerVersion(owner: ConfigOwner): string | undefined {
  return owner.kind === 'Machine' ? owner.object.spec.version : owner.object.spec.template.spec.version;
}

/** The owner's `bootstrap.dataSecretName`, set by Cluster API once the config reported one. */
export function ownerDataSecretName(owner: ConfigOwner): string | undefined {
  return owner.kind === 'Machine' ? owner.object.spec.bootstrap.dataSecretName : owner.object.spec.template.spec.bootstrap.dataSecretName;
}

/**
 * Whether the owner's nodes joined, as CABPK's `ConfigOwner.HasNodeRefs` tells it
 * (v1.14 bootstrap/kubeadm/reconcilers/kubeadmconfig/configowner.go): a Machine's
 * `status.nodeRef`; for a MachinePool, as many `status.nodeRefs` as `spec.replicas`
 * (default 1), so a pool still scaling up keeps its token alive.
 */
export function ownerHasNodes(owner: ConfigOwner): boolean {
  if (owner.kind === 'Machine') return owner.object.status?.nodeRef !== undefined;
  return (owner.object.status?.nodeRefs?.length ?? 0) === (owner.object.spec.replicas ?? 1);
}

/** Whether the owner is a control-plane Machine (label `cluster.x-k8s.io/control-plane`). */
export function isControlPlane(owner: ConfigOwner): boolean {
  return owner.kind === 'Machine' && owner.object.metadata.labels?.[CONTROL_PLANE_LABEL] !== undefined;
}

/** Cluster API's `ControlPlaneInitialized`: the condition, or `status.initialization.controlPlaneInitialized`. */
export function controlPlaneInitialized(cluster: Cluster): boolean {
  return cluster.status?.initialization?.controlPlaneInitialized === true || cluster.status?.conditions?.some((c) => c.type === 'ControlPlaneInitialized' && c.status === 'True') === true;
}

/** Whether the cluster or the object is paused (`spec.paused`, or the `cluster.x-k8s.io/paused` annotation on either). */
export function isPaused(cluster: Cluster, object: KubeObject): boolean {
  return cluster.spec.paused === true || cluster.metadata.annotations?.[PAUSED_ANNOTATION] !== undefined || object.metadata.annotations?.[PAUSED_ANNOTATION] !== undefined;
}

/** `host:port` of `Cluster.spec.controlPlaneEndpoint`, or undefined while it is unset (Cluster API's `IsValid`). */
export function controlPlaneEndpoint(cluster: Cluster): string | undefined {
  const { host, port } = cluster.spec.controlPlaneEndpoint ?? {};
  if (!host || !port) return undefined;
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
