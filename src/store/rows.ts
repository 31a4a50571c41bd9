/**
 * Pure helpers shared by the SQL stores (src/store/sqlite.ts, src/store/postgres.ts):
 * the row shapes both schemas have and their mapping to the store's types.
 */
import type { ResourceKind, StoredResource } from './resources.js';
import type { DiscoveredMachine } from './store.js';

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
