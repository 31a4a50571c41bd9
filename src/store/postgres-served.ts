/**
 * Served firmware answers written in batches on PostgreSQL (issue 32): the audit rows,
 * status transitions, URL claims and trims of concurrent answers, each for another
 * machine, as one statement over arrays, so a boot storm costs a statement and a commit
 * per batch rather than per answer. Every answer is still acknowledged only once the
 * statement holding its rows has committed (src/store/postgres.ts recordAudit).
 *
 * An answer the batch cannot write as computed comes back with its outcome, nothing of it
 * written, and is written on its own (the one-statement and transaction paths):
 * - `changed`: its status record is no longer the one its transition was computed from;
 * - `unnumbered`: its machine has served rows an earlier release left unnumbered
 *   (migration 012);
 * - `claimed`: its URL was claimed before (first-fetch-wins): nothing to write, the
 *   answer is refused.
 * A race the statement meets while it runs (a status record changed between its snapshot
 * and its row lock, or a served number another writer took: `bootwright_status_changed`,
 * the unique `audit_served` index) rolls all of it back, and every answer of the batch is
 * then written on its own.
 */
import { AUDIT_COLUMNS, auditValues, newestServedSql, nextServedSeqSql, repeatOfSql, servedBeyondSql } from './rows.js';
import type { AuditInput, UrlClaim } from './store.js';
import type { StatusRecord } from './status.js';

/**
 * One served answer of a batch, its transition computed (`mode`): `none` (no event),
 * `insert` (a first status row), `update` (the row still `seen`), `hold` (an event that
 * changes nothing: the row still `seen`, locked to the commit) or `hold-none` (an event
 * that changes nothing, and still no row).
 */
export interface BatchedServed {
  entry: AuditInput;
  at: string;
  /** The bound on the machine's served rows of the route's class, if any. */
  max?: number;
  /** Count a repeat of the newest identical row rather than add one (rows.ts mergesRepeats). */
  merge: boolean;
  claim?: UrlClaim;
  mode: 'none' | 'insert' | 'update' | 'hold' | 'hold-none';
  /** The record written by `insert` and `update`. */
  record?: StatusRecord;
  /** The status record text the transition was computed from (`update`, `hold`). */
  seen?: string;
}

/** What became of a batched answer; `written` and `claimed` are final. */
export type BatchOutcome = 'written' | 'claimed' | 'changed' | 'unnumbered';

const AUDIT = AUDIT_COLUMNS.split(', ');
/** PostgreSQL array types of the audit columns (status and revision are integers). */
const AUDIT_TYPES = AUDIT.map((c) => (c === 'status' || c === 'revision' ? 'integer' : 'text'));
/** The columns of one batched answer after its audit values, and their array types. */
const EXTRA = [
  ['claim_key', 'text'],
  ['claim_expires', 'bigint'],
  ['mode', 'text'],
  ['phase', 'text'],
  ['since', 'text'],
  ['record', 'text'],
  ['seen', 'text'],
  ['merge', 'boolean'],
  ['keep', 'integer'],
] as const;

const COLUMNS = [...AUDIT.map((c, i) => [c, AUDIT_TYPES[i]!] as const), ...EXTRA];
const b = (column: string) => `b_${column}`;

/**
 * `column` among the values `query` selects, as an array (`= ANY (ARRAY(…))`), for the
 * rows a statement changes in a large table joined to the batch: PostgreSQL then looks them
 * up in `column`'s index, where for a join of a batch of 100 it may hash the batch and scan
 * the table.
 */
const byKeys = (column: string, query: string) => `${column} = ANY (ARRAY(${query}))`;

/**
 * The batch statement: one text whatever the batch's size (one array per column, the
 * time for expired claims last), so each connection prepares it once. Every lookup is one
 * of the one-answer statement's, per row: the status row by machine, the served rows'
 * newest number and the trim in `audit_served`, the newest row in `audit_machine`. Each
 * is written so that the batch's size cannot turn it into a scan: a lookup per answer is a
 * LATERAL or EXISTS subquery kept whole (`OFFSET 0`: pulled up into a join, PostgreSQL
 * looked the trim's rows up by machine alone and filtered the machine's every served row,
 * and hashed a batch of 100 to scan `machine_status`), and a row changed by a join is
 * also named by key ({@link byKeys}).
 */
export const BATCH_SQL = (() => {
  const unnest = COLUMNS.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ');
  const now = `$${COLUMNS.length + 1}::bigint`;
  const w = (column: string) => `w.${b(column)}`;
  const parts = [
    `answers AS (SELECT * FROM unnest(${unnest}) WITH ORDINALITY AS t(${COLUMNS.map(([c]) => b(c)).join(', ')}, b_i))`,
    `seq AS (SELECT answers.b_i, s.n, s.unnumbered FROM answers CROSS JOIN LATERAL (${nextServedSeqSql('answers.b_machine', 'answers.b_route')}) s)`,
    // The transition still holds on this statement's snapshot.
    "cas AS (SELECT b_i FROM answers WHERE CASE WHEN b_mode = 'none' THEN true " +
      "WHEN b_mode IN ('insert', 'hold-none') THEN NOT EXISTS (SELECT 1 FROM machine_status s WHERE s.machine = b_machine OFFSET 0) " +
      'ELSE EXISTS (SELECT 1 FROM machine_status s WHERE s.machine = b_machine AND s.record = b_seen OFFSET 0) END)',
    'ready AS (SELECT answers.*, seq.n FROM answers JOIN seq USING (b_i) WHERE NOT seq.unnumbered AND answers.b_i IN (SELECT b_i FROM cas))',
    `expired AS (DELETE FROM claimed_urls WHERE expires_at <= ${now} AND EXISTS (SELECT 1 FROM ready WHERE b_claim_key IS NOT NULL))`,
    'claimed AS (INSERT INTO claimed_urls (key, machine, expires_at) SELECT b_claim_key, b_machine, b_claim_expires FROM ready WHERE b_claim_key IS NOT NULL ON CONFLICT (key) DO NOTHING RETURNING key)',
    'open AS (SELECT * FROM ready WHERE b_claim_key IS NULL OR b_claim_key IN (SELECT key FROM claimed))',
    "st_insert AS (INSERT INTO machine_status (machine, phase, since, record) SELECT b_machine, b_phase, b_since, b_record FROM open WHERE b_mode = 'insert' ON CONFLICT (machine) DO NOTHING RETURNING machine)",
    "st_update AS (UPDATE machine_status s SET phase = o.b_phase, since = o.b_since, record = o.b_record FROM open o WHERE o.b_mode = 'update' AND s.machine = o.b_machine AND s.record = o.b_seen " +
      `AND ${byKeys('s.machine', "SELECT b_machine FROM open WHERE b_mode = 'update'")} RETURNING s.machine)`,
    "st_hold AS (SELECT s.machine FROM machine_status s JOIN open o ON s.machine = o.b_machine WHERE o.b_mode = 'hold' AND s.record = o.b_seen " +
      `AND ${byKeys('s.machine', "SELECT b_machine FROM open WHERE b_mode = 'hold'")} FOR UPDATE OF s)`,
    "written AS (SELECT * FROM open WHERE b_mode IN ('none', 'hold-none') OR b_machine IN (SELECT machine FROM st_insert UNION ALL SELECT machine FROM st_update UNION ALL SELECT machine FROM st_hold))",
    // The newest served row of each machine whose answer may be counted in it, when it is
    // a repeat of that answer (rows.ts mergeRepeatSql, for many machines at once).
    `newest AS (SELECT w.b_at, n.id FROM written w CROSS JOIN LATERAL (${newestServedSql('w.b_machine', 'id, route, client, status, user_agent, reason')}) n ` +
      `WHERE w.b_merge AND ${repeatOfSql((i) => w(AUDIT[i]!), 'IS NOT DISTINCT FROM')})`,
    `merged AS (UPDATE audit SET repeats = repeats + 1, last_at = n.b_at FROM newest n WHERE audit.id = n.id AND ${byKeys('audit.id', 'SELECT id FROM newest')} RETURNING audit.machine)`,
    `audit_row AS (INSERT INTO audit (${AUDIT_COLUMNS}, served_seq) SELECT ${AUDIT.map(b).join(', ')}, n FROM written WHERE b_machine NOT IN (SELECT machine FROM merged) RETURNING machine)`,
    'trimmed AS (DELETE FROM audit WHERE id IN (SELECT beyond.id FROM written w ' +
      `CROSS JOIN LATERAL (${servedBeyondSql('w.b_machine', 'w.b_route', 'w.n', 'w.b_keep')} OFFSET 0) beyond WHERE w.b_keep IS NOT NULL AND w.b_machine IN (SELECT machine FROM audit_row)))`,
  ];
  // A row that held on the snapshot and was not written met a writer that committed
  // meanwhile: the function's error rolls the whole statement back.
  const outcome =
    "CASE WHEN answers.b_i NOT IN (SELECT b_i FROM cas) THEN 'changed' WHEN (SELECT unnumbered FROM seq WHERE seq.b_i = answers.b_i) THEN 'unnumbered' " +
    "WHEN answers.b_i NOT IN (SELECT b_i FROM open) THEN 'claimed' WHEN answers.b_i IN (SELECT b_i FROM written) THEN 'written' " +
    'ELSE bootwright_status_changed(answers.b_machine)::text END';
  return `WITH ${parts.join(', ')} SELECT ${outcome} AS outcome FROM answers ORDER BY answers.b_i`;
})();

/**
 * The parameters of {@link BATCH_SQL} for `batch` (at most one answer per machine) and the
 * time expired claims are dropped by (unix seconds): one array per column.
 */
export function batchParams(batch: readonly BatchedServed[], nowSeconds: number): unknown[] {
  const arrays: unknown[][] = COLUMNS.map(() => []);
  for (const s of batch) {
    const row = [
      ...auditValues(s.entry, s.at),
      s.claim?.key ?? null,
      s.claim?.expiresAt ?? null,
      s.mode,
      s.record?.phase ?? null,
      s.record?.since ?? null,
      s.record ? JSON.stringify(s.record) : null,
      s.seen ?? null,
      s.merge,
      s.max ?? null,
    ];
    row.forEach((v, i) => arrays[i]!.push(v));
  }
  return [...arrays, nowSeconds];
}
