/**
 * A stored machine's NodeBootstrap (issue 4): the machine, its cluster and its profile
 * assembled into the request `POST /v1/render` takes, so a stored machine renders
 * through exactly the same pipeline. Pure: the same three revisions always give the
 * same request, hence the same bytes (DESIGN §4 "a pinned revision renders the same
 * bytes").
 */
import { type FieldProblem, RequestError } from '../errors.js';
import { checkBounds, DEFAULT_DOCUMENT_LIMITS, type DocumentLimits } from '../request/bounds.js';
import { formatPath, validateNodeBootstrap } from '../request/parse.js';
import type { NodeBootstrap } from '../request/schema.js';
import { type RuleLevels, RULES_VERSION } from '../rules.js';
import { type ClusterSpec, type MachineSpec, type ProfileSpec, RESOURCE_API_VERSION, type StoredResource } from './resources.js';

/**
 * A machine's network: its own `spec.network`, else its profile's, whole (never merged:
 * an interface list half from each could name devices neither has). The one rule the
 * assembled request, the `/ipxe` kernel arguments and the NoCloud `network-config` share.
 */
export function machineNetwork(machine: Pick<MachineSpec, 'network'> | undefined, profile: Pick<ProfileSpec, 'network'>): MachineSpec['network'] {
  return machine?.network ?? profile.network;
}

/** The three revisions a machine's bootstrap data comes from. */
export interface AssemblyParts {
  machine: StoredResource<MachineSpec>;
  cluster: StoredResource<ClusterSpec>;
  profile: StoredResource<ProfileSpec>;
  /**
   * The bootstrap token minted for this machine (src/boot/tokens.ts), when its cluster
   * mints them: it is the assembled `spec.cluster.bootstrapToken`, in place of the
   * cluster's static one.
   */
  mintedToken?: string;
}

/**
 * Whether a machine of `role` joins with a token minted for it: its cluster names a
 * workload kubeconfig and it joins (an `init` machine makes the cluster, so there is
 * nothing yet to mint a token in; it keeps the static token, if any).
 */
export function mintsToken(cluster: Pick<ClusterSpec, 'workloadKubeconfig'>, role: ProfileSpec['role']): boolean {
  return cluster.workloadKubeconfig !== undefined && role !== 'init';
}

/**
 * The parts with a stand-in token when the machine would be minted one and has none yet:
 * for checks that render without booting (the write check, `bootwright upgrade check`),
 * so a minting cluster without a static token checks as it will boot. The stand-in has
 * kubeadm's token format and never reaches a machine.
 */
export function withStandInToken(parts: AssemblyParts): AssemblyParts {
  if (parts.mintedToken !== undefined || !mintsToken(parts.cluster.spec, parts.profile.spec.role)) return parts;
  return { ...parts, mintedToken: 'abcdef.0123456789abcdef' };
}

/**
 * The cluster section of the assembled NodeBootstrap: the cluster's spec without the
 * service's own fields (`workloadKubeconfig`, `bootstrapTokenTTL`), with the minted
 * token, when there is one, as `bootstrapToken`.
 */
function assembledCluster(cluster: ClusterSpec, mintedToken: string | undefined): Doc {
  const { workloadKubeconfig: _where, bootstrapTokenTTL: _ttl, ...spec } = structuredClone(cluster);
  return mintedToken === undefined ? spec : { ...spec, bootstrapToken: mintedToken };
}

/**
 * The assembled request is not valid (say, a worker profile with a cluster that has no
 * bootstrap token). A 422: the problems' paths are NodeBootstrap paths
 * (`spec.cluster.*` come from the cluster, `spec.role`, `spec.kubeadm.*`,
 * `spec.provisioning.*` from the profile, machine values from the machine), and
 * `detail` names the three revisions.
 */
export class AssemblyError extends RequestError {
  readonly detail: string;

  constructor(problems: FieldProblem[], parts: AssemblyParts) {
    super(problems);
    this.name = 'AssemblyError';
    const { machine, cluster, profile } = parts;
    this.detail =
      `machine "${machine.name}" revision ${machine.revision} with cluster "${cluster.name}" revision ${cluster.revision} ` +
      `and profile "${profile.name}" revision ${profile.revision} do not make a valid NodeBootstrap`;
  }
}

type Doc = Record<string, unknown>;

const isObject = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A child object of `parent`, created (or replaced when not an object) as needed. */
function child(parent: Doc, key: string): Doc {
  const value = parent[key];
  if (isObject(value)) return value;
  const fresh: Doc = {};
  parent[key] = fresh;
  return fresh;
}

/** Parse a kubelet `--node-labels` value `k=v,k2=v2` (keys in order). */
function parseNodeLabels(value: unknown): [string, string][] {
  if (typeof value !== 'string') return [];
  return value
    .split(',')
    .filter((term) => term.includes('='))
    .map((term) => [term.slice(0, term.indexOf('=')), term.slice(term.indexOf('=') + 1)]);
}

/**
 * `kubeletExtraArgs` with the machine's node labels added to `node-labels`, in the form
 * the profile used (map or `{name, value}` list): the profile's labels first, then the
 * machine's sorted by key, a machine label replacing the profile's of the same key.
 */
function withNodeLabels(args: unknown, labels: Record<string, string>): unknown {
  const machineLabels = Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const merge = (existing: [string, string][]) => {
    const merged = new Map(existing);
    for (const [k, v] of machineLabels) merged.set(k, v);
    return [...merged].map(([k, v]) => `${k}=${v}`).join(',');
  };
  if (args === undefined || args === null) return { 'node-labels': merge([]) };
  if (Array.isArray(args)) {
    const items = args as unknown[];
    const isLabels = (a: unknown) => isObject(a) && a.name === 'node-labels';
    const existing = items.filter(isLabels).flatMap((a) => parseNodeLabels((a as Doc).value));
    const first = items.findIndex(isLabels);
    const rest = items.filter((a) => !isLabels(a));
    const entry = { name: 'node-labels', value: merge(existing) };
    if (first < 0) return [...rest, entry];
    return [...rest.slice(0, first), entry, ...rest.slice(first)];
  }
  if (isObject(args)) return { ...args, 'node-labels': merge(parseNodeLabels(args['node-labels'])) };
  return args; // not an argument shape: the builder reports it, naming the field
}

/**
 * The NodeBootstrap document for a machine, not yet validated.
 *
 * - `metadata.name`: the machine's `nodeName`, else its name;
 * - `spec.role`, `kubernetesVersion`, `kubeadm`, `provisioning`, `output`: the profile's;
 * - `spec.cluster`: the cluster's spec, less the service's own fields, with the
 *   machine's minted token (`parts.mintedToken`) as `bootstrapToken` when it has one;
 * - machine values merged into the kubeadm overrides of the node's configuration
 *   (`initConfiguration` for init, `joinConfiguration` otherwise):
 *   `taints` → `nodeRegistration.taints` (when any), `nodeLabels` →
 *   `nodeRegistration.kubeletExtraArgs` `node-labels`, `advertiseAddress` →
 *   `localAPIEndpoint.advertiseAddress` (init) or
 *   `controlPlane.localAPIEndpoint.advertiseAddress` (control-plane joins);
 * - `spec.network`: the machine's `network`, else the profile's (whole, not merged: an
 *   interface list half from each could name devices neither has).
 *
 * @returns a new plain object; the parts are not changed.
 * @throws AssemblyError naming `spec.advertiseAddress` for a worker machine with an
 *   advertise address (workers serve no API endpoint).
 */
export function assembleNodeBootstrap(parts: AssemblyParts): Doc {
  const { machine, cluster, profile } = parts;
  const m = machine.spec;
  const p = profile.spec;
  const kubeadm: Doc = p.kubeadm ? structuredClone(p.kubeadm) : {};
  const hasLabels = Object.keys(m.nodeLabels).length > 0;
  if (m.taints.length > 0 || hasLabels || m.advertiseAddress !== undefined) {
    const config = child(kubeadm, p.role === 'init' ? 'initConfiguration' : 'joinConfiguration');
    if (m.taints.length > 0) child(config, 'nodeRegistration').taints = m.taints.map((t) => ({ ...t }));
    if (hasLabels) {
      const registration = child(config, 'nodeRegistration');
      registration.kubeletExtraArgs = withNodeLabels(registration.kubeletExtraArgs, m.nodeLabels);
    }
    if (m.advertiseAddress !== undefined) {
      if (p.role === 'worker') {
        throw new AssemblyError([{ path: 'spec.advertiseAddress', message: `applies to init and control-plane machines; profile "${profile.name}" is a worker profile` }], parts);
      }
      const endpoint = p.role === 'init' ? child(config, 'localAPIEndpoint') : child(child(config, 'controlPlane'), 'localAPIEndpoint');
      endpoint.advertiseAddress = m.advertiseAddress;
    }
  }
  const network = machineNetwork(m, p);
  return {
    apiVersion: RESOURCE_API_VERSION,
    kind: 'NodeBootstrap',
    metadata: { name: m.nodeName ?? machine.name },
    spec: {
      role: p.role,
      kubernetesVersion: p.kubernetesVersion,
      cluster: assembledCluster(cluster.spec, parts.mintedToken),
      ...(Object.keys(kubeadm).length > 0 ? { kubeadm } : {}),
      ...(p.provisioning ? { provisioning: structuredClone(p.provisioning) } : {}),
      ...(p.output ? { output: structuredClone(p.output) } : {}),
      ...(network ? { network: structuredClone(network) } : {}),
    },
  };
}

/**
 * The rules versions a machine's three revisions were accepted under (src/rules.ts), or
 * undefined when all three were accepted under this release's rules (nothing to excuse).
 */
export function ruleLevels(parts: AssemblyParts): RuleLevels | undefined {
  const levels = { cluster: parts.cluster.rules, profile: parts.profile.rules, machine: parts.machine.rules };
  return levels.cluster >= RULES_VERSION && levels.profile >= RULES_VERSION && levels.machine >= RULES_VERSION ? undefined : levels;
}

/**
 * The validated NodeBootstrap for a machine: each stored spec held to the document
 * limits (a document stored before the limits, or under larger ones, is refused rather
 * than walked without bound: a safety rule, DESIGN §8), {@link assembleNodeBootstrap},
 * then `validateNodeBootstrap` (the schema and the role checks of POST /v1/render), which
 * excuses what the revisions were accepted under ({@link ruleLevels}).
 *
 * @param limits the document limits ({@link checkBounds}; default the configuration's defaults).
 * @throws AssemblyError (422) with every problem, by NodeBootstrap path, or by stored
 *   document path (`profile.spec.provisioning.files`) for one over a limit.
 */
export function machineNodeBootstrap(parts: AssemblyParts, limits: DocumentLimits = DEFAULT_DOCUMENT_LIMITS): NodeBootstrap {
  try {
    for (const [name, stored] of [['cluster', parts.cluster], ['profile', parts.profile], ['machine', parts.machine]] as const) {
      checkBounds(stored.spec, limits, (path) => formatPath([name, 'spec', ...path]));
    }
    const doc = assembleNodeBootstrap(parts);
    const levels = ruleLevels(parts);
    return validateNodeBootstrap(doc, levels ? { levels } : {});
  } catch (e) {
    if (e instanceof RequestError) throw new AssemblyError(e.problems, parts);
    throw e;
  }
}
