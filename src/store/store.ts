/**
 * The `Store` (DESIGN §6): the inventory of clusters, profiles and machines with their
 * revision history, plus what the boot routes need at run time (the machine selector
 * index, fetch counters, the audit log and discovered machines).
 *
 * Asynchronous so that a networked implementation (PostgreSQL) fits the same interface;
 * every implementation passes test/store/suite.ts. Specs are stored as given: callers
 * validate them first (src/api/routes/resources.ts) and pass JSON-safe values.
 */
import type { SchemaState } from './compat.js';
import { InvalidArgumentError } from './errors.js';
import type { MachineIdentity } from './identity.js';
import type { LabelRequirement } from './selector.js';
import type { ClusterSpec, MachineSpec, ProfileSpec, ResourceKind, StoredResource } from './resources.js';
import type { FleetCounts, StatusEvent, StatusRecord } from './status.js';

export type { MachineIdentity } from './identity.js';

/** The spec type of each kind. */
export type SpecOf<K extends ResourceKind> = K extends 'Cluster' ? ClusterSpec : K extends 'Profile' ? ProfileSpec : MachineSpec;

/** What `/ipxe` reads ({@link Store.bootCandidates}): candidate machines, sorted by name, and their profiles by name. */
export interface BootCandidates {
  machines: StoredResource<MachineSpec>[];
  profiles: Map<string, StoredResource<ProfileSpec>>;
}

/** What a signed fetch reads ({@link Store.fetchParts}). */
export interface FetchParts {
  machine: StoredResource<MachineSpec>;
  cluster: StoredResource<ClusterSpec>;
  profile: StoredResource<ProfileSpec>;
  /** Whether the URL named by the claim key is claimed. */
  claimed: boolean;
}

/** What a create or replace writes. */
export interface ResourceInput<S> {
  name: string;
  /** Free labels (default none). */
  labels?: Record<string, string>;
  spec: S;
}

/** How a create is done. */
export interface CreateOptions {
  /**
   * Run the write in its transaction, with every check it makes (existence, references,
   * selectors, revision numbering), then roll it back: the answer is what the write would
   * have stored and nothing is kept, as the Kubernetes API's `dryRun=All`.
   */
  dryRun?: boolean;
}

/** Optimistic concurrency for writes, and dry runs. */
export interface WriteOptions extends CreateOptions {
  /** The revision the caller last read; another current revision fails with PreconditionFailedError. */
  ifMatch?: number;
}

/** Page size when `limit` is not given. */
export const DEFAULT_LIST_LIMIT = 100;
/** Largest page a list returns. */
export const MAX_LIST_LIMIT = 1000;

/** Options of {@link Store.list}. */
export interface ListOptions {
  /** Items per page, 1 to {@link MAX_LIST_LIMIT} (default {@link DEFAULT_LIST_LIMIT}). */
  limit?: number;
  /** The token a previous page returned: continue after its last item. */
  continue?: string;
  /**
   * Label filter, every requirement holding (src/store/selector.ts); an equality map
   * (`{ env: 'prod' }`) is the same as `in` requirements of one value each.
   */
  labelSelector?: readonly LabelRequirement[] | Record<string, string>;
}

/** One page of a list, ordered by name (byte order). */
export interface ListPage<S> {
  items: StoredResource<S>[];
  /** Present when more items may follow: pass it as `continue` for the next page. */
  continue?: string;
}

/** One fetch of a machine's data by a booting machine (issue 4 audit). */
export interface AuditInput {
  machine: string;
  /** The route, e.g. `/ignition`. */
  route: string;
  /** The client's address as the service saw it. */
  client: string;
  /** The HTTP status answered. */
  status: number;
  /** ISO 8601 UTC; default now. */
  at?: string;
  /** The request's User-Agent, cut to {@link MAX_USER_AGENT_CHARS}. */
  userAgent?: string;
  /** Why a refusal was answered: `client-address`, `already-fetched` (issue 16), else the problem's detail (never a secret). */
  reason?: string;
  /** What a served config was: the machine revision, the hex SHA-256 of the bytes, the format and Ignition spec. */
  revision?: number;
  sha256?: string;
  format?: string;
  ignitionVersion?: string;
  /** A boot report's outcome (`success` or `failure`). */
  outcome?: string;
}

/** Longest User-Agent kept in an audit row. */
export const MAX_USER_AGENT_CHARS = 256;

/** Whether an audit row records a refusal (any 4xx or 5xx answer), which {@link AuditBounds} may prune. */
export const isRefusal = (status: number): boolean => status >= 400;

/**
 * Bounds on the audit rows of refusals, which unauthenticated requests (forged or
 * expired signatures, any machine name) can write. Rows of answers that served (status
 * below 400) are never pruned: an acknowledged fetch keeps its row.
 */
/** A signed URL claimed by the audit row of its first served fetch (first fetch wins, issue 16). */
export interface UrlClaim {
  /** A digest naming the URL (never the signature itself). */
  key: string;
  /** The URL's expiry, unix seconds: the claim is kept until then. */
  expiresAt: number;
}

export interface AuditBounds {
  /** Keep at most this many refusal rows: after writing one, the oldest beyond it are deleted. */
  maxRefused?: number;
  /** Delete refusal rows older than this many seconds (0 or absent: keep them). */
  retentionSeconds?: number;
  /**
   * For an answer that served: keep at most this many of the machine's rows of served
   * answers (status below 400); after writing one, the oldest beyond it are deleted.
   * Anyone on the boot network who knows a registered MAC address can have `/ipxe`
   * served as often as it likes; this keeps what that writes bounded per machine.
   */
  maxServedPerMachine?: number;
}

/** Bounds on the discovered machines, which any unauthenticated `/ipxe` request can add. */
export interface DiscoveredBounds {
  /** At most this many entries: a new identity beyond it is not recorded (a known one still is). */
  max?: number;
  /** Delete entries last seen more than this many seconds ago (0 or absent: keep them). */
  retentionSeconds?: number;
}

/** An audit row as read back. */
export interface AuditEntry extends Required<Pick<AuditInput, 'machine' | 'route' | 'client' | 'status' | 'at'>>, Omit<AuditInput, 'machine' | 'route' | 'client' | 'status' | 'at'> {
  /** Increasing with each row written: the order of writing. */
  id: number;
  /**
   * How many identical answers of an unauthenticated route (`/ipxe`) the row stands for,
   * when more than one (`at` is the first one's time, `lastAt` the newest one's).
   */
  repeats?: number;
  lastAt?: string;
}

/** What a sighting of a discovered machine tells besides its identity (kept from the latest sighting). */
export interface DiscoveredSighting {
  /** Why it matched no machine (src/boot/match.ts whyUnmatched). */
  why?: string;
  /** iPXE's `${buildarch}` and `${platform}`, as src/boot/identity.ts accepts them. */
  buildarch?: string;
  platform?: string;
}

/** A machine that booted but matched no registered machine. */
export interface DiscoveredMachine {
  /** The entry's id (decimal digits), for `DELETE /v1/discovered/{id}` and `bootwright enroll`; never reused. */
  id: string;
  /** Lower-case colon form. */
  mac?: string;
  /** Lower case, hyphenated. */
  uuid?: string;
  serial?: string;
  /** Lower case. */
  hostname?: string;
  /** ISO 8601 UTC of the first and the latest sighting. */
  firstSeen: string;
  lastSeen: string;
  /** How many times it was seen. */
  count: number;
  /**
   * The machine that matches this identity (`compareSelectors` of src/boot/match.ts),
   * set when that machine is created or replaced; cleared when the identity is seen
   * again unmatched (the machine was deleted or changed).
   */
  enrolled?: string;
  /** Why its latest sighting matched no machine ({@link DiscoveredSighting}); absent for entries last seen before v0.3.0. */
  why?: string;
  /** iPXE's `${buildarch}` and `${platform}` at its latest sighting, when reported. */
  buildarch?: string;
  platform?: string;
}

/** Options of {@link Store.listDiscovered}. */
export interface DiscoveredListOptions {
  /** At most this many (default 100, at most 1000). */
  limit?: number;
  /** List the entries a machine matches too (default: only those still to enrol). */
  includeEnrolled?: boolean;
  /** Only entries after this one in the order (the last entry of the previous page): keyset paging. */
  after?: { lastSeen: string; id: string };
}

/**
 * A bootstrap token minted for one incarnation of a machine in its cluster's workload
 * cluster (src/boot/tokens.ts). At most one per machine name. It outlives the machine's
 * delete, so the token's Secret in the workload cluster is deleted by the sweep.
 */
export interface MintedToken {
  machine: string;
  /** The machine incarnation it was minted for (src/boot/sign.ts `machineIncarnation`). */
  incarnation: string;
  /** The cluster whose workload cluster holds its Secret. */
  cluster: string;
  /** `<id>.<secret>` in kubeadm's format: a secret, never logged. */
  token: string;
  /** RFC 3339 (UTC): the expiration its Secret was last written with. */
  expiresAt: string;
}

/**
 * The store. Every write is one transaction; reads see committed writes only.
 *
 * Revisions: a resource's first create is revision 1 and every replace adds one. History
 * outlives a delete: a name deleted and created again continues after its last revision,
 * so an old `ifMatch` (or ETag) never matches the new resource and old revisions stay
 * readable and servable.
 */
export interface Store {
  /** The schema as the store's start found and left it (src/store/compat.ts); absent for stores that have none. */
  readonly schema?: SchemaState;
  /**
   * Create a resource at its next revision (1 for a new name).
   *
   * For machines, the revision records `refs`: the current revisions of the cluster and
   * profile it names, the selector index is updated, and the discovered entries the
   * machine matches are marked `enrolled` with its name (as on replace).
   *
   * @throws AlreadyExistsError when the name exists; MissingReferenceError when a
   *   machine names a missing cluster or profile; InvalidArgumentError for a machine
   *   selector that is not a MAC address or UUID; DuplicateSelectorError when another
   *   machine has one of its MAC addresses (any spelling), its UUID or its serial
   *   (checked atomically with the write).
   */
  create<K extends ResourceKind>(kind: K, input: ResourceInput<SpecOf<K>>, options?: CreateOptions): Promise<StoredResource<SpecOf<K>>>;

  /** The current revision. @throws NotFoundError */
  get<K extends ResourceKind>(kind: K, name: string): Promise<StoredResource<SpecOf<K>>>;

  /** One revision from the history, also of a deleted resource. @throws NotFoundError */
  getRevision<K extends ResourceKind>(kind: K, name: string, revision: number): Promise<StoredResource<SpecOf<K>>>;

  /**
   * A page of the existing resources of a kind, by name.
   *
   * @throws InvalidArgumentError naming `limit` or `continue` for a bad value.
   */
  list<K extends ResourceKind>(kind: K, options?: ListOptions): Promise<ListPage<SpecOf<K>>>;

  /**
   * Replace labels and spec, raising the revision by one.
   *
   * @throws NotFoundError; PreconditionFailedError when `ifMatch` is not current; as
   *   {@link create} for machines.
   */
  replace<K extends ResourceKind>(kind: K, input: ResourceInput<SpecOf<K>>, options?: WriteOptions): Promise<StoredResource<SpecOf<K>>>;

  /**
   * Delete a resource (its history stays). Deleting a machine also drops its selector
   * index entries, fetch counter and status record (its audit rows stay).
   *
   * @throws NotFoundError; PreconditionFailedError; ReferencedError when machines
   *   still name the cluster or profile.
   */
  delete(kind: ResourceKind, name: string, options?: WriteOptions): Promise<void>;

  /** Every revision, oldest first, also of a deleted resource. @throws NotFoundError when there is none. */
  revisions<K extends ResourceKind>(kind: K, name: string): Promise<StoredResource<SpecOf<K>>[]>;

  /** Names of the existing machines whose current spec names the cluster or profile, sorted. */
  referencedBy(kind: 'Cluster' | 'Profile', name: string): Promise<string[]>;

  /**
   * Machines with at least one selector equal to a given identity value (MAC and UUID
   * compared normalised, host name case-insensitively, serial exactly, labels as
   * `key=value`), sorted by name: an index lookup, whatever the number of machines.
   * Ranking the candidates is the caller's (src/boot).
   */
  findMachinesBy(identity: MachineIdentity & { labels?: Record<string, string> }): Promise<StoredResource<MachineSpec>[]>;

  /**
   * What `/ipxe` reads, in one query where the store is networked (issue 32): the
   * {@link findMachinesBy} candidates, the machine named `fallback` too when it exists
   * (`BOOTWRIGHT_DEFAULT_MACHINE`, a candidate when nothing else matches), and the
   * profile of each, at their current revisions, read together.
   */
  bootCandidates(identity: MachineIdentity & { labels?: Record<string, string> }, fallback?: string): Promise<BootCandidates>;

  /**
   * What a signed fetch of a machine's bootstrap data reads, in one query where the
   * store is networked (issue 32), in one read transaction where it is a file: the
   * machine, its cluster and its profile at their
   * current revisions, read together, and whether the URL `claimKey` names is claimed
   * (first fetch wins, issue 16: an unexpired claim, written by {@link recordAudit}; a
   * read, which lets a replay be refused before anything is rendered or counted; false
   * without a key).
   *
   * @throws NotFoundError when the machine (or, in a store some bug left inconsistent,
   *   its cluster or profile) does not exist
   */
  fetchParts(machine: string, claimKey?: string): Promise<FetchParts>;

  /**
   * Append an audit row. For a refusal ({@link isRefusal}), in the same transaction,
   * prune refusal rows past `bounds` (older than the retention, then the oldest beyond
   * `maxRefused`, by a kept count: no scan of the rows); for an answer that served, the
   * machine's served rows of the same class beyond `maxServedPerMachine` (the newest that
   * many kept: a walk of at most that many of its rows; the unauthenticated script routes
   * and the signed fetches and reports are counted apart, rows.ts
   * `UNAUTHENTICATED_SERVED_ROUTES`).
   *
   * @param event for an answer that served, the lifecycle event it causes, applied to
   *   the machine's status in the same transaction (as {@link updateStatus}): a boot
   *   route's fetch is acknowledged after one commit, not two. Ignored for a refusal.
   * @param claim for an answer that served, the signed URL it claims (first fetch wins,
   *   issue 16), in the same transaction: the claim is inserted unless it is there, and
   *   when it is there nothing is written and the result is false. Of any number of
   *   callers (replicas sharing a PostgreSQL database included) exactly one writes, and
   *   the claim survives restarts. Because the claim commits with the audit row, an
   *   answer whose row could not be written (a 503 the client retries) claims nothing.
   *   Claims past their expiry are deleted in the same transaction (each once, by an
   *   index), so the table holds only unexpired URLs. Ignored for a refusal.
   * @returns false when `claim` was taken before (nothing written), else true
   */
  recordAudit(entry: AuditInput, bounds?: AuditBounds, event?: StatusEvent, claim?: UrlClaim): Promise<boolean>;

  /**
   * A machine's audit rows, newest first.
   *
   * @param options.limit at most this many rows (default 100, at most 1000).
   * @throws InvalidArgumentError naming `limit`.
   */
  audit(machine: string, options?: { limit?: number }): Promise<AuditEntry[]>;

  /**
   * Count one fetch of a machine's secret-bearing data, atomically: when fewer than
   * `max` fetches were counted, add one and return true; otherwise change nothing and
   * return false. One statement, so concurrent callers never exceed `max`.
   */
  takeFetch(machine: string, max: number): Promise<boolean>;

  /** Fetches counted for a machine since its last reset (0 when none). */
  fetchCount(machine: string): Promise<number>;

  /** Reset a machine's fetch counter to 0 (an operator allowing it to boot again). */
  resetFetches(machine: string): Promise<void>;

  /**
   * Record a sighting of an unknown machine: insert it with first and last seen now,
   * or, when the same identity (all four fields, normalised) was seen before, update
   * last seen and the count. One transaction that first deletes entries past the
   * retention of `bounds`; a new identity when `bounds.max` entries exist already is not
   * recorded (exactly, across replicas sharing a database).
   *
   * @returns the entry as recorded, or undefined when it was not (the table is full).
   * @throws InvalidArgumentError naming `mac` or `uuid` for an unparseable value, or
   *   `identity` when every field is empty.
   */
  recordDiscovered(identity: MachineIdentity, bounds?: DiscoveredBounds, sighting?: DiscoveredSighting): Promise<DiscoveredMachine | undefined>;

  /**
   * Discovered machines, most recently seen first (ties by id, newest first), from
   * `options.after` on. @throws InvalidArgumentError naming `limit`.
   */
  listDiscovered(options?: DiscoveredListOptions): Promise<DiscoveredMachine[]>;

  /** One discovered machine. @throws DiscoveredNotFoundError (also for an id that is not decimal digits). */
  getDiscovered(id: string): Promise<DiscoveredMachine>;

  /** Dismiss a discovered machine (seen again, it comes back as a new entry). @throws DiscoveredNotFoundError */
  deleteDiscovered(id: string): Promise<void>;

  /**
   * Apply a lifecycle event to a machine's status record (src/store/status.ts
   * `applyEvent`), in one transaction (exact across replicas).
   *
   * @returns false when the event was refused (too many reports since the latest fetch).
   */
  updateStatus(machine: string, event: StatusEvent): Promise<boolean>;

  /** The status records of the named machines that have one (at most {@link MAX_LIST_LIMIT} names). */
  statuses(machines: readonly string[]): Promise<Map<string, StatusRecord>>;

  /** The token minted for a machine name, if one is stored. */
  mintedToken(machine: string): Promise<MintedToken | undefined>;

  /**
   * Store a minted token unless the machine already has one: the winner of concurrent
   * claims (across replicas) is the one every fetch then serves.
   *
   * @returns the stored token: `token` itself, or the one stored before it
   */
  claimMintedToken(token: MintedToken): Promise<MintedToken>;

  /** Record a new expiration of the machine's token, if it is still `token`. */
  extendMintedToken(machine: string, token: string, expiresAt: string): Promise<void>;

  /** Forget the machine's token, if it is still `token`. */
  forgetMintedToken(machine: string, token: string): Promise<void>;

  /** A page of the minted tokens, by machine name, after `after` (exclusive), at most `limit` (default 100). */
  mintedTokens(options?: { after?: string; limit?: number }): Promise<MintedToken[]>;

  /**
   * Fleet counts: existing machines, by phase (a machine without a record is
   * `Registered`; one `Provisioning` since before `stalledBefore` is `Stalled`), and the
   * discovered entries not yet enrolled. A few aggregate queries, whatever the fleet's size.
   *
   * @param stalledBefore ISO 8601 UTC cut-off
   */
  fleet(stalledBefore: string): Promise<FleetCounts>;

  /** Resolve when the store answers a trivial query (readiness). @throws when it does not. */
  ping(): Promise<void>;

  /** Release the store (idempotent). */
  close(): Promise<void>;
}

/** The ISO 8601 instant `seconds` before `now`, for retention cut-offs. */
export function before(now: Date, seconds: number): string {
  return new Date(now.getTime() - seconds * 1000).toISOString();
}

/**
 * Check a page size.
 *
 * @returns `limit`, or `fallback` when undefined.
 * @throws InvalidArgumentError naming `limit` unless an integer 1 to {@link MAX_LIST_LIMIT}.
 */
export function checkLimit(limit: number | undefined, fallback = DEFAULT_LIST_LIMIT): number {
  if (limit === undefined) return fallback;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) throw new InvalidArgumentError('limit', `must be an integer from 1 to ${MAX_LIST_LIMIT}`);
  return limit;
}

/**
 * The opaque continue token for a page ending at `lastName` of `kind`: base64url of a
 * small JSON object. Tokens carry no secret and no position other than the name.
 */
export function encodeContinue(kind: ResourceKind, lastName: string): string {
  return Buffer.from(JSON.stringify({ v: 1, k: kind, a: lastName }), 'utf8').toString('base64url');
}

/**
 * Read a continue token.
 *
 * @returns the name the next page starts after.
 * @throws InvalidArgumentError naming `continue` for a token not made by
 *   {@link encodeContinue} for this kind.
 */
export function decodeContinue(kind: ResourceKind, token: string): string {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    value = undefined;
  }
  const v = typeof value === 'object' && value !== null ? (value as { v?: unknown; k?: unknown; a?: unknown }) : undefined;
  if (v?.v !== 1 || v.k !== kind || typeof v.a !== 'string') {
    throw new InvalidArgumentError('continue', 'is not a token from a previous page of this list');
  }
  return v.a;
}
