/**
 * Write-time checks of the inventory (issue 11 C): a cluster, profile or machine that
 * cannot render, or could never boot, is refused when written (422 naming the field),
 * not when the machine first boots.
 *
 * - **Machine fields** ({@link machineFieldProblems}): node labels and taints in
 *   Kubernetes' own syntax (a label value cannot smuggle a second label into kubelet's
 *   `--node-labels k=v,k2=v2`), the advertise address an IP address (kubeadm's
 *   `localAPIEndpoint.advertiseAddress`).
 * - **Profile boot section** ({@link bootProblems}): the iPXE script is built as `/ipxe`
 *   builds it (ipxe.ts `machineScript`): kernel arguments without white space or `#`, no
 *   `initrd=` or bootwright's own keys, kernel and initrd URLs iPXE can fetch, the
 *   kernel command line within Linux's limit.
 * - **Cluster workload access**: a `workloadKubeconfig` the service can reach with its
 *   settings (src/kube/workload.ts `problems`).
 * - **The combination** ({@link renderCheck}): the machine, its cluster and its profile
 *   are assembled and rendered exactly as the boot routes render them (the profile's
 *   format; no platform limit, since the pointer config exists for that), and the boot
 *   script is built with the machine's own signed URL.
 *
 * A profile is also render-checked on its own, with a placeholder cluster (problems of
 * the placeholder are dropped), so kubeadm overrides of the wrong shape, bad commands and
 * files are refused before any machine uses it. A cluster or profile change render-checks
 * every machine that names it, at most `maxMachines` (over it: a 422 naming the limit),
 * one assembly and one render each: linear in the number of affected machines.
 *
 * The checks read the store, then the write happens: a machine written meanwhile by
 * another request is checked by its own write.
 */
import { isIP } from 'node:net';
import { bootFormat } from '../boot/ipxe.js';
import { type BootMachine, storedMachineScript } from '../boot/machine.js';
import { bootstrapUrl, INCARNATION_HEX } from '../boot/sign.js';
import { type FieldProblem, RequestError } from '../errors.js';
import { WorkloadClusters } from '../kube/workload.js';
import { renderNodeBootstrap } from '../render.js';
import { RULES_VERSION } from '../rules.js';
import { type AssemblyParts, machineNodeBootstrap, ruleLevels, withStandInToken } from './assemble.js';
import { MissingReferenceError, type MissingReference, NotFoundError } from './errors.js';
import type { ClusterSpec, MachineSpec, ProfileSpec, ResourceKind, StoredResource } from './resources.js';
import type { ResourceInput, SpecOf, Store } from './store.js';

/** Kubernetes label key: optional DNS subdomain prefix and `/`, then a name of at most 63 characters. */
const LABEL_KEY = /^(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
/** Kubernetes label value (also a taint value): empty, or at most 63 characters of `[-A-Za-z0-9_.]`, alphanumeric at both ends. */
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/** Machines render-checked between two turns of the event loop. */
const YIELD_EVERY = 20;

/** What the checks need from the service. */
export interface WriteCheckContext {
  store: Store;
  /** Most machines one cluster or profile write render-checks (`BOOTWRIGHT_WRITE_CHECK_MAX_MACHINES`). */
  maxMachines: number;
  /** The service's base URL as machines reach it (boot scripts and signed URLs). */
  baseUrl: string;
  /** The URL-signing key and lifetime, for the signed URL a boot script carries. */
  signingKey: Buffer;
  signedUrlSeconds: number;
  /**
   * The service's workload clusters, which say whether a cluster's `workloadKubeconfig`
   * can be reached with the service's settings; absent, a service with none set (a
   * cluster naming one is refused).
   */
  workloads?: Pick<WorkloadClusters, 'problems'>;
}

/**
 * Problems with a machine's own values, at machine paths (`spec.nodeLabels.<key>`,
 * `spec.taints[i].key`, `spec.advertiseAddress`). Kubernetes' syntax (apimachinery
 * `IsQualifiedName`, `IsValidLabelValue`): keys are qualified names, values at most 63
 * characters of letters, digits, `-`, `_`, `.`, so `,` and `=` never reach kubelet's
 * `--node-labels`. Taint keys are qualified names and values label values.
 */
export function machineFieldProblems(spec: MachineSpec): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const [key, value] of Object.entries(spec.nodeLabels)) {
    if (!LABEL_KEY.test(key)) problems.push({ path: `spec.nodeLabels.${key}`, message: 'the key must be a Kubernetes label key ([prefix/]name, name at most 63 letters, digits, "-", "_", ".")' });
    if (!LABEL_VALUE.test(value)) {
      problems.push({ path: `spec.nodeLabels.${key}`, message: 'must be a Kubernetes label value: at most 63 letters, digits, "-", "_", ".", starting and ending alphanumeric (a "," or "=" would add another label)' });
    }
  }
  spec.taints.forEach((t, i) => {
    if (!LABEL_KEY.test(t.key)) problems.push({ path: `spec.taints[${i}].key`, message: 'must be a Kubernetes qualified name ([prefix/]name, name at most 63 letters, digits, "-", "_", ".")' });
    if (t.value !== undefined && !LABEL_VALUE.test(t.value)) problems.push({ path: `spec.taints[${i}].value`, message: 'must be a Kubernetes label value: at most 63 letters, digits, "-", "_", "."' });
  });
  if (spec.advertiseAddress !== undefined && isIP(spec.advertiseAddress) === 0) {
    problems.push({ path: 'spec.advertiseAddress', message: 'must be an IPv4 or IPv6 address (kubeadm localAPIEndpoint.advertiseAddress)' });
  }
  return problems;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Problems with one `node-labels` value (`k=v,k2=v2`) at `path`. */
function nodeLabelsProblems(value: unknown, path: string): FieldProblem[] {
  if (typeof value !== 'string' || value === '') return [];
  const bad = value.split(',').findIndex((term) => {
    const eq = term.indexOf('=');
    return eq < 0 || !LABEL_KEY.test(term.slice(0, eq)) || !LABEL_VALUE.test(term.slice(eq + 1));
  });
  return bad < 0 ? [] : [{ path, message: `label ${bad + 1} is not key=value with a Kubernetes label key and value` }];
}

/**
 * Problems with the values of a (schema-valid, assembled) NodeBootstrap's kubeadm
 * overrides that kubeadm or kubelet would refuse only on the node, at their
 * `spec.kubeadm...` paths: `nodeRegistration.taints[i]` keys and values,
 * `kubeletExtraArgs` `node-labels` terms. The values kubeadm itself checks when it loads
 * a configuration (an advertise address, a subnet, an endpoint) are the builder's rule
 * `kubeadm-value` (src/bootstrap/kubeadm/values.ts); other shapes are the builder's too.
 */
export function nodeValueProblems(kubeadm: Obj | undefined): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const key of ['initConfiguration', 'joinConfiguration']) {
    const config = kubeadm?.[key];
    if (!isObj(config)) continue;
    const at = `spec.kubeadm.${key}`;
    const registration = config.nodeRegistration;
    if (isObj(registration)) {
      if (Array.isArray(registration.taints)) {
        registration.taints.forEach((t: unknown, i) => {
          if (!isObj(t)) return;
          if (typeof t.key === 'string' && !LABEL_KEY.test(t.key)) problems.push({ path: `${at}.nodeRegistration.taints[${i}].key`, message: 'must be a Kubernetes qualified name' });
          if (typeof t.value === 'string' && !LABEL_VALUE.test(t.value)) problems.push({ path: `${at}.nodeRegistration.taints[${i}].value`, message: 'must be a Kubernetes label value' });
        });
      }
      const args = registration.kubeletExtraArgs;
      if (isObj(args)) problems.push(...nodeLabelsProblems(args['node-labels'], `${at}.nodeRegistration.kubeletExtraArgs.node-labels`));
      if (Array.isArray(args)) {
        args.forEach((a: unknown, i) => {
          if (isObj(a) && a.name === 'node-labels') problems.push(...nodeLabelsProblems(a.value, `${at}.nodeRegistration.kubeletExtraArgs[${i}].value`));
        });
      }
    }
  }
  return problems;
}

/**
 * Problems building the iPXE script of `profile` for `machine` as `/ipxe` builds it
 * (src/boot/machine.ts `storedMachineScript`, with the machine's signed bootstrap URL), at
 * `boot.*` and `spec.kernelArgs[i]` paths; [] without a boot section. Without a machine (a
 * profile checked on its own), any well-formed `${name}` is taken for a machine variable.
 */
export function bootProblems(
  profile: ProfileSpec,
  machine: { name: string; spec: BootMachine } | undefined,
  ctx: Pick<WriteCheckContext, 'baseUrl' | 'signingKey' | 'signedUrlSeconds'>,
): FieldProblem[] {
  const boot = profile.boot;
  if (!boot) return [];
  const format = bootFormat(profile.output?.format);
  try {
    // The incarnation is not known before the machine is stored; any one has the same length.
    const url = bootstrapUrl(format, ctx.baseUrl, machine?.name ?? 'placeholder', ctx.signingKey, ctx.signedUrlSeconds, undefined, undefined, '0'.repeat(INCARNATION_HEX));
    storedMachineScript({ ...profile, boot }, machine, url, ctx.baseUrl, ctx.baseUrl);
    return [];
  } catch (e) {
    if (e instanceof RequestError) return e.problems;
    throw e;
  }
}

/**
 * Render-check one machine with its cluster and profile: machine fields, assembly and
 * validation, the kubeadm override values ({@link nodeValueProblems}), the render the
 * boot routes do, and the boot script.
 *
 * @returns the problems, at NodeBootstrap paths (`spec.kubeadm...`), machine paths
 *   (`spec.nodeLabels...`) or `boot.*`; [] when the machine can boot.
 * @throws whatever is not the caller's mistake (a store or renderer fault)
 */
export function renderCheck(parts: AssemblyParts, ctx: Pick<WriteCheckContext, 'baseUrl' | 'signingKey' | 'signedUrlSeconds'>): FieldProblem[] {
  const own = machineFieldProblems(parts.machine.spec);
  if (own.length > 0) return own;
  const problems: FieldProblem[] = [];
  try {
    const req = machineNodeBootstrap(withStandInToken(parts));
    problems.push(...nodeValueProblems(req.spec.kubeadm));
    // A stored cluster or profile is excused what it was accepted under (src/rules.ts):
    // a write of another document is not refused for it; the document written is unsaved
    // (this release's rules version), so it is held to every rule.
    const levels = ruleLevels(parts);
    renderNodeBootstrap(req, { format: bootFormat(parts.profile.spec.output?.format), platform: null, ...(levels ? { levels } : {}) });
  } catch (e) {
    if (!(e instanceof RequestError)) throw e;
    problems.push(...e.problems);
  }
  // The placeholder machine of a profile checked on its own has no variables yet.
  problems.push(...bootProblems(parts.profile.spec, parts.machine.spec === PLACEHOLDER_MACHINE ? undefined : parts.machine, ctx));
  return problems;
}

/** A stored-looking resource for a render-check (revision 0: not stored). */
function unsaved<S>(kind: ResourceKind, name: string, spec: S): StoredResource<S> {
  const at = new Date(0).toISOString();
  return { kind, name, labels: {}, revision: 0, spec, rules: RULES_VERSION, createdAt: at, updatedAt: at };
}

/** A cluster every role can join, for checking a profile on its own (its problems are dropped). */
const PLACEHOLDER_CLUSTER: ClusterSpec = {
  name: 'placeholder',
  controlPlaneEndpoint: 'placeholder.invalid:6443',
  bootstrapToken: 'abcdef.0123456789abcdef',
  caCertHashes: [`sha256:${'0'.repeat(64)}`],
  certificateKey: '0'.repeat(64),
};

/** A machine with no values of its own, for checking a profile on its own. */
const PLACEHOLDER_MACHINE: MachineSpec = { selectors: { mac: [], labels: {} }, cluster: 'placeholder', profile: 'placeholder', nodeLabels: {}, taints: [] };

/** `boot.x` (ipxe.ts paths) as a profile field. */
const profilePath = (path: string) => (path === 'boot' || path.startsWith('boot.') ? `spec.${path}` : path);

/**
 * A problem of a render-check of `machine`, as seen from the written document of `kind`:
 * NodeBootstrap `spec.cluster.x` is a cluster's `spec.x`; a profile's fields have the
 * same paths in both; the message names the machine.
 */
function fromMachine(kind: 'Cluster' | 'Profile', machine: string, p: FieldProblem): FieldProblem {
  let path = profilePath(p.path);
  if (kind === 'Cluster' && (path === 'spec.cluster' || path.startsWith('spec.cluster.'))) path = `spec${path.slice('spec.cluster'.length)}`;
  return { path, message: `with machine "${machine}": ${p.message}` };
}

/**
 * Check a write before it is stored (POST and PUT on /v1/clusters|profiles|machines).
 *
 * - Machine: its cluster and profile must exist; {@link renderCheck} with them.
 * - Profile: a render-check on its own (placeholder cluster and machine), then each
 *   machine naming it with its cluster.
 * - Cluster: each machine naming it with its profile.
 *
 * @throws MissingReferenceError (422) for a machine naming a missing cluster or profile;
 *   RequestError (422) naming each field (for clusters and profiles, problems found
 *   with a machine name it in the message, and stop at the first machine that fails), or
 *   naming `metadata.name` when more than `maxMachines` machines would need checking.
 */
export async function checkWrite<K extends ResourceKind>(kind: K, input: ResourceInput<SpecOf<K>>, ctx: WriteCheckContext): Promise<void> {
  if (kind === 'Machine') {
    const spec = input.spec as MachineSpec;
    const [cluster, profile] = await Promise.all([current(ctx.store, 'Cluster', spec.cluster), current(ctx.store, 'Profile', spec.profile)]);
    const missing: MissingReference[] = [];
    if (!cluster) missing.push({ path: 'spec.cluster', kind: 'Cluster', name: spec.cluster });
    if (!profile) missing.push({ path: 'spec.profile', kind: 'Profile', name: spec.profile });
    if (!cluster || !profile) throw new MissingReferenceError(missing, machineFieldProblems(spec));
    const problems = renderCheck({ machine: unsaved('Machine', input.name, spec), cluster, profile }, ctx).map((p) => ({ ...p, path: profilePath(p.path) }));
    if (problems.length > 0) throw new RequestError(problems);
    return;
  }
  if (kind === 'Cluster') {
    // A token is minted at fetch time: the service must be able to reach where it is minted.
    const problems = await (ctx.workloads ?? new WorkloadClusters({})).problems(input.spec as ClusterSpec);
    if (problems.length > 0) throw new RequestError(problems);
  }
  if (kind === 'Profile') {
    const spec = input.spec as ProfileSpec;
    const alone = renderCheck(
      { machine: unsaved('Machine', 'placeholder', PLACEHOLDER_MACHINE), cluster: unsaved('Cluster', 'placeholder', PLACEHOLDER_CLUSTER), profile: unsaved('Profile', input.name, spec) },
      ctx,
    ).filter((p) => p.path !== 'spec.cluster' && !p.path.startsWith('spec.cluster.'));
    if (alone.length > 0) throw new RequestError(alone.map((p) => ({ ...p, path: profilePath(p.path) })));
  }
  const users = await ctx.store.referencedBy(kind, input.name);
  if (users.length > ctx.maxMachines) {
    throw new RequestError([
      {
        path: 'metadata.name',
        message: `is used by ${users.length} machines, more than the ${ctx.maxMachines} a write render-checks (BOOTWRIGHT_WRITE_CHECK_MAX_MACHINES): raise the limit, or move machines to another ${kind.toLowerCase()}`,
      },
    ]);
  }
  // The other part of each machine, read once per name.
  const clusters = new Map<string, StoredResource<ClusterSpec> | undefined>();
  const profiles = new Map<string, StoredResource<ProfileSpec> | undefined>();
  for (const [i, name] of users.entries()) {
    // Renders are synchronous (about 1-2 ms each): let other requests run between batches.
    if (i > 0 && i % YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
    const machine = await current(ctx.store, 'Machine', name);
    if (!machine) continue; // deleted meanwhile
    let parts: AssemblyParts | undefined;
    if (kind === 'Cluster') {
      const p = machine.spec.profile;
      if (!profiles.has(p)) profiles.set(p, await current(ctx.store, 'Profile', p));
      const profile = profiles.get(p);
      if (profile) parts = { machine, cluster: unsaved('Cluster', input.name, input.spec as ClusterSpec), profile };
    } else {
      const c = machine.spec.cluster;
      if (!clusters.has(c)) clusters.set(c, await current(ctx.store, 'Cluster', c));
      const cluster = clusters.get(c);
      if (cluster) parts = { machine, cluster, profile: unsaved('Profile', input.name, input.spec as ProfileSpec) };
    }
    if (!parts) continue;
    const problems = renderCheck(parts, ctx);
    if (problems.length > 0) throw new RequestError(problems.map((p) => fromMachine(kind, name, p)));
  }
}

/** The current revision, or undefined when it does not exist. */
async function current<K extends ResourceKind>(store: Store, kind: K, name: string): Promise<StoredResource<SpecOf<K>> | undefined> {
  try {
    return await store.get(kind, name);
  } catch (e) {
    if (e instanceof NotFoundError) return undefined;
    throw e;
  }
}
