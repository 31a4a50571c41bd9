/**
 * `bootwright describe KIND NAME`, as `kubectl describe`, for every kind:
 * - a machine: its spec (cluster and profile with the revisions it pins, selectors, node
 *   settings), its revisions, its lifecycle as the service reports it (`status.phase`,
 *   transitions, what was served, the last report), and the newest rows of its audit log;
 * - a cluster: its endpoint, network, how joins are authorised (a static token, or tokens
 *   minted per machine through `workloadKubeconfig`), the machines naming it, its revisions;
 * - a profile: role, version, output, boot section, what provisioning writes (counts),
 *   the machines naming it, its revisions;
 * - a discovered machine: the identity iPXE reported, when and how often, why it matched
 *   no machine, and what enrols it.
 *
 * The lifecycle is printed as the service answers it: a service that reports no
 * `status.phase` is said to report none, never guessed.
 */
import { EXIT, UsageError, type Command, type Parsed } from '../commands.js';
import { clientFrom, CONNECTION_FLAGS, type InventoryClient } from './client.js';
import { age } from '../../kube/duration.js';
import { type DiscoveredDocument, KIND_NAMES, kindOf, orNone, printable, type ResourceDocument, table } from './kinds.js';

/** `bootwright describe`. */
export const DESCRIBE: Command = {
  name: 'describe',
  summary: 'Show one cluster, profile, machine or discovered machine in detail',
  usage: [`describe ${KIND_NAMES} NAME [--audit N]`],
  positionals: 2,
  flags: [{ name: 'audit', type: 'string', value: 'N', help: 'machines: the newest N audit rows (default 20, at most 1000)' }, ...CONNECTION_FLAGS],
  details: `A machine shows its spec, the revisions it pins, its phase and transitions, what was
served, its last boot report and its audit log. A cluster shows how joins are authorised
and the machines naming it; a profile what it boots and provisions and the machines
naming it; both their revisions. A discovered machine (NAME is the ID 'get discovered'
shows) shows what iPXE reported and why it matched no machine.

Examples:
  bootwright describe machine node-1
  bootwright describe cluster prod
  bootwright describe discovered 7`,
};

interface AuditRow {
  route: string;
  status: number;
  client: string;
  at: string;
  [detail: string]: unknown;
}

/**
 * `key: value` lines of an object, nested values as JSON, indented; a string of several
 * lines (a boot report's output) as a `|` block indented under its key. Every line is
 * {@link printable}.
 */
function fields(value: Record<string, unknown>, indent = '  '): string {
  const keys = Object.keys(value);
  const width = Math.max(0, ...keys.map((k) => k.length)) + 1;
  return keys
    .map((k) => {
      const v = value[k];
      const head = `${indent}${`${k}:`.padEnd(width)}  `;
      if (typeof v !== 'string') return `${head}${printable(JSON.stringify(v))}\n`;
      if (!v.includes('\n')) return `${head}${printable(v)}\n`;
      return `${head}|\n${v.replace(/\n$/, '').split('\n').map((line) => `${indent}    ${printable(line)}\n`).join('')}`;
    })
    .join('');
}

/** A block of `Label:  value` lines, aligned, each value {@link printable}. */
function block(lines: [string, string][]): string {
  const width = Math.max(...lines.map(([k]) => k.length)) + 1;
  return lines.map(([k, v]) => `${`${k}:`.padEnd(width)}  ${printable(v)}\n`).join('');
}

/** Indent every line of a table. */
const indent = (text: string) => text.split('\n').map((l) => (l ? `  ${l}` : l)).join('\n');

/** The lines every resource starts with: name, labels, revision, created and updated. */
function metadataLines(doc: ResourceDocument, now: Date): [string, string][] {
  const labels = Object.entries(doc.metadata.labels ?? {}).map(([k, v]) => `${k}=${v}`);
  return [
    ['Name', doc.metadata.name],
    ['Labels', labels.length ? labels.join(',') : '<none>'],
    ['Revision', String(doc.metadata.revision)],
    ['Created', `${doc.metadata.createdAt} (${age(doc.metadata.createdAt, now)} ago)`],
    ['Updated', `${doc.metadata.updatedAt} (${age(doc.metadata.updatedAt, now)} ago)`],
  ];
}

/** The machines whose spec names a cluster or profile, as a table section. */
async function usedBy(client: InventoryClient, field: 'cluster' | 'profile', name: string): Promise<string> {
  const machines = (await client.listAll<ResourceDocument>('machines')).filter((m) => m.spec[field] === name);
  if (machines.length === 0) return 'Machines:\n  <none>\n';
  return `Machines (${machines.length}):\n${indent(table(['NAME', field === 'cluster' ? 'PROFILE' : 'CLUSTER', 'PHASE'], machines.map((m) => [m.metadata.name, orNone(m.spec[field === 'cluster' ? 'profile' : 'cluster']), orNone(m.status?.phase)])))}`;
}

/** A cluster or profile's revisions, as a table section. */
async function revisionLines(client: InventoryClient, path: string): Promise<string> {
  const revisions = await client.get<{ items: ResourceDocument[] }>(`${path}/revisions`);
  return `Revisions:\n${indent(table(['REVISION', 'UPDATED'], revisions.items.map((r) => [String(r.metadata.revision), r.metadata.updatedAt])))}`;
}

/** `describe cluster NAME`. */
async function describeCluster(client: InventoryClient, name: string, now: Date): Promise<string> {
  const path = `/v1/clusters/${encodeURIComponent(name)}`;
  const c = await client.get<ResourceDocument>(path);
  const spec = c.spec as {
    name: string;
    controlPlaneEndpoint?: string;
    controlPlaneVersion?: string;
    network?: { podSubnet?: string; serviceSubnet?: string; dnsDomain?: string };
    bootstrapToken?: string;
    caCertHashes?: string[];
    certificateKey?: string;
    certificates?: Record<string, unknown>;
    workloadKubeconfig?: { file?: string; secretRef?: { namespace?: string; name: string; key?: string } };
    bootstrapTokenTTL?: string;
  };
  const kubeconfig = spec.workloadKubeconfig;
  const joins = kubeconfig
    ? `a token minted per machine at its config fetch, in the workload cluster's kube-system, for ${spec.bootstrapTokenTTL ?? '15m'} (refreshed until it joins) through ${
        kubeconfig.file !== undefined ? `the kubeconfig file ${kubeconfig.file}` : `the Secret ${kubeconfig.secretRef?.namespace ?? 'default'}/${kubeconfig.secretRef?.name ?? '?'}`
      }`
    : spec.bootstrapToken !== undefined
      ? 'the static spec.bootstrapToken (it expires only as the workload cluster says; see docs/bare-metal.md)'
      : '<none> (control-plane machines init; joins need a token)';
  return (
    block([
      ...metadataLines(c, now),
      ['Cluster name', spec.name],
      ['Control plane endpoint', orNone(spec.controlPlaneEndpoint)],
      ['Control plane version', orNone(spec.controlPlaneVersion)],
      ['Pod subnet', orNone(spec.network?.podSubnet)],
      ['Service subnet', orNone(spec.network?.serviceSubnet)],
      ['DNS domain', orNone(spec.network?.dnsDomain)],
      ['Join token', joins],
      ['CA certificate hashes', spec.caCertHashes?.length ? spec.caCertHashes.join(',') : '<none>'],
      ['Certificates', spec.certificates ? Object.keys(spec.certificates).sort().join(',') || '<none>' : '<none>'],
      ['Certificate key', spec.certificateKey !== undefined ? 'set' : '<none>'],
    ]) +
    (await usedBy(client, 'cluster', name)) +
    (await revisionLines(client, path))
  );
}

/** `describe profile NAME`. */
async function describeProfile(client: InventoryClient, name: string, now: Date): Promise<string> {
  const path = `/v1/profiles/${encodeURIComponent(name)}`;
  const p = await client.get<ResourceDocument>(path);
  const spec = p.spec as {
    role: string;
    kubernetesVersion: string;
    output?: { format?: string; ignitionVersion?: string };
    boot?: { kernel: string; initrd?: string[]; args?: string[] };
    network?: unknown;
    kubeadm?: Record<string, unknown>;
    provisioning?: { files?: unknown[]; users?: unknown[]; preKubeadmCommands?: unknown[]; postKubeadmCommands?: unknown[]; ignition?: { containerLinuxConfig?: { additionalConfig?: string } } };
  };
  const pv = spec.provisioning ?? {};
  const count = (list: unknown[] | undefined, noun: string) => `${list?.length ?? 0} ${noun}${list?.length === 1 ? '' : 's'}`;
  return (
    block([
      ...metadataLines(p, now),
      ['Role', spec.role],
      ['Kubernetes version', spec.kubernetesVersion],
      ['Format', orNone(spec.output?.format)],
      ['Ignition version', orNone(spec.output?.ignitionVersion)],
      ['Kernel', spec.boot ? spec.boot.kernel : '<none> (no boot section: /ipxe cannot boot its machines)'],
      ['Initrd', spec.boot?.initrd?.length ? spec.boot.initrd.join(' ') : '<none>'],
      ['Kernel arguments', spec.boot?.args?.length ? spec.boot.args.join(' ') : '<none>'],
      ['Network', spec.network !== undefined ? 'a default for its machines (spec.network)' : '<none>'],
      ['kubeadm overrides', spec.kubeadm ? Object.keys(spec.kubeadm).sort().join(',') || '<none>' : '<none>'],
      ['Provisioning', [count(pv.files, 'file'), count(pv.users, 'user'), count(pv.preKubeadmCommands, 'preKubeadmCommand'), count(pv.postKubeadmCommands, 'postKubeadmCommand')].join(', ')],
      ['Butane additional config', pv.ignition?.containerLinuxConfig?.additionalConfig !== undefined ? 'yes' : '<none>'],
    ]) +
    (await usedBy(client, 'profile', name)) +
    (await revisionLines(client, path))
  );
}

/** `describe discovered ID`. */
async function describeDiscovered(client: InventoryClient, id: string, now: Date): Promise<string> {
  const d = await client.get<DiscoveredDocument>(`/v1/discovered/${encodeURIComponent(id)}`);
  const pin = d.mac !== undefined ? `bootwright enroll ${d.id} --cluster CLUSTER --profile PROFILE (pins MAC ${d.mac}${d.uuid ? `, UUID ${d.uuid}` : ''}${d.serial ? `, serial ${d.serial}` : ''})` : `bootwright enroll ${d.id} --cluster CLUSTER --profile PROFILE`;
  return block([
    ['ID', d.id],
    ['MAC', orNone(d.mac)],
    ['UUID', orNone(d.uuid)],
    ['Serial', orNone(d.serial)],
    ['Host name', orNone(d.hostname)],
    ['Architecture', orNone(d.buildarch)],
    ['Platform', orNone(d.platform)],
    ['First seen', `${d.firstSeen} (${age(d.firstSeen, now)} ago)`],
    ['Last seen', `${d.lastSeen} (${age(d.lastSeen, now)} ago)`],
    ['Seen', `${d.count} time${d.count === 1 ? '' : 's'}`],
    ['Why unmatched', orNone(d.why)],
    ['Enrolled', d.enrolled !== undefined ? `as machine ${d.enrolled}` : `no: ${pin}`],
  ]);
}

/** Run `describe`. @returns 0; @throws UsageError, ConfigError, ServerRefusal, ServerUnavailable */
export async function runDescribe(parsed: Parsed, out: NodeJS.WritableStream): Promise<number> {
  const kind = kindOf(parsed.positionals[0], 'describe');
  const name = parsed.positionals[1];
  if (name === undefined) throw new UsageError(`a ${kind === 'Discovered' ? 'discovered machine ID' : `${kind.toLowerCase()} NAME`} is required`, 'describe');
  if (kind !== 'Machine' && parsed.values.audit !== undefined) throw new UsageError('--audit applies to machines only', 'describe');
  const client = clientFrom(parsed);
  if (kind !== 'Machine') {
    const now = new Date();
    out.write(await (kind === 'Cluster' ? describeCluster : kind === 'Profile' ? describeProfile : describeDiscovered)(client, name, now));
    return EXIT.ok;
  }
  const auditRows = (parsed.values.audit as string | undefined) ?? '20';
  if (!/^\d{1,4}$/.test(auditRows) || Number(auditRows) < 1 || Number(auditRows) > 1000) throw new UsageError('--audit: must be a number from 1 to 1000', 'describe');
  const path = `/v1/machines/${encodeURIComponent(name)}`;
  const m = await client.get<ResourceDocument>(path);
  const [revisions, audit] = await Promise.all([
    client.get<{ items: ResourceDocument[] }>(`${path}/revisions`),
    client.get<{ items: AuditRow[] }>(`${path}/audit?limit=${auditRows}`),
  ]);
  const spec = m.spec as { cluster: string; profile: string; nodeName?: string; advertiseAddress?: string; selectors: Record<string, unknown>; nodeLabels?: Record<string, string>; taints?: unknown[]; maxFetches?: number };
  const status = (m.status ?? {}) as {
    phase?: string;
    clusterRevision?: number;
    profileRevision?: number;
    transitions?: { phase: string; time: string }[];
    served?: Record<string, unknown>;
    lastReport?: Record<string, unknown>;
    warnings?: { rule: string; path: string; message: string; since: number }[];
    firmware?: Record<string, string>;
  };
  const now = new Date();
  let text = block([
    ...metadataLines(m, now),
    ['Cluster', `${spec.cluster}${status.clusterRevision !== undefined ? ` (revision ${status.clusterRevision})` : ''}`],
    ['Profile', `${spec.profile}${status.profileRevision !== undefined ? ` (revision ${status.profileRevision})` : ''}`],
    ['Node name', spec.nodeName ?? `${m.metadata.name} (the machine name)`],
    ['Advertise address', orNone(spec.advertiseAddress)],
    ['Node labels', Object.entries(spec.nodeLabels ?? {}).map(([k, v]) => `${k}=${v}`).join(',') || '<none>'],
    ['Taints', (spec.taints ?? []).length ? JSON.stringify(spec.taints) : '<none>'],
    ['Max fetches', orNone(spec.maxFetches)],
    ['Phase', status.phase ?? '<none> (the service reports no phase)'],
    [
      'Reported by iPXE',
      status.firmware
        ? Object.entries(status.firmware)
            .map(([k, v]) => `${k}=${v}`)
            .join(', ') || '<none>'
        : '<none> (no /ipxe since this was recorded)',
    ],
  ]);
  const selectors = Object.fromEntries(Object.entries(spec.selectors).filter(([, v]) => !(Array.isArray(v) && v.length === 0) && !(typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0)));
  text += `Selectors:\n${Object.keys(selectors).length ? fields(selectors) : '  <none>\n'}`;
  if (status.transitions?.length) text += `Transitions:\n${indent(table(['PHASE', 'TIME', 'AGE'], status.transitions.map((t) => [t.phase, t.time, age(t.time, now)])))}`;
  if (status.warnings?.length) {
    text += 'Warnings (it boots as stored; its next write must fix them; bootwright upgrade check lists every machine):\n';
    text += indent(table(['RULE', 'SINCE', 'FIELD', 'PROBLEM'], status.warnings.map((w) => [w.rule, `rules ${w.since}`, w.path, w.message])));
  }
  if (status.served) text += `Served:\n${fields(status.served)}`;
  if (status.lastReport) text += `Last report:\n${fields(status.lastReport)}`;
  text += `Revisions:\n${indent(table(['REVISION', 'UPDATED', 'CLUSTER', 'PROFILE'], revisions.items.map((r) => [String(r.metadata.revision), r.metadata.updatedAt, `${orNone(r.spec.cluster)}@${orNone(r.status?.clusterRevision)}`, `${orNone(r.spec.profile)}@${orNone(r.status?.profileRevision)}`])))}`;
  text += `Audit (newest ${audit.items.length}):\n`;
  text += audit.items.length
    ? indent(table(['TIME', 'ROUTE', 'STATUS', 'CLIENT', 'REASON'], audit.items.map((a) => [a.at, a.route, String(a.status), a.client, typeof a.reason === 'string' ? a.reason : ''])))
    : '  <none>\n';
  out.write(text);
  return EXIT.ok;
}
