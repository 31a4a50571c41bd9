/**
 * A throwaway PostgreSQL database for one test file: created at import time on the
 * server at BOOTWRIGHT_TEST_DATABASE_URL (default
 * postgres://bootwright:bootwright@127.0.0.1:5432/postgres; the role needs CREATEDB) and
 * dropped after the file's tests. Without a reachable server the file's tests skip
 * loudly, except under CI where they fail.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { openPostgresStore } from '../../src/store/postgres.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';

/** The server the test databases are created on (its own database is never written). */
export const ADMIN_URL = process.env.BOOTWRIGHT_TEST_DATABASE_URL ?? 'postgres://bootwright:bootwright@127.0.0.1:5432/postgres';

/** A URL with its credentials masked, for messages. */
export const maskUrl = (url: string): string => url.replace(/\/\/[^@/]*@/, '//***@');

/** Run `fn` with a client connected to the admin URL, then disconnect. */
async function withAdmin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const admin = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 5000 });
  try {
    await admin.connect();
    return await fn(admin);
  } finally {
    await admin.end().catch(() => undefined);
  }
}

/**
 * Create a fresh database for the calling test file and drop it (with its connections)
 * after the file's tests.
 *
 * @param what what the file tests, for the skip or failure line.
 * @returns the database's connection URL; undefined when the server cannot be used, in
 *   which case one test was registered that skips (or, with `CI` set, fails) saying why.
 */
export async function testDatabase(what: string): Promise<string | undefined> {
  let created: { name: string; url: string } | undefined;
  let unreachable: string | undefined;
  try {
    created = await createDatabase();
  } catch (e) {
    unreachable = e instanceof Error ? e.message : String(e);
  }
  if (created === undefined) {
    const line = `*** SKIPPED: PostgreSQL not reachable at ${maskUrl(ADMIN_URL)} (${unreachable ?? '?'}); set BOOTWRIGHT_TEST_DATABASE_URL ***`;
    if (process.env.CI) {
      it(`${what}: PostgreSQL is reachable (required under CI)`, () => {
        assert.fail(line.replace('SKIPPED', 'FAILED'));
      });
    } else {
      console.log(`\n${line}\n`);
      it(what, { skip: line }, () => undefined);
    }
    return undefined;
  }
  const { name } = created;
  after(() => dropDatabase(name));
  return created.url;
}

/**
 * Create another throwaway database on the same server (the caller drops it).
 *
 * @returns its name and connection URL.
 * @throws whatever pg throws when the server cannot be used.
 */
export async function createDatabase(): Promise<{ name: string; url: string }> {
  const name = `bootwright_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await withAdmin((admin) => admin.query(`CREATE DATABASE ${name}`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return { name, url: url.toString() };
}

/** Drop a database, ending whatever is still connected to it. */
export async function dropDatabase(database: string): Promise<void> {
  // FORCE ends the database's sessions; one another role holds for a moment (42501:
  // not ours to terminate) is waited out a few times before giving up.
  for (let attempt = 1; ; attempt++) {
    try {
      await withAdmin((admin) => admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
      return;
    } catch (e) {
      if ((e as { code?: string }).code !== '42501' || attempt === 5) throw e;
      await new Promise((r) => setTimeout(r, 500 * attempt));
    }
  }
}

/**
 * The same tests on both stores: `body`'s tests run twice, once in a describe of their
 * own on an in-memory SQLite store and once on a throwaway PostgreSQL database (skipped
 * loudly without one, failed under CI; {@link testDatabase}), each after `start` made
 * what they test on that store (a service, say) and before what it returned is closed.
 * Tests of one file run one after another, so `start` may set what `body` reads.
 */
export function describeOnBothStores(title: string, start: (store: Store) => Promise<{ close: () => Promise<void> }>, body: () => void): void {
  const run = (open: () => Promise<Store>) => {
    let store: Store | undefined;
    let made: { close: () => Promise<void> } | undefined;
    before(async () => {
      store = await open();
      made = await start(store);
    });
    after(async () => {
      await made?.close();
      await store?.close();
    });
    body();
  };
  describe(`${title} (SQLite)`, () => run(() => openSqliteStore(':memory:')));
  describe(`${title} (PostgreSQL)`, async () => {
    const url = await testDatabase(`${title} on PostgreSQL`);
    if (url !== undefined) run(() => openPostgresStore(url));
  });
}

/**
 * Two tests of `probe`: on an in-memory SQLite store, and on a throwaway PostgreSQL
 * database (skipped loudly without one, failed under CI; {@link testDatabase}). Call it
 * inside a `describe`: the same hostile inputs against both stores.
 */
export function onBothStores(what: string, probe: (store: Store) => Promise<void>): void {
  it(`SQLite: ${what}`, async () => {
    const store = await openSqliteStore(':memory:');
    try {
      await probe(store);
    } finally {
      await store.close();
    }
  });
  describe('PostgreSQL', async () => {
    const url = await testDatabase(`PostgreSQL: ${what}`);
    if (url === undefined) return;
    let store: Store | undefined;
    after(async () => store?.close());
    it(`PostgreSQL: ${what}`, async () => {
      store = await openPostgresStore(url);
      await probe(store);
    });
  });
}

/** One query as node-postgres is asked to send it: its text and parameters. */
export interface SentQuery {
  text: string;
  values: unknown[];
}

/**
 * Watch every query any `pg.Client` sends (pools' clients included) until the returned
 * function is called: `onQuery` sees each one's text and parameters before it is sent.
 *
 * @returns a function that puts node-postgres's `Client.prototype.query` back; call it
 *   in a `finally` or an `after` hook.
 */
export function watchQueries(onQuery: (query: SentQuery) => void): () => void {
  // eslint-disable-next-line @typescript-eslint/unbound-method -- kept to be called with its client as `this`, and put back after
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: Parameters<typeof query>) {
    const q = args[0] as unknown;
    if (typeof q === 'string') onQuery({ text: q, values: Array.isArray(args[1]) ? (args[1] as unknown[]) : [] });
    else onQuery({ text: (q as { text: string }).text, values: (q as { values?: unknown[] }).values ?? [] });
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  return () => {
    pg.Client.prototype.query = query;
  };
}
