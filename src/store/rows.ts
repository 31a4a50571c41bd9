/**
 * Pure helpers shared by the SQL stores (src/store/sqlite.ts, src/store/postgres.ts):
 * the row shapes both schemas have and their mapping to the store's types.
 */
import type { ResourceKind, StoredResource } from './resources.js';
import { emptyPhases, type FleetCounts, type Phase, type StatusRecord } from './status.js';
import { type AuditEntry, type AuditInput, type DiscoveredMachine, MAX_USER_AGENT_CHARS } from './store.js';

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
  };
}

/** Sorted copy of a label map, so stored JSON does not depend on the writer's key order. */
export const sortedLabels = (labels: Record<string, string> | undefined) =>
  Object.fromEntries(Object.entries(labels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

/** Glob metacharacters in a migrations directory's own path, escaped for postgrator's glob. */
export const globEscape = (path: string) => path.replace(/[*?[\]{}()!]/g, '[$&]');

/** The audit columns read back, in both stores (ids as numbers: PostgreSQL casts them). */
export const AUDIT_COLUMNS = 'machine, route, client, status, at, user_agent, reason, revision, sha256, format, ignition_version, outcome';

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
