/**
 * The SQLite store (DESIGN §6): better-sqlite3 12, one file (`<dataDir>/bootwright.db`)
 * in WAL mode, schema by plain-SQL postgrator migrations (src/store/migrations/sqlite).
 *
 * better-sqlite3 is synchronous: each method runs its statements to completion inside
 * one call, and every write is one `BEGIN IMMEDIATE` transaction, so concurrent callers
 * in this process never interleave and another process sharing the file waits for the
 * write lock (busy timeout 5 s).
 */
import { closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import Postgrator from 'postgrator';
import { RULES_VERSION } from '../rules.js';
import { documentNeeds, migrateStore, READABLE_FROM, type SchemaState } from './compat.js';
import { commitUnlessDryRun, dryRunAnswer } from './dry-run.js';
import { AlreadyExistsError, DiscoveredNotFoundError, DuplicateSelectorError, type MissingReference, MissingReferenceError, NotFoundError, PreconditionFailedError, ReferencedError } from './errors.js';
import { discoveredKey, hardwareEntries, identityEntries, type SelectorEntry, selectorEntries } from './identity.js';
import { ResourceMemo } from './resource-memo.js';
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
  MAX_LIST_LIMIT,
  type ListPage,
  type MachineIdentity,
  type MintedToken,
  type ResourceInput,
  type SpecOf,
  type Store,
  type CreateOptions,
  type WriteOptions,
} from './store.js';

/** The store's file name under the data directory. */
export const SQLITE_FILE = 'bootwright.db';

/** Options of {@link openSqliteStore}. */
export interface SqliteStoreOptions {
  /** The clock for timestamps (tests); default the system clock. */
  now?: () => Date;
  /**
   * Milliseconds the boot routes' writes (`recordAudit`, `takeFetch`, `claimUrl`,
   * `recordDiscovered`, `updateStatus`) may wait to be committed together in one
   * transaction (each a single statement or its own savepoint in it); each call resolves
   * only once its transaction has committed.
   * 0 (default): each is its own transaction at once.
   */
  batchMs?: number;
}

/** Boot-route writes in one batch at most; a full batch is committed at once. */
export const MAX_BATCH = 256;

/**
 * Bytes of resource rows signed fetches remember ({@link ResourceMemo}): every machine of
 * a 10,000-machine storm with the example specs (about 500 bytes a row) and their
 * clusters and profiles.
 */
const FETCHED_BYTES = 16 << 20;
/** What a remembered resource is charged beyond its spec and labels (the other columns, the key, the objects), bytes. */
const ROW_OVERHEAD_BYTES = 256;

/** The machine and route whose served audit rows a statement numbers or trims (named parameters). */
interface ServedOf {
  machine: string;
  route: string;
}

/** A boot-route write waiting for its batch. */
interface Batched {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/** Where the SQLite migrations are, next to this module (src/ under tsx, dist/ once built). */
export const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/sqlite/', import.meta.url));

/**
 * Run synchronous store code as a promise: its result resolves it, anything it throws
 * rejects it (never a synchronous throw from an async-looking method).
 */
function settle<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (e) {
    return Promise.reject(e instanceof Error ? e : new Error(String(e)));
  }
}

/**
 * Open (creating when absent) the SQLite store at `path` and migrate it to the latest
 * schema.
 *
 * @param path the database file (`<dataDir>/bootwright.db`; its directory is created,
 *   mode 0700, and a new file gets mode 0600 since it holds secrets), or `:memory:` for
 *   a private in-memory store.
 * @throws whatever better-sqlite3 or postgrator throws for an unreadable file or a
 *   failed migration (the store is closed first); NewerSchemaError for a file a newer
 *   release migrated beyond what this one can run on (src/store/compat.ts).
 */
export async function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Promise<SqliteStore> {
  if (path !== ':memory:') {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    if (!existsSync(path)) closeSync(openSync(path, 'a', 0o600));
  }
  const db = new Database(path);
  let schema: SchemaState;
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('busy_timeout = 5000');
    const postgrator = new Postgrator({
      driver: 'sqlite3',
      migrationPattern: `${globEscape(MIGRATIONS_DIR)}*.sql`,
      schemaTable: 'schema_version',
      execQuery: (query) => {
        const statement = db.prepare(query);
        if (statement.reader) return Promise.resolve({ rows: statement.all() });
        statement.run();
        return Promise.resolve({ rows: [] });
      },
      // One migration file is one transaction: it applies whole or not at all.
      execSqlScript: (script) => {
        db.transaction(() => db.exec(script)).immediate();
        return Promise.resolve();
      },
    });
    schema = await migrateStore(postgrator, () => {
      const table = db.prepare("SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = 'schema_compatibility'").get();
      const row = table ? (db.prepare('SELECT readable_from FROM schema_compatibility WHERE id = 1').get() as { readable_from: number } | undefined) : undefined;
      return Promise.resolve(row?.readable_from);
    });
  } catch (e) {
    db.close();
    throw e;
  }
  const store = new SqliteStore(db, options.now ?? (() => new Date()), options.batchMs ?? 0);
  store.schema = schema;
  return store;
}

/** The SQLite {@link Store}. Construct with {@link openSqliteStore}. */
export class SqliteStore implements Store {
  /** The schema as this start found and left it. */
  schema?: SchemaState;

  private readonly statements;

  /**
   * The boot-route writes that take several statements, each a transaction made once
   * (better-sqlite3 builds a transaction's wrappers on every `db.transaction` call):
   * inside a batch each runs as a savepoint, so it is undone alone if it fails.
   */
  private readonly writes;

  /** Reads of several statements a boot route makes, each one (deferred) read transaction, made once. */
  private readonly reads;

  private batch: Batched[] = [];
  /**
   * Resources signed fetches read, remembered while unchanged (src/store/resource-memo.ts):
   * valid while `PRAGMA data_version` (other connections' commits) and
   * {@link resourceWrites} (this one's) are as when they were read.
   */
  private readonly fetched = new ResourceMemo(FETCHED_BYTES);
  /** Resource writes of this connection (creates, replaces, deletes; dry runs too): one more forgets {@link fetched}. */
  private resourceWrites = 0;
  /** `findMachinesBy`'s statements, by number of selector entries. */
  private readonly findBy = new Map<number, Database.Statement<string[], RevisionRow>>();
  private batchTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Database.Database,
    private readonly now: () => Date,
    private readonly batchMs = 0,
  ) {
    const renumber = renumberServedSql('@machine', '@route');
    this.statements = {
      current: db.prepare<[string, string], CurrentRow>(`SELECT r.revision, v.created_at ${CURRENT_JOIN} WHERE r.kind = ? AND r.name = ?`),
      get: db.prepare<[string, string], RevisionRow>(`SELECT v.* ${CURRENT_JOIN} WHERE r.kind = ? AND r.name = ?`),
      getRevision: db.prepare<[string, string, number], RevisionRow>('SELECT * FROM resource_revisions WHERE kind = ? AND name = ? AND revision = ?'),
      lastRevision: db.prepare<[string, string], { revision: number | null }>('SELECT max(revision) AS revision FROM resource_revisions WHERE kind = ? AND name = ?'),
      revisions: db.prepare<[string, string], RevisionRow>('SELECT * FROM resource_revisions WHERE kind = ? AND name = ? ORDER BY revision'),
      insertRevision: db.prepare(
        'INSERT INTO resource_revisions (kind, name, revision, labels, spec, cluster_revision, profile_revision, created_at, updated_at, rules) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      upsertCurrent: db.prepare(
        'INSERT INTO resources (kind, name, revision, cluster, profile) VALUES (?, ?, ?, ?, ?) ON CONFLICT (kind, name) DO UPDATE SET revision = excluded.revision, cluster = excluded.cluster, profile = excluded.profile',
      ),
      deleteCurrent: db.prepare('DELETE FROM resources WHERE kind = ? AND name = ?'),
      deleteLabels: db.prepare('DELETE FROM resource_labels WHERE kind = ? AND name = ?'),
      upsertNeeds: db.prepare('INSERT INTO resource_needs (kind, name, readable_from, fields) VALUES (?, ?, ?, ?) ON CONFLICT (kind, name) DO UPDATE SET readable_from = excluded.readable_from, fields = excluded.fields'),
      deleteNeeds: db.prepare('DELETE FROM resource_needs WHERE kind = ? AND name = ?'),
      updateReadableFrom: db.prepare<[number]>('UPDATE schema_compatibility SET readable_from = (SELECT max(?, coalesce(max(readable_from), 0)) FROM resource_needs) WHERE id = 1'),
      insertLabel: db.prepare('INSERT INTO resource_labels (kind, name, key, value) VALUES (?, ?, ?, ?)'),
      deleteSelectors: db.prepare('DELETE FROM machine_selectors WHERE machine = ?'),
      insertSelector: db.prepare('INSERT INTO machine_selectors (selector, value, machine) VALUES (?, ?, ?)'),
      selectorOwner: db.prepare<[string, string, string], { machine: string }>('SELECT machine FROM machine_selectors WHERE selector = ? AND value = ? AND machine <> ? ORDER BY machine LIMIT 1'),
      refClusters: db.prepare<[string], { name: string }>("SELECT name FROM resources WHERE kind = 'Machine' AND cluster = ? ORDER BY name"),
      refProfiles: db.prepare<[string], { name: string }>("SELECT name FROM resources WHERE kind = 'Machine' AND profile = ? ORDER BY name"),
      takeFetch: db.prepare<[string, number, number], { count: number }>(
        'INSERT INTO fetch_counts (machine, count) SELECT ?, 1 WHERE ? >= 1 ON CONFLICT (machine) DO UPDATE SET count = count + 1 WHERE count < ? RETURNING count',
      ),
      fetchCount: db.prepare<[string], { count: number }>('SELECT count FROM fetch_counts WHERE machine = ?'),
      resetFetches: db.prepare('DELETE FROM fetch_counts WHERE machine = ?'),
      insertAudit: db.prepare(`INSERT INTO audit (${AUDIT_COLUMNS}, served_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      nextServedSeq: db.prepare<[ServedOf], { n: number; unnumbered: number }>(nextServedSeqSql('@machine', '@route')),
      unnumberServed: db.prepare<[ServedOf]>(renumber[0]),
      renumberServed: db.prepare<[ServedOf]>(renumber[1]),
      trimServed: db.prepare<[ServedOf & { seq: number; keep: number }]>(trimServedAuditSql('@machine', '@route', '@seq', '@keep')),
      audit: db.prepare<[string, number], AuditRow>(`SELECT id, ${AUDIT_READ_COLUMNS} FROM audit WHERE machine = ? ORDER BY id DESC LIMIT ?`),
      mergeRepeat: db.prepare<[Record<string, string | number | null>]>(mergeRepeatSql((i) => `@p${i}`, 'IS')),
      getStatus: db.prepare<[string], StatusRow>('SELECT * FROM machine_status WHERE machine = ?'),
      putStatus: db.prepare(
        'INSERT INTO machine_status (machine, phase, since, record) VALUES (?, ?, ?, ?) ON CONFLICT (machine) DO UPDATE SET phase = excluded.phase, since = excluded.since, record = excluded.record',
      ),
      deleteStatus: db.prepare('DELETE FROM machine_status WHERE machine = ?'),
      fleet: db.prepare<[string], { phase: string | null; stalled: number; n: number }>(
        "SELECT s.phase, (s.phase = 'Provisioning' AND s.since < ?) AS stalled, count(*) AS n FROM resources r LEFT JOIN machine_status s ON s.machine = r.name " +
          "WHERE r.kind = 'Machine' GROUP BY s.phase, stalled",
      ),
      expireClaims: db.prepare<[number]>('DELETE FROM claimed_urls WHERE expires_at <= ?'),
      urlClaimed: db.prepare<[string, number], { one: number }>('SELECT 1 AS one FROM claimed_urls WHERE key = ? AND expires_at > ?'),
      claimUrl: db.prepare<[string, string, number]>('INSERT INTO claimed_urls (key, machine, expires_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING'),
      // An update, then an insert when nothing was updated: an INSERT .. ON CONFLICT would
      // take an AUTOINCREMENT id on every sighting, leaving gaps in the ids operators type.
      touchDiscovered: db.prepare<[string, string, string, string, string, string, string, string], DiscoveredRow>(
        "UPDATE discovered SET last_seen = ?, count = count + 1, enrolled = '', why = ?, buildarch = ?, platform = ? WHERE mac = ? AND uuid = ? AND serial = ? AND hostname = ? RETURNING *",
      ),
      insertDiscovered: db.prepare<[string, string, string, string, string, string, string, string, string], DiscoveredRow>(
        'INSERT INTO discovered (mac, uuid, serial, hostname, first_seen, last_seen, count, why, buildarch, platform) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?) RETURNING *',
      ),
      discoveredExists: db.prepare<[string, string, string, string], { one: number }>('SELECT 1 AS one FROM discovered WHERE mac = ? AND uuid = ? AND serial = ? AND hostname = ?'),
      discoveredCount: db.prepare<[], { n: number }>('SELECT count(*) AS n FROM discovered'),
      unenrolledCount: db.prepare<[], { n: number }>("SELECT count(*) AS n FROM discovered WHERE enrolled = ''"),
      expireDiscovered: db.prepare<[string]>('DELETE FROM discovered WHERE last_seen < ?'),
      expireRefusals: db.prepare<[string]>('DELETE FROM audit WHERE status >= 400 AND at < ?'),
      countRefusals: db.prepare<[number], { count: number }>('UPDATE audit_refusals SET count = count + ? WHERE id = 1 RETURNING count'),
      trimRefusals: db.prepare<[number]>('DELETE FROM audit WHERE id IN (SELECT id FROM audit WHERE status >= 400 ORDER BY id LIMIT ?)'),
      listDiscovered: db.prepare<[number, number, string, string, number, number], DiscoveredRow>(
        "SELECT * FROM discovered WHERE (? OR enrolled = '') AND (? OR last_seen < ? OR (last_seen = ? AND id < ?)) ORDER BY last_seen DESC, id DESC LIMIT ?",
      ),
      getDiscovered: db.prepare<[number], DiscoveredRow>('SELECT * FROM discovered WHERE id = ?'),
      deleteDiscovered: db.prepare<[number]>('DELETE FROM discovered WHERE id = ?'),
      enrol: db.prepare<[string, number]>('UPDATE discovered SET enrolled = ? WHERE id = ?'),
      ping: db.prepare('SELECT 1'),
      // Changes when another connection commits to the file (https://sqlite.org/pragma.html#pragma_data_version).
      dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck(),
      mintedToken: db.prepare<[string], MintedTokenRow>('SELECT * FROM minted_tokens WHERE machine = ?'),
      claimMintedToken: db.prepare('INSERT INTO minted_tokens (machine, incarnation, cluster, token, expires_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (machine) DO NOTHING'),
      extendMintedToken: db.prepare('UPDATE minted_tokens SET expires_at = ? WHERE machine = ? AND token = ?'),
      forgetMintedToken: db.prepare('DELETE FROM minted_tokens WHERE machine = ? AND token = ?'),
      mintedTokens: db.prepare<[string, number], MintedTokenRow>('SELECT * FROM minted_tokens WHERE machine > ? ORDER BY machine LIMIT ?'),
    };
    const s = this.statements;
    const applyStatus = (machine: string, event: StatusEvent): ReturnType<typeof applyEvent> => {
      const row = s.getStatus.get(machine);
      const applied = applyEvent(row ? toStatusRecord(row) : undefined, event, this.timestamp());
      if (applied.accepted) s.putStatus.run(machine, applied.record.phase, applied.record.since, JSON.stringify(applied.record));
      return applied;
    };
    this.writes = {
      audit: db.transaction((entry: AuditInput, bounds: AuditBounds, event: StatusEvent | undefined, claim: UrlClaim | undefined): boolean => {
        const served = !isRefusal(entry.status);
        if (served && claim) {
          s.expireClaims.run(Math.floor(this.now().getTime() / 1000));
          if (s.claimUrl.run(claim.key, entry.machine, claim.expiresAt).changes !== 1) return false;
        }
        if (served) {
          // The status first: a fetch it flags (without /ipxe) says so in its audit row.
          const flag = event ? applyStatus(entry.machine, event).flag : undefined;
          const values = auditValues(flag ? { ...entry, reason: flag } : entry, this.timestamp());
          // A repeat of the newest /ipxe answer is counted in its row (mergeRepeatSql).
          if (mergesRepeats(entry, bounds.maxServedPerMachine) && s.mergeRepeat.run(Object.fromEntries(values.slice(0, 7).map((v, i) => [`p${i}`, v]))).changes === 1) return true;
          const of = { machine: entry.machine, route: entry.route };
          let next = s.nextServedSeq.get(of)!;
          if (next.unnumbered) {
            s.unnumberServed.run(of);
            s.renumberServed.run(of);
            next = s.nextServedSeq.get(of)!;
          }
          s.insertAudit.run(...values, next.n);
          if (bounds.maxServedPerMachine !== undefined) s.trimServed.run({ ...of, seq: next.n, keep: bounds.maxServedPerMachine });
          return true;
        }
        s.insertAudit.run(...auditValues(entry, this.timestamp()), null);
        const expired = bounds.retentionSeconds ? s.expireRefusals.run(before(this.now(), bounds.retentionSeconds)).changes : 0;
        const count = s.countRefusals.get(1 - expired)!.count;
        if (bounds.maxRefused !== undefined && count > bounds.maxRefused) s.countRefusals.get(-s.trimRefusals.run(count - bounds.maxRefused).changes);
        return true;
      }),
      discovered: db.transaction((key: ReturnType<typeof discoveredKey>, bounds: DiscoveredBounds, sighting: DiscoveredSighting): DiscoveredMachine | undefined => {
        const now = this.now();
        if (bounds.retentionSeconds) s.expireDiscovered.run(before(now, bounds.retentionSeconds));
        if (bounds.max !== undefined && !s.discoveredExists.get(key.mac, key.uuid, key.serial, key.hostname) && s.discoveredCount.get()!.n >= bounds.max) return undefined;
        const at = now.toISOString();
        const seen = [sighting.why ?? '', sighting.buildarch ?? '', sighting.platform ?? ''] as const;
        const row = s.touchDiscovered.get(at, ...seen, key.mac, key.uuid, key.serial, key.hostname) ?? s.insertDiscovered.get(key.mac, key.uuid, key.serial, key.hostname, at, at, ...seen)!;
        return toDiscovered(row);
      }),
      status: db.transaction((machine: string, event: StatusEvent): boolean => applyStatus(machine, event).accepted),
    };
    this.reads = {
      bootCandidates: db.transaction((identity: MachineIdentity & { labels?: Record<string, string> }, fallback: string | undefined): BootCandidates => {
        const machines = this.machinesBy(identity);
        if (fallback !== undefined && !machines.some((m) => m.name === fallback)) {
          const row = s.get.get('Machine', fallback);
          if (row) machines.push(toResource<MachineSpec>(row));
          machines.sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
        }
        const profiles = new Map<string, StoredResource<ProfileSpec>>();
        for (const m of machines) {
          const profile = profiles.has(m.spec.profile) ? undefined : this.remembered('Profile', m.spec.profile);
          if (profile) profiles.set(profile.name, profile);
        }
        return { machines, profiles };
      }),
      fetchParts: db.transaction((machine: string, claimKey: string | undefined): FetchParts => {
        const m = this.fetchedOrThrow('Machine', machine);
        const claimed = this.claimed(claimKey);
        return { machine: m, cluster: this.fetchedOrThrow('Cluster', m.spec.cluster), profile: this.fetchedOrThrow('Profile', m.spec.profile), claimed };
      }),
    };
  }

  /** The path of the database file (`:memory:` for an in-memory store). */
  get path(): string {
    return this.db.name;
  }

  private timestamp(): string {
    return this.now().toISOString();
  }

  /** The cluster and profile revisions a machine spec refers to, now. @throws MissingReferenceError */
  private refsOf(spec: MachineSpec): { clusterRevision: number; profileRevision: number } {
    const cluster = this.statements.current.get('Cluster', spec.cluster);
    const profile = this.statements.current.get('Profile', spec.profile);
    const missing: MissingReference[] = [];
    if (!cluster) missing.push({ path: 'spec.cluster', kind: 'Cluster', name: spec.cluster });
    if (!profile) missing.push({ path: 'spec.profile', kind: 'Profile', name: spec.profile });
    if (!cluster || !profile) throw new MissingReferenceError(missing);
    return { clusterRevision: cluster.revision, profileRevision: profile.revision };
  }

  /**
   * Keep `resource_needs` and `schema_compatibility.readable_from` (migration 009,
   * src/store/compat.ts {@link documentNeeds}) in step with a document written (`spec`)
   * or deleted (undefined), inside its write transaction (the only writer).
   */
  private noteNeeds(kind: ResourceKind, name: string, spec: unknown): void {
    const s = this.statements;
    const needs = spec === undefined ? undefined : documentNeeds(kind, spec);
    const changed =
      needs !== undefined && needs.fields.length > 0 ? s.upsertNeeds.run(kind, name, needs.readableFrom, needs.fields.join(', ')).changes : s.deleteNeeds.run(kind, name).changes;
    if (changed > 0) s.updateReadableFrom.run(READABLE_FROM);
  }

  /**
   * Write one revision and make it current (inside a transaction). `createdAt`
   * undefined: a first revision, created and updated at the same instant.
   */
  private write<K extends ResourceKind>(kind: K, input: ResourceInput<SpecOf<K>>, revision: number, createdAt: string | undefined, selectors: SelectorEntry[] | undefined): void {
    this.resourceWrites++;
    const updatedAt = this.timestamp();
    const { name } = input;
    const labels = sortedLabels(input.labels);
    const machine = kind === 'Machine' ? (input.spec as MachineSpec) : undefined;
    const refs = machine ? this.refsOf(machine) : undefined;
    const s = this.statements;
    s.insertRevision.run(kind, name, revision, JSON.stringify(labels), JSON.stringify(input.spec), refs?.clusterRevision ?? null, refs?.profileRevision ?? null, createdAt ?? updatedAt, updatedAt, RULES_VERSION);
    s.upsertCurrent.run(kind, name, revision, machine?.cluster ?? null, machine?.profile ?? null);
    this.noteNeeds(kind, name, input.spec);
    s.deleteLabels.run(kind, name);
    for (const [key, value] of Object.entries(labels)) s.insertLabel.run(kind, name, key, value);
    if (selectors) {
      // Inside the write transaction (BEGIN IMMEDIATE): no other writer can take the value meanwhile.
      for (const e of hardwareEntries(selectors)) {
        const owner = s.selectorOwner.get(e.selector, e.value, name);
        if (owner) throw new DuplicateSelectorError(e.field ?? `spec.selectors.${e.selector}`, owner.machine);
      }
      s.deleteSelectors.run(name);
      for (const e of selectors) s.insertSelector.run(e.selector, e.value, name);
      for (const id of enrolledIds({ name, spec: machine! }, this.enrolmentCandidates(selectors))) s.enrol.run(name, Number(id));
    }
  }

  /** Discovered entries sharing a hardware value with these selectors (indexed lookups). */
  private enrolmentCandidates(selectors: SelectorEntry[]): DiscoveredRow[] {
    const keys = enrolmentKeys(selectors);
    const params: string[] = [];
    const terms: string[] = [];
    for (const field of ['mac', 'uuid', 'serial', 'hostname'] as const) {
      if (keys[field].length === 0) continue;
      terms.push(`(${field} <> '' AND ${field} IN (${keys[field].map(() => '?').join(', ')}))`);
      params.push(...keys[field]);
    }
    if (terms.length === 0) return [];
    return this.db.prepare<string[], DiscoveredRow>(`SELECT * FROM discovered WHERE ${terms.join(' OR ')} LIMIT ${MAX_LIST_LIMIT}`).all(...params);
  }

  /**
   * A current resource for a firmware request, as remembered in {@link fetched}, else read
   * and remembered (inside the request's read transaction, once `fetched.at` has been
   * given the version); undefined when it does not exist.
   */
  private remembered<K extends ResourceKind>(kind: K, name: string): StoredResource<SpecOf<K>> | undefined {
    const known = this.fetched.get(kind, name);
    if (known) return known;
    const row = this.statements.get.get(kind, name);
    if (!row) return undefined;
    const resource = toResource<SpecOf<K>>(row);
    this.fetched.set(resource, row.spec.length + row.labels.length + ROW_OVERHEAD_BYTES);
    return resource;
  }

  /** {@link remembered}, or NotFoundError. */
  private fetchedOrThrow<K extends ResourceKind>(kind: K, name: string): StoredResource<SpecOf<K>> {
    const resource = this.remembered(kind, name);
    if (!resource) throw new NotFoundError(kind, name);
    return resource;
  }

  /** Give {@link fetched} the version of the file now: what it remembers is forgotten if a resource may have changed since. */
  private fetchedNow(): void {
    this.fetched.at(`${this.statements.dataVersion.get()!}:${this.resourceWrites}`);
  }

  /** Whether the URL `claimKey` names is claimed, unexpired (false without a key). */
  private claimed(claimKey: string | undefined): boolean {
    return claimKey !== undefined && this.statements.urlClaimed.get(claimKey, Math.floor(this.now().getTime() / 1000)) !== undefined;
  }

  private getOrThrow<K extends ResourceKind>(kind: K, name: string): StoredResource<SpecOf<K>> {
    const row = this.statements.get.get(kind, name);
    if (!row) throw new NotFoundError(kind, name);
    return toResource(row);
  }

  /** @inheritdoc */
  create<K extends ResourceKind>(kind: K, input: ResourceInput<SpecOf<K>>, options: CreateOptions = {}): Promise<StoredResource<SpecOf<K>>> {
    return dryRunAnswer(
      settle(() => {
        const selectors = kind === 'Machine' ? selectorEntries(input.spec as MachineSpec) : undefined;
        return this.db
          .transaction(() => {
            if (this.statements.current.get(kind, input.name)) throw new AlreadyExistsError(kind, input.name);
            const last = this.statements.lastRevision.get(kind, input.name)?.revision ?? 0;
            this.write(kind, input, last + 1, undefined, selectors);
            return commitUnlessDryRun(options, this.getOrThrow(kind, input.name));
          })
          .immediate();
      }),
    );
  }

  /** @inheritdoc */
  get<K extends ResourceKind>(kind: K, name: string): Promise<StoredResource<SpecOf<K>>> {
    return settle(() => this.getOrThrow(kind, name));
  }

  /** @inheritdoc */
  getRevision<K extends ResourceKind>(kind: K, name: string, revision: number): Promise<StoredResource<SpecOf<K>>> {
    return settle(() => {
      const row = this.statements.getRevision.get(kind, name, revision);
      if (!row) throw new NotFoundError(kind, name, revision);
      return toResource<SpecOf<K>>(row);
    });
  }

  /** @inheritdoc */
  list<K extends ResourceKind>(kind: K, options: ListOptions = {}): Promise<ListPage<SpecOf<K>>> {
    return settle(() => {
      const limit = checkLimit(options.limit);
      const after = options.continue === undefined || options.continue === '' ? '' : decodeContinue(kind, options.continue);
      const params: (string | number)[] = [kind, after];
      const sql =
        `SELECT v.* ${CURRENT_JOIN} WHERE r.kind = ? AND r.name > ?` +
        labelConditions(requirementsOf(options.labelSelector), kind, (value) => (params.push(value), '?')) +
        ' ORDER BY r.name LIMIT ?';
      params.push(limit + 1);
      const rows = this.db.prepare<(string | number)[], RevisionRow>(sql).all(...params);
      const items = rows.slice(0, limit).map((row) => toResource<SpecOf<K>>(row));
      const last = items.at(-1);
      return { items, ...(rows.length > limit && last ? { continue: encodeContinue(kind, last.name) } : {}) };
    });
  }

  /** @inheritdoc */
  replace<K extends ResourceKind>(kind: K, input: ResourceInput<SpecOf<K>>, options: WriteOptions = {}): Promise<StoredResource<SpecOf<K>>> {
    return dryRunAnswer(
      settle(() => {
        const selectors = kind === 'Machine' ? selectorEntries(input.spec as MachineSpec) : undefined;
        return this.db
          .transaction(() => {
            const current = this.statements.current.get(kind, input.name);
            if (!current) throw new NotFoundError(kind, input.name);
            if (options.ifMatch !== undefined && options.ifMatch !== current.revision) throw new PreconditionFailedError(kind, input.name, options.ifMatch, current.revision);
            this.write(kind, input, current.revision + 1, current.created_at, selectors);
            return commitUnlessDryRun(options, this.getOrThrow(kind, input.name));
          })
          .immediate();
      }),
    );
  }

  /** @inheritdoc */
  delete(kind: ResourceKind, name: string, options: WriteOptions = {}): Promise<void> {
    const s = this.statements;
    return dryRunAnswer(
      settle(() => {
        this.db
          .transaction(() => {
            const current = s.current.get(kind, name);
            if (!current) throw new NotFoundError(kind, name);
            if (options.ifMatch !== undefined && options.ifMatch !== current.revision) throw new PreconditionFailedError(kind, name, options.ifMatch, current.revision);
            if (kind === 'Cluster' || kind === 'Profile') {
              const users = this.machinesNaming(kind, name);
              if (users.length > 0) throw new ReferencedError(kind, name, users);
            }
            this.resourceWrites++;
            s.deleteCurrent.run(kind, name);
            s.deleteLabels.run(kind, name);
            this.noteNeeds(kind, name, undefined);
            if (kind === 'Machine') {
              s.deleteSelectors.run(name);
              s.resetFetches.run(name);
              s.deleteStatus.run(name);
            }
            commitUnlessDryRun(options, undefined);
          })
          .immediate();
      }),
    );
  }

  /** @inheritdoc */
  revisions<K extends ResourceKind>(kind: K, name: string): Promise<StoredResource<SpecOf<K>>[]> {
    return settle(() => {
      const rows = this.statements.revisions.all(kind, name);
      if (rows.length === 0) throw new NotFoundError(kind, name);
      return rows.map((row) => toResource<SpecOf<K>>(row));
    });
  }

  private machinesNaming(kind: 'Cluster' | 'Profile', name: string): string[] {
    return (kind === 'Cluster' ? this.statements.refClusters : this.statements.refProfiles).all(name).map((r) => r.name);
  }

  /** @inheritdoc */
  referencedBy(kind: 'Cluster' | 'Profile', name: string): Promise<string[]> {
    return settle(() => this.machinesNaming(kind, name));
  }

  /** @inheritdoc */
  findMachinesBy(identity: MachineIdentity & { labels?: Record<string, string> }): Promise<StoredResource<MachineSpec>[]> {
    return settle(() => this.machinesBy(identity));
  }

  /** The machines any of `identity`'s selectors names (and labels), by name. */
  private machinesBy(identity: MachineIdentity & { labels?: Record<string, string> }): StoredResource<MachineSpec>[] {
    const entries = identityEntries(identity);
    if (entries.length === 0) return [];
    // One statement per number of entries (at most four identities plus the query's
    // labels, which maxQueryParameters bounds), prepared once: a boot storm asks this
    // for every machine.
    let statement = this.findBy.get(entries.length);
    if (!statement) {
      const sql =
        `SELECT v.* ${CURRENT_JOIN} WHERE r.kind = 'Machine' AND r.name IN (SELECT machine FROM machine_selectors WHERE ` +
        entries.map(() => '(selector = ? AND value = ?)').join(' OR ') +
        ') ORDER BY r.name';
      statement = this.db.prepare<string[], RevisionRow>(sql);
      this.findBy.set(entries.length, statement);
    }
    const rows = statement.all(...entries.flatMap((e) => [e.selector, e.value]));
    return rows.map((row) => toResource<MachineSpec>(row));
  }

  /** @inheritdoc In-process reads in one read transaction: the candidates, then their profiles. */
  bootCandidates(identity: MachineIdentity & { labels?: Record<string, string> }, fallback?: string): Promise<BootCandidates> {
    return settle(() => {
      this.fetchedNow();
      return this.reads.bootCandidates(identity, fallback);
    });
  }

  /**
   * @inheritdoc In-process reads in one read transaction (one snapshot of the file, and
   * its WAL read lock taken once rather than per statement).
   */
  fetchParts(machine: string, claimKey?: string): Promise<FetchParts> {
    return settle(() => {
      // Remembered parts, while no resource has changed since they were read: then the
      // only read is the claim's (one statement, no transaction).
      this.fetchedNow();
      const m = this.fetched.get('Machine', machine);
      const cluster = m && this.fetched.get('Cluster', m.spec.cluster);
      const profile = m && this.fetched.get('Profile', m.spec.profile);
      if (m && cluster && profile) return { machine: m, cluster, profile, claimed: this.claimed(claimKey) };
      return this.reads.fetchParts(machine, claimKey);
    });
  }

  /** @inheritdoc */
  recordAudit(entry: AuditInput, bounds: AuditBounds = {}, event?: StatusEvent, claim?: UrlClaim): Promise<boolean> {
    return this.write_(() => this.writes.audit.immediate(entry, bounds, event, claim));
  }

  /** @inheritdoc */
  audit(machine: string, options: { limit?: number } = {}): Promise<AuditEntry[]> {
    return settle(() => this.statements.audit.all(machine, checkLimit(options.limit)).map(toAuditEntry));
  }

  /** @inheritdoc */
  takeFetch(machine: string, max: number): Promise<boolean> {
    return this.write_(() => this.statements.takeFetch.get(machine, max, max) !== undefined);
  }

  /** @inheritdoc */
  fetchCount(machine: string): Promise<number> {
    return settle(() => this.statements.fetchCount.get(machine)?.count ?? 0);
  }

  /** @inheritdoc */
  resetFetches(machine: string): Promise<void> {
    return settle(() => {
      this.statements.resetFetches.run(machine);
    });
  }

  /** @inheritdoc */
  recordDiscovered(identity: MachineIdentity, bounds: DiscoveredBounds = {}, sighting: DiscoveredSighting = {}): Promise<DiscoveredMachine | undefined> {
    let key: ReturnType<typeof discoveredKey>;
    try {
      key = discoveredKey(identity);
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
    return this.write_(() => this.writes.discovered.immediate(key, bounds, sighting));
  }

  /** @inheritdoc */
  listDiscovered(options: DiscoveredListOptions = {}): Promise<DiscoveredMachine[]> {
    return settle(() => {
      const limit = checkLimit(options.limit);
      const after = options.after;
      return this.statements.listDiscovered.all(options.includeEnrolled ? 1 : 0, after ? 0 : 1, after?.lastSeen ?? '', after?.lastSeen ?? '', Number(after?.id ?? 0), limit).map(toDiscovered);
    });
  }

  /** @inheritdoc */
  getDiscovered(id: string): Promise<DiscoveredMachine> {
    return settle(() => {
      const row = /^\d{1,15}$/.test(id) ? this.statements.getDiscovered.get(Number(id)) : undefined;
      if (!row) throw new DiscoveredNotFoundError(id);
      return toDiscovered(row);
    });
  }

  /** @inheritdoc */
  deleteDiscovered(id: string): Promise<void> {
    return settle(() => {
      const changes = /^\d{1,15}$/.test(id) ? this.statements.deleteDiscovered.run(Number(id)).changes : 0;
      if (changes === 0) throw new DiscoveredNotFoundError(id);
    });
  }

  /** @inheritdoc A boot-route write: batched like the audit rows (resolves once committed). */
  updateStatus(machine: string, event: StatusEvent): Promise<boolean> {
    return this.write_(() => this.writes.status.immediate(machine, event));
  }

  /** @inheritdoc */
  statuses(machines: readonly string[]): Promise<Map<string, StatusRecord>> {
    return settle(() => {
      checkLimit(machines.length === 0 ? 1 : machines.length);
      const out = new Map<string, StatusRecord>();
      if (machines.length === 0) return out;
      const rows = this.db.prepare<string[], StatusRow>(`SELECT * FROM machine_status WHERE machine IN (${machines.map(() => '?').join(', ')})`).all(...machines);
      for (const row of rows) out.set(row.machine, toStatusRecord(row));
      return out;
    });
  }

  /** @inheritdoc */
  fleet(stalledBefore: string): Promise<FleetCounts> {
    return settle(() => toFleet(this.statements.fleet.all(stalledBefore), this.statements.unenrolledCount.get()!.n));
  }

  /** @inheritdoc */
  mintedToken(machine: string): Promise<MintedToken | undefined> {
    return settle(() => {
      const row = this.statements.mintedToken.get(machine);
      return row ? toMintedToken(row) : undefined;
    });
  }

  /** @inheritdoc */
  claimMintedToken(token: MintedToken): Promise<MintedToken> {
    return settle(() =>
      this.db
        .transaction(() => {
          this.statements.claimMintedToken.run(token.machine, token.incarnation, token.cluster, token.token, token.expiresAt);
          return toMintedToken(this.statements.mintedToken.get(token.machine)!);
        })
        .immediate(),
    );
  }

  /** @inheritdoc */
  extendMintedToken(machine: string, token: string, expiresAt: string): Promise<void> {
    return settle(() => {
      this.statements.extendMintedToken.run(expiresAt, machine, token);
    });
  }

  /** @inheritdoc */
  forgetMintedToken(machine: string, token: string): Promise<void> {
    return settle(() => {
      this.statements.forgetMintedToken.run(machine, token);
    });
  }

  /** @inheritdoc */
  mintedTokens(options: { after?: string; limit?: number } = {}): Promise<MintedToken[]> {
    return settle(() => this.statements.mintedTokens.all(options.after ?? '', checkLimit(options.limit)).map(toMintedToken));
  }

  /** @inheritdoc */
  ping(): Promise<void> {
    return settle(() => {
      this.statements.ping.get();
    });
  }

  /**
   * Run a boot-route write: at once (no batching), or in the next batch, resolving once
   * the batch's transaction has committed (see {@link SqliteStoreOptions.batchMs}).
   * `run` is atomic by itself: one statement (SQLite undoes a failing statement alone),
   * or one of {@link writes}, a savepoint inside the batch. So a write that fails is
   * undone alone and rejects alone; a commit that fails rejects them all (none was
   * acknowledged).
   */
  private write_<T>(run: () => T): Promise<T> {
    if (this.batchMs <= 0) return settle(run);
    return new Promise<T>((resolve, reject) => {
      this.batch.push({ run, resolve: resolve as (value: unknown) => void, reject });
      if (this.batch.length >= MAX_BATCH) this.flush();
      else this.batchTimer ??= setTimeout(() => this.flush(), this.batchMs);
    });
  }

  /** Commit the waiting boot-route writes in one transaction, then settle each. */
  private flush(): void {
    clearTimeout(this.batchTimer);
    this.batchTimer = undefined;
    const batch = this.batch;
    this.batch = [];
    if (batch.length === 0) return;
    const outcomes: ({ value: unknown } | { error: Error })[] = [];
    try {
      this.db
        .transaction(() => {
          for (const w of batch) {
            try {
              outcomes.push({ value: w.run() });
            } catch (e) {
              outcomes.push({ error: e instanceof Error ? e : new Error(String(e)) });
            }
          }
        })
        .immediate();
    } catch (e) {
      const error = e instanceof Error ? e : new Error(String(e));
      for (const w of batch) w.reject(error);
      return;
    }
    batch.forEach((w, i) => {
      const o = outcomes[i]!;
      if ('error' in o) w.reject(o.error);
      else w.resolve(o.value);
    });
  }

  /** @inheritdoc Writes waiting for their batch are committed first. */
  close(): Promise<void> {
    if (this.db.open) {
      this.flush();
      this.db.close();
    }
    return Promise.resolve();
  }
}
