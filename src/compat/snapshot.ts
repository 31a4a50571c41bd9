/**
 * A read-only snapshot of a store at whatever schema an earlier release left it
 * (issue 27: `bootwright upgrade check` runs before the upgrade, and must neither
 * migrate nor write): the current revision of every cluster, profile and machine, and
 * what each machine was last served. SQLite is opened read-only; PostgreSQL is read in
 * one `REPEATABLE READ READ ONLY` transaction, so the snapshot is consistent and nothing
 * can be written. Columns and tables later migrations added are read when present
 * (`rules`, 006; `machine_status`, 005), else their defaults.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import type { ClusterSpec, MachineSpec, ProfileSpec, StoredResource } from '../store/resources.js';
import { type RevisionRow, toResource } from '../store/rows.js';
import type { StatusRecord } from '../store/status.js';
import type { LastServed } from './check.js';

/** The renderer version of status records written before they recorded it (they came with renderer 3). */
const STATUS_RECORDS_RENDERER = 3;
/** The renderer version of v0.1.0, the release before status records: a fetch its audit log shows was served by it or soon after. */
const FIRST_RENDERER = 1;

/** A store as an earlier release left it. */
export interface StoreSnapshot {
  /** The schema version the store is at (0: never migrated). */
  schemaVersion: number;
  clusters: Map<string, StoredResource<ClusterSpec>>;
  profiles: Map<string, StoredResource<ProfileSpec>>;
  machines: StoredResource<MachineSpec>[];
  /** What each machine was last served, by name (absent: never served). */
  served: Map<string, LastServed>;
}

/** What the queries of both stores return, before it becomes a snapshot. */
interface Rows {
  schemaVersion: number;
  revisions: RevisionRow[];
  statuses: { machine: string; record: string }[];
  /** Machines an audit row shows a config was served to. */
  audited: string[];
}

/** The routes that serve a machine's config, as the audit log names them. */
const CONFIG_ROUTES = ['/ignition', '/nocloud/user-data'];

function snapshot(rows: Rows): StoreSnapshot {
  const out: StoreSnapshot = { schemaVersion: rows.schemaVersion, clusters: new Map(), profiles: new Map(), machines: [], served: new Map() };
  for (const row of rows.revisions) {
    const r = toResource(row);
    if (r.kind === 'Cluster') out.clusters.set(r.name, r as StoredResource<ClusterSpec>);
    else if (r.kind === 'Profile') out.profiles.set(r.name, r as StoredResource<ProfileSpec>);
    else out.machines.push(r as StoredResource<MachineSpec>);
  }
  out.machines.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const name of rows.audited) out.served.set(name, { rendererVersion: FIRST_RENDERER });
  for (const { machine, record } of rows.statuses) {
    const served = (JSON.parse(record) as StatusRecord).served;
    if (!served) continue;
    const version = served.rendererVersion !== undefined ? Number(served.rendererVersion) : STATUS_RECORDS_RENDERER;
    out.served.set(machine, { rendererVersion: version, ...(served.ignitionVersion !== undefined ? { ignitionVersion: served.ignitionVersion } : {}) });
  }
  return out;
}

/** The current revisions' query, with `rules` read when the column exists. */
const currentRevisions = (hasRules: boolean) =>
  'SELECT v.kind, v.name, v.revision, v.labels, v.spec, v.cluster_revision, v.profile_revision, v.created_at, v.updated_at, ' +
  `${hasRules ? 'v.rules' : '0 AS rules'} FROM resources r JOIN resource_revisions v ON v.kind = r.kind AND v.name = r.name AND v.revision = r.revision ORDER BY v.kind, v.name`;

/**
 * Read a SQLite store (`<dataDir>/bootwright.db`) without writing to it.
 *
 * @throws Error when the file does not exist or is not a bootwright store
 */
export function readSqliteSnapshot(path: string): StoreSnapshot {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const tables = new Set((db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name));
    if (!tables.has('resource_revisions')) throw new Error(`${path} holds no bootwright inventory (no resource_revisions table)`);
    const version = tables.has('schema_version') ? ((db.prepare('SELECT max(version) AS v FROM schema_version').get() as { v: number | null }).v ?? 0) : 0;
    const hasRules = (db.prepare('PRAGMA table_info(resource_revisions)').all() as { name: string }[]).some((c) => c.name === 'rules');
    return snapshot({
      schemaVersion: version,
      revisions: db.prepare(currentRevisions(hasRules)).all() as RevisionRow[],
      statuses: tables.has('machine_status') ? (db.prepare('SELECT machine, record FROM machine_status').all() as Rows['statuses']) : [],
      audited: (db.prepare(`SELECT DISTINCT machine FROM audit WHERE status = 200 AND route IN (${CONFIG_ROUTES.map(() => '?').join(', ')})`).all(...CONFIG_ROUTES) as { machine: string }[]).map((r) => r.machine),
    });
  } finally {
    db.close();
  }
}

/**
 * Read a PostgreSQL store without writing to it, in one read-only transaction.
 *
 * @throws whatever pg throws for an unreachable database; Error when it holds no bootwright inventory
 */
export async function readPostgresSnapshot(url: string): Promise<StoreSnapshot> {
  const client = new pg.Client({ connectionString: url, application_name: 'bootwright upgrade check', connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    await client.query('BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const exists = async (table: string) => (await client.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [table])).rows[0]?.t != null;
    if (!(await exists('resource_revisions'))) throw new Error('the database holds no bootwright inventory (no resource_revisions table)');
    const version = (await exists('schema_version')) ? ((await client.query<{ v: number | null }>('SELECT max(version)::int AS v FROM schema_version')).rows[0]?.v ?? 0) : 0;
    const hasRules = (await client.query("SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'resource_revisions' AND column_name = 'rules'")).rowCount! > 0;
    const rows: Rows = {
      schemaVersion: version,
      revisions: (await client.query<RevisionRow>(currentRevisions(hasRules))).rows,
      statuses: (await exists('machine_status')) ? (await client.query<Rows['statuses'][number]>('SELECT machine, record FROM machine_status')).rows : [],
      audited: (await client.query<{ machine: string }>('SELECT DISTINCT machine FROM audit WHERE status = 200 AND route = ANY($1)', [CONFIG_ROUTES])).rows.map((r) => r.machine),
    };
    await client.query('ROLLBACK');
    return snapshot(rows);
  } finally {
    await client.end();
  }
}
