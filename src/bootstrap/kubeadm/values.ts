/**
 * The values kubeadm itself refuses when it loads a configuration (`kubeadm init`,
 * `kubeadm join`, `kubeadm config validate`), checked when a request is written, so that
 * what kubeadm can never read is refused then and not on the node's first boot.
 *
 * kubeadm's own checks are `cmd/kubeadm/app/apis/kubeadm/validation/validation.go`
 * (Kubernetes v1.30 to v1.37 agree on the ones here): this module follows the ones a
 * request's kubeadm overrides can break; the rest of a request (spec.cluster.*,
 * metadata.name) is checked by the request schema. What kubeadm checks and bootwright
 * does not (feature gate names, component configs, a subnet's size against the node
 * mask) and what bootwright checks and kubeadm does not (taints, kubelet flags and node
 * labels, caCertHashes' form) are listed in docs/design.md §2, and
 * test/bootstrap/kubeadm/reference.test.ts holds both lists against the real kubeadm.
 *
 * Every problem is tagged with the rule `kubeadm-value` (src/rules.ts): a revision
 * stored before the rule keeps rendering as it did, its value reported as a warning.
 */
import { isIP } from 'node:net';
import type { FieldProblem } from '../../errors.js';
import type { KubeadmKind } from './types.js';

type Doc = Record<string, unknown>;

/** apimachinery's IsDNS1123Subdomain: dot-separated lower-case labels, at most 253 characters. */
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** apimachinery's IsWildcardDNS1123Subdomain: `*.` and a subdomain. */
const WILDCARD_SUBDOMAIN = /^\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const isSubdomain = (v: string): boolean => v.length <= 253 && DNS1123_SUBDOMAIN.test(v);

/**
 * The reference grammar of container images (github.com/distribution/reference,
 * `ReferenceRegexp`), which kubeadm matches `<imageRepository>/name:tag` against.
 */
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?`;
const PATH_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const IMAGE = new RegExp(`^(?:${DOMAIN}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*:[\\w][\\w.-]{0,127}$`);

/** A value filled in on the node (cloud-init Jinja, an Ignition metadata variable, a placeholder a template's command replaces): checked there, by kubeadm. */
const FILLED_ON_NODE = /\{\{|\$\{|@@/;

/** netutils.ParseCIDRs on a comma-separated list, then kubeadm's dual-stack rule: one CIDR, or one of each family. */
function subnetProblem(value: string): string | undefined {
  const cidrs = value.split(',');
  const families: number[] = [];
  for (const c of cidrs) {
    const m = /^([^/]+)\/(\d{1,3})$/.exec(c);
    const family = m ? isIP(m[1]!) : 0;
    if (!m || family === 0 || Number(m[2]) > (family === 4 ? 32 : 128)) return "couldn't parse subnet";
    families.push(family);
  }
  if (cidrs.length > 2 || (cidrs.length === 2 && families[0] === families[1])) return 'expected one (IPv4 or IPv6) CIDR or two CIDRs from each family for dual-stack networking';
  return undefined;
}

/** kubeadmutil.ParseHostPort: `host` or `host:port`, host an IP (IPv6 in brackets with a port) or a DNS-1123 subdomain, port 1 to 65535. */
function hostPortValid(value: string, portRequired: boolean): boolean {
  let host = value;
  let port: string | undefined;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(value);
  if (bracketed) {
    host = bracketed[1]!;
    port = bracketed[2];
    if (isIP(host) !== 6) return false;
  } else if (isIP(value) === 6) {
    return !portRequired;
  } else {
    const at = value.lastIndexOf(':');
    if (at >= 0) {
      host = value.slice(0, at);
      port = value.slice(at + 1);
    }
    if (isIP(host) === 0 && !isSubdomain(host)) return false;
  }
  if (port === undefined) return !portRequired;
  return /^\d{1,5}$/.test(port) && Number(port) >= 1 && Number(port) <= 65535;
}

/** net.SplitHostPort's verdict for discovery.bootstrapToken.apiServerEndpoint (a port is needed), with the host checked as above. */
const endpointValid = (value: string): boolean => hostPortValid(value, true);

/** A check of one value: its problem, or undefined. */
type Check = (value: string) => string | undefined;

const subdomain: Check = (v) => (isSubdomain(v) ? undefined : 'must be a lowercase RFC 1123 subdomain (lower-case letters, digits, "-" and "."), as kubeadm requires');
/** kubeadm ValidateAPIEndpoint: the advertise address is an IP address, never a host name. */
const advertiseAddress: Check = (v) => (isIP(v) !== 0 ? undefined : 'must be an IPv4 or IPv6 address (kubeadm localAPIEndpoint.advertiseAddress)');
const absolute: Check = (v) => (v.startsWith('/') ? undefined : 'path is not absolute (kubeadm refuses it)');

/** The checked fields of each kind, by path (`*` for every item of a list). */
const CHECKS: Record<KubeadmKind, [string[], Check][]> = {
  ClusterConfiguration: [
    [['kubernetesVersion'], (v) => (/^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/.test(v) || /^(stable|latest|ci)(-\d+(\.\d+)?)?$/.test(v) ? undefined : 'invalid version: kubeadm needs a semantic version such as v1.33.2')],
    [['controlPlaneEndpoint'], (v) => (hostPortValid(v, false) ? undefined : 'endpoint is not valid: kubeadm needs host or host:port, the host an IP address or a lowercase RFC 1123 subdomain')],
    [['networking', 'podSubnet'], subnetProblem],
    [['networking', 'serviceSubnet'], subnetProblem],
    [['networking', 'dnsDomain'], subdomain],
    [['apiServer', 'certSANs', '*'], (v) => (isSubdomain(v) || WILDCARD_SUBDOMAIN.test(v) || isIP(v) !== 0 ? undefined : 'altname is not a valid IP address, DNS label or a DNS label with subdomain wildcards')],
    [['imageRepository'], (v) => (IMAGE.test(`${v}/name:tag`) ? undefined : 'invalid image repository format')],
    [['etcd', 'local', 'dataDir'], absolute],
  ],
  InitConfiguration: [
    // client-go's bootstrap token helpers: ValidateBootstrapGroupName and ValidateUsages (KnownTokenUsages).
    [['bootstrapTokens', '*', 'groups', '*'], (v) => (/^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/.test(v) ? undefined : 'bootstrap group is invalid (must match system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9])')],
    [['bootstrapTokens', '*', 'usages', '*'], (v) => (v === 'signing' || v === 'authentication' ? undefined : 'invalid bootstrap token usage string: valid usage options: signing,authentication')],
    [['nodeRegistration', 'name'], subdomain],
    [['nodeRegistration', 'criSocket'], criSocketProblem],
    [['localAPIEndpoint', 'advertiseAddress'], advertiseAddress],
  ],
  JoinConfiguration: [
    [['nodeRegistration', 'name'], subdomain],
    [['nodeRegistration', 'criSocket'], criSocketProblem],
    [['discovery', 'bootstrapToken', 'apiServerEndpoint'], (v) => (endpointValid(v) ? undefined : 'must be host:port, the host an IP address (IPv6 in brackets) or a lowercase RFC 1123 subdomain, as kubeadm requires')],
    [['controlPlane', 'localAPIEndpoint', 'advertiseAddress'], advertiseAddress],
    [['caCertPath'], (v) => (v.startsWith('/') && v.endsWith('.crt') ? undefined : 'the ca certificate path must be an absolute path ending in .crt')],
  ],
};

/**
 * ValidateSocketPath after kubeadm's defaulting (a path without a scheme gets
 * `unix://`): a URL whose scheme is kubeadm's DefaultContainerRuntimeURLScheme, `unix`
 * on Linux and `npipe` on Windows (a Windows node's `npipe:////./pipe/containerd-containerd`).
 */
function criSocketProblem(value: string): string | undefined {
  if (value === '') return 'empty CRI socket';
  const url = value.includes('://') ? value : `unix://${value}`;
  let scheme: string;
  try {
    scheme = new URL(url).protocol.slice(0, -1);
  } catch {
    return 'is not a URL kubeadm can parse';
  }
  return scheme === 'unix' || scheme === 'npipe' ? undefined : `only URL scheme "unix" (Linux) or "npipe" (Windows) is supported, got "${scheme}"`;
}

/** Each string at `path` under `doc` (`*` walks a list) with its path below `doc`. */
function* valuesAt(doc: unknown, path: string[], at: string[] = []): Generator<[string, string[]]> {
  if (path.length === 0) {
    if (typeof doc === 'string') yield [doc, at];
    return;
  }
  const [head, ...rest] = path as [string, ...string[]];
  if (head === '*') {
    if (Array.isArray(doc)) for (const [i, item] of doc.entries()) yield* valuesAt(item, rest, [...at, String(i)]);
  } else if (typeof doc === 'object' && doc !== null && !Array.isArray(doc)) {
    yield* valuesAt((doc as Doc)[head], rest, [...at, head]);
  }
}

/**
 * The values of a request's kubeadm override that kubeadm would refuse on loading it.
 * Only what the override gives is checked (the generated part comes from checked
 * request fields); a value filled in on the node (`{{ ... }}`, `${...}`, `@@...@@`) is
 * left to kubeadm there.
 *
 * @param kind the kubeadm kind the override is of
 * @param override the override (`spec.kubeadm.clusterConfiguration` and so on), strictly
 *   typed already
 * @param field the override's request path, which problems are under
 * @returns problems tagged with the rule `kubeadm-value`; [] when kubeadm would read every value
 */
export function kubeadmValueProblems(kind: KubeadmKind, override: Doc | undefined, field: string): FieldProblem[] {
  if (override === undefined) return [];
  const problems: FieldProblem[] = [];
  for (const [path, check] of CHECKS[kind]) {
    for (const [value, at] of valuesAt(override, path)) {
      if (FILLED_ON_NODE.test(value)) continue;
      const message = check(value);
      if (message !== undefined) problems.push({ path: `${field}.${at.join('.')}`, message, rule: 'kubeadm-value' });
    }
  }
  if (kind === 'InitConfiguration' && Array.isArray(override.bootstrapTokens)) {
    for (const [i, token] of (override.bootstrapTokens as unknown[]).entries()) {
      const { usages, groups } = (token ?? {}) as { usages?: unknown; groups?: unknown };
      if (Array.isArray(usages) && Array.isArray(groups) && groups.length > 0 && !usages.includes('authentication')) {
        problems.push({ path: `${field}.bootstrapTokens.${i}.groups`, message: 'token groups cannot be specified unless usages includes "authentication"', rule: 'kubeadm-value' });
      }
    }
  }
  return problems;
}
