/**
 * kill -9 mid-write: a real `bootwright serve` process gets SIGKILL while clients are
 * writing machines and fetching signed firmware URLs, on SQLite and on PostgreSQL (where
 * the fetches' reads and audit writes go in batch statements, src/store/postgres-served.ts).
 * Restarted on the same data, it must start, a SQLite database must pass SQLite's
 * integrity check, every write it acknowledged (201) must be there with its revision and
 * every acknowledged fetch must have its audit row: nothing acknowledged is lost, and
 * nothing is half written (each stored machine reads back whole).
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { startProcess } from '../support/process.js';
import { API, clusterSpec, workerProfileSpec } from '../support/inventory.js';
import { testDatabase } from '../support/postgres.js';

const TOKEN = 'kill-test-admin-token-0123456789';
const TOKENS = JSON.stringify([{ name: 'admin', token: TOKEN, scopes: ['admin'] }]);

const databaseUrl = await testDatabase('SIGKILL mid-write on PostgreSQL');

/**
 * The scenario on one store: `databaseUrl` PostgreSQL, else SQLite in the data directory;
 * `writers` clients at once, each a machine at a time.
 */
async function killMidWrite(databaseUrl: string | undefined, writers: number): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bootwright-kill-'));
  const env = {
    BOOTWRIGHT_DATA_DIR: dataDir,
    ...(databaseUrl ? { BOOTWRIGHT_DATABASE_URL: databaseUrl } : {}),
    BOOTWRIGHT_TOKENS: TOKENS,
    BOOTWRIGHT_RATE_LIMIT_MAX: '0',
    BOOTWRIGHT_MAX_EVENT_LOOP_DELAY_MS: '0',
    BOOTWRIGHT_UNAUTHENTICATED_WRITES_PER_MINUTE: '0',
  };
  const first = startProcess(env);
  const port = await first.port;
  const base = `http://127.0.0.1:${port}`;
  const send = (method: string, path: string, body: unknown) =>
    fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal((await send('POST', '/v1/clusters', { apiVersion: API, kind: 'Cluster', metadata: { name: 'prod' }, spec: clusterSpec() })).status, 201);
  assert.equal((await send('POST', '/v1/profiles', { apiVersion: API, kind: 'Profile', metadata: { name: 'worker' }, spec: workerProfileSpec({ output: { format: 'ignition' }, boot: { kernel: 'http://boot.example.com/vmlinuz', initrd: ['http://boot.example.com/initrd.img'], args: [] } }) })).status, 201);

  // Writers and fetchers run until the process dies under them.
  const acknowledged = new Set<string>();
  const fetched = new Map<string, number>();
  let stop = false;
  const writer = async (w: number) => {
    for (let i = 0; !stop && i < 400; i++) {
      const name = `m-${w}-${i}`;
      const mac = `52:54:00:${w.toString(16).padStart(2, '0')}:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 0xff).toString(16).padStart(2, '0')}`;
      try {
        const r = await send('POST', '/v1/machines', { apiVersion: API, kind: 'Machine', metadata: { name, labels: { writer: String(w) } }, spec: { selectors: { mac: [mac] }, cluster: 'prod', profile: 'worker' } });
        if (r.status === 201) acknowledged.add(name);
        // The machine's signed config URL, as its firmware would follow it.
        const script = await (await fetch(`${base}/ipxe?mac=${mac.replaceAll(':', '-')}`)).text();
        const url = /ignition\.config\.url=(\S+)/.exec(script)?.[1];
        if (url) {
          const got = await fetch(url.replace(/^https?:\/\/[^/]+/, base), { headers: { accept: 'application/vnd.coreos.ignition+json;version=3.4.0' } });
          if (got.status === 200) fetched.set(name, (fetched.get(name) ?? 0) + 1);
        }
      } catch {
        return; // the process is gone
      }
    }
  };
  const running = Array.from({ length: writers }, (_, w) => writer(w));
  // Kill once enough is in flight: after the first acknowledgements.
  while (acknowledged.size < 25) await new Promise((r) => setTimeout(r, 20));
  first.child.kill('SIGKILL');
  stop = true;
  await Promise.all(running);
  await first.exited;
  assert.ok(acknowledged.size >= 25);
  assert.ok(fetched.size > 0, 'firmware fetches were acknowledged before the kill');

  // The database file is whole.
  if (!databaseUrl) {
    const db = new Database(join(dataDir, 'bootwright.db'));
    try {
      assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    } finally {
      db.close();
    }
  }

  // Restarted, it serves every acknowledged write and every acknowledged fetch's audit row.
  const second = startProcess(env);
  const port2 = await second.port;
  try {
    const get = async (path: string) => fetch(`http://127.0.0.1:${port2}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    for (const name of acknowledged) {
      const r = await get(`/v1/machines/${name}`);
      assert.equal(r.status, 200, `${name} was acknowledged but is gone`);
      const m = (await r.json()) as { metadata: { revision: number; labels: Record<string, string> }; spec: { cluster: string } };
      assert.equal(m.metadata.revision, 1);
      assert.equal(m.spec.cluster, 'prod');
    }
    for (const [name, count] of fetched) {
      const audit = (await (await get(`/v1/machines/${name}/audit`)).json()) as { items: { route: string; status: number }[] };
      const served = audit.items.filter((a) => a.route === '/ignition' && a.status === 200).length;
      assert.ok(served >= count, `${name}: ${count} acknowledged fetches, ${served} audit rows`);
    }
    // Whatever else was stored (written but not acknowledged before the kill) reads back whole.
    const list = (await (await get('/v1/machines?limit=1000')).json()) as { items: { metadata: { name: string } }[] };
    for (const item of list.items) assert.equal((await get(`/v1/machines/${item.metadata.name}`)).status, 200);
    assert.ok(list.items.length >= acknowledged.size);
  } finally {
    second.child.kill('SIGTERM');
    await second.exited;
  }
}

describe('SIGKILL mid-write', () => {
  it('SQLite: loses no acknowledged write or audit row, and leaves nothing half written', () => killMidWrite(undefined, 4));
  if (databaseUrl !== undefined) {
    it('PostgreSQL: loses no acknowledged write or audit row, and leaves nothing half written', () => killMidWrite(databaseUrl, 8));
  }
});
