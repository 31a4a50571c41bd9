/**
 * The kubeadm builder (DESIGN §1): a NodeBootstrap in, the kubeadm configuration
 * documents, the kubeadm command and the PKI files out. It knows kubeadm and nothing
 * about cloud-init or Ignition.
 */
import { type FieldProblem, RequestError } from '../../errors.js';
import { discoversByFile } from '../../request/checks.js';
import { zodProblems } from '../../request/parse.js';
import type { NodeBootstrap } from '../../request/schema.js';
import type { Retry } from '../../provision/shell.js';
import type { Ratchet } from '../../rules.js';
import { dumpYaml } from '../../yaml/dump.js';
import { ARG_PATHS, emitArgs, mergeArgs, readArgs } from './args.js';
import { type Arg, type KubeadmKind, kubeadmSchema } from './types.js';
import { kubeadmValueProblems } from './values.js';
import { type KubeadmApiVersion, parseKubeVersion, selectKubeadmApiVersion } from './version.js';

/** kubeadm's default certificates directory (`ClusterConfiguration.certificatesDir`). */
export const DEFAULT_CERTIFICATES_DIR = '/etc/kubernetes/pki';

/** A PKI file kubeadm expects to find before it runs. */
export interface PkiFile {
  /** Absolute path under the certificates directory. */
  path: string;
  /** PEM text ending in one newline. */
  contents: string;
  /** 0o640 for certificates and public keys, 0o600 for private keys (as CABPK writes them). */
  mode: number;
  /** True for private keys. */
  secret: boolean;
}

/** What the builder produces. */
export interface KubeadmBootstrap {
  apiVersion: KubeadmApiVersion;
  /** `init` or `join`. */
  action: 'init' | 'join';
  /** The documents, in the target version's shape (apiVersion and kind first). */
  documents: Record<string, unknown>[];
  /** The documents as one multi-document YAML stream. */
  yaml: string;
  /** The configuration file name CABPK uses: `kubeadm.yaml` (init) or `kubeadm-join-config.yaml`. */
  fileName: 'kubeadm.yaml' | 'kubeadm-join-config.yaml';
  /** `kubeadm init|join` and its flags, without `--config`. */
  argv: string[];
  /**
   * Retry `kubeadm join` (`spec.kubeadm.useExperimentalRetryJoin`), as CABPK's retry
   * script does: 5 attempts, `kubeadm reset --force` and 15 seconds between them.
   */
  retry?: Retry;
  /** Certificates and keys to place before kubeadm runs (init, control-plane without certificateKey). */
  pki: PkiFile[];
  warnings: string[];
}

type Doc = Record<string, unknown>;

const isObject = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);

function getPath(doc: Doc, path: string[]): unknown {
  let cur: unknown = doc;
  for (const key of path) cur = isObject(cur) ? cur[key] : undefined;
  return cur;
}

function setPath(doc: Doc, path: string[], value: unknown): void {
  let cur = doc;
  for (const key of path.slice(0, -1)) {
    if (!isObject(cur[key])) cur[key] = {};
    cur = cur[key] as Doc;
  }
  cur[path.at(-1)!] = value;
}

/**
 * Merge a user override over a generated document: objects recursively, arguments by
 * name ({@link mergeArgs}), anything else (lists, scalars, null) replaced: the user wins.
 */
function mergeOver(base: Doc, override: Doc, argPaths: Set<string>, at: string[] = []): Doc {
  const out: Doc = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const path = [...at, key];
    const current = out[key];
    if (argPaths.has(path.join('.')) && Array.isArray(current) && Array.isArray(value)) {
      out[key] = mergeArgs(current as Arg[], value as Arg[]);
    } else if (isObject(current) && isObject(value)) {
      out[key] = mergeOver(current, value, argPaths, path);
    } else {
      out[key] = value;
    }
  }
  return out;
}

/** CABPK's join retry: 5 attempts, a reset and 15 seconds between them. */
const JOIN_RETRY: Retry = { attempts: 5, delaySeconds: 15, cleanup: 'kubeadm reset --force' };

const OVERRIDE_FIELD: Record<KubeadmKind, string> = {
  ClusterConfiguration: 'spec.kubeadm.clusterConfiguration',
  InitConfiguration: 'spec.kubeadm.initConfiguration',
  JoinConfiguration: 'spec.kubeadm.joinConfiguration',
};

/**
 * Apply the request's override for one kind and check the result against kubeadm's
 * strict schema for the target version, and the override's values against what kubeadm
 * refuses on loading (src/bootstrap/kubeadm/values.ts; a stored revision is excused from
 * those by `ratchet`); arguments are emitted in the version's form.
 */
function finish(kind: KubeadmKind, generated: Doc, override: Doc | undefined, apiVersion: KubeadmApiVersion, problems: FieldProblem[], ratchet: Ratchet | undefined): Doc {
  const field = OVERRIDE_FIELD[kind];
  const argPaths = ARG_PATHS[kind]!;
  let merged = generated;
  if (override) {
    const normalised = structuredClone(override);
    for (const path of argPaths) {
      const given = getPath(normalised, path);
      if (given === undefined) continue;
      const list = readArgs(given, `${field}.${path.join('.')}`, problems);
      if (list) setPath(normalised, path, list);
    }
    merged = mergeOver(generated, normalised, new Set(argPaths.map((p) => p.join('.'))));
  }
  const checked = kubeadmSchema(apiVersion, kind).safeParse(merged);
  if (!checked.success) {
    for (const p of zodProblems(checked.error, field)) {
      problems.push(p.message === 'unknown field' ? { ...p, message: `unknown field in ${apiVersion} ${kind}` } : p);
    }
    return merged;
  }
  const values = kubeadmValueProblems(kind, override, field);
  problems.push(...(ratchet ? ratchet.refuse(values) : values));
  const out: Doc = { apiVersion, kind, ...merged };
  for (const path of argPaths) {
    const list = getPath(out, path);
    if (Array.isArray(list)) setPath(out, path, emitArgs(list as Arg[], apiVersion, `${field}.${path.join('.')}`, problems));
  }
  return out;
}

/** Host and port for `discovery.bootstrapToken.apiServerEndpoint` (kubeadm needs the port). */
function withPort(endpoint: string): string {
  const hostPart = endpoint.startsWith('[') ? endpoint.slice(endpoint.indexOf(']')) : endpoint;
  return hostPart.includes(':') ? endpoint : `${endpoint}:6443`;
}

const pem = (text: string) => `${text.trim()}\n`;

/** The shared cluster PKI, at kubeadm's file names under the certificates directory. */
function pkiFiles(req: NodeBootstrap, dir: string): PkiFile[] {
  const certs = req.spec.cluster.certificates;
  if (!certs) return [];
  const files: PkiFile[] = [];
  const pair = (cert: string, key: string, certName: string, keyName: string) => {
    files.push({ path: `${dir}/${certName}`, contents: pem(cert), mode: 0o640, secret: false });
    files.push({ path: `${dir}/${keyName}`, contents: pem(key), mode: 0o600, secret: true });
  };
  if (certs.ca) pair(certs.ca.cert, certs.ca.key, 'ca.crt', 'ca.key');
  if (certs.etcdCA) pair(certs.etcdCA.cert, certs.etcdCA.key, 'etcd/ca.crt', 'etcd/ca.key');
  if (certs.frontProxyCA) pair(certs.frontProxyCA.cert, certs.frontProxyCA.key, 'front-proxy-ca.crt', 'front-proxy-ca.key');
  if (certs.serviceAccount) pair(certs.serviceAccount.cert, certs.serviceAccount.key, 'sa.pub', 'sa.key');
  return files;
}

/**
 * Build the kubeadm configuration for a request.
 *
 * - init: ClusterConfiguration (clusterName, kubernetesVersion, controlPlaneEndpoint,
 *   networking) + InitConfiguration (bootstrapTokens from `cluster.bootstrapToken`,
 *   nodeRegistration.name, certificateKey, and `--upload-certs` when a certificate key
 *   is given so control-plane nodes can join with it);
 * - control-plane: JoinConfiguration with `discovery.bootstrapToken` and `controlPlane`
 *   (certificateKey when given);
 * - worker: JoinConfiguration with `discovery.bootstrapToken` {token,
 *   apiServerEndpoint, caCertHashes}.
 * `nodeRegistration.name` is `options.nodeName`, else `metadata.name`, or none with
 * `spec.nodeName.fromHostname` (kubeadm then takes the hostname; a node name read
 * from metadata at boot, `spec.nodeName.fromMetadata`, is given by the caller as the
 * format writes it); `spec.kubeadm.*Configuration` merges
 * over the generated documents (user wins); `spec.kubeadm.verbosity` adds `--v=N`.
 *
 * @param options.nodeName the node name to write instead of `metadata.name`
 * @param options.ratchet what a stored machine is excused from (a kubeadm value it was
 *   stored with before the rule `kubeadm-value`): recorded there instead of refused
 * @throws RequestError naming the field for an unsupported version pin, an unknown or
 *   mistyped kubeadm field for the target version, a value kubeadm refuses on loading,
 *   or repeated arguments v1beta3 cannot hold.
 */
export function buildKubeadm(req: NodeBootstrap, options: { nodeName?: string; ratchet?: Ratchet } = {}): KubeadmBootstrap {
  const { spec, metadata } = req;
  const version = parseKubeVersion(spec.kubernetesVersion);
  const apiVersion = selectKubeadmApiVersion(version, spec.kubeadm?.apiVersion);
  const { cluster } = spec;
  const problems: FieldProblem[] = [];
  const warnings: string[] = [];
  // `spec.nodeName.fromHostname`: kubeadm's own default, the machine's hostname.
  const nodeRegistration: { name?: string } = spec.nodeName?.fromHostname ? {} : { name: options.nodeName ?? metadata.name };
  const documents: Doc[] = [];
  let certificatesDir = DEFAULT_CERTIFICATES_DIR;
  const argv = ['kubeadm', spec.role === 'init' ? 'init' : 'join'];

  if (spec.role === 'init') {
    const clusterConfig: Doc = { clusterName: cluster.name, kubernetesVersion: version.text };
    if (cluster.controlPlaneEndpoint) clusterConfig.controlPlaneEndpoint = cluster.controlPlaneEndpoint;
    if (cluster.network) clusterConfig.networking = { ...cluster.network };
    const initConfig: Doc = {};
    if (cluster.bootstrapToken) initConfig.bootstrapTokens = [{ token: cluster.bootstrapToken }];
    initConfig.nodeRegistration = nodeRegistration;
    if (cluster.certificateKey) {
      initConfig.certificateKey = cluster.certificateKey;
      argv.push('--upload-certs');
    }
    const finishedCluster = finish('ClusterConfiguration', clusterConfig, spec.kubeadm?.clusterConfiguration, apiVersion, problems, options.ratchet);
    documents.push(finishedCluster, finish('InitConfiguration', initConfig, spec.kubeadm?.initConfiguration, apiVersion, problems, options.ratchet));
    if (typeof finishedCluster.certificatesDir === 'string') certificatesDir = finishedCluster.certificatesDir.replace(/\/+$/, '');
    if (!cluster.certificates?.ca) warnings.push('no spec.cluster.certificates.ca: kubeadm generates a new cluster CA on this node, so joining nodes can pin caCertHashes only once it exists');
    if (!cluster.bootstrapToken) warnings.push('no spec.cluster.bootstrapToken: kubeadm creates a random token that other nodes cannot know in advance');
  } else {
    // Discovery by kubeconfig file (the override's discovery.file) replaces the token discovery.
    const joinConfig: Doc = discoversByFile(req)
      ? { nodeRegistration }
      : {
          discovery: {
            bootstrapToken: { token: cluster.bootstrapToken, apiServerEndpoint: withPort(cluster.controlPlaneEndpoint!), caCertHashes: cluster.caCertHashes },
          },
          nodeRegistration,
        };
    if (spec.role === 'control-plane') joinConfig.controlPlane = cluster.certificateKey ? { certificateKey: cluster.certificateKey } : {};
    documents.push(finish('JoinConfiguration', joinConfig, spec.kubeadm?.joinConfiguration, apiVersion, problems, options.ratchet));
  }
  if (spec.kubeadm?.verbosity !== undefined) argv.push(`--v=${spec.kubeadm.verbosity}`);
  if (problems.length > 0) throw new RequestError(problems);

  const writesPki = spec.role === 'init' || (spec.role === 'control-plane' && !cluster.certificateKey);
  if (!certificatesDir.startsWith('/') || certificatesDir.split('/').includes('..')) {
    throw new RequestError([{ path: 'spec.kubeadm.clusterConfiguration.certificatesDir', message: 'must be an absolute path without ".."' }]);
  }
  return {
    apiVersion,
    action: spec.role === 'init' ? 'init' : 'join',
    documents,
    yaml: documents.map((d) => `---\n${dumpYaml(d)}`).join(''),
    fileName: spec.role === 'init' ? 'kubeadm.yaml' : 'kubeadm-join-config.yaml',
    argv,
    ...(spec.role !== 'init' && spec.kubeadm?.useExperimentalRetryJoin ? { retry: JOIN_RETRY } : {}),
    pki: writesPki ? pkiFiles(req, certificatesDir) : [],
    warnings,
  };
}
