/**
 * Two real `bootwright serve` processes (replicas) on one PostgreSQL database, each on
 * its own loopback port, sharing the admin token and the URL-signing key as a
 * replicated deployment does (deploy/kubernetes/replicated):
 * - what one replica writes, the other serves at once, byte for byte;
 * - render caches stay correct across replicas (they are keyed by content, so a change
 *   made through one replica is never answered from the other's stale cache);
 * - `maxFetches` is exact across replicas under concurrent fetches;
 * - `If-Match` is exact across replicas under concurrent replaces;
 * - each names its connections (`application_name`) and holds no more of them than
 *   `BOOTWRIGHT_DATABASE_POOL_SIZE`.
 * Skips loudly without a reachable PostgreSQL, fails under CI (test/support/postgres.ts).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { testDatabase } from '../support/postgres.js';
import { type ServeProcess, startProcess } from '../support/process.js';
import { example } from '../support/requests.js';
import { ignitionFiles } from '../support/decode.js';

const ADMIN = 'replica-admin-token-0123456789abcdef';
const API = 'bootwright.dev/v1alpha1';
const IGNITION_ACCEPT = 'application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1';
const CLUSTER = (example('init').spec as { cluster: Record<string, unknown> }).cluster;
const BOOT = { kernel: 'http://images.example.com/vmlinuz', initrd: ['http://images.example.com/initrd.img'], args: ['console=ttyS0'] };

const url = await testDatabase('two service processes on one PostgreSQL database');

if (url !== undefined) {
  const databaseUrl = url;
  const dirs: string[] = [];
  const procs: ServeProcess[] = [];
  /** Base URLs of replica A and replica B. */
  let a = '';
  let b = '';

  before(async () => {
    const env = {
      BOOTWRIGHT_DATABASE_URL: databaseUrl,
      BOOTWRIGHT_TOKENS: JSON.stringify([{ name: 'admin', token: ADMIN, scopes: ['admin'] }]),
      BOOTWRIGHT_URL_SIGNING_KEY: randomBytes(32).toString('hex'),
      // Replicas behind one load balancer share its URL: the signed URLs (and the boot
      // report URL inside the data) name it, whichever replica answers.
      BOOTWRIGHT_PUBLIC_URL: 'http://bootwright.boot.example:8080',
      BOOTWRIGHT_RATE_LIMIT_MAX: '0',
      BOOTWRIGHT_MAX_EVENT_LOOP_DELAY_MS: '0',
      // Every refusal audited (not sampled, not limited per address): the test counts them.
      BOOTWRIGHT_REFUSED_AUDIT_INTERVAL_SECONDS: '0',
      // Both replicas serve one signed URL, again and again: first fetch wins is off here
      // (test/api/binding.test.ts tests its claims across two PostgreSQL stores).
      BOOTWRIGHT_FIRST_FETCH_WINS: 'false',
      BOOTWRIGHT_UNAUTHENTICATED_WRITES_PER_MINUTE: '0',
    };
    for (let i = 0; i < 2; i++) {
      const dir = mkdtempSync(join(tmpdir(), 'bootwright-replica-'));
      dirs.push(dir);
      // Replica B holds at most two connections (BOOTWRIGHT_DATABASE_POOL_SIZE); A the default.
      procs.push(startProcess({ ...env, BOOTWRIGHT_DATA_DIR: dir, ...(i === 1 ? { BOOTWRIGHT_DATABASE_POOL_SIZE: '2' } : {}) }));
    }
    [a, b] = (await Promise.all(procs.map((p) => p.port))).map((port) => `http://127.0.0.1:${port}`) as [string, string];
    await write(a, 'POST', 'clusters', 'Cluster', 'prod', { ...CLUSTER, name: 'prod' });
    await write(b, 'POST', 'profiles', 'Profile', 'ign', { role: 'worker', kubernetesVersion: 'v1.33.2', output: { format: 'ignition' }, boot: BOOT });
  });

  after(async () => {
    for (const p of procs) p.child.kill('SIGTERM');
    const codes = await Promise.all(procs.map((p) => p.exited));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    assert.deepEqual(codes, [0, 0], procs.map((p) => p.logs()).join('\n'));
  });

  /** An admin write of one resource; resolves with the response. */
  const write = async (base: string, method: 'POST' | 'PUT', collection: string, kind: string, name: string, spec: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}/v1/${collection}${method === 'PUT' ? `/${name}` : ''}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ apiVersion: API, kind, metadata: { name }, spec }),
    });
    if (method === 'POST') assert.equal(res.status, 201, await res.clone().text());
    return res;
  };
  const machineSpec = (mac: string, extra: Record<string, unknown> = {}) => ({ selectors: { mac: [mac] }, cluster: 'prod', profile: 'ign', ...extra });

  /** The signed Ignition URL of the machine with `mac`, as replica `base`'s /ipxe script gives it. */
  const ignitionUrl = async (base: string, mac: string) => {
    const res = await fetch(`${base}/ipxe?mac=${mac}`);
    const script = await res.text();
    assert.equal(res.status, 200, script);
    const found = /ignition\.config\.url=(\S+)/.exec(script)?.[1];
    assert.ok(found, script);
    return new URL(found);
  };
  /** The same signed path and query on another replica. */
  const on = (base: string, signed: URL) => `${base}${signed.pathname}${signed.search}`;
  const ignition = async (target: string) => {
    const res = await fetch(target, { headers: { accept: IGNITION_ACCEPT } });
    return { status: res.status, etag: res.headers.get('etag'), bytes: Buffer.from(await res.arrayBuffer()) };
  };
  /** The kubeadm join configuration an Ignition config writes. */
  const joinConfig = (bytes: Buffer) => {
    const files = ignitionFiles(JSON.parse(bytes.toString('utf8')));
    const file = [...files.entries()].find(([path]) => path.endsWith('kubeadm-join-config.yaml'));
    assert.ok(file, [...files.keys()].join(', '));
    return file[1].toString('utf8');
  };

  describe('two service processes on one PostgreSQL database', () => {
    it('a machine created through A is served by B at once, byte for byte', async () => {
      await write(a, 'POST', 'machines', 'Machine', 'm1', machineSpec('52:54:00:aa:00:01', { nodeLabels: { rack: 'r1' } }));
      const signed = await ignitionUrl(b, '52-54-00-aa-00-01');
      const fromB = await ignition(on(b, signed));
      const fromA = await ignition(on(a, signed));
      assert.equal(fromB.status, 200, fromB.bytes.toString());
      assert.equal(fromA.status, 200);
      assert.ok(fromB.bytes.equals(fromA.bytes), 'the replicas serve different bytes');
      assert.equal(fromB.etag, fromA.etag);
      assert.equal((JSON.parse(fromB.bytes.toString('utf8')) as { ignition: { version: string } }).ignition.version, '3.4.0');
      assert.match(joinConfig(fromB.bytes), /node-labels\n\s+value: rack=r1\n|node-labels: rack=r1\n/);
    });

    it('after a change through A, B serves the new bytes (render caches are keyed by content)', async () => {
      const signed = await ignitionUrl(a, '52-54-00-aa-00-01');
      const before = await ignition(on(b, signed)); // B's caches now hold revision 1
      assert.equal(before.status, 200);
      const res = await write(a, 'PUT', 'machines', 'Machine', 'm1', machineSpec('52:54:00:aa:00:01', { nodeLabels: { rack: 'r2' } }), { 'if-match': '"1"' });
      assert.equal(res.status, 200, await res.text());
      const afterB = await ignition(on(b, signed));
      const afterA = await ignition(on(a, signed));
      assert.equal(afterB.status, 200);
      assert.ok(!afterB.bytes.equals(before.bytes), 'B answered from a stale cache');
      assert.ok(afterB.bytes.equals(afterA.bytes));
      assert.notEqual(afterB.etag, before.etag);
      assert.match(joinConfig(afterB.bytes), /rack=r2/);
      assert.doesNotMatch(joinConfig(afterB.bytes), /rack=r1/);
    });

    it('maxFetches 10: 50 concurrent fetches on each replica give exactly 10 configs and 90 refusals (403)', async () => {
      await write(b, 'POST', 'machines', 'Machine', 'lim', machineSpec('52:54:00:aa:00:02', { maxFetches: 10 }));
      const signed = await ignitionUrl(a, '52-54-00-aa-00-02');
      const results = await Promise.all(Array.from({ length: 100 }, (_, i) => ignition(on(i % 2 ? a : b, signed))));
      const ok = results.filter((r) => r.status === 200);
      assert.equal(ok.length, 10);
      assert.equal(results.filter((r) => r.status === 403).length, 90);
      for (const r of ok) assert.ok(r.bytes.equals(ok[0]!.bytes));
      // Every fetch is audited, whichever replica answered it.
      const audit = await fetch(`${b}/v1/machines/lim/audit?limit=1000`, { headers: { authorization: `Bearer ${ADMIN}` } });
      assert.equal(audit.status, 200);
      const rows = ((await audit.json()) as { items: { status: number; route: string }[] }).items.filter((r) => r.route === '/ignition');
      assert.equal(rows.length, 100);
      assert.equal(rows.filter((r) => r.status === 200).length, 10);
      assert.equal(rows.filter((r) => r.status === 403).length, 90);
    });

    it('concurrent replaces with the same If-Match on both replicas: exactly one 200, the rest 412', async () => {
      await write(a, 'POST', 'machines', 'Machine', 'race', machineSpec('52:54:00:aa:00:03'));
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => write(i % 2 ? a : b, 'PUT', 'machines', 'Machine', 'race', machineSpec('52:54:00:aa:00:03', { nodeLabels: { writer: String(i) } }), { 'if-match': '"1"' })),
      );
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(statuses, [200, ...Array<number>(19).fill(412)]);
      const winner = results.find((r) => r.status === 200)!;
      assert.equal(winner.headers.get('etag'), '"2"');
      for (const r of results.filter((x) => x.status === 412)) assert.equal(r.headers.get('content-type'), 'application/problem+json; charset=utf-8');
      const current = await fetch(`${a}/v1/machines/race`, { headers: { authorization: `Bearer ${ADMIN}` } });
      assert.equal(current.headers.get('etag'), '"2"');
    });

    it("names its connections 'bootwright PID HOST' and holds no more than BOOTWRIGHT_DATABASE_POOL_SIZE of them under load", async () => {
      const pidB = procs[1]!.child.pid!;
      const watcher = new pg.Client({ connectionString: databaseUrl });
      await watcher.connect();
      try {
        const held = async (pid: number) =>
          Number((await watcher.query<{ n: string }>("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1", [`bootwright ${pid} ${hostname()}`])).rows[0]!.n);
        let most = 0;
        let sampling = true;
        const sampler = (async () => {
          while (sampling) most = Math.max(most, await held(pidB));
        })();
        // Reads that each take a connection: 60 at once, three times over.
        for (let round = 0; round < 3; round++) {
          const statuses = await Promise.all(Array.from({ length: 60 }, () => fetch(`${b}/v1/machines?limit=100`, { headers: { authorization: `Bearer ${ADMIN}` } }).then((r) => r.status)));
          assert.deepEqual(new Set(statuses), new Set([200]));
        }
        sampling = false;
        await sampler;
        assert.ok(most >= 1, 'replica B was seen holding its connections');
        assert.ok(most <= 2, `replica B held ${most} connections`);
        assert.ok((await held(procs[0]!.child.pid!)) >= 1, "replica A's connections carry its own pid");
      } finally {
        await watcher.end();
      }
    });
  });
}
