/**
 * Pure helpers shared by the SQL stores (src/store/sqlite.ts, src/store/postgres.ts):
 * the row shapes both schemas have and their mapping to the store's types.
 */
import type { ResourceKind, StoredResource } from './resources.js';
import { compareSelectors } from '../boot/match.js';
import type { SelectorEntry } from './identity.js';
import type { MachineSpec } from './resources.js';
import type { LabelRequirement } from './selector.js';
import { emptyPhases, type FleetCounts, type Phase, type StatusRecord } from './status.js';
import { type AuditEntry, type AuditInput, type DiscoveredMachine, MAX_USER_AGENT_CHARS, type MintedToken } from './store.js';

/** A `resource_revisions` row. */
export interface RevisionRow {
  kind: ResourceKind;
  name: string;
  revision: number;
  labels: string;
  spec: string;
  cluster_revision: number | null;
  profile_revision: number | null;
  created_at: string;
  updated_at: string;
  /** The rules version the revision was accepted under (migration 006; 0 before). */
  rules: number;
}

/** The current revision of a resource and when it was first created. */
export interface CurrentRow {
  revision: number;
  created_at: string;
}

/** A `discovered` row. */
export interface DiscoveredRow {
  mac: string;
  uuid: string;
  serial: string;
  hostname: string;
  first_seen: string;
  last_seen: string;
  count: number;
  /** Numeric in SQLite, BIGINT (text) in PostgreSQL. */
  id: number | string;
  /** The machine that matches it, '' until one does. */
  enrolled: string;
  /** Why its latest sighting matched nothing, and iPXE's platform facts then (migration 007; '' when not known). */
  why: string;
  buildarch: string;
  platform: string;
}

/** The join of each existing resource with its current revision. */
export const CURRENT_JOIN = 'FROM resources r JOIN resource_revisions v ON v.kind = r.kind AND v.name = r.name AND v.revision = r.revision';

export function toResource<S>(row: RevisionRow): StoredResource<S> {
  return {
    kind: row.kind,
    name: row.name,
    labels: JSON.parse(row.labels) as Record<string, string>,
    revision: row.revision,
    spec: JSON.parse(row.spec) as S,
    ...(row.cluster_revision !== null && row.profile_revision !== null ? { refs: { clusterRevision: row.cluster_revision, profileRevision: row.profile_revision } } : {}),
    rules: row.rules,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toDiscovered(row: DiscoveredRow): DiscoveredMachine {
  return {
    ...(row.mac ? { mac: row.mac } : {}),
    ...(row.uuid ? { uuid: row.uuid } : {}),
    ...(row.serial ? { serial: row.serial } : {}),
    ...(row.hostname ? { hostname: row.hostname } : {}),
    firstSeen: row.first_seen,
    lastSeen: row.last_seen,
    count: row.count,
    id: String(row.id),
    ...(row.enrolled ? { enrolled: row.enrolled } : {}),
    ...(row.why ? { why: row.why } : {}),
    ...(row.buildarch ? { buildarch: row.buildarch } : {}),
    ...(row.platform ? { platform: row.platform } : {}),
  };
}

/**
 * The hardware values of a machine's selectors that a discovered entry can share (the
 * normalised index entries of src/store/identity.ts), for the store's candidate query:
 * entries sharing none of them cannot match the machine.
 */
export function enrolmentKeys(selectors: readonly SelectorEntry[]): { mac: string[]; uuid: string[]; serial: string[]; hostname: string[] } {
  const out = { mac: [] as string[], uuid: [] as string[], serial: [] as string[], hostname: [] as string[] };
  for (const e of selectors) if (e.selector !== 'label') out[e.selector].push(e.value);
  return out;
}

/**
 * The discovered entries (candidates sharing a hardware value) that `machine` matches
 * by the boot-time rules (src/boot/match.ts `compareSelectors`: at least one selector
 * agrees, none conflicts): had that hardware booted, this machine would have been its
 * candidate. Their ids, for marking them enrolled.
 */
export function enrolledIds(machine: { name: string; spec: MachineSpec }, candidates: readonly DiscoveredRow[]): (number | string)[] {
  return candidates
    .filter((row) => {
      const identity = {
        ...(row.mac ? { mac: row.mac } : {}),
        ...(row.uuid ? { uuid: row.uuid } : {}),
        ...(row.serial ? { serial: row.serial } : {}),
        ...(row.hostname ? { hostname: row.hostname } : {}),
        labels: {},
        ignored: [],
      };
      const c = compareSelectors(identity, machine);
      return c.conflicts.length === 0 && c.matched.length > 0;
    })
    .map((row) => row.id);
}

/** Sorted copy of a label map, so stored JSON does not depend on the writer's key order. */
export const sortedLabels = (labels: Record<string, string> | undefined) =>
  Object.fromEntries(Object.entries(labels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/** Glob metacharacters in a migrations directory's own path, escaped for postgrator's glob. */
export const globEscape = (path: string) => path.replace(/[*?[\]{}()!]/g, '[$&]');

/**
 * The SQL conditions of label requirements (src/store/selector.ts) on `r.name`, one
 * indexed subquery on `resource_labels` each, with their parameters. Both stores share
 * it; `param(value)` adds a parameter and answers its placeholder (`?` or `$n`).
 */
export function labelConditions(requirements: readonly LabelRequirement[], kind: string, param: (value: string) => string): string {
  return requirements
    .map((r) => {
      const kindParam = param(kind);
      const key = param(r.key);
      const values = r.values.map((v) => param(v)).join(', ');
      const having = `SELECT name FROM resource_labels WHERE kind = ${kindParam} AND key = ${key}${r.operator === 'in' || r.operator === 'notin' ? ` AND value IN (${values})` : ''}`;
      return ` AND r.name ${r.operator === 'in' || r.operator === 'exists' ? 'IN' : 'NOT IN'} (${having})`;
    })
    .join('');
}

/** The audit columns written, in both stores ({@link auditValues} order). */
export const AUDIT_COLUMNS = 'machine, route, client, status, at, user_agent, reason, revision, sha256, format, ignition_version, outcome';

/** The audit columns read back, in both stores (ids as numbers: PostgreSQL casts them): those written and the repeats (migration 010). */
export const AUDIT_READ_COLUMNS = `${AUDIT_COLUMNS}, repeats, last_at`;

/**
 * The routes any client may ask of a known machine without a credential (its MAC is
 * enough): their served rows have a bound of their own, so that however many of them a
 * client sends, they never push out the rows of the signed, secret-serving fetches and
 * reports.
 */
export const UNAUTHENTICATED_SERVED_ROUTES = ['/ipxe', '/boot.ipxe'] as const;

const UNAUTHENTICATED_LIST = UNAUTHENTICATED_SERVED_ROUTES.map((r) => `'${r}'`).join(', ');

/**
 * Whether a served answer's audit row may be counted in an identical newest row rather
 * than added ({@link mergeRepeatSql}): a served (below 400) answer of an
 * {@link UNAUTHENTICATED_SERVED_ROUTES} route, under a bound that keeps at least two
 * rows (a bound of one deletes the row it would be counted in).
 */
export const mergesRepeats = (entry: { route: string; status: number }, maxServedPerMachine: number | undefined): boolean =>
  entry.status < 400 && (UNAUTHENTICATED_SERVED_ROUTES as readonly string[]).includes(entry.route) && (maxServedPerMachine === undefined || maxServedPerMachine >= 2);

/**
 * The machine's newest served row (status below 400), given how a store spells its
 * placeholder for the machine: its `columns` (default its id), found in the `(machine,
 * id)` index.
 */
export function newestServedSql(machine: string, columns = 'id'): string {
  return `SELECT ${columns} FROM audit WHERE machine = ${machine} AND status < 400 ORDER BY id DESC LIMIT 1`;
}

/**
 * Whether an audit row (its columns unqualified) repeats the answer whose audit values
 * are `p(i)` ({@link AUDIT_COLUMNS} order, from 0): the same route, client, status,
 * User-Agent and reason, `same` the store's null-safe equality (`IS` in SQLite, `IS NOT
 * DISTINCT FROM` in PostgreSQL).
 */
export function repeatOfSql(p: (i: number) => string, same: string): string {
  return `route = ${p(1)} AND client = ${p(2)} AND status = ${p(3)} AND user_agent ${same} ${p(5)} AND reason ${same} ${p(6)}`;
}

/**
 * Count a served answer of an unauthenticated route in the machine's newest served row
 * when that row is identical ({@link repeatOfSql}), so answers one after another are one
 * row, and a boot after a signed fetch is a row of its own: the statement for both
 * stores, given how each spells its placeholders for the audit values and its null-safe
 * equality. It changes one row, or none (then the row is inserted).
 */
export function mergeRepeatSql(p: (i: number) => string, same: string): string {
  return `UPDATE audit SET repeats = repeats + 1, last_at = ${p(4)} WHERE id = (${newestServedSql(p(0))}) AND ${repeatOfSql(p, same)}`;
}

/**
 * The condition on a machine's audit rows of served answers (status below 400) of the
 * same class as `route` (an {@link UNAUTHENTICATED_SERVED_ROUTES} route, or any other),
 * given how a store spells its placeholders for the machine and the route: the
 * expression of the `audit_served` index (migration 012), so that it is used.
 */
function servedRowsOf(machine: string, route: string): string {
  return `machine = ${machine} AND status < 400 AND (route IN (${UNAUTHENTICATED_LIST})) = (${route} IN (${UNAUTHENTICATED_LIST}))`;
}

/**
 * The number the next served row of `route`'s class on `machine` takes (`n`: one more
 * than the newest's, 1 for the first), and whether any of those rows has none
 * (`unnumbered`: written by a release before migration 012, so the rows must be
 * numbered again, {@link renumberServedSql}, before `n` counts them): two lookups in the
 * `audit_served` index, whatever the number of rows.
 */
export function nextServedSeqSql(machine: string, route: string): string {
  const rows = servedRowsOf(machine, route);
  return `SELECT coalesce(max(served_seq), 0) + 1 AS n, EXISTS (SELECT 1 FROM audit WHERE ${rows} AND served_seq IS NULL) AS unnumbered FROM audit WHERE ${rows}`;
}

/**
 * Delete the served rows of `route`'s class on `machine` beyond its newest `keep`, once
 * the row numbered `seq` ({@link nextServedSeqSql}) is written: those numbered
 * `seq - keep` and below, found in the `audit_served` index, so the work is the rows
 * deleted (one, once the bound is reached), not the rows kept.
 */
export function trimServedAuditSql(machine: string, route: string, seq: string, keep: string): string {
  return `DELETE FROM audit WHERE ${servedRowsOf(machine, route)} AND served_seq <= ${seq} - ${keep}`;
}

/**
 * The ids of the rows {@link trimServedAuditSql} deletes, as a query of its own: for a
 * statement that trims several machines at once, each machine's rows found by a lookup in
 * the `audit_served` index with its own values (a `LATERAL` subquery), as one machine's are.
 */
export function servedBeyondSql(machine: string, route: string, seq: string, keep: string): string {
  return `SELECT id FROM audit WHERE ${servedRowsOf(machine, route)} AND served_seq <= ${seq} - ${keep}`;
}

/**
 * Number the served rows of `route`'s class on `machine` again, 1 for the oldest (by id):
 * the numbers dropped first, then given, so the unique `audit_served` index never sees two
 * alike. Run when an earlier release left a row unnumbered; its work is the rows kept,
 * once per such row.
 */
export function renumberServedSql(machine: string, route: string): [string, string] {
  const rows = servedRowsOf(machine, route);
  return [
    `UPDATE audit SET served_seq = NULL WHERE ${rows}`,
    `UPDATE audit SET served_seq = numbered.n FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM audit WHERE ${rows}) AS numbered WHERE audit.id = numbered.id`,
  ];
}

/** An audit row as both stores return it. */
export interface AuditRow {
  id: number;
  machine: string;
  route: string;
  client: string;
  status: number;
  at: string;
  user_agent: string | null;
  reason: string | null;
  revision: number | null;
  sha256: string | null;
  format: string | null;
  ignition_version: string | null;
  outcome: string | null;
  /** How many identical answers the row stands for, and the newest one's time (migration 010). */
  repeats: number;
  last_at: string | null;
}

/** The values of an audit row's columns ({@link AUDIT_COLUMNS} order), the user agent cut to its limit. */
export function auditValues(entry: AuditInput, at: string): (string | number | null)[] {
  return [
    entry.machine,
    entry.route,
    entry.client,
    entry.status,
    entry.at ?? at,
    entry.userAgent === undefined ? null : entry.userAgent.slice(0, MAX_USER_AGENT_CHARS),
    entry.reason ?? null,
    entry.revision ?? null,
    entry.sha256 ?? null,
    entry.format ?? null,
    entry.ignitionVersion ?? null,
    entry.outcome ?? null,
  ];
}

/** An audit row as the Store interface gives it (absent details left out). */
export function toAuditEntry(row: AuditRow): AuditEntry {
  return {
    id: row.id,
    machine: row.machine,
    route: row.route,
    client: row.client,
    status: row.status,
    at: row.at,
    ...(row.user_agent !== null ? { userAgent: row.user_agent } : {}),
    ...(row.reason !== null ? { reason: row.reason } : {}),
    ...(row.revision !== null ? { revision: row.revision } : {}),
    ...(row.sha256 !== null ? { sha256: row.sha256 } : {}),
    ...(row.format !== null ? { format: row.format } : {}),
    ...(row.ignition_version !== null ? { ignitionVersion: row.ignition_version } : {}),
    ...(row.outcome !== null ? { outcome: row.outcome } : {}),
    ...(row.repeats > 1 ? { repeats: row.repeats, ...(row.last_at !== null ? { lastAt: row.last_at } : {}) } : {}),
  };
}

/** A status row of both stores. */
export interface StatusRow {
  machine: string;
  phase: string;
  since: string;
  record: string;
}

/** The record of a status row. */
export const toStatusRecord = (row: StatusRow): StatusRecord => JSON.parse(row.record) as StatusRecord;

/** A minted-token row of both stores. */
export interface MintedTokenRow {
  machine: string;
  incarnation: string;
  cluster: string;
  token: string;
  expires_at: string;
}

/** The minted token of a row. */
export const toMintedToken = (row: MintedTokenRow): MintedToken => ({ machine: row.machine, incarnation: row.incarnation, cluster: row.cluster, token: row.token, expiresAt: row.expires_at });

/** Fleet counts from per-phase rows (`stalled` 1 for Provisioning machines past the cut-off) and the totals. */
export function toFleet(rows: readonly { phase: string | null; stalled: number | boolean; n: number | string }[], discovered: number): FleetCounts {
  const phases = emptyPhases();
  let machines = 0;
  for (const r of rows) {
    const n = Number(r.n);
    machines += n;
    const phase = (r.phase ?? 'Registered') as Phase;
    if (phase === 'Provisioning' && (r.stalled === true || r.stalled === 1)) phases.Stalled += n;
    else if (phase in phases) phases[phase] += n;
  }
  return { machines, phases, discovered };
}
