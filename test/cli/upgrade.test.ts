/**
 * `bootwright upgrade check` (issue 27) on a SQLite store: every machine listed with its
 * verdict (ok, warn, fail: what a later rule refuses is a warning, what every release
 * refuses a failure), exit 1 when one fails, `-o json`, and the store left as it was,
 * byte for byte. The upgrade from real earlier releases is test/compat/upgrade.test.ts.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { main } from '../../src/cli.js';
import { openSqliteStore, SQLITE_FILE } from '../../src/store/sqlite.js';
import { HASH, TOKEN } from '../support/requests.js';

const dir = mkdtempSync(join(tmpdir(), 'bootwright-upgrade-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, SQLITE_FILE);

async function run(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out = new PassThrough();
  const err = new PassThrough();
  const chunks: [Buffer[], Buffer[]] = [[], []];
  out.on('data', (c: Buffer) => chunks[0].push(c));
  err.on('data', (c: Buffer) => chunks[1].push(c));
  const env = { ...process.env };
  delete process.env.BOOTWRIGHT_DATABASE_URL;
  try {
    const code = await main(['upgrade', ...args], out, err);
    return { code, out: Buffer.concat(chunks[0]).toString(), err: Buffer.concat(chunks[1]).toString() };
  } finally {
    process.env = env;
  }
}

const digest = () => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('bootwright upgrade check', () => {
  before(async () => {
    const store = await openSqliteStore(file);
    await store.create('Cluster', { name: 'prod', labels: {}, spec: { name: 'prod', controlPlaneEndpoint: 'api.prod.example.com:6443', bootstrapToken: TOKEN, caCertHashes: [HASH] } });
    for (const p of ['current', 'legacy-cr', 'legacy-pki', 'legacy-long']) {
      await store.create('Profile', { name: p, labels: {}, spec: { role: 'worker', kubernetesVersion: 'v1.33.2' } });
    }
    for (const [i, p] of ['current', 'legacy-cr', 'legacy-pki', 'legacy-long'].entries()) {
      await store.create('Machine', { name: `m-${p}`, labels: {}, spec: { selectors: { mac: [`52:54:00:00:27:0${i}`], labels: {} }, cluster: 'prod', profile: p, nodeLabels: {}, taints: [] } });
    }
    await store.close();
    // What an earlier release stored (rules version 0): a command with a CR, which rules
    // version 1 refuses on write; a file under the PKI tree, which every release refuses.
    const db = new Database(file);
    const legacy = db.prepare("UPDATE resource_revisions SET spec = ?, rules = 0 WHERE kind = 'Profile' AND name = ?");
    legacy.run(JSON.stringify({ role: 'worker', kubernetesVersion: 'v1.33.2', provisioning: { preKubeadmCommands: ['echo ready\r'] } }), 'legacy-cr');
    legacy.run(JSON.stringify({ role: 'worker', kubernetesVersion: 'v1.33.2', provisioning: { files: [{ path: '/etc/kubernetes/pki/site.crt', content: 'x' }] } }), 'legacy-pki');
    // Kernel arguments that leave no room for the signed URL this release puts on the
    // command line (v0.3.0's is 21 characters longer than v0.2.0's): /ipxe could not
    // build the script.
    legacy.run(JSON.stringify({ role: 'worker', kubernetesVersion: 'v1.33.2', boot: { kernel: 'http://images.example.com/vmlinuz', initrd: [], args: [`site.inventory=${'a'.repeat(1950)}`] } }), 'legacy-long');
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
  });

  it('lists every machine with its verdict, exits 1 for the one that would fail, and writes nothing', async () => {
    const before = digest();
    const r = await run('check', '--data-dir', dir);
    assert.equal(r.code, 1, r.err);
    assert.match(r.out, /^MACHINE\s+CLUSTER\s+PROFILE\s+FORMAT\s+RESULT\s+DETAILS$/m);
    assert.match(r.out, /^m-current\s+prod\s+current\s+cloud-config\s+ok\s*$/m);
    assert.match(r.out, /^m-legacy-cr\s+prod\s+legacy-cr\s+cloud-config\s+warn\s+spec\.provisioning\.preKubeadmCommands\[0\]: contains the control character U\+000D/m);
    assert.match(r.out, /^m-legacy-pki\s+prod\s+legacy-pki\s+cloud-config\s+fail\s+spec\.provisioning\.files\[0\]\.path: is at or under \/etc\/kubernetes\/pki/m);
    assert.match(r.out, /^m-legacy-long\s+prod\s+legacy-long\s+cloud-config\s+fail\s+boot: /m);
    assert.match(r.out, /\[rule command-control, rules version 1\]/);
    assert.match(r.out, /4 machines: 1 ok, 0 changed, 1 warn, 2 fail\./);
    assert.match(r.out, /FAILED: 2 machines would not boot/);
    assert.equal(digest(), before, 'the store file is unchanged');
  });

  it('-o json gives the same verdicts', async () => {
    const r = await run('check', '--data-dir', dir, '-o', 'json');
    assert.equal(r.code, 1);
    const report = JSON.parse(r.out) as { machines: { machine: string; result: string; problems: { rule?: string }[] }[]; summary: Record<string, number> };
    assert.deepEqual(report.machines.map((m) => [m.machine, m.result]), [['m-current', 'ok'], ['m-legacy-cr', 'warn'], ['m-legacy-long', 'fail'], ['m-legacy-pki', 'fail']]);
    assert.equal(report.machines[1]!.problems[0]!.rule, 'command-control');
    assert.deepEqual(report.summary, { ok: 1, changed: 0, warn: 1, fail: 2 });
  });

  it('names what is wrong with its arguments or the store', async () => {
    assert.equal((await run()).code, 2);
    assert.match((await run('plan')).err, /unknown subcommand "plan": upgrade check/);
    const missing = await run('check', '--data-dir', join(dir, 'nowhere'));
    assert.equal(missing.code, 2);
    assert.match(missing.err, /cannot read the store at .*nowhere.*bootwright\.db/);
  });
});
