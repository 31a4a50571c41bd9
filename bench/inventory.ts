/**
 * Benchmark inventories: a SQLite file in a fresh data directory, or a throwaway
 * PostgreSQL database (on the server at BOOTWRIGHT_TEST_DATABASE_URL, as the tests use),
 * filled with N machines through the Store API, plus the size each takes on disk.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openPostgresStore } from '../src/store/postgres.js';
import { openSqliteStore, SQLITE_FILE } from '../src/store/sqlite.js';
import type { Store } from '../src/store/store.js';
import { createDatabase, dropDatabase } from '../test/support/postgres.js';
import { registerMachines } from './machines.js';

/** A filled inventory and how to serve it. */
export interface Inventory {
  kind: 'sqlite' | 'postgres';
  /** Environment for `bootwright serve` (data directory, database URL). */
  env: Record<string, string>;
  /** Seconds it took to register the machines. */
  registerSeconds: number;
  /** Open the store again (for checks after a run); the caller closes it. */
  open: () => Promise<Store>;
  /** The store's size on disk, bytes: the SQLite file with its WAL, or pg_database_size. */
  sizeBytes: () => Promise<number>;
  /** Delete it. */
  remove: () => Promise<void>;
}

const log = (text: string) => process.stderr.write(`  … ${text}\n`);

/** Register `n` machines into a store, logging progress; resolves with the seconds taken. */
async function fill(store: Store, n: number, concurrency: number, what: string): Promise<number> {
  const t0 = performance.now();
  try {
    await registerMachines(store, n, concurrency, (done) => log(`${what}: ${done} machines registered`));
  } finally {
    await store.close();
  }
  return (performance.now() - t0) / 1000;
}

/** A SQLite inventory of `n` machines in a fresh data directory. */
export async function sqliteInventory(n: number): Promise<Inventory> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bootwright-bench-'));
  const file = join(dataDir, SQLITE_FILE);
  const registerSeconds = await fill(await openSqliteStore(file), n, 1, 'SQLite');
  const size = (path: string) => {
    try {
      return statSync(path).size;
    } catch {
      return 0;
    }
  };
  return {
    kind: 'sqlite',
    env: { BOOTWRIGHT_DATA_DIR: dataDir },
    registerSeconds,
    open: () => openSqliteStore(file),
    sizeBytes: () => Promise.resolve(size(file) + size(`${file}-wal`)),
    remove: () => {
      rmSync(dataDir, { recursive: true, force: true });
      return Promise.resolve();
    },
  };
}

/** A PostgreSQL inventory of `n` machines in a fresh database (registered 16 at a time). */
export async function postgresInventory(n: number): Promise<Inventory> {
  const db = await createDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), 'bootwright-bench-'));
  const registerSeconds = await fill(await openPostgresStore(db.url, { poolSize: 16 }), n, 16, 'PostgreSQL');
  return {
    kind: 'postgres',
    env: { BOOTWRIGHT_DATA_DIR: dataDir, BOOTWRIGHT_DATABASE_URL: db.url },
    registerSeconds,
    open: () => openPostgresStore(db.url, { poolSize: 16 }),
    sizeBytes: async () => {
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      try {
        const { rows } = await client.query<{ size: string }>('SELECT pg_database_size(current_database())::text AS size');
        return Number(rows[0]!.size);
      } finally {
        await client.end();
      }
    },
    remove: async () => {
      await dropDatabase(db.name);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
