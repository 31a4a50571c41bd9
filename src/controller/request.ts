/**
 * A KubeadmConfig and what the controller read around it → the NodeBootstrap request
 * bootwright renders (DESIGN §2, Cluster API shape: `spec.kubeadmConfig`), so the
 * controller's data is exactly what `POST /v1/render` and `bootwright render` give for
 * the same input. The cluster context comes from where CABPK takes it
 * (`reconcileTopLevelObjectSettings`, `reconcileDiscovery`):
 *
 * - `cluster.name`, `controlPlaneEndpoint` and `network` from the Cluster
 *   (`spec.controlPlaneEndpoint`, `spec.clusterNetwork`); the config's own
 *   clusterConfiguration wins where it sets them, as in CABPK;
 * - `kubernetesVersion` from the owner (`Machine.spec.version`);
 * - `bootstrapToken`, `caCertHashes` and `certificates` as the reconcile found them;
 * - `secrets`: the Secrets that `files[].contentFrom` and `users[].passwdFrom` name, read
 *   from the config's namespace.
 *
 * Problems are then those of the HTTP API, at the KubeadmConfig's own field paths
 * ({@link configFieldPath}).
 */
import type { FieldProblem } from '../errors.js';
import type { ClusterInput, Role } from '../request/schema.js';
import { type Cluster, controlPlaneEndpoint, type KubeadmConfig } from './capi.js';
import type { Kube } from '../kube/client.js';

/** What the reconcile gathered for one render. */
export interface RequestContext {
  config: KubeadmConfig;
  /** The node's name: the owner Machine's name. */
  nodeName: string;
  role: Role;
  kubernetesVersion: string;
  cluster: Cluster;
  bootstrapToken?: string;
  caCertHashes?: string[];
  certificates?: ClusterInput['certificates'];
  /** The referenced Secrets (core/v1 objects), from {@link referencedSecrets}. */
  secrets: Record<string, unknown>[];
}

/**
 * The Secrets a KubeadmConfig's `files[].contentFrom` and `users[].passwdFrom` name, read
 * from its namespace; a missing one is left out, so the render names the reference
 * (`spec.files[0].contentFrom.secret.name`), as the HTTP API does.
 */
export async function referencedSecrets(kube: Kube, config: KubeadmConfig): Promise<Record<string, unknown>[]> {
  const namespace = config.metadata.namespace!;
  const names = new Set<string>();
  for (const f of config.spec?.files ?? []) if (f.contentFrom?.secret.name) names.add(f.contentFrom.secret.name);
  for (const u of config.spec?.users ?? []) if (u.passwdFrom?.secret.name) names.add(u.passwdFrom.secret.name);
  const out: Record<string, unknown>[] = [];
  for (const name of [...names].sort()) {
    const secret = await kube.get('v1', 'Secret', namespace, name);
    if (secret) out.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, ...(secret.data ? { data: secret.data } : {}) });
  }
  return out;
}

/** The request (before validation; {@link ../request/parse.js validateNodeBootstrap} checks it). */
export function bootstrapRequest(ctx: RequestContext): Record<string, unknown> {
  const { cluster, config } = ctx;
  const net = cluster.spec.clusterNetwork;
  const network = {
    ...(net?.pods?.cidrBlocks?.length ? { podSubnet: net.pods.cidrBlocks.join(',') } : {}),
    ...(net?.services?.cidrBlocks?.length ? { serviceSubnet: net.services.cidrBlocks.join(',') } : {}),
    ...(net?.serviceDomain ? { dnsDomain: net.serviceDomain } : {}),
  };
  const endpoint = controlPlaneEndpoint(cluster);
  const clusterInput: Record<string, unknown> = {
    name: cluster.metadata.name,
    ...(endpoint ? { controlPlaneEndpoint: endpoint } : {}),
    ...(Object.keys(network).length > 0 ? { network } : {}),
    ...(ctx.bootstrapToken ? { bootstrapToken: ctx.bootstrapToken } : {}),
    ...(ctx.caCertHashes?.length ? { caCertHashes: ctx.caCertHashes } : {}),
    ...(ctx.certificates && Object.keys(ctx.certificates).length > 0 ? { certificates: ctx.certificates } : {}),
  };
  return {
    apiVersion: 'bootwright.dev/v1alpha1',
    kind: 'NodeBootstrap',
    metadata: { name: ctx.nodeName },
    spec: {
      role: ctx.role,
      kubernetesVersion: ctx.kubernetesVersion,
      // As CABPK: a node the config does not name is named by kubeadm, after its hostname.
      nodeName: { fromHostname: true },
      cluster: clusterInput,
      kubeadmConfig: { apiVersion: config.apiVersion, kind: 'KubeadmConfig', metadata: { name: config.metadata.name, namespace: config.metadata.namespace }, spec: config.spec ?? {} },
      ...(ctx.secrets.length > 0 ? { secrets: ctx.secrets } : {}),
    },
  };
}

/**
 * A problem's field path as the KubeadmConfig's user wrote it: `spec.kubeadmConfig.spec.X`
 * → `spec.X`; the request's cluster context → what the controller took it from.
 */
export function configFieldPath(path: string): string {
  return path
    .replace(/spec\.kubeadmConfig\.spec(?=$|[.[\s,;:)])/g, 'spec')
    .replace(/spec\.kubernetesVersion(?=$|[.[\s,;:)])/g, "the owner's spec.version")
    .replace(/spec\.cluster\.(controlPlaneEndpoint|network)(?=$|[.[\s,;:)])/g, (_m, f: string) => (f === 'network' ? 'Cluster spec.clusterNetwork' : 'Cluster spec.controlPlaneEndpoint'))
    .replace(/spec\.cluster\.certificates(?=$|[.[\s,;:)])/g, 'the cluster certificate Secrets');
}

/** Problems as one condition message: `path: message; …` (at most `max` characters). */
export function problemsMessage(problems: readonly FieldProblem[], max = 1024): string {
  const text = problems.map((p) => `${configFieldPath(p.path)}: ${configFieldPath(p.message)}`).join('; ');
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
