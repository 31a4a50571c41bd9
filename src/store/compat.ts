/**
 * Rollbacks (issue 27, DESIGN §8): what a release does with a store a newer release has
 * migrated. Migrations only add (columns with defaults, tables), so an older release
 * still reads and writes the data; where one does not, its migration raises
 * `schema_compatibility.readable_from` (migration 006) to its own version, and releases
 * below it refuse to start, saying so, instead of running on data they would misread.
 *
 * postgrator, asked to migrate a schema newer than every migration it has, would look
 * for `undo` migrations (there are none) and do nothing; this module asks first.
 */

import { readdirSync } from 'node:fs';

/**
 * The `readable_from` this release's migrations leave (migration 006): after upgrading,
 * releases with schema versions from this one on can still start on the store.
 * test/store/compat.test.ts holds it to the migration files.
 */
export const READABLE_FROM = 1;

/**
 * What a release before a given schema would misread in a stored document: the fields
 * (and values) added since, each with the first schema version whose release reads it.
 * Such a release, started on the store, would serve a machine without its network or
 * kernel arguments (it ignores the field), or refuse its config fetch at boot (its
 * strict Cluster schema), so while any current document uses one, the store's
 * `readable_from` is raised to that schema, and the older release refuses to start,
 * saying so, instead (DESIGN §8, docs/operating.md#rolling-back). Once no document uses
 * one any more, `readable_from` falls back to {@link READABLE_FROM}.
 *
 * Schema 7 is the first migration of v0.3.0 (v0.2.0 has schema 6).
 */
export const NEWER_FIELDS: readonly { kind: 'Cluster' | 'Profile' | 'Machine'; path: string; readableFrom: number; uses: (spec: Record<string, unknown>) => boolean }[] = [
  { kind: 'Cluster', path: 'spec.workloadKubeconfig', readableFrom: 7, uses: (s) => s.workloadKubeconfig !== undefined },
  { kind: 'Cluster', path: 'spec.bootstrapTokenTTL', readableFrom: 7, uses: (s) => s.bootstrapTokenTTL !== undefined },
  { kind: 'Profile', path: 'spec.network', readableFrom: 7, uses: (s) => s.network !== undefined },
  // `${publicUrl}`, `${machine}` and a machine's variables: replaced since v0.3.0, refused as an argument iPXE alters before.
  { kind: 'Profile', path: 'spec.boot', readableFrom: 7, uses: (s) => JSON.stringify(s.boot ?? null).includes('${') },
  { kind: 'Machine', path: 'spec.network', readableFrom: 7, uses: (s) => s.network !== undefined },
  { kind: 'Machine', path: 'spec.kernelArgs', readableFrom: 7, uses: (s) => s.kernelArgs !== undefined },
  { kind: 'Machine', path: 'spec.variables', readableFrom: 7, uses: (s) => s.variables !== undefined },
];

/**
 * The `readable_from` a document needs ({@link NEWER_FIELDS}) and the fields that need it.
 *
 * @returns `readableFrom` {@link READABLE_FROM} and no fields for a document any release reads
 */
export function documentNeeds(kind: string, spec: unknown): { readableFrom: number; fields: string[] } {
  const fields: string[] = [];
  let readableFrom = READABLE_FROM;
  const s = (spec ?? {}) as Record<string, unknown>;
  for (const f of NEWER_FIELDS) {
    if (f.kind !== kind || !f.uses(s)) continue;
    fields.push(f.path);
    readableFrom = Math.max(readableFrom, f.readableFrom);
  }
  return { readableFrom, fields };
}

/** The newest migration in a migrations directory (`NNN.do.<name>.sql` files, postgrator's names). */
export function newestMigration(dir: string): number {
  return Math.max(0, ...readdirSync(dir).map((f) => /^(\d+)\.do\./.exec(f)?.[1]).filter((v): v is string => v !== undefined).map(Number));
}

/** What a store's migrator tells (postgrator's `getDatabaseVersion`, `getMaxVersion`, `migrate`). */
export interface Migrator {
  getDatabaseVersion(): Promise<number>;
  getMaxVersion(): Promise<number>;
  migrate(): Promise<unknown>;
}

/** The store was migrated by a newer release than this one can run beside. */
export class NewerSchemaError extends Error {
  constructor(
    readonly database: number,
    readonly release: number,
    readonly readableFrom: number,
  ) {
    super(
      `the store is at schema version ${database}, migrated by a newer bootwright release, which needs releases with schema ${readableFrom} or later; ` +
        `this release has schema ${release}: start the newer release again, or restore the backup made before the upgrade (docs/operating.md#upgrade)`,
    );
    this.name = 'NewerSchemaError';
  }
}

/** How a store stands against this release's migrations. */
export interface SchemaState {
  /** The store's schema version before this start. */
  database: number;
  /** This release's newest migration. */
  release: number;
  /** Migrations applied at this start. */
  applied: number;
}

/**
 * Migrate the store to this release's schema, or, when a newer release already
 * migrated it further, check that this release may run on it.
 *
 * @param readableFrom reads `schema_compatibility.readable_from` (undefined when the
 *   table does not exist: every schema before migration 006 is readable from 1)
 * @throws NewerSchemaError when the store needs a newer release; what the migrator throws
 */
export async function migrateStore(migrator: Migrator, readableFrom: () => Promise<number | undefined>): Promise<SchemaState> {
  const database = await migrator.getDatabaseVersion();
  const release = await migrator.getMaxVersion();
  if (database > release) {
    const from = (await readableFrom()) ?? 1;
    if (from > release) throw new NewerSchemaError(database, release, from);
    return { database, release, applied: 0 };
  }
  await migrator.migrate();
  return { database, release, applied: release - database };
}
