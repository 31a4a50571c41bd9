/**
 * `bootwright describe machine NAME`, as `kubectl describe`: a machine's spec (cluster
 * and profile with the revisions it pins, selectors, node settings), its revisions, its
 * lifecycle as the service reports it (`status.phase`, transitions, what was served,
 * the last report), and the newest rows of its audit log.
 *
 * The lifecycle is printed as the service answers it: a service that reports no
 * `status.phase` is said to report none, never guessed.
 */
import { EXIT, UsageError, type Command, type Parsed } from '../commands.js';
import { clientFrom, CONNECTION_FLAGS } from './client.js';
import { age, kindOf, orNone, printable, type ResourceDocument, table } from './kinds.js';

/** `bootwright describe`. */
export const DESCRIBE: Command = {
  name: 'describe',
  summary: "Show a machine's spec, revisions, phase, last report and audit log",
  usage: ['describe machine NAME [--audit N]'],
  positionals: 2,
  flags: [{ name: 'audit', type: 'string', value: 'N', help: 'the newest N audit rows (default 20, at most 1000)' }, ...CONNECTION_FLAGS],
  details: `Example:
  bootwright describe machine node-1`,
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

/** Run `describe`. @returns 0; @throws UsageError, ConfigError, ServerRefusal, ServerUnavailable */
export async function runDescribe(parsed: Parsed, out: NodeJS.WritableStream): Promise<number> {
  const kind = kindOf(parsed.positionals[0], 'describe');
  if (kind !== 'Machine') throw new UsageError('describe shows machines: bootwright describe machine NAME (use get -o yaml for other kinds)', 'describe');
  const name = parsed.positionals[1];
  if (name === undefined) throw new UsageError('a machine NAME is required', 'describe');
  const auditRows = (parsed.values.audit as string | undefined) ?? '20';
  if (!/^\d{1,4}$/.test(auditRows) || Number(auditRows) < 1 || Number(auditRows) > 1000) throw new UsageError('--audit: must be a number from 1 to 1000', 'describe');
  const client = clientFrom(parsed);
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
  };
  const labels = Object.entries(m.metadata.labels ?? {}).map(([k, v]) => `${k}=${v}`);
  const now = new Date();
  let text = block([
    ['Name', m.metadata.name],
    ['Labels', labels.length ? labels.join(',') : '<none>'],
    ['Revision', String(m.metadata.revision)],
    ['Created', `${m.metadata.createdAt} (${age(m.metadata.createdAt, now)} ago)`],
    ['Updated', `${m.metadata.updatedAt} (${age(m.metadata.updatedAt, now)} ago)`],
    ['Cluster', `${spec.cluster}${status.clusterRevision !== undefined ? ` (revision ${status.clusterRevision})` : ''}`],
    ['Profile', `${spec.profile}${status.profileRevision !== undefined ? ` (revision ${status.profileRevision})` : ''}`],
    ['Node name', spec.nodeName ?? `${m.metadata.name} (the machine name)`],
    ['Advertise address', orNone(spec.advertiseAddress)],
    ['Node labels', Object.entries(spec.nodeLabels ?? {}).map(([k, v]) => `${k}=${v}`).join(',') || '<none>'],
    ['Taints', (spec.taints ?? []).length ? JSON.stringify(spec.taints) : '<none>'],
    ['Max fetches', orNone(spec.maxFetches)],
    ['Phase', status.phase ?? '<none> (the service reports no phase)'],
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
