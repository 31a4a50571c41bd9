/**
 * The PostgreSQL store (issue 6): several replicas of the service share one database.
 * node-postgres (`pg`) with a pooled `pg.Pool`, schema by plain-SQL postgrator migrations
 * (src/store/migrations/postgres), the same tables as the SQLite store.
 *
 * Everything that must be exact across replicas is decided by the database, atomically:
 * - every write is one transaction that first takes a transaction-scoped advisory lock
 *   on the resource (kind and name) and then reads its current row `FOR UPDATE`, so
 *   revision numbers and `ifMatch` checks are exact whichever replica writes;
 * - a machine's write takes an advisory lock on each hardware selector value (MAC, UUID,
 *   serial) before checking no other machine has it, so duplicates cannot race in;
 * - a machine's write reads its cluster and profile `FOR SHARE` while a delete of those
 *   locks them `FOR UPDATE` before looking for machines naming them, so a reference is
 *   never left dangling;
 * - `takeFetch` is one `INSERT … ON CONFLICT DO UPDATE … WHERE count < max RETURNING`;
 * - audit rows and discovered machines are inserts and upserts, with their bounds
 *   (retention, caps) applied in the same transaction; new discovered entries are
 *   written under one advisory lock, so the cap is exact across replicas.
 * Migrations run under a session advisory lock, so replicas starting together migrate once.
 */
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { hostname } from 'node:os';
import { LRUCache } from 'lru-cache';
import pg from 'pg';
import Postgrator from 'postgrator';
import { RULES_VERSION } from '../rules.js';
import { documentNeeds, migrateStore, READABLE_FROM, type SchemaState } from './compat.js';
import { commitUnlessDryRun, dryRunAnswer } from './dry-run.js';
import { AlreadyExistsError, DiscoveredNotFoundError, DuplicateSelectorError, type MissingReference, MissingReferenceError, NotFoundError, PreconditionFailedError, ReferencedError } from './errors.js';
import { KeyedBatcher } from './batcher.js';
import { storageFault } from './faults.js';
import { discoveredKey, hardwareEntries, identityEntries, type SelectorEntry, selectorEntries } from './identity.js';
import { BATCH_SQL, type BatchedServed, type BatchOutcome, batchParams } from './postgres-served.js';
import type { MachineSpec, ProfileSpec, ResourceKind, StoredResource } from './resources.js';
import {
  AUDIT_COLUMNS,
  AUDIT_READ_COLUMNS,
  mergeRepeatSql,
  mergesRepeats,
  trimServedAuditSql,
  nextServedSeqSql,
  renumberServedSql,
  type AuditRow,
  auditValues,
  CURRENT_JOIN,
  type CurrentRow,
  type DiscoveredRow,
  enrolledIds,
  enrolmentKeys,
  globEscape,
  labelConditions,
  type RevisionRow,
  sortedLabels,
  type StatusRow,
  toAuditEntry,
  toDiscovered,
  toFleet,
  toResource,
  toStatusRecord,
  toMintedToken,
  type MintedTokenRow,
} from './rows.js';
import { applyEvent, type FleetCounts, type StatusEvent, type StatusRecord } from './status.js';
import { requirementsOf } from './selector.js';
import {
  type AuditBounds,
  type BootCandidates,
  type FetchParts,
  type UrlClaim,
  type AuditEntry,
  type AuditInput,
  before,
  checkLimit,
  decodeContinue,
  type DiscoveredBounds,
  type DiscoveredSighting,
  type DiscoveredListOptions,
  type DiscoveredMachine,
  encodeContinue,
  isRefusal,
  type ListOptions,
  type ListPage,
  MAX_LIST_LIMIT,
  type MachineIdentity,
  type MintedToken,
  type ResourceInput,
  type SpecOf,
  type Store,
  type CreateOptions,
  type WriteOptions,
} from './store.js';

/** The integer columns of {@link AUDIT_COLUMNS}, by position (status, revision): the rest are text. */
const AUDIT_INTEGER_COLUMNS = new Set([3, 7]);

/** The type of each of {@link AUDIT_COLUMNS}, for placeholders in a SELECT list (where PostgreSQL infers none). */
const AUDIT_COLUMN_TYPES = AUDIT_COLUMNS.split(', ').map((_c, i) => (AUDIT_INTEGER_COLUMNS.has(i) ? 'integer' : 'text'));

/** The SQLSTATE of `bootwright_status_changed` (migration 011). */
const STATUS_CHANGED = 'BW001';

/** The SQLSTATE of `bootwright_audit_unnumbered` (migration 012). */
const AUDIT_UNNUMBERED = 'BW002';

/**
 * Whether `e` is the unique index `audit_served` (migration 012) refusing a served row's
 * number: another writer numbered one alike from the same newest row, and committed first.
 */
const servedSeqTaken = (e: unknown): boolean => (e as { code?: unknown }).code === '23505' && (e as { constraint?: unknown }).constraint === 'audit_served';

/** SQLSTATE deadlock_detected: two batches (two replicas) locked status rows in opposite orders. */
const DEADLOCK = '40P01';

/** Most served answers in one batch statement (src/store/postgres-served.ts), and most fetches in one read. */
const BATCH_MAX = 100;

/** A served answer waiting for its batch. */
interface ServedWrite {
  entry: AuditInput;
  at: string;
  max: number | undefined;
  event: StatusEvent | undefined;
  claim: UrlClaim | undefined;
}

/** Attempts of a one-statement served write before it falls back to a transaction under the row lock. */
const STATUS_ATTEMPTS = 3;

/** How many machines' last seen status records a store keeps (a guess: a wrong one costs a retry). */
const SEEN_STATUS_MAX = 20_000;

/**
 * For each row `k` of a batch read's keys (`kind`, `name`), the resource's current
 * revision and (a machine's) status record as `c`, looked up by primary key: a LATERAL
 * subquery kept whole (`OFFSET 0`), so it runs once per key, by index, whatever the
 * batch's size.
 */
const CURRENT_OF_KEY =
  'CROSS JOIN LATERAL (SELECT v.*, s.record AS status_record FROM resources r JOIN resource_revisions v ON v.kind = r.kind AND v.name = r.name AND v.revision = r.revision ' +
  "LEFT JOIN machine_status s ON r.kind = 'Machine' AND s.machine = r.name WHERE r.kind = k.kind AND r.name = k.name OFFSET 0) c";

/** {@link PostgresStore} `seenStatus` of a machine known to have no status row. */
const NO_STATUS = '';

/** Write a machine's status record, given the placeholders of the machine, phase, since and the record's JSON. */
const upsertStatusSql = (machine: string, phase: string, since: string, record: string) =>
  `INSERT INTO machine_status (machine, phase, since, record) VALUES (${machine}, ${phase}, ${since}, ${record}) ON CONFLICT (machine) DO UPDATE SET phase = excluded.phase, since = excluded.since, record = excluded.record`;
const UPSERT_STATUS = upsertStatusSql('$1', '$2', '$3', '$4');

/** Options of {@link openPostgresStore}. */
export interface PostgresStoreOptions {
  /** The clock for timestamps (tests); default the system clock. */
  now?: () => Date;
  /**
   * The schema holding the tables (created when absent); default the connection's
   * current schema (normally `public`). A plain lower-case identifier.
   */
  schema?: string;
  /** Most connections the pool opens (default 10). */
  poolSize?: number;
  /** How long {@link PostgresStore.ping} waits for `SELECT 1`, milliseconds (default {@link PING_TIMEOUT_MS}). */
  pingTimeoutMs?: number;
}

/**
 * Default readiness ping budget, milliseconds: under the 2 s timeout of the Kubernetes
 * readiness probe (deploy/kubernetes), so a hung database fails the probe with a 503
 * rather than a probe timeout.
 */
export const PING_TIMEOUT_MS = 1500;

/** Where the PostgreSQL migrations are, next to this module (src/ under tsx, dist/ once built). */
export const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/postgres/', import.meta.url));

/** The session advisory lock key held while migrating ("bootwrig" in ASCII). */
const MIGRATION_LOCK = '7165064450213390183';

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

type Queryable = pg.Pool | pg.PoolClient;

/** Swallow an error that has nowhere better to go (it is reported another way). */
const ignore = (): void => undefined;

/**
 * The `application_name` of this process's connections: `bootwright PID HOST` (the
 * server keeps its first 63 bytes, so the process id goes before the host name).
 */
function applicationName(): string {
  return `bootwright ${process.pid} ${hostname()}`;
}

/**
 * Open the PostgreSQL store at `url` and migrate it to the latest schema.
 *
 * @param url a `postgres://` or `postgresql://` connection URL.
 * @throws whatever pg or postgrator throws for an unreachable database or a failed
 *   migration (the pool is closed first); an Error for a bad `schema` option;
 *   NewerSchemaError for a database a newer release migrated beyond what this one can
 *   run on (src/store/compat.ts).
 */
export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
  const { schema } = options;
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) throw new Error(`invalid PostgreSQL schema name "${schema}"`);
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    // What `pg_stat_activity` shows an operator for each connection: which process of
    // which host (a pod's name in Kubernetes) holds it.
    application_name: applicationName(),
    ...(schema !== undefined ? { options: `-c search_path=${schema}` } : {}),
  });
  // An idle connection dropped by the server must not crash the process; the next
  // query opens another.
  pool.on('error', ignore);
  let state: SchemaState | undefined;
  try {
    const client = await pool.connect();
    try {
      await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
      try {
        if (schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
        const current = (await client.query<{ schema: string }>('SELECT current_schema() AS schema')).rows[0]?.schema;
        if (!current) throw new Error('the PostgreSQL connection has no current schema (search_path)');
        const postgrator = new Postgrator({
          driver: 'pg',
          migrationPattern: `${globEscape(MIGRATIONS_DIR)}*.sql`,
          schemaTable: 'schema_version',
          currentSchema: current,
          execQuery: async (query) => ({ rows: (await client.query(query)).rows as Record<string, unknown>[] }),
          // One migration file is one transaction: it applies whole or not at all.
          execSqlScript: async (script) => {
            await client.query('BEGIN');
            try {
              await client.query(script);
              await client.query('COMMIT');
            } catch (e) {
              await client.query('ROLLBACK');
              throw e;
            }
          },
        });
        state = await migrateStore(postgrator, async () => {
          const found = (await client.query<{ t: string | null }>("SELECT to_regclass('schema_compatibility')::text AS t")).rows[0]?.t;
          if (!found) return undefined;
          return (await client.query<{ readable_from: number }>('SELECT readable_from FROM schema_compatibility WHERE id = 1')).rows[0]?.readable_from;
        });
        // postgrator's SET search_path lasts for this pooled session: put back the default.
        if (schema === undefined) await client.query('RESET search_path');
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
      }
    } finally {
      client.release();
    }
  } catch (e) {
    await pool.end().catch(ignore);
    throw e;
  }
  const store = new PostgresStore(pool, options.now ?? (() => new Date()), options.pingTimeoutMs ?? PING_TIMEOUT_MS);
  store.schema = state;
  return store;
}

/**
 * Run a firmware request's SQL as a named prepared statement (its text has a few variants,
 * one name each): PostgreSQL parses and plans it once per connection, and later
 * executions send only its name and parameters, not the text (several hundred bytes to a
 * few KB), on the route every booting machine takes. When a newer replica's migration
 * changed a table under a statement this connection prepared, PostgreSQL refuses it
 * ("cached plan must not change result type", SQLSTATE 0A000, nothing done): it runs
 * again unprepared, so a rolling upgrade costs no failed boot.
 *
 * @returns the result, as `pool.query` does
 * @throws what `pool.query` throws
 */
async function preparedQuery<R extends pg.QueryResultRow>(pool: pg.Pool, text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `bw_${createHash('sha256').update(text).digest('hex').slice(0, 16)}`;
    if (statementNames.size < 1024) statementNames.set(text, name);
  }
  try {
    return await pool.query<R>({ name, text, values });
  } catch (e) {
    if ((e as { code?: unknown }).code !== '0A000') throw e;
    return pool.query<R>(text, values);
  }
}
const statementNames = new Map<string, string>();

/** The PostgreSQL {@link Store}. Construct with {@link openPostgresStore}. */
export class PostgresStore implements Store {
  /** The schema as this start found and left it. */
  schema?: SchemaState;

  private closed = false;

  /**
   * The status record text each machine had when this store last read or wrote it
   * ({@link NO_STATUS}: none), what a one-statement served write computes its transition
   * from and checks is still there (servedInOneStatement). Only a guess: another
   * replica's write makes it stale, which costs a retry, never a wrong write.
   */
  private readonly seenStatus = new LRUCache<string, string>({ max: SEEN_STATUS_MAX });

  /**
   * Served answers gathered into batch statements, one answer per machine in each and at
   * most half the pool's connections held by them, so reads never wait for all of them.
   */
  private readonly servedBatches: KeyedBatcher<ServedWrite, BatchOutcome | 'alone'>;

  /** Config fetches' and `/ipxe` requests' reads, gathered into one query per batch. */
  private readonly partsBatches: KeyedBatcher<{ machine: string; claimKey?: string }, FetchParts | NotFoundError>;
  private readonly candidateBatches: KeyedBatcher<{ entries: SelectorEntry[]; fallback?: string }, BootCandidates>;

  constructor(
    private readonly pool: pg.Pool,
    private readonly now: () => Date,
    private readonly pingTimeoutMs: number = PING_TIMEOUT_MS,
  ) {
    const limits = { size: BATCH_MAX, inFlight: Math.max(1, Math.floor(pool.options.max / 2)) };
    this.servedBatches = new KeyedBatcher((batch) => this.writeServedBatch(batch), (w) => w.entry.machine, limits);
    this.partsBatches = new KeyedBatcher((batch) => this.readPartsBatch(batch), undefined, limits);
    this.candidateBatches = new KeyedBatcher((batch) => this.readCandidatesBatch(batch), undefined, limits);
  }

  private timestamp(): string {
    return this.now().toISOString();
  }

  /**
   * Run `fn` in one transaction on one pooled connection; roll back when it throws.
   *
   * A checked-out connection has no error listener of the pool's: one that the server
   * ends meanwhile (a restart, `pg_terminate_backend`) would otherwise emit an unhandled
   * `error` and end the process. The error is kept instead (the next query fails with
   * it), and a connection that failed is destroyed rather than returned to the pool.
   */
  private async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    const onError = (e: Error): void => {
      broken = e;
    };
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      try {
        const result = await fn(client);
        await client.query('COMMIT');
        return result;
      } catch (e) {
        if (storageFault(e)) broken ??= e as Error;
        await client.query('ROLLBACK').catch(ignore);
        throw e;
      }
    } finally {
      client.removeListener('error', onError);
      client.release(broken);
    }
  }

  /**
   * A resource write's transaction: committed, or rolled back after `fn` when
   * `options.dryRun` (src/store/dry-run.ts), answering what it would have stored.
   */
  private writeTransaction<T>(options: CreateOptions, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return dryRunAnswer(this.transaction(async (client) => commitUnlessDryRun(options, await fn(client))));
  }

  /** Serialise writes of one resource across every connection and replica (until commit). */
  private static async lockResource(client: pg.PoolClient, kind: ResourceKind, name: string): Promise<void> {
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`${kind}/${name}`]);
  }

  private static async current(db: Queryable, kind: ResourceKind, name: string, lock = ''): Promise<CurrentRow | undefined> {
    const sql = lock
      ? `SELECT r.revision, v.created_at ${CURRENT_JOIN} WHERE r.kind = $1 AND r.name = $2 ${lock} OF r`
      : `SELECT r.revision, v.created_at ${CURRENT_JOIN} WHERE r.kind = $1 AND r.name = $2`;
    return (await db.query<CurrentRow>(sql, [kind, name])).rows[0];
  }

  private static async getOrThrow<K extends ResourceKind>(db: Queryable, kind: K, name: string): Promise<StoredResource<SpecOf<K>>> {
    const row = (await db.query<RevisionRow>(`SELECT v.* ${CURRENT_JOIN} WHERE r.kind = $1 AND r.name = $2`, [kind, name])).rows[0];
    if (!row) throw new NotFoundError(kind, name);
    return toResource(row);
  }

  /**
   * The cluster and profile revisions a machine spec refers to, now, locked `FOR SHARE`
   * until commit (a concurrent delete of either waits). @throws MissingReferenceError
   */
  private static async refsOf(client: pg.PoolClient, spec: MachineSpec): Promise<{ clusterRevision: number; profileRevision: number }> {
    const cluster = await PostgresStore.current(client, 'Cluster', spec.cluster, 'FOR SHARE');
    const profile = await PostgresStore.current(client, 'Profile', spec.profile, 'FOR SHARE');
    const missing: MissingReference[] = [];
    if (!cluster) missing.push({ path: 'spec.cluster', kind: 'Cluster', name: spec.cluster });
    if (!profile) missing.push({ path: 'spec.profile', kind: 'Profile', name: spec.profile });
    if (!cluster || !profile) throw new MissingReferenceError(missing);
    return { clusterRevision: cluster.revision, profileRevision: profile.revision };
  }

  /**
   * Keep `resource_needs` and `schema_compatibility.readable_from` (migration 009,
   * src/store/compat.ts {@link documentNeeds}) in step with a document written (`spec`)
   * or deleted (undefined), inside its transaction. A document that needs nothing and
   * had no row costs one read. Otherwise the compatibility row is locked first, so the
   * maximum is computed, in a statement after the lock, from every writer's committed rows.
   */
  private static async noteNeeds(client: pg.PoolClient, kind: ResourceKind, name: string, spec: unknown): Promise<void> {
    const needs = spec === undefined ? undefined : documentNeeds(kind, spec);
    const had = (await client.query('SELECT 1 FROM resource_needs WHERE kind = $1 AND name = $2', [kind, name])).rows.length > 0;
    if (!had && (needs === undefined || needs.fields.length === 0)) return;
    await client.query('SELECT 1 FROM schema_compatibility WHERE id = 1 FOR UPDATE');
    if (needs !== undefined && needs.fields.length > 0) {
      await client.query(
        'INSERT INTO resource_needs (kind, name, readable_from, fields) VALUES ($1, $2, $3, $4) ON CONFLICT (kind, name) DO UPDATE SET readable_from = excluded.readable_from, fields = excluded.fields',
        [kind, name, needs.readableFrom, needs.fields.join(', ')],
      );
    } else {
      await client.query('DELETE FROM resource_needs WHERE kind = $1 AND name = $2', [kind, name]);
    }
    await client.query('UPDATE schema_compatibility SET readable_from = (SELECT greatest($1::integer, max(readable_from)) FROM resource_needs) WHERE id = 1', [READABLE_FROM]);
  }

  /**
   * Write one revision and make it current (inside a transaction). `createdAt`
   * undefined: a first revision, created and updated at the same instant.
   */
  private async write<K extends ResourceKind>(
    client: pg.PoolClient,
    kind: K,
    input: ResourceInput<SpecOf<K>>,
    revision: number,
    createdAt: string | undefined,
    selectors: SelectorEntry[] | undefined,
  ): Promise<void> {
    const updatedAt = this.timestamp();
    const { name } = input;
    const labels = sortedLabels(input.labels);
    const machine = kind === 'Machine' ? (input.spec as MachineSpec) : undefined;
    const refs = machine ? await PostgresStore.refsOf(client, machine) : undefined;
    await client.query(
      'INSERT INTO resource_revisions (kind, name, revision, labels, spec, cluster_revision, profile_revision, created_at, updated_at, rules) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
      [kind, name, revision, JSON.stringify(labels), JSON.stringify(input.spec), refs?.clusterRevision ?? null, refs?.profileRevision ?? null, createdAt ?? updatedAt, updatedAt, RULES_VERSION],
    );
    await client.query(
      'INSERT INTO resources (kind, name, revision, cluster, profile) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (kind, name) DO UPDATE SET revision = excluded.revision, cluster = excluded.cluster, profile = excluded.profile',
      [kind, name, revision, machine?.cluster ?? null, machine?.profile ?? null],
    );
    await PostgresStore.noteNeeds(client, kind, name, input.spec);
    await client.query('DELETE FROM resource_labels WHERE kind = $1 AND name = $2', [kind, name]);
    const entries = Object.entries(labels);
    if (entries.length > 0) {
      await client.query('INSERT INTO resource_labels (kind, name, key, value) SELECT $1, $2, k, v FROM unnest($3::text[], $4::text[]) AS t (k, v)', [
        kind,
        name,
        entries.map(([k]) => k),
        entries.map(([, v]) => v),
      ]);
    }
    if (selectors) {
      // Each hardware value is locked (in a fixed order, after the resource lock) until
      // commit, so two machines written at once on any replicas cannot both take it.
      for (const e of hardwareEntries(selectors)) {
        await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`selector/${e.selector}/${e.value}`]);
        const owner = (await client.query<{ machine: string }>('SELECT machine FROM machine_selectors WHERE selector = $1 AND value = $2 AND machine <> $3 ORDER BY machine LIMIT 1', [e.selector, e.value, name])).rows[0];
        if (owner) throw new DuplicateSelectorError(e.field ?? `spec.selectors.${e.selector}`, owner.machine);
      }
      await client.query('DELETE FROM machine_selectors WHERE machine = $1', [name]);
      if (selectors.length > 0) {
        await client.query('INSERT INTO machine_selectors (selector, value, machine) SELECT s, v, $3 FROM unnest($1::text[], $2::text[]) AS t (s, v) ON CONFLICT DO NOTHING', [
          selectors.map((e) => e.selector),
          selectors.map((e) => e.value),
          name,
        ]);
      }
      const ids = enrolledIds({ name, spec: machine! }, await PostgresStore.enrolmentCandidates(client, selectors));
      if (ids.length > 0) await client.query('UPDATE discovered SET enrolled = $1 WHERE id = ANY($2::bigint[])', [name, ids]);
    }
  }

  /** Discovered entries sharing a hardware value with these selectors (indexed lookups). */
  private static async enrolmentCandidates(client: pg.PoolClient, selectors: SelectorEntry[]): Promise<DiscoveredRow[]> {
    const keys = enrolmentKeys(selectors);
    const params: string[][] = [];
    const terms: string[] = [];
    for (const field of ['mac', 'uuid', 'serial', 'hostname'] as const) {
      if (keys[field].length === 0) continue;
      params.push(keys[field]);
      terms.push(`(${field} <> '' AND ${field} = ANY($${params.length}::text[]))`);
    }
    if (terms.length === 0) return [];
    return (await client.query<DiscoveredRow>(`SELECT * FROM discovered WHERE ${terms.join(' OR ')} LIMIT ${MAX_LIST_LIMIT}`, params)).rows;
  }

  /** @inheritdoc */
  async create<K extends ResourceKind>(kind: K, input: ResourceInput<SpecOf<K>>, options: CreateOptions = {}): Promise<StoredResource<SpecOf<K>>> {
    const selectors = kind === 'Machine' ? selectorEntries(input.spec as MachineSpec) : undefined;
    return this.writeTransaction(options, async (client) => {
      await PostgresStore.lockResource(client, kind, input.name);
      if (await PostgresStore.current(client, kind, input.name)) throw new AlreadyExistsError(kind, input.name);
      const last = (await client.query<{ revision: number | null }>('SELECT max(revision) AS revision FROM resource_revisions WHERE kind = $1 AND name = $2', [kind, input.name])).rows[0]?.revision ?? 0;
      await this.write(client, kind, input, last + 1, undefined, selectors);
      return PostgresStore.getOrThrow<K>(client, kind, input.name);
    });
  }

  /** @inheritdoc */
  async get<K extends ResourceKind>(kind: K, name: string): Promise<StoredResource<SpecOf<K>>> {
    return PostgresStore.getOrThrow(this.pool, kind, name);
  }

  /** @inheritdoc */
  async getRevision<K extends ResourceKind>(kind: K, name: string, revision: number): Promise<StoredResource<SpecOf<K>>> {
    const row = Number.isInteger(revision)
      ? (await this.pool.query<RevisionRow>('SELECT * FROM resource_revisions WHERE kind = $1 AND name = $2 AND revision = $3', [kind, name, revision])).rows[0]
      : undefined;
    if (!row) throw new NotFoundError(kind, name, revision);
    return toResource<SpecOf<K>>(row);
  }

  /** @inheritdoc */
  async list<K extends ResourceKind>(kind: K, options: ListOptions = {}): Promise<ListPage<SpecOf<K>>> {
    const limit = checkLimit(options.limit);
    const after = options.continue === undefined || options.continue === '' ? '' : decodeContinue(kind, options.continue);
    const params: (string | number)[] = [kind, after];
    let sql = `SELECT v.* ${CURRENT_JOIN} WHERE r.kind = $1 AND r.name > $2`;
    sql += labelConditions(requirementsOf(options.labelSelector), kind, (value) => `$${params.push(value)}`);
    params.push(limit + 1);
    sql += ` ORDER BY r.name LIMIT $${params.length}`;
    const rows = (await this.pool.query<RevisionRow>(sql, params)).rows;
    const items = rows.slice(0, limit).map((row) => toResource<SpecOf<K>>(row));
    const last = items.at(-1);
    return { items, ...(rows.length > limit && last ? { continue: encodeContinue(kind, last.name) } : {}) };
  }

  /** @inheritdoc */
  async replace<K extends ResourceKind>(kind: K, input: ResourceInput<SpecOf<K>>, options: WriteOptions = {}): Promise<StoredResource<SpecOf<K>>> {
    const selectors = kind === 'Machine' ? selectorEntries(input.spec as MachineSpec) : undefined;
    return this.writeTransaction(options, async (client) => {
      await PostgresStore.lockResource(client, kind, input.name);
      const current = await PostgresStore.current(client, kind, input.name, 'FOR UPDATE');
      if (!current) throw new NotFoundError(kind, input.name);
      if (options.ifMatch !== undefined && options.ifMatch !== current.revision) throw new PreconditionFailedError(kind, input.name, options.ifMatch, current.revision);
      await this.write(client, kind, input, current.revision + 1, current.created_at, selectors);
      return PostgresStore.getOrThrow(client, kind, input.name);
    });
  }

  /** @inheritdoc */
  async delete(kind: ResourceKind, name: string, options: WriteOptions = {}): Promise<void> {
    await this.writeTransaction(options, async (client) => {
      await PostgresStore.lockResource(client, kind, name);
      const current = await PostgresStore.current(client, kind, name, 'FOR UPDATE');
      if (!current) throw new NotFoundError(kind, name);
      if (options.ifMatch !== undefined && options.ifMatch !== current.revision) throw new PreconditionFailedError(kind, name, options.ifMatch, current.revision);
      if (kind === 'Cluster' || kind === 'Profile') {
        const users = await PostgresStore.machinesNaming(client, kind, name);
        if (users.length > 0) throw new ReferencedError(kind, name, users);
      }
      await client.query('DELETE FROM resources WHERE kind = $1 AND name = $2', [kind, name]);
      await client.query('DELETE FROM resource_labels WHERE kind = $1 AND name = $2', [kind, name]);
      await PostgresStore.noteNeeds(client, kind, name, undefined);
      if (kind === 'Machine') {
        await client.query('DELETE FROM machine_selectors WHERE machine = $1', [name]);
        await client.query('DELETE FROM fetch_counts WHERE machine = $1', [name]);
        await client.query('DELETE FROM machine_status WHERE machine = $1', [name]);
      }
    });
  }

  /** @inheritdoc */
  async revisions<K extends ResourceKind>(kind: K, name: string): Promise<StoredResource<SpecOf<K>>[]> {
    const rows = (await this.pool.query<RevisionRow>('SELECT * FROM resource_revisions WHERE kind = $1 AND name = $2 ORDER BY revision', [kind, name])).rows;
    if (rows.length === 0) throw new NotFoundError(kind, name);
    return rows.map((row) => toResource<SpecOf<K>>(row));
  }

  private static async machinesNaming(db: Queryable, kind: 'Cluster' | 'Profile', name: string): Promise<string[]> {
    const column = kind === 'Cluster' ? 'cluster' : 'profile';
    return (await db.query<{ name: string }>(`SELECT name FROM resources WHERE kind = 'Machine' AND ${column} = $1 ORDER BY name`, [name])).rows.map((r) => r.name);
  }

  /** @inheritdoc */
  async referencedBy(kind: 'Cluster' | 'Profile', name: string): Promise<string[]> {
    return PostgresStore.machinesNaming(this.pool, kind, name);
  }

  /** @inheritdoc */
  async findMachinesBy(identity: MachineIdentity & { labels?: Record<string, string> }): Promise<StoredResource<MachineSpec>[]> {
    const entries = identityEntries(identity);
    if (entries.length === 0) return [];
    const params: string[] = [];
    const terms = entries.map((e) => {
      params.push(e.selector, e.value);
      return `(selector = $${params.length - 1} AND value = $${params.length})`;
    });
    const sql = `SELECT v.* ${CURRENT_JOIN} WHERE r.kind = 'Machine' AND r.name IN (SELECT machine FROM machine_selectors WHERE ${terms.join(' OR ')}) ORDER BY r.name`;
    return (await this.pool.query<RevisionRow>(sql, params)).rows.map((row) => toResource<MachineSpec>(row));
  }

  /**
   * @inheritdoc The requests of the same turn of the event loop share one query
   * ({@link readCandidatesBatch}).
   */
  async bootCandidates(identity: MachineIdentity & { labels?: Record<string, string> }, fallback?: string): Promise<BootCandidates> {
    const entries = identityEntries(identity);
    if (entries.length === 0 && fallback === undefined) return { machines: [], profiles: new Map() };
    return this.candidateBatches.push({ entries, fallback });
  }

  /**
   * The candidates of a batch of `/ipxe` requests in one query, one snapshot: the machines
   * each request's selector values (or its fallback) name, by name, with their status
   * records (which seed {@link seenStatus}), and their profiles, each read once however
   * many requests name it.
   *
   * @returns each request's candidates, in order
   */
  private async readCandidatesBatch(batch: { entries: SelectorEntry[]; fallback?: string }[]): Promise<BootCandidates[]> {
    const terms: [number[], string[], string[]] = [[], [], []];
    const fallbacks: [number[], string[]] = [[], []];
    batch.forEach(({ entries, fallback }, i) => {
      for (const e of entries) {
        terms[0].push(i + 1);
        terms[1].push(e.selector);
        terms[2].push(e.value);
      }
      if (fallback !== undefined) {
        fallbacks[0].push(i + 1);
        fallbacks[1].push(fallback);
      }
    });
    // Each row looked up by its key, request by request: a LATERAL subquery kept whole
    // (OFFSET 0) runs once per outer row, by index. As joins, PostgreSQL hashed a batch of
    // 100 and scanned the whole selector table; an OR of IN-subqueries made it scan every
    // resource and revision (8.7 ms against 0.4 ms at 10,000 machines).
    const sql =
      'WITH terms AS (SELECT * FROM unnest($1::integer[], $2::text[], $3::text[]) AS t(i, selector, value)), ' +
      'fallbacks AS (SELECT * FROM unnest($4::integer[], $5::text[]) AS f(i, name)), ' +
      'named AS (SELECT t.i, s.machine AS name FROM terms t CROSS JOIN LATERAL (SELECT machine FROM machine_selectors WHERE selector = t.selector AND value = t.value OFFSET 0) s UNION SELECT i, name FROM fallbacks), ' +
      "ms AS (SELECT n.i, r.name, r.profile FROM named n CROSS JOIN LATERAL (SELECT name, profile FROM resources WHERE kind = 'Machine' AND name = n.name OFFSET 0) r), " +
      "keys AS (SELECT 'Machine'::text AS kind, name FROM ms UNION SELECT 'Profile', profile FROM ms) " +
      `SELECT c.*, CASE WHEN c.kind = 'Machine' THEN (SELECT array_agg(ms.i::integer) FROM ms WHERE ms.name = c.name) END AS candidate_of FROM keys k ${CURRENT_OF_KEY} ORDER BY c.name`;
    const rows = (await preparedQuery<RevisionRow & { status_record: string | null; candidate_of: number[] | null }>(this.pool, sql, [...terms, ...fallbacks])).rows;
    const profiles = new Map(rows.filter((r) => r.kind === 'Profile').map((r) => [r.name, toResource<ProfileSpec>(r)]));
    const out: BootCandidates[] = batch.map(() => ({ machines: [], profiles: new Map() }));
    for (const row of rows) {
      if (row.kind !== 'Machine') continue;
      const machine = toResource<MachineSpec>(row);
      this.seenStatus.set(row.name, row.status_record ?? NO_STATUS);
      for (const i of row.candidate_of ?? []) {
        const candidates = out[i - 1]!;
        candidates.machines.push(machine);
        const profile = profiles.get(machine.spec.profile);
        if (profile) candidates.profiles.set(profile.name, profile);
      }
    }
    return out;
  }

  /**
   * @inheritdoc The fetches of the same turn of the event loop share one query
   * ({@link readPartsBatch}).
   */
  async fetchParts(machine: string, claimKey?: string): Promise<FetchParts> {
    const parts = await this.partsBatches.push({ machine, claimKey });
    if (parts instanceof NotFoundError) throw parts;
    return parts;
  }

  /**
   * The parts of a batch of fetches in one query, one snapshot: for each, the machine's
   * current revision (its status record with it, which seeds {@link seenStatus}), its
   * cluster's and profile's (each read once however many machines name it), and whether
   * its URL was claimed.
   *
   * @returns each fetch's parts, in order, or the NotFoundError of what it lacks
   */
  private async readPartsBatch(batch: { machine: string; claimKey?: string }[]): Promise<(FetchParts | NotFoundError)[]> {
    // Each row looked up by its key, fetch by fetch (LATERAL, kept whole by OFFSET 0): as
    // joins, PostgreSQL hashed a batch of 100 and scanned every resource, and every claim.
    const sql =
      'WITH fetches AS (SELECT * FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS t(machine, claim_key, i)), ' +
      "m AS (SELECT DISTINCT r.name, r.cluster, r.profile FROM fetches f CROSS JOIN LATERAL (SELECT name, cluster, profile FROM resources WHERE kind = 'Machine' AND name = f.machine OFFSET 0) r), " +
      "keys AS (SELECT 'Machine'::text AS kind, name FROM m UNION SELECT 'Cluster', cluster FROM m UNION SELECT 'Profile', profile FROM m) " +
      'SELECT c.*, (SELECT array_agg(i::integer) FROM fetches f WHERE claim_key IS NOT NULL AND EXISTS (SELECT 1 FROM claimed_urls WHERE key = f.claim_key AND expires_at > $3 OFFSET 0)) AS claimed ' +
      `FROM keys k ${CURRENT_OF_KEY}`;
    const params = [batch.map((f) => f.machine), batch.map((f) => f.claimKey ?? null), Math.floor(this.now().getTime() / 1000)];
    const rows = (await preparedQuery<RevisionRow & { status_record: string | null; claimed: number[] | null }>(this.pool, sql, params)).rows;
    const byKey = new Map(rows.map((r) => [`${r.kind}/${r.name}`, r]));
    const claimed = new Set(rows[0]?.claimed ?? []);
    return batch.map(({ machine }, i) => {
      const of = <K extends ResourceKind>(kind: K, name: string): StoredResource<SpecOf<K>> => {
        const row = byKey.get(`${kind}/${name}`);
        if (!row) throw new NotFoundError(kind, name);
        return toResource<SpecOf<K>>(row);
      };
      try {
        const m = of('Machine', machine);
        const parts = { machine: m, cluster: of('Cluster', m.spec.cluster), profile: of('Profile', m.spec.profile), claimed: claimed.has(i + 1) };
        this.seenStatus.set(machine, byKey.get(`Machine/${machine}`)!.status_record ?? NO_STATUS);
        return parts;
      } catch (e) {
        if (e instanceof NotFoundError) return e;
        throw e;
      }
    });
  }

  /**
   * @inheritdoc A served answer goes into the next batch statement
   * ({@link writeServedBatch}) and resolves once it has committed; one the batch could not
   * write as computed is written on its own ({@link servedInOneStatement}, then
   * {@link servedInTransaction}).
   */
  async recordAudit(entry: AuditInput, bounds: AuditBounds = {}, event?: StatusEvent, claim?: UrlClaim): Promise<boolean> {
    const at = this.timestamp();
    const values = auditValues(entry, at);
    if (!isRefusal(entry.status)) {
      const max = bounds.maxServedPerMachine;
      const outcome = await this.servedBatches.push({ entry, at, max, event, claim });
      if (outcome === 'written' || outcome === 'claimed') return outcome === 'written';
      const written = outcome === 'unnumbered' ? undefined : await this.servedInOneStatement(entry, at, max, event, claim);
      if (written !== undefined) return written;
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.servedInTransaction(entry, at, max, event, claim);
        } catch (e) {
          if (!servedSeqTaken(e) || attempt >= STATUS_ATTEMPTS) throw e;
        }
      }
    }
    const insert = `INSERT INTO audit (${AUDIT_COLUMNS}) VALUES (${values.map((_v, i) => `$${i + 1}`).join(', ')})`;
    // The refusal counter row is updated (and locked) in every such transaction, so
    // replicas count and trim one after another.
    const countBy = async (client: pg.PoolClient, delta: number) =>
      (await client.query<{ count: number }>('UPDATE audit_refusals SET count = count + $1 WHERE id = 1 RETURNING count::integer AS count', [delta])).rows[0]!.count;
    await this.transaction(async (client) => {
      await client.query(insert, values);
      const expired = bounds.retentionSeconds ? ((await client.query('DELETE FROM audit WHERE status >= 400 AND at < $1', [before(this.now(), bounds.retentionSeconds)])).rowCount ?? 0) : 0;
      const count = await countBy(client, 1 - expired);
      if (bounds.maxRefused !== undefined && count > bounds.maxRefused) {
        const trimmed = (await client.query('DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE status >= 400 ORDER BY id LIMIT $1)', [count - bounds.maxRefused])).rowCount ?? 0;
        await countBy(client, -trimmed);
      }
    });
    return true;
  }

  /**
   * Write a batch of served answers (one per machine) in one statement, one round trip
   * and one commit (src/store/postgres-served.ts), each transition computed from the
   * status record last seen ({@link seenStatus}; those unknown read first, in one query).
   *
   * @returns each answer's outcome, in order: `alone` for all of them when the statement
   *   met a race and wrote nothing (a record changed under its lock, a served number taken
   *   by another writer, a deadlock between two replicas' batches)
   * @throws what the query throws otherwise (every answer of the batch fails with it)
   */
  private async writeServedBatch(batch: ServedWrite[]): Promise<(BatchOutcome | 'alone')[]> {
    const unknown = batch.filter((w) => w.event && this.seenStatus.get(w.entry.machine) === undefined).map((w) => w.entry.machine);
    if (unknown.length > 0) {
      const found = new Map(
        (await this.pool.query<{ machine: string; record: string }>('SELECT machine, record FROM machine_status WHERE machine = ANY($1::text[])', [unknown])).rows.map((r) => [r.machine, r.record]),
      );
      for (const machine of unknown) this.seenStatus.set(machine, found.get(machine) ?? NO_STATUS);
    }
    const planned = batch.map((w): BatchedServed & { applied?: ReturnType<typeof applyEvent> } => {
      const merge = mergesRepeats(w.entry, w.max);
      if (!w.event) return { entry: w.entry, at: w.at, max: w.max, merge, claim: w.claim, mode: 'none' };
      const seen = this.seenStatus.get(w.entry.machine) ?? NO_STATUS;
      const applied = applyEvent(seen === NO_STATUS ? undefined : (JSON.parse(seen) as StatusRecord), w.event, w.at);
      const entry = applied.flag ? { ...w.entry, reason: applied.flag } : w.entry;
      const mode = applied.accepted ? (seen === NO_STATUS ? 'insert' : 'update') : seen === NO_STATUS ? 'hold-none' : 'hold';
      return { entry, at: w.at, max: w.max, merge, claim: w.claim, mode, record: applied.accepted ? applied.record : undefined, seen, applied };
    });
    let outcomes: BatchOutcome[];
    try {
      outcomes = (await preparedQuery<{ outcome: BatchOutcome }>(this.pool, BATCH_SQL, batchParams(planned, Math.floor(this.now().getTime() / 1000)))).rows.map((r) => r.outcome);
    } catch (e) {
      const code = (e as { code?: unknown }).code;
      if (code !== STATUS_CHANGED && code !== DEADLOCK && !servedSeqTaken(e)) throw e;
      for (const w of batch) this.seenStatus.delete(w.entry.machine);
      return batch.map(() => 'alone');
    }
    planned.forEach((p, i) => {
      const machine = p.entry.machine;
      if (outcomes[i] === 'changed') this.seenStatus.delete(machine);
      else if (outcomes[i] === 'written' && p.applied) this.seenStatus.set(machine, p.applied.accepted ? JSON.stringify(p.applied.record) : p.seen!);
    });
    return outcomes;
  }

  /**
   * A served answer written in a transaction (round trips BEGIN, the claim with expired
   * claims dropped in the same statement, the status row read under its lock, the served
   * rows' next number (numbering them again first when an earlier release left one
   * unnumbered), one statement writing the status, the audit row and the trim, COMMIT):
   * when {@link servedInOneStatement} found the status changed under each attempt, or
   * unnumbered rows. Throws the unique violation of `audit_served` when a writer without
   * the row lock numbered a row alike meanwhile (the caller retries).
   *
   * @returns whether it was written (false: the URL was claimed before)
   */
  private servedInTransaction(entry: AuditInput, at: string, max: number | undefined, event: StatusEvent | undefined, claim: UrlClaim | undefined): Promise<boolean> {
    return this.transaction(async (client) => {
      if (claim) {
        const claimed = await client.query(
          'WITH expired AS (DELETE FROM claimed_urls WHERE expires_at <= $4) INSERT INTO claimed_urls (key, machine, expires_at) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING',
          [claim.key, entry.machine, claim.expiresAt, Math.floor(this.now().getTime() / 1000)],
        );
        if (claimed.rowCount !== 1) return false;
      }
      // The status first: a fetch it flags (without /ipxe) says so in its audit row.
      // Writers of one machine's rows take its status row's lock (without an event, a lock of
      // its own), so the number read next is the newest committed.
      const applied = event ? await this.lockedStatus(client, entry.machine, event) : undefined;
      if (!event) await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`served/${entry.machine}`]);
      const of = [entry.machine, entry.route];
      let next = (await client.query<{ n: number; unnumbered: boolean }>(nextServedSeqSql('$1', '$2::text'), of)).rows[0]!;
      if (next.unnumbered) {
        for (const sql of renumberServedSql('$1', '$2::text')) await client.query(sql, of);
        next = (await client.query<{ n: number; unnumbered: boolean }>(nextServedSeqSql('$1', '$2::text'), of)).rows[0]!;
      }
      const params: unknown[] = auditValues(applied?.flag ? { ...entry, reason: applied.flag } : entry, at);
      const typed = params.map((_v, i) => `$${i + 1}${AUDIT_INTEGER_COLUMNS.has(i) ? '::integer' : '::text'}`);
      params.push(next.n);
      const seq = `$${params.length}::integer`;
      // Data-modifying CTEs all run, on one snapshot: the trim does not see the new audit
      // row, and deletes by number. A repeat of the newest /ipxe answer is counted in its
      // row (mergeRepeatSql), else the row is added.
      const merge = mergesRepeats(entry, max);
      const parts = merge
        ? [`merged AS (${mergeRepeatSql((i) => typed[i]!, 'IS NOT DISTINCT FROM')} RETURNING 1)`, `audit_row AS (INSERT INTO audit (${AUDIT_COLUMNS}, served_seq) SELECT ${typed.join(', ')}, ${seq} WHERE NOT EXISTS (SELECT 1 FROM merged))`]
        : [`audit_row AS (INSERT INTO audit (${AUDIT_COLUMNS}, served_seq) VALUES (${typed.join(', ')}, ${seq}))`];
      if (applied?.accepted) {
        const { record } = applied;
        params.push(record.phase, record.since, JSON.stringify(record));
        const n = params.length;
        parts.push(`status_row AS (${upsertStatusSql('$1', `$${n - 2}`, `$${n - 1}`, `$${n}`)})`);
      }
      // A repeat counted in its row adds none: nothing to trim.
      if (max !== undefined) {
        params.push(max);
        parts.push(`trimmed AS (${trimServedAuditSql('$1', '$2::text', seq, `$${params.length}::integer`)}${merge ? ' AND NOT EXISTS (SELECT 1 FROM merged)' : ''})`);
      }
      await client.query(`WITH ${parts.join(', ')} SELECT 1`, params);
      return true;
    });
  }

  /**
   * A served answer's lifecycle event (if any), URL claim, audit row (or the repeat
   * counted in the newest identical one) and trim in one statement, one round trip, no
   * transaction block (issue 32). The transition is computed here from the status record
   * last seen ({@link seenStatus}; read first when unknown) and written only if the
   * record is still that one: an `UPDATE … WHERE record = $seen`, or an `INSERT … ON
   * CONFLICT DO NOTHING` for a machine with none, or, when the event changes nothing, the
   * row read `FOR UPDATE` where it still holds it. When another writer (any replica)
   * changed it meanwhile, the statement calls `bootwright_status_changed` (migration
   * 011), whose error rolls all of it back, and the record is read again. The audit row
   * takes the next number of its class (`audit_served`, migration 012): a writer that took
   * it first makes the unique index refuse it, and the statement is tried again; rows an
   * earlier release left unnumbered make it call `bootwright_audit_unnumbered`, and the
   * caller numbers them in a transaction. The claim goes first: a URL claimed before
   * writes nothing (false). The audit row and the status change need each other (each
   * selects from the one before), so the statement writes all or nothing.
   *
   * @returns whether it was written (false: the URL was claimed before), or undefined
   *   after {@link STATUS_ATTEMPTS} attempts that each found the record changed or the
   *   number taken, or when rows are unnumbered (the caller then writes in a transaction
   *   under the row's lock)
   */
  private async servedInOneStatement(entry: AuditInput, at: string, max: number | undefined, event: StatusEvent | undefined, claim: UrlClaim | undefined): Promise<boolean | undefined> {
    const machine = entry.machine;
    for (let attempt = 0; attempt < STATUS_ATTEMPTS; attempt++) {
      let seen = event ? this.seenStatus.get(machine) : NO_STATUS;
      if (seen === undefined) {
        seen = (await this.pool.query<{ record: string }>('SELECT record FROM machine_status WHERE machine = $1', [machine])).rows[0]?.record ?? NO_STATUS;
        this.seenStatus.set(machine, seen);
      }
      const applied = event ? applyEvent(seen === NO_STATUS ? undefined : (JSON.parse(seen) as StatusRecord), event, at) : undefined;
      const params: unknown[] = auditValues(applied?.flag ? { ...entry, reason: applied.flag } : entry, at);
      const p = (v: unknown) => {
        params.push(v);
        return `$${params.length}`;
      };
      const typed = AUDIT_COLUMN_TYPES.map((type, i) => `$${i + 1}::${type}`);
      const parts: string[] = [];
      // The gate every write passes: the claim taken (expired claims dropped first), or always.
      if (claim) {
        const now = p(Math.floor(this.now().getTime() / 1000));
        parts.push(`expired AS (DELETE FROM claimed_urls WHERE expires_at <= ${now})`);
        parts.push(`gate AS (INSERT INTO claimed_urls (key, machine, expires_at) VALUES (${p(claim.key)}, $1, ${p(claim.expiresAt)}) ON CONFLICT (key) DO NOTHING RETURNING 1)`);
      } else {
        parts.push('gate AS (SELECT 1)');
      }
      const open = 'EXISTS (SELECT 1 FROM gate)';
      if (!applied) {
        parts.push('status_row AS (SELECT 1 FROM gate)');
      } else if (applied.accepted) {
        const { record } = applied;
        const values = [p(record.phase), p(record.since), p(JSON.stringify(record))] as const;
        parts.push(
          seen === NO_STATUS
            ? `status_row AS (INSERT INTO machine_status (machine, phase, since, record) SELECT $1, ${values[0]}, ${values[1]}, ${values[2]} FROM gate ON CONFLICT (machine) DO NOTHING RETURNING 1)`
            : `status_row AS (UPDATE machine_status SET phase = ${values[0]}, since = ${values[1]}, record = ${values[2]} WHERE machine = $1 AND record = ${p(seen)} AND ${open} RETURNING 1)`,
        );
      } else {
        parts.push(
          seen === NO_STATUS
            ? `status_row AS (SELECT 1 FROM gate WHERE NOT EXISTS (SELECT 1 FROM machine_status WHERE machine = $1))`
            : `status_row AS (SELECT 1 FROM machine_status WHERE machine = $1 AND record = ${p(seen)} AND ${open} FOR UPDATE)`,
        );
      }
      const written = 'EXISTS (SELECT 1 FROM status_row)';
      parts.push(`seq AS (${nextServedSeqSql('$1', '$2::text')})`);
      const merge = mergesRepeats(entry, max);
      if (merge) parts.push(`merged AS (${mergeRepeatSql((i) => typed[i]!, 'IS NOT DISTINCT FROM')} AND ${written} RETURNING 1)`);
      parts.push(
        `audit_row AS (INSERT INTO audit (${AUDIT_COLUMNS}, served_seq) SELECT ${typed.join(', ')}, (SELECT CASE WHEN unnumbered THEN bootwright_audit_unnumbered($1) ELSE n END FROM seq) ` +
          `FROM status_row${merge ? ' WHERE NOT EXISTS (SELECT 1 FROM merged)' : ''} RETURNING 1)`,
      );
      // Data-modifying CTEs all run on one snapshot: the trim does not see the new audit
      // row, and deletes by number.
      if (max !== undefined) parts.push(`trimmed AS (${trimServedAuditSql('$1', '$2::text', '(SELECT n FROM seq)', `${p(max)}::integer`)} AND EXISTS (SELECT 1 FROM audit_row))`);
      const sql = `WITH ${parts.join(', ')} SELECT ${open} AS open, CASE WHEN ${open} AND NOT ${written} THEN bootwright_status_changed($1) END AS changed`;
      try {
        const row = (await preparedQuery<{ open: boolean }>(this.pool, sql, params)).rows[0]!;
        if (!row.open) return false;
        if (applied) this.seenStatus.set(machine, applied.accepted ? JSON.stringify(applied.record) : seen);
        return true;
      } catch (e) {
        const code = (e as { code?: unknown }).code;
        if (code === AUDIT_UNNUMBERED) return undefined;
        if (code !== STATUS_CHANGED && !servedSeqTaken(e)) throw e;
        this.seenStatus.delete(machine);
      }
    }
    return undefined;
  }

  /** @inheritdoc */
  async audit(machine: string, options: { limit?: number } = {}): Promise<AuditEntry[]> {
    const limit = checkLimit(options.limit);
    // Ids are BIGINT (text in pg); as numbers they stay exact below 2^53.
    const rows = (await this.pool.query<AuditRow>(`SELECT id::float8 AS id, ${AUDIT_READ_COLUMNS} FROM audit WHERE machine = $1 ORDER BY audit.id DESC LIMIT $2`, [machine, limit])).rows;
    return rows.map(toAuditEntry);
  }

  /** @inheritdoc */
  async takeFetch(machine: string, max: number): Promise<boolean> {
    const result = await this.pool.query(
      'INSERT INTO fetch_counts (machine, count) SELECT $1, 1 WHERE $2::integer >= 1 ' +
        'ON CONFLICT (machine) DO UPDATE SET count = fetch_counts.count + 1 WHERE fetch_counts.count < $2::integer RETURNING count',
      [machine, max],
    );
    return result.rows.length > 0;
  }

  /** @inheritdoc */
  async fetchCount(machine: string): Promise<number> {
    return (await this.pool.query<{ count: number }>('SELECT count FROM fetch_counts WHERE machine = $1', [machine])).rows[0]?.count ?? 0;
  }

  /** @inheritdoc */
  async resetFetches(machine: string): Promise<void> {
    await this.pool.query('DELETE FROM fetch_counts WHERE machine = $1', [machine]);
  }

  /** @inheritdoc */
  async recordDiscovered(identity: MachineIdentity, bounds: DiscoveredBounds = {}, sighting: DiscoveredSighting = {}): Promise<DiscoveredMachine | undefined> {
    const key = discoveredKey(identity);
    const keyValues = [key.mac, key.uuid, key.serial, key.hostname];
    return this.transaction(async (client) => {
      const now = this.now();
      if (bounds.max !== undefined) {
        // One writer of new entries at a time, in every replica, so the count is exact.
        await client.query("SELECT pg_advisory_xact_lock(hashtextextended('bootwright/discovered', 0))");
      }
      if (bounds.retentionSeconds) await client.query('DELETE FROM discovered WHERE last_seen < $1', [before(now, bounds.retentionSeconds)]);
      if (bounds.max !== undefined) {
        const known = (await client.query('SELECT 1 FROM discovered WHERE mac = $1 AND uuid = $2 AND serial = $3 AND hostname = $4', keyValues)).rows.length > 0;
        if (!known && (await client.query<{ n: number }>('SELECT count(*)::integer AS n FROM discovered')).rows[0]!.n >= bounds.max) return undefined;
      }
      // Replicas' clocks may differ slightly: last seen never moves backwards. An update
      // first: an INSERT .. ON CONFLICT takes an identity value on every sighting, leaving
      // gaps in the ids operators type (the insert's ON CONFLICT covers a concurrent insert).
      const seen = "why = $6, buildarch = $7, platform = $8";
      const touch = `UPDATE discovered SET last_seen = greatest(last_seen, $5), count = count + 1, enrolled = '', ${seen} WHERE mac = $1 AND uuid = $2 AND serial = $3 AND hostname = $4 RETURNING *`;
      const insert =
        'INSERT INTO discovered (mac, uuid, serial, hostname, first_seen, last_seen, count, why, buildarch, platform) VALUES ($1, $2, $3, $4, $5, $5, 1, $6, $7, $8) ' +
        `ON CONFLICT (mac, uuid, serial, hostname) DO UPDATE SET last_seen = greatest(discovered.last_seen, excluded.last_seen), count = discovered.count + 1, enrolled = '', ${seen} RETURNING *`;
      const values = [...keyValues, now.toISOString(), sighting.why ?? '', sighting.buildarch ?? '', sighting.platform ?? ''];
      const row = (await client.query<DiscoveredRow>(touch, values)).rows[0] ?? (await client.query<DiscoveredRow>(insert, values)).rows[0]!;
      return toDiscovered(row);
    });
  }

  /** @inheritdoc */
  async listDiscovered(options: DiscoveredListOptions = {}): Promise<DiscoveredMachine[]> {
    const limit = checkLimit(options.limit);
    return (
      await this.pool.query<DiscoveredRow>(
        "SELECT * FROM discovered WHERE ($1 OR enrolled = '') AND ($3::text IS NULL OR (last_seen, id) < ($3::text, $4::bigint)) ORDER BY last_seen DESC, id DESC LIMIT $2",
        [options.includeEnrolled === true, limit, options.after?.lastSeen ?? null, options.after?.id ?? null],
      )
    ).rows.map(toDiscovered);
  }

  /** @inheritdoc */
  async getDiscovered(id: string): Promise<DiscoveredMachine> {
    const row = /^\d{1,15}$/.test(id) ? (await this.pool.query<DiscoveredRow>('SELECT * FROM discovered WHERE id = $1', [id])).rows[0] : undefined;
    if (!row) throw new DiscoveredNotFoundError(id);
    return toDiscovered(row);
  }

  /** @inheritdoc */
  async deleteDiscovered(id: string): Promise<void> {
    const deleted = /^\d{1,15}$/.test(id) ? ((await this.pool.query('DELETE FROM discovered WHERE id = $1', [id])).rowCount ?? 0) : 0;
    if (deleted === 0) throw new DiscoveredNotFoundError(id);
  }

  /** @inheritdoc */
  async updateStatus(machine: string, event: StatusEvent): Promise<boolean> {
    return this.transaction(async (client) => (await this.applyStatus(client, machine, event)).accepted);
  }

  /** Apply a lifecycle event inside a transaction; `accepted` false when it was refused ({@link Store.updateStatus}). */
  private async applyStatus(client: pg.PoolClient, machine: string, event: StatusEvent): Promise<ReturnType<typeof applyEvent>> {
    const applied = await this.lockedStatus(client, machine, event);
    const { record, accepted } = applied;
    if (accepted) await client.query(UPSERT_STATUS, [machine, record.phase, record.since, JSON.stringify(record)]);
    return applied;
  }

  /**
   * A lifecycle event applied to the machine's status record, read under a lock held to
   * the end of the transaction, so writers of one machine's status go one after another
   * on every replica; the caller writes the record. The row's own lock (`FOR UPDATE`,
   * which reads the row's latest version once it is granted): one round trip. A machine
   * with no row yet (its first event) is serialised on an advisory lock instead and read
   * again after it (a statement's snapshot predates a lock it waited for); a writer that
   * finds the row once another created it waits on the row's lock.
   */
  private async lockedStatus(client: pg.PoolClient, machine: string, event: StatusEvent): Promise<ReturnType<typeof applyEvent>> {
    let row = (await client.query<StatusRow>('SELECT * FROM machine_status WHERE machine = $1 FOR UPDATE', [machine])).rows[0];
    if (!row) {
      await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`status/${machine}`]);
      row = (await client.query<StatusRow>('SELECT * FROM machine_status WHERE machine = $1 FOR UPDATE', [machine])).rows[0];
    }
    return applyEvent(row ? toStatusRecord(row) : undefined, event, this.timestamp());
  }

  /** @inheritdoc */
  async statuses(machines: readonly string[]): Promise<Map<string, StatusRecord>> {
    checkLimit(machines.length === 0 ? 1 : machines.length);
    const out = new Map<string, StatusRecord>();
    if (machines.length === 0) return out;
    const rows = (await this.pool.query<StatusRow>('SELECT * FROM machine_status WHERE machine = ANY($1::text[])', [machines])).rows;
    for (const row of rows) out.set(row.machine, toStatusRecord(row));
    return out;
  }

  /** @inheritdoc */
  async fleet(stalledBefore: string): Promise<FleetCounts> {
    const rows = (
      await this.pool.query<{ phase: string | null; stalled: boolean; n: number }>(
        "SELECT s.phase, coalesce(s.phase = 'Provisioning' AND s.since < $1, false) AS stalled, count(*)::integer AS n FROM resources r LEFT JOIN machine_status s ON s.machine = r.name " +
          "WHERE r.kind = 'Machine' GROUP BY 1, 2",
        [stalledBefore],
      )
    ).rows;
    const discovered = (await this.pool.query<{ n: number }>("SELECT count(*)::integer AS n FROM discovered WHERE enrolled = ''")).rows[0]!.n;
    return toFleet(rows, discovered);
  }

  /** @inheritdoc */
  async mintedToken(machine: string): Promise<MintedToken | undefined> {
    const row = (await this.pool.query<MintedTokenRow>('SELECT * FROM minted_tokens WHERE machine = $1', [machine])).rows[0];
    return row ? toMintedToken(row) : undefined;
  }

  /**
   * @inheritdoc One statement: the insert, or (on a conflict) the row that won. A row
   * committed by another replica after this statement's snapshot conflicts yet is not
   * seen by it; then the statement is asked again, and sees it.
   */
  async claimMintedToken(token: MintedToken): Promise<MintedToken> {
    const values = [token.machine, token.incarnation, token.cluster, token.token, token.expiresAt];
    for (let attempt = 0; ; attempt++) {
      const rows = (
        await this.pool.query<MintedTokenRow>(
          'WITH claimed AS (INSERT INTO minted_tokens (machine, incarnation, cluster, token, expires_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (machine) DO NOTHING RETURNING *) ' +
            'SELECT * FROM claimed UNION ALL SELECT * FROM minted_tokens WHERE machine = $1 AND NOT EXISTS (SELECT 1 FROM claimed)',
          values,
        )
      ).rows;
      if (rows[0]) return toMintedToken(rows[0]);
      if (attempt === 2) throw new Error(`the minted token of machine "${token.machine}" changed during each of three claims`);
    }
  }

  /** @inheritdoc */
  async extendMintedToken(machine: string, token: string, expiresAt: string): Promise<void> {
    await this.pool.query('UPDATE minted_tokens SET expires_at = $1 WHERE machine = $2 AND token = $3', [expiresAt, machine, token]);
  }

  /** @inheritdoc */
  async forgetMintedToken(machine: string, token: string): Promise<void> {
    await this.pool.query('DELETE FROM minted_tokens WHERE machine = $1 AND token = $2', [machine, token]);
  }

  /** @inheritdoc */
  async mintedTokens(options: { after?: string; limit?: number } = {}): Promise<MintedToken[]> {
    const rows = (await this.pool.query<MintedTokenRow>('SELECT * FROM minted_tokens WHERE machine > $1 ORDER BY machine LIMIT $2', [options.after ?? '', checkLimit(options.limit)])).rows;
    return rows.map(toMintedToken);
  }

  /**
   * `SELECT 1` through the pool, bounded by the ping timeout (waiting for a pooled
   * connection included): a database that is down, unreachable or hung rejects within it.
   *
   * @throws Error when the store is closed, the query fails, or the timeout passes.
   */
  async ping(): Promise<void> {
    if (this.closed) throw new Error('the PostgreSQL store is closed');
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`PostgreSQL did not answer within ${this.pingTimeoutMs} ms`)), this.pingTimeoutMs);
    });
    const query = this.pool.query('SELECT 1');
    // A query still running after the timeout must not become an unhandled rejection.
    query.catch(ignore);
    try {
      await Promise.race([query, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** @inheritdoc */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}
