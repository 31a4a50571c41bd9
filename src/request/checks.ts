/**
 * Cross-field and role checks on a schema-valid NodeBootstrap: what a single field's
 * schema cannot see. Each problem names the field; none quotes a secret.
 */
import { createHash, createPrivateKey, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { FieldProblem } from '../errors.js';
import type { NodeBootstrap } from './schema.js';

type KeyPair = { cert: string; key: string };

/**
 * What checking one pair found: problems by member (`cert`, `key`; no message: the key
 * does not match the certificate), and a CA's kubeadm pin when its certificate parsed.
 * No path: the same pair may sit under several fields.
 */
interface PairVerdict {
  problems: { member: 'cert' | 'key'; message?: string }[];
  pin?: string;
}

/**
 * Verdicts of pairs already checked, by SHA-256 of the pair's kind and PEM texts (the
 * texts themselves are not kept). A cluster's CAs and service-account key are the same
 * in every control-plane request and re-request of it, and parsing them is most of a
 * request's validation (OpenSSL's decoders, serialised across threads): each distinct
 * pair is parsed once per thread. Bounded by count; a verdict is a few short strings.
 */
const verdicts = new LRUCache<string, PairVerdict>({ max: 1024 });

function memoised(kind: 'ca' | 'sa', pair: KeyPair, check: () => PairVerdict): PairVerdict {
  const key = createHash('sha256').update(kind).update('\0').update(pair.cert).update('\0').update(pair.key).digest('base64url');
  let verdict = verdicts.get(key);
  if (!verdict) {
    verdict = check();
    verdicts.set(key, verdict);
  }
  return verdict;
}

function report(path: string, verdict: PairVerdict, problems: FieldProblem[]): void {
  for (const p of verdict.problems) problems.push({ path: `${path}.${p.member}`, message: p.message ?? `does not match ${path}.cert` });
}

/**
 * Check a certificate/key pair: both parse, the certificate is a CA, the key matches it.
 * Follows kubeadm's expectations for the shared cluster CAs (kubeadm `certs` phase).
 *
 * @returns the CA's kubeadm pin ({@link caCertHash}) when the certificate parses.
 */
function checkCAPair(path: string, pair: KeyPair, problems: FieldProblem[]): string | undefined {
  const verdict = memoised('ca', pair, () => {
    let cert: X509Certificate;
    let key: KeyObject;
    try {
      cert = new X509Certificate(pair.cert);
    } catch {
      return { problems: [{ member: 'cert', message: 'is not a valid X.509 certificate' }] };
    }
    const pin = caCertHash(cert);
    try {
      key = createPrivateKey(pair.key);
    } catch {
      return { problems: [{ member: 'key', message: 'is not a valid private key' }], pin };
    }
    const found: PairVerdict['problems'] = [];
    if (!cert.ca) found.push({ member: 'cert', message: 'is not a CA certificate (basicConstraints CA:TRUE is missing)' });
    if (!cert.checkPrivateKey(key)) found.push({ member: 'key' });
    return { problems: found, pin };
  });
  report(path, verdict, problems);
  return verdict.pin;
}

/** Check the service-account pair: `cert` is the public key of `key`. */
function checkServiceAccount(path: string, pair: KeyPair, problems: FieldProblem[]): void {
  const verdict = memoised('sa', pair, () => {
    let pub: KeyObject;
    let priv: KeyObject;
    try {
      pub = createPublicKey(pair.cert);
    } catch {
      return { problems: [{ member: 'cert', message: 'is not a valid public key' }] };
    }
    try {
      priv = createPrivateKey(pair.key);
    } catch {
      return { problems: [{ member: 'key', message: 'is not a valid private key' }] };
    }
    const der = (k: KeyObject) => k.export({ type: 'spki', format: 'der' });
    return { problems: der(pub).equals(der(createPublicKey(priv))) ? [] : [{ member: 'key' }] };
  });
  report(path, verdict, problems);
}

/**
 * kubeadm's CA pin: `sha256:` + hex SHA-256 of the DER SubjectPublicKeyInfo
 * (kubeadm `pubkeypin.Hash`).
 */
export function caCertHash(cert: X509Certificate): string {
  const spki = cert.publicKey.export({ type: 'spki', format: 'der' });
  return `sha256:${createHash('sha256').update(spki).digest('hex')}`;
}

/**
 * Whether the join discovers the cluster from a kubeconfig file
 * (`joinConfiguration.discovery.file`) rather than by bootstrap token.
 */
export function discoversByFile(req: NodeBootstrap): boolean {
  const discovery = req.spec.kubeadm?.joinConfiguration?.discovery;
  return typeof discovery === 'object' && discovery !== null && 'file' in discovery;
}

/**
 * Everything a join or init needs that the schema cannot express, plus consistency:
 * - worker: `controlPlaneEndpoint`, `bootstrapToken`, `caCertHashes`;
 * - control-plane: the same, and `certificateKey` or all four of `certificates`
 *   (ca, etcdCA, frontProxyCA, serviceAccount), since kubeadm needs the shared keys;
 * - certificates parse, are CAs and match their keys; `caCertHashes` (when given with
 *   `certificates.ca`) include the CA's pin;
 * - file paths unique and not among the paths bootwright writes; user names unique;
 *   a disk layout given once (`layout` or `diskLayout`) and adding up to at most 100%.
 *
 * @returns the problems found ([] when the request is consistent).
 */
export function checkRequest(req: NodeBootstrap): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const { role, cluster } = req.spec;
  const need = (field: keyof typeof cluster, why: string) => {
    if (cluster[field] === undefined) problems.push({ path: `spec.cluster.${field}`, message: `required: ${why}` });
  };
  // kubeadm discovers the cluster by bootstrap token or from a kubeconfig file, never both.
  if (role !== 'init' && !discoversByFile(req)) {
    const what = role === 'worker' ? 'a worker' : 'a control-plane node';
    need('controlPlaneEndpoint', `${what} joins through the control-plane endpoint`);
    need('bootstrapToken', `${what} joins with a bootstrap token (or give spec.kubeadm.joinConfiguration.discovery.file)`);
    need('caCertHashes', `${what} pins the cluster CA with caCertHashes`);
  }
  const certs = cluster.certificates;
  if (role === 'control-plane' && cluster.certificateKey === undefined) {
    const missing = (['ca', 'etcdCA', 'frontProxyCA', 'serviceAccount'] as const).filter((k) => certs?.[k] === undefined);
    if (missing.length > 0) {
      problems.push({
        path: 'spec.cluster.certificateKey',
        message: `required for a control-plane join unless spec.cluster.certificates carries ca, etcdCA, frontProxyCA and serviceAccount (missing: ${missing.join(', ')})`,
      });
    }
  }
  if (certs) {
    const pin = certs.ca ? checkCAPair('spec.cluster.certificates.ca', certs.ca, problems) : undefined;
    if (certs.etcdCA) checkCAPair('spec.cluster.certificates.etcdCA', certs.etcdCA, problems);
    if (certs.frontProxyCA) checkCAPair('spec.cluster.certificates.frontProxyCA', certs.frontProxyCA, problems);
    if (certs.serviceAccount) checkServiceAccount('spec.cluster.certificates.serviceAccount', certs.serviceAccount, problems);
    if (pin !== undefined && cluster.caCertHashes) {
      if (!cluster.caCertHashes.some((h) => h.toLowerCase() === pin)) {
        problems.push({ path: 'spec.cluster.caCertHashes', message: 'none matches the public key of spec.cluster.certificates.ca.cert' });
      }
    }
  }
  checkProvisioning(req, problems);
  return problems;
}

/**
 * The lowest path in `sorted` (ascending, code-unit order) that lies under `dir`
 * (starts with `dir/`), by binary search: every such path sorts right after `dir/`.
 */
function firstUnder(sorted: readonly string[], dir: string): string | undefined {
  const prefix = `${dir}/`;
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < prefix) lo = mid + 1;
    else hi = mid;
  }
  const candidate = sorted[lo];
  return candidate?.startsWith(prefix) ? candidate : undefined;
}

function checkProvisioning(req: NodeBootstrap, problems: FieldProblem[]): void {
  const prov = req.spec.provisioning;
  if (!prov) return;
  const seen = new Map<string, number>();
  // Sorted once, so "is any path under this one" is a binary search (n log n in all).
  const sorted = [...new Set(prov.files?.map((f) => f.path))].sort();
  prov.files?.forEach((f, i) => {
    const path = `spec.provisioning.files[${i}].path`;
    // A file cannot stand where the node needs a directory: above another file. (Above,
    // at or under what bootwright writes is the plan's: src/provision/plan/protected.ts.)
    const below = firstUnder(sorted, f.path);
    if (below) problems.push({ path, message: `must be a directory on the node, since ${below} is written under it` });
    const first = seen.get(f.path);
    if (first !== undefined) problems.push({ path, message: `duplicates spec.provisioning.files[${first}].path` });
    else seen.set(f.path, i);
    if (f.content instanceof Uint8Array && f.encoding !== 'gzip') {
      problems.push({ path: `spec.provisioning.files[${i}].content`, message: 'binary (!!binary) content needs encoding: gzip' });
    }
  });
  const users = new Map<string, number>();
  prov.users?.forEach((u, i) => {
    const first = users.get(u.name);
    if (first !== undefined) problems.push({ path: `spec.provisioning.users[${i}].name`, message: `duplicates spec.provisioning.users[${first}].name` });
    else users.set(u.name, i);
  });
  prov.diskSetup?.partitions?.forEach((p, i) => {
    const path = `spec.provisioning.diskSetup.partitions[${i}]`;
    if (p.layout !== undefined && p.diskLayout !== undefined) problems.push({ path: `${path}.diskLayout`, message: 'give either layout or diskLayout, not both' });
    const total = (p.diskLayout ?? []).reduce((s, d) => s + d.percentage, 0);
    if (total > 100) problems.push({ path: `${path}.diskLayout`, message: `percentages add up to ${total}, more than 100` });
  });
}
