/**
 * Cluster API input → NodeBootstrap (DESIGN §2): a request whose spec carries a
 * Cluster API `kubeadmConfigSpec` (or a whole `kubeadmConfig` object) instead of
 * `kubeadm` + `provisioning` is rewritten into the NodeBootstrap's own fields, the way
 * Cluster API's kubeadm bootstrap provider (CABPK) reads the same spec:
 *
 * - kubeadm configurations: Cluster API's own forms become kubeadm's for the target
 *   kubeadm version (v1beta2 `timeouts.*Seconds` and `bootstrapTokens[].ttlSeconds`,
 *   `*ValidityPeriodDays`; v1beta1 `apiServer.timeoutForControlPlane` and
 *   `discovery.timeout`); a value the target version cannot hold is an error naming it;
 * - a worker's JoinConfiguration gets the `node.cluster.x-k8s.io/uninitialized:NoSchedule`
 *   taint, as CABPK adds it (Cluster API removes it once the Node is initialised);
 * - `files[].contentFormat: Template` is executed; `contentFrom` and `passwdFrom` are read
 *   from the Secrets passed beside the input in `spec.secrets` ({@link indexSecrets});
 * - `format` becomes `spec.output.format`, `ignition` becomes `spec.provisioning.ignition`.
 *
 * Problems found after the rewrite name the fields the caller wrote: see
 * {@link rewriteProblems}.
 */
import { type FieldProblem, RequestError } from '../../errors.js';
import { duration } from '../../bootstrap/kubeadm/types.js';
import { parseKubeVersion, selectKubeadmApiVersion, type KubeadmApiVersion } from '../../bootstrap/kubeadm/version.js';
import { zodProblems } from '../parse.js';
import { type ClusterApiVersion, type KubeadmConfigSpec, kubeadmConfigObjectSchema, kubeadmConfigSpecSchema } from './schema.js';
import { indexSecrets, type SecretIndex, secretText } from './secrets.js';
import { executeTemplate } from './template.js';
import { scanJinja } from '../../provision/cloudinit/jinja.js';
import { metadataVariables } from '../../provision/plan/bootvalues.js';

type Doc = Record<string, unknown>;

/** A file's `encoding` (Cluster API `Encoding`). */
type FileEncoding = 'base64' | 'gzip' | 'gzip+base64';

const isObject = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);

/** The taint CABPK adds to every worker's JoinConfiguration (Cluster API `NodeUninitializedTaint`). */
export const NODE_UNINITIALIZED_TAINT = { key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' } as const;

/** Ordered `[from, to]` field-path prefixes: where a rewritten field came from. */
export type PathRewrite = readonly (readonly [string, string])[];

/** Where each validated Cluster API request's fields came from (by object identity). */
const origins = new WeakMap<object, PathRewrite>();

/** True when the value is a request in Cluster API shape (`spec.kubeadmConfigSpec` or `spec.kubeadmConfig`). */
export function isClusterApiRequest(value: unknown): value is Doc & { spec: Doc } {
  return isObject(value) && isObject(value.spec) && (Object.hasOwn(value.spec, 'kubeadmConfigSpec') || Object.hasOwn(value.spec, 'kubeadmConfig'));
}

/**
 * Rename field paths (and the field paths quoted in messages) from the rewritten
 * request's fields to the ones the caller wrote, e.g. `spec.provisioning.files[0].path`
 * → `spec.kubeadmConfigSpec.files[0].path`.
 */
export function rewriteProblems<P extends FieldProblem>(problems: readonly P[], rewrite: PathRewrite): P[] {
  return problems.map((p) => ({ ...p, path: rewriteText(p.path, rewrite), message: rewriteText(p.message, rewrite) }));
}

/** `text` with every regular expression metacharacter escaped (paths hold `.`, `[` and `]`). */
const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Rename the field paths in one text (a path, a message or a warning); see {@link rewriteProblems}. */
export function rewriteText(text: string, rewrite: PathRewrite): string {
  // Every rule, in order (the more specific first); a renamed path never matches a later
  // rule, since each rule needs its prefix to end at a path boundary.
  return rewrite.reduce((out, [from, to]) => out.replace(new RegExp(`${escapeRegExp(from)}(?=$|[.\\[\\s,;:)])`, 'g'), to), text);
}

/** Remember that `request` was rewritten from Cluster API input (for errors raised later, at render). */
export function rememberClusterApiOrigin(request: object, rewrite: PathRewrite): void {
  origins.set(request, rewrite);
}

/**
 * The rewrite recorded for a validated request, if it came in Cluster API shape.
 * Used by the render step so kubeadm and renderer errors name the caller's fields.
 */
export function clusterApiOrigin(request: object): PathRewrite | undefined {
  return origins.get(request);
}

/** Seconds → a Go duration kubeadm reads (`240s`). */
const seconds = (n: number) => `${n}s`;

/** Cluster API's bounds: `*Seconds` are int32; validity periods 1–1095 days (certificates) and 1–36500 (CAs). */
const MAX_SECONDS = 2 ** 31 - 1;
const MAX_DAYS = { certificateValidityPeriodDays: 1095, caCertificateValidityPeriodDays: 36500 } as const;

/** A whole number of seconds Cluster API accepts (int32, 0 or more). */
const isSeconds = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_SECONDS;

/** The CAPI v1beta2 timeout fields and kubeadm v1beta4's names for them. */
const TIMEOUTS: Record<string, string> = {
  controlPlaneComponentHealthCheckSeconds: 'controlPlaneComponentHealthCheck',
  kubeletHealthCheckSeconds: 'kubeletHealthCheck',
  kubernetesAPICallSeconds: 'kubernetesAPICall',
  etcdAPICallSeconds: 'etcdAPICall',
  tlsBootstrapSeconds: 'tlsBootstrap',
  discoverySeconds: 'discovery',
};

function child(doc: Doc, key: string): Doc {
  if (!isObject(doc[key])) doc[key] = {};
  return doc[key] as Doc;
}

/** The kubeadm API version the node will get, or undefined when the request's version is not usable (the schema reports it). */
function targetKubeadm(spec: Doc): KubeadmApiVersion | undefined {
  if (typeof spec.kubernetesVersion !== 'string' || !/^v?\d+\.\d+\.\d+/.test(spec.kubernetesVersion)) return undefined;
  try {
    return selectKubeadmApiVersion(parseKubeVersion(spec.kubernetesVersion));
  } catch {
    return undefined;
  }
}

/** Fields only one Cluster API version has, for checking a KubeadmConfig against its apiVersion. */
function versionProblems(spec: KubeadmConfigSpec, apiVersion: ClusterApiVersion, at: string): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const v1beta1 = apiVersion.endsWith('/v1beta1');
  const say = (path: string, message: string) => problems.push({ path: `${at}.${path}`, message: `${message} (${apiVersion})` });
  const argHolders: [string, unknown][] = [
    ['clusterConfiguration.apiServer.extraArgs', (spec.clusterConfiguration?.apiServer as Doc | undefined)?.extraArgs],
    ['clusterConfiguration.controllerManager.extraArgs', (spec.clusterConfiguration?.controllerManager as Doc | undefined)?.extraArgs],
    ['clusterConfiguration.scheduler.extraArgs', (spec.clusterConfiguration?.scheduler as Doc | undefined)?.extraArgs],
    ['clusterConfiguration.etcd.local.extraArgs', ((spec.clusterConfiguration?.etcd as Doc | undefined)?.local as Doc | undefined)?.extraArgs],
    ['initConfiguration.nodeRegistration.kubeletExtraArgs', (spec.initConfiguration?.nodeRegistration as Doc | undefined)?.kubeletExtraArgs],
    ['joinConfiguration.nodeRegistration.kubeletExtraArgs', (spec.joinConfiguration?.nodeRegistration as Doc | undefined)?.kubeletExtraArgs],
  ];
  for (const [path, value] of argHolders) {
    if (v1beta1 && Array.isArray(value)) say(path, 'is a map of flag name to value in v1beta1, not a list');
    if (!v1beta1 && isObject(value)) say(path, 'is a list of {name, value} in v1beta2, not a map');
  }
  if (v1beta1) {
    if (spec.initConfiguration?.timeouts !== undefined) say('initConfiguration.timeouts', 'is v1beta2; v1beta1 has clusterConfiguration.apiServer.timeoutForControlPlane');
    if (spec.joinConfiguration?.timeouts !== undefined) say('joinConfiguration.timeouts', 'is v1beta2; v1beta1 has joinConfiguration.discovery.timeout');
    spec.files?.forEach((f, i) => f.contentFormat !== undefined && say(`files[${i}].contentFormat`, 'is v1beta2 only'));
  } else {
    if (spec.useExperimentalRetryJoin !== undefined) say('useExperimentalRetryJoin', 'was removed in v1beta2');
    if ((spec.clusterConfiguration?.apiServer as Doc | undefined)?.timeoutForControlPlane !== undefined) {
      say('clusterConfiguration.apiServer.timeoutForControlPlane', 'is v1beta1; v1beta2 has initConfiguration.timeouts.controlPlaneComponentHealthCheckSeconds');
    }
    if ((spec.joinConfiguration?.discovery as Doc | undefined)?.timeout !== undefined) say('joinConfiguration.discovery.timeout', 'is v1beta1; v1beta2 has joinConfiguration.timeouts.discoverySeconds');
  }
  return problems;
}

/**
 * Cluster API's kubeadm configurations in kubeadm's forms for `target`: timeouts,
 * token TTLs and validity periods converted; the rest passed on as written (kubeadm's
 * strict types check it when the node is built).
 */
function kubeadmConfigurations(spec: KubeadmConfigSpec, role: unknown, target: KubeadmApiVersion | undefined, at: string, problems: FieldProblem[]): Doc {
  const cluster = structuredClone(spec.clusterConfiguration ?? {});
  const init = structuredClone(spec.initConfiguration ?? {});
  const join = structuredClone(spec.joinConfiguration ?? {});
  const v4 = target === 'kubeadm.k8s.io/v1beta4';

  // v1beta2 timeouts (seconds) → kubeadm durations.
  for (const [doc, name] of [[init, 'initConfiguration'], [join, 'joinConfiguration']] as const) {
    const given = doc.timeouts;
    if (given === undefined) continue;
    if (!isObject(given)) {
      problems.push({ path: `${at}.${name}.timeouts`, message: 'must be an object of *Seconds fields' });
      continue;
    }
    const converted: Doc = {};
    for (const [key, value] of Object.entries(given)) {
      const path = `${at}.${name}.timeouts.${key}`;
      const kubeadmName = TIMEOUTS[key];
      if (kubeadmName === undefined) problems.push({ path, message: `unknown field; Cluster API timeouts are ${Object.keys(TIMEOUTS).join(', ')}` });
      else if (!isSeconds(value)) problems.push({ path, message: `must be a whole number of seconds from 0 to ${MAX_SECONDS}` });
      else if (v4 || target === undefined) converted[kubeadmName] = seconds(value);
      else if (kubeadmName === 'controlPlaneComponentHealthCheck' && name === 'initConfiguration') child(cluster, 'apiServer').timeoutForControlPlane = seconds(value);
      else if (kubeadmName === 'discovery' && name === 'joinConfiguration') child(join, 'discovery').timeout = seconds(value);
      else if (kubeadmName === 'controlPlaneComponentHealthCheck') {
        // kubeadm v1beta3 joins read this from the cluster's ClusterConfiguration.
        if (role !== 'init') problems.push({ path, message: 'kubeadm.k8s.io/v1beta3 (Kubernetes before 1.31) has no join timeout for the control plane; it comes from the cluster (apiServer.timeoutForControlPlane at init)' });
      } else problems.push({ path, message: `kubeadm.k8s.io/v1beta3 (Kubernetes before 1.31) has no ${kubeadmName} timeout; it needs Kubernetes 1.31 or later (kubeadm.k8s.io/v1beta4)` });
    }
    if (Object.keys(converted).length > 0) doc.timeouts = converted;
    else delete doc.timeouts;
  }

  // v1beta1 durations, checked where the caller wrote them (they may move below).
  for (const [value, path] of [
    [(cluster.apiServer as Doc | undefined)?.timeoutForControlPlane, 'clusterConfiguration.apiServer.timeoutForControlPlane'],
    [(join.discovery as Doc | undefined)?.timeout, 'joinConfiguration.discovery.timeout'],
  ] as const) {
    if (value !== undefined && !duration.safeParse(value).success) problems.push({ path: `${at}.${path}`, message: 'must be a Go duration such as 4m0s' });
  }

  if (v4) {
    // v1beta1 durations → kubeadm v1beta4 timeouts.
    const apiServer = cluster.apiServer;
    if (isObject(apiServer) && apiServer.timeoutForControlPlane !== undefined) {
      const value = apiServer.timeoutForControlPlane;
      delete apiServer.timeoutForControlPlane;
      const initTimeouts = child(init, 'timeouts');
      initTimeouts.controlPlaneComponentHealthCheck ??= value;
      if (role === 'control-plane') child(join, 'timeouts').controlPlaneComponentHealthCheck ??= value;
    }
    const discovery = join.discovery;
    if (isObject(discovery) && discovery.timeout !== undefined) {
      child(join, 'timeouts').discovery ??= discovery.timeout;
      delete discovery.timeout;
    }
  }

  // v1beta2 validity periods (days) → kubeadm v1beta4 durations.
  for (const [key, kubeadmKey] of [
    ['certificateValidityPeriodDays', 'certificateValidityPeriod'],
    ['caCertificateValidityPeriodDays', 'caCertificateValidityPeriod'],
  ] as const) {
    const days = cluster[key];
    if (days === undefined) continue;
    Reflect.deleteProperty(cluster, key);
    const path = `${at}.clusterConfiguration.${key}`;
    if (typeof days !== 'number' || !Number.isInteger(days) || days < 1 || days > MAX_DAYS[key]) problems.push({ path, message: `must be a whole number of days from 1 to ${MAX_DAYS[key]}` });
    else if (!v4 && target !== undefined) problems.push({ path, message: 'kubeadm.k8s.io/v1beta3 (Kubernetes before 1.31) cannot set certificate validity; it needs Kubernetes 1.31 or later' });
    else cluster[kubeadmKey] = `${days * 24}h0m0s`;
  }

  // v1beta2 bootstrap token TTLs (seconds) → kubeadm durations.
  if (Array.isArray(init.bootstrapTokens)) {
    init.bootstrapTokens.forEach((token: unknown, i: number) => {
      if (!isObject(token) || token.ttlSeconds === undefined) return;
      const ttl = token.ttlSeconds;
      delete token.ttlSeconds;
      if (!isSeconds(ttl)) problems.push({ path: `${at}.initConfiguration.bootstrapTokens[${i}].ttlSeconds`, message: `must be a whole number of seconds from 0 to ${MAX_SECONDS}` });
      else token.ttl = seconds(ttl);
    });
  }

  const file = (join.discovery as Doc | undefined)?.file;
  if (isObject(file) && file.kubeConfig !== undefined) {
    problems.push({ path: `${at}.joinConfiguration.discovery.file.kubeConfig`, message: 'is turned into a kubeconfig by Cluster API from the cluster; bootwright joins by bootstrap token (spec.cluster.bootstrapToken) or from a kubeconfig file you write with files[] and name in discovery.file.kubeConfigPath' });
  }
  if (isObject(join.controlPlane) && role === 'worker') {
    problems.push({ path: `${at}.joinConfiguration.controlPlane`, message: 'makes this a control-plane join, but spec.role is worker' });
  }
  for (const [doc, name] of [[init, 'initConfiguration'], [join, 'joinConfiguration']] as const) {
    const nodeName = (doc.nodeRegistration as Doc | undefined)?.name;
    // A name read at boot (instance-data Jinja, a metadata variable) is checked where it is read (plan/bootvalues.ts).
    const readAtBoot = typeof nodeName === 'string' && (scanJinja(nodeName).expressions.length > 0 || metadataVariables(nodeName).length > 0 || editsKubeadmConfig(spec));
    if (nodeName !== undefined && !readAtBoot && (typeof nodeName !== 'string' || !DNS_SUBDOMAIN.test(nodeName))) {
      problems.push({ path: `${at}.${name}.nodeRegistration.name`, message: 'must be a DNS-1123 subdomain (a Kubernetes node name), or read it at boot: {{ ds.meta_data.local_hostname }} (cloud-config) or ${COREOS_EC2_HOSTNAME} (Ignition)' });
    }
  }
  if (role === 'worker') {
    const registration = child(join, 'nodeRegistration');
    const taints = Array.isArray(registration.taints) ? [...(registration.taints as unknown[])] : [];
    if (!taints.some((t) => isObject(t) && t.key === NODE_UNINITIALIZED_TAINT.key && t.effect === NODE_UNINITIALIZED_TAINT.effect)) taints.push({ ...NODE_UNINITIALIZED_TAINT });
    registration.taints = taints;
  }

  const kubeadm: Doc = {};
  if (Object.keys(cluster).length > 0) kubeadm.clusterConfiguration = cluster;
  if (Object.keys(init).length > 0) kubeadm.initConfiguration = init;
  if (Object.keys(join).length > 0) kubeadm.joinConfiguration = join;
  if (spec.verbosity !== undefined) kubeadm.verbosity = spec.verbosity;
  if (spec.useExperimentalRetryJoin !== undefined) kubeadm.useExperimentalRetryJoin = spec.useExperimentalRetryJoin;
  return kubeadm;
}

/**
 * The kubeadm configuration files of CABPK's layouts: `/etc/kubeadm.yml` (Ignition),
 * `/run/kubeadm/kubeadm.yaml` and `kubeadm-join-config.yaml` (cloud-config).
 */
const KUBEADM_CONFIG_FILES = /\/etc\/kubeadm\.yml\b|\/run\/kubeadm\/kubeadm(?:-join-config)?\.yaml\b/;

/**
 * Whether the template's boot or pre-kubeadm commands edit the kubeadm configuration
 * (Azure's Flatcar templates: `name: '@@HOSTNAME@@'` and a `sed` over /etc/kubeadm.yml
 * with the name from the instance metadata service): the node name is then the
 * commands' business, checked by kubeadm on the node, not a DNS name at write time.
 */
function editsKubeadmConfig(spec: KubeadmConfigSpec): boolean {
  return [...(spec.bootCommands ?? []), ...(spec.preKubeadmCommands ?? [])].some((c) => KUBEADM_CONFIG_FILES.test(c));
}

/** A Kubernetes node name: a DNS-1123 subdomain. */
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * A file's `content` and `encoding` from a Secret's bytes, as CABPK writes `contentFrom`
 * (the value stands for `content`, under the file's `encoding`). With no encoding the
 * bytes are passed base64-encoded (`encoding: base64`), so they reach the node exactly,
 * whatever they hold, and are never read as a template; with `gzip` they are the gzip
 * stream; with `base64` or `gzip+base64`, the encoded text the Secret holds.
 */
function secretFileContent(bytes: Uint8Array<ArrayBuffer>, encoding: FileEncoding | undefined, at: string, problems: FieldProblem[]): { content: string | Uint8Array<ArrayBuffer>; encoding: FileEncoding } {
  if (encoding === undefined) return { content: Buffer.from(bytes).toString('base64'), encoding: 'base64' };
  if (encoding === 'gzip') return { content: bytes, encoding };
  const text = secretText(bytes);
  if (text === undefined) problems.push({ path: at, message: `reads a value that is not text, but encoding ${encoding} takes the encoded text: store the ${encoding} text in the Secret, or drop encoding` });
  return { content: text ?? '', encoding };
}

/**
 * Cluster API's provisioning fields as `spec.provisioning`: Secret references resolved
 * from `secrets`, templates executed.
 *
 * @returns the provisioning section, and the path rewrites of the fields filled from a
 *   Secret (`spec.provisioning.files[i].content` came from `…files[i].contentFrom`)
 */
function provisioning(spec: KubeadmConfigSpec, request: Doc, at: string, secrets: SecretIndex, problems: FieldProblem[]): { out: Doc; rewrite: [string, string][] } {
  const out: Doc = {};
  const rewrite: [string, string][] = [];
  const version = (request.cluster as Doc | undefined)?.controlPlaneVersion ?? request.kubernetesVersion;
  const controlPlaneVersion = typeof version === 'string' ? (version.startsWith('v') ? version : `v${version}`) : '';
  if (spec.files) {
    out.files = spec.files.map((f, i) => {
      const { contentFrom, contentFormat, ...file } = f;
      const path = `${at}.files[${i}]`;
      if (contentFrom) {
        if (file.content !== undefined) problems.push({ path: `${path}.content`, message: 'give content or contentFrom, not both' });
        if (contentFormat !== undefined) problems.push({ path: `${path}.contentFormat`, message: 'applies to content, not to a Secret\'s value (contentFrom), which is written as it is' });
        const resolved = secrets.resolve(contentFrom, `${path}.contentFrom`);
        if (resolved instanceof Uint8Array) Object.assign(file, secretFileContent(resolved, file.encoding, `${path}.contentFrom`, problems));
        else if (resolved) problems.push(resolved);
        rewrite.push([`spec.provisioning.files[${i}].content`, `${path}.contentFrom`]);
      } else if (contentFormat === 'Template') {
        if (file.encoding !== undefined || typeof file.content !== 'string') problems.push({ path: `${path}.contentFormat`, message: 'Template applies to plain-text content; remove encoding' });
        else file.content = executeTemplate(file.content, { controlPlane: { version: controlPlaneVersion } }, `${path}.content`, problems);
      }
      return { ...file, content: file.content ?? '' };
    });
  }
  if (spec.users) {
    out.users = spec.users.map((u, i) => {
      const { passwdFrom, ...user } = u;
      if (passwdFrom) {
        const path = `${at}.users[${i}].passwdFrom`;
        if (user.passwd !== undefined) problems.push({ path: `${at}.users[${i}].passwd`, message: 'give passwd or passwdFrom, not both' });
        const resolved = secrets.resolve(passwdFrom, path);
        if (!(resolved instanceof Uint8Array)) {
          if (resolved) problems.push(resolved);
        } else {
          const text = secretText(resolved);
          if (text === undefined || text === '') problems.push({ path, message: 'reads a value that is not a password hash: the Secret must hold the hash as non-empty UTF-8 text' });
          else user.passwd = text;
        }
        rewrite.push([`spec.provisioning.users[${i}].passwd`, path]);
      }
      return user;
    });
  }
  for (const key of ['diskSetup', 'mounts', 'bootCommands', 'preKubeadmCommands', 'postKubeadmCommands', 'ntp', 'ignition'] as const) {
    if (spec[key] !== undefined) out[key] = structuredClone(spec[key]);
  }
  return { out, rewrite };
}

/**
 * Rewrite a request in Cluster API shape into a NodeBootstrap value (not yet
 * validated: the NodeBootstrap schema and checks run on the result).
 *
 * @param value the parsed request, for which {@link isClusterApiRequest} holds
 * @returns the rewritten request and the path rewrite for its problems
 * @throws RequestError (422) naming the caller's fields for anything that cannot be
 *   rewritten: Cluster API schema errors, both shapes given, `spec.secrets` errors, a
 *   Secret or key a reference names missing from `spec.secrets`, template errors, values
 *   the target kubeadm version cannot hold (no problem quotes a Secret's value)
 */
export function fromClusterApi(value: Doc & { spec: Doc }): { request: Doc; rewrite: PathRewrite } {
  const { kubeadmConfigSpec, kubeadmConfig, secrets, ...rest } = value.spec;
  const problems: FieldProblem[] = [];
  for (const key of ['kubeadm', 'provisioning'] as const) {
    if (Object.hasOwn(rest, key)) problems.push({ path: `spec.${key}`, message: `give either spec.${kubeadmConfig !== undefined ? 'kubeadmConfig' : 'kubeadmConfigSpec'} (Cluster API) or spec.kubeadm and spec.provisioning, not both` });
  }
  if (kubeadmConfigSpec !== undefined && kubeadmConfig !== undefined) problems.push({ path: 'spec.kubeadmConfig', message: 'give either spec.kubeadmConfigSpec or spec.kubeadmConfig, not both' });
  if (problems.length > 0) throw new RequestError(problems);

  let spec: KubeadmConfigSpec;
  let at: string;
  let namespace: string | undefined;
  if (kubeadmConfig !== undefined) {
    const parsed = kubeadmConfigObjectSchema.safeParse(kubeadmConfig);
    if (!parsed.success) throw new RequestError(zodProblems(parsed.error, 'spec.kubeadmConfig'));
    const object = parsed.data;
    if (typeof object.metadata?.namespace === 'string') namespace = object.metadata.namespace;
    switch (object.kind) {
      case 'KubeadmConfig':
        [spec, at] = [object.spec, 'spec.kubeadmConfig.spec'];
        break;
      case 'KubeadmConfigTemplate':
        [spec, at] = [object.spec.template.spec, 'spec.kubeadmConfig.spec.template.spec'];
        break;
      case 'KubeadmControlPlane': {
        [spec, at] = [object.spec.kubeadmConfigSpec, 'spec.kubeadmConfig.spec.kubeadmConfigSpec'];
        const { version } = object.spec;
        const own = typeof rest.kubernetesVersion === 'string' ? rest.kubernetesVersion.replace(/^v/, '') : undefined;
        if (version !== undefined && own !== undefined && version.replace(/^v/, '') !== own) {
          problems.push({ path: 'spec.kubeadmConfig.spec.version', message: `is ${version}, but spec.kubernetesVersion is ${String(rest.kubernetesVersion)}: a control plane node runs the KubeadmControlPlane's version` });
        }
        break;
      }
      case 'KubeadmControlPlaneTemplate':
        [spec, at] = [object.spec.template.spec.kubeadmConfigSpec, 'spec.kubeadmConfig.spec.template.spec.kubeadmConfigSpec'];
        break;
    }
    if ((object.kind === 'KubeadmControlPlane' || object.kind === 'KubeadmControlPlaneTemplate') && rest.role === 'worker') {
      problems.push({ path: 'spec.kubeadmConfig.kind', message: `a ${object.kind} builds control plane nodes, but spec.role is worker; give the worker's KubeadmConfigTemplate` });
    }
    problems.push(...versionProblems(spec, object.apiVersion, at));
  } else {
    const parsed = kubeadmConfigSpecSchema.safeParse(kubeadmConfigSpec);
    if (!parsed.success) throw new RequestError(zodProblems(parsed.error, 'spec.kubeadmConfigSpec'));
    [spec, at] = [parsed.data, 'spec.kubeadmConfigSpec'];
  }

  const kubeadm = kubeadmConfigurations(spec, rest.role, targetKubeadm(rest), at, problems);
  const indexed = indexSecrets(secrets, namespace);
  problems.push(...indexed.problems);
  const { out: prov, rewrite: fromSecrets } = provisioning(spec, rest, at, indexed.index, problems);
  const output = isObject(rest.output) ? { ...rest.output } : {};
  if (spec.format !== undefined) {
    if (output.format !== undefined && output.format !== spec.format) problems.push({ path: `${at}.format`, message: `says ${spec.format} but spec.output.format says ${JSON.stringify(output.format)}; give one` });
    output.format = spec.format;
  }
  if (problems.length > 0) throw new RequestError(problems);

  const request: Doc = {
    ...value,
    spec: {
      ...rest,
      ...(Object.keys(kubeadm).length > 0 ? { kubeadm } : {}),
      ...(Object.keys(prov).length > 0 ? { provisioning: prov } : {}),
      ...(Object.keys(output).length > 0 ? { output } : {}),
    },
  };
  const rewrite: PathRewrite = [
    ...fromSecrets,
    ['spec.provisioning.ignition', `${at}.ignition`],
    ['spec.provisioning', at],
    ['spec.kubeadm', at],
    ...(spec.format !== undefined ? ([['spec.output.format', `${at}.format`]] as const) : []),
  ];
  return { request, rewrite };
}
