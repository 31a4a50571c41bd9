/**
 * The inventory commands against a real `bootwright serve` process (a child process on
 * a loopback port, its own data directory and tokens): apply (examples/inventory/,
 * created, unchanged, configured, standard input, refusals), get in every output
 * format, label selectors, delete, enroll of a machine the service discovered at
 * /ipxe, describe and status. Most runs call the CLI's `main` in this process (output
 * captured); the exit codes and standard input are checked on the CLI as a process too.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { load } from 'js-yaml';
import { main } from '../../src/cli.js';
import { startProcess, type ServeProcess } from '../support/process.js';

const ROOT = resolve(import.meta.dirname, '../..');
const ADMIN = 'cli-admin-token-0123456789abcdef';
const READER = 'cli-read-token-0123456789abcdef';
const dir = mkdtempSync(join(tmpdir(), 'bootwright-cli-inventory-'));
let serve: ServeProcess;
let server: string;

before(async () => {
  serve = startProcess({
    BOOTWRIGHT_DATA_DIR: dir,
    BOOTWRIGHT_TOKENS: JSON.stringify([
      { name: 'admin', token: ADMIN, scopes: ['admin'] },
      { name: 'reader', token: READER, scopes: ['read'] },
    ]),
    BOOTWRIGHT_PUBLIC_URL: 'http://192.168.10.5:8080',
    // Two cores shared with other tests: shedding (its own test) would answer 503 here.
    BOOTWRIGHT_MAX_EVENT_LOOP_DELAY_MS: '0',
  });
  server = `http://127.0.0.1:${await serve.port}`;
});
after(async () => {
  serve.child.kill('SIGTERM');
  await serve.exited;
  rmSync(dir, { recursive: true, force: true });
});

/** Run the CLI in this process with the connection flags (`token` '' for none); its exit code and output. */
async function cli(args: string[], token = ADMIN) {
  const out = new PassThrough();
  const err = new PassThrough();
  let stdout = '';
  let stderr = '';
  out.on('data', (d: Buffer) => (stdout += d.toString()));
  err.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await main([...args, '--server', server, ...(token ? ['--token', token] : [])], out, err);
  return { code, stdout, stderr };
}

/** Run the CLI as a process (tsx from source), `input` on its standard input. */
function cliProcess(args: string[], env: Record<string, string>, input = '') {
  const r = spawnSync(process.execPath, ['--import', import.meta.resolve('tsx'), join(ROOT, 'src/cli.ts'), ...args], {
    encoding: 'utf8',
    input,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('bootwright apply', () => {
  it('-R -f examples/inventory/ creates clusters, then profiles, then machines; again, every one is unchanged', async () => {
    const first = await cli(['apply', '-R', '-f', join(ROOT, 'examples/inventory')]);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(
      first.stdout,
      ['cluster/prod created', 'profile/flatcar-worker created', 'profile/ubuntu-worker created', 'machine/rack1-n1 created', 'machine/rack1-n2 created', ''].join('\n'),
    );
    // The examples boot from this service's /assets/, and it has no assets directory: stored, with a warning each.
    assert.equal(
      first.stderr,
      ['flatcar/flatcar_production_pxe.vmlinuz', 'flatcar/flatcar_production_pxe_image.cpio.gz', 'ubuntu/vmlinuz', 'ubuntu/initrd']
        .map(
          (f, i) =>
            `Warning: spec.boot.${i % 2 === 0 ? 'kernel' : 'initrd[0]'}: resolves to http://192.168.10.5:8080/assets/${f}, but this service serves no boot files (BOOTWRIGHT_ASSETS_DIR is not set): iPXE will get 404 until it is, or use an absolute URL\n`,
        )
        .join(''),
    );
    const again = await cli(['apply', '-R', '-f', join(ROOT, 'examples/inventory')]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, ['cluster/prod unchanged', 'profile/flatcar-worker unchanged', 'profile/ubuntu-worker unchanged', 'machine/rack1-n1 unchanged', 'machine/rack1-n2 unchanged', ''].join('\n'));
    // The service wrote no second revision.
    const revisions = (await (await fetch(`${server}/v1/clusters/prod/revisions`, { headers: { authorization: `Bearer ${READER}` } })).json()) as { items: unknown[] };
    assert.equal(revisions.items.length, 1);
  });

  it('without -R a directory whose manifests are all in subdirectories is refused naming -R (exit 2, nothing sent)', async () => {
    const top = mkdtempSync(join(dir, 'nested-'));
    mkdirSync(join(top, 'sub'));
    writeFileSync(join(top, 'README'), 'not a manifest');
    writeFileSync(join(top, 'sub', 'cluster.yaml'), 'apiVersion: bootwright.dev/v1alpha1\nkind: Cluster\nmetadata: {name: nested}\nspec: {name: nested}\n');
    const refused = await cli(['apply', '-f', top]);
    assert.equal(refused.code, 2);
    assert.equal(refused.stderr, `${top}: has no .yaml, .yml or .json files (-R reads subdirectories)\n`);
    assert.equal((await cli(['get', 'cluster', 'nested'], READER)).code, 3, 'nothing was sent');
  });

  it('-f - reads standard input: a changed label is configured (exit 0); an invalid document prints each field and exits 3', () => {
    const changed = `apiVersion: bootwright.dev/v1alpha1
kind: Machine
metadata:
  name: rack1-n1
  labels: {rack: rack1, state: burn-in}
spec:
  cluster: prod
  profile: flatcar-worker
  selectors:
    mac: ["52:54:00:10:00:01"]
  nodeLabels:
    topology.kubernetes.io/zone: rack1
  maxFetches: 3
---
apiVersion: bootwright.dev/v1alpha1
kind: Machine
metadata:
  name: broken
spec:
  cluster: nowhere
  profile: flatcar-worker
  selectors:
    mac: ["52:54:00:10:00:09"]
`;
    const r = cliProcess(['apply', '-f', '-'], { BOOTWRIGHT_URL: server, BOOTWRIGHT_TOKEN: ADMIN }, changed);
    assert.equal(r.code, 3, r.stderr);
    assert.equal(r.stdout, 'machine/rack1-n1 configured\n');
    assert.equal(
      r.stderr,
      'stdin (document 2): machine/broken: Error from server (Invalid request): the machine names a cluster or profile that does not exist\n  spec.cluster: cluster "nowhere" does not exist\n',
    );
  });

  it('a document without a kind bootwright stores is refused before anything is sent (exit 2, naming the document)', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: bootwright.dev/v1alpha1\nkind: Cluster\nmetadata: {}\n');
    const r = await cli(['apply', '-f', file]);
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr,
      `${file} (document 1) apiVersion: must be bootwright.dev/v1alpha1\n${file} (document 1) kind: must be Cluster, Profile, Machine, or List, ClusterList, ProfileList, MachineList\n${file} (document 2) metadata.name: is required\n`,
    );
    writeFileSync(file, 'kind: Cluster\n  bad: [indent\n');
    const malformed = await cli(['apply', '-f', file]);
    assert.equal(malformed.code, 2);
    assert.match(malformed.stderr, /malformed YAML at line \d+ column \d+/);
  });
});

describe('bootwright get', () => {
  it('a table per kind, with the phase the service reports', async () => {
    const machines = await cli(['get', 'machines'], READER);
    assert.equal(machines.code, 0, machines.stderr);
    const lines = machines.stdout.trimEnd().split('\n');
    // Neither has booted: the list carries each machine's live phase, as a single read does.
    assert.equal(lines[0], 'NAME       CLUSTER   PROFILE          PHASE        WARNINGS   REVISION   AGE');
    assert.match(lines[1]!, /^rack1-n1 {3}prod {6}flatcar-worker {3}Registered {3}0 {10}2 {10}\d+s$/);
    assert.match(lines[2]!, /^rack1-n2 {3}prod {6}ubuntu-worker {4}Registered {3}0 {10}1 {10}\d+s$/);
    const profiles = await cli(['get', 'profile'], READER);
    assert.match(profiles.stdout, /^NAME +ROLE +VERSION +FORMAT +REVISION +AGE\nflatcar-worker +worker +v1\.33\.2 +ignition +1 +\d+s\nubuntu-worker +worker +v1\.33\.2 +<none> +1 +\d+s\n$/);
  });

  it('-l takes set-based selectors; -o name, json and yaml', async () => {
    assert.equal((await cli(['get', 'machines', '-l', 'state in (burn-in,ready)', '-o', 'name'], READER)).stdout, 'machine/rack1-n1\n');
    assert.equal((await cli(['get', 'machines', '-l', '!state,rack=rack1', '-o', 'name'], READER)).stdout, 'machine/rack1-n2\n');
    assert.equal((await cli(['get', 'machines', '-l', 'rack notin (rack1)'], READER)).stdout, 'No machines found.\n');
    const list = JSON.parse((await cli(['get', 'profiles', '-o', 'json'], READER)).stdout) as { kind: string; items: { metadata: { name: string } }[] };
    assert.equal(list.kind, 'ProfileList');
    assert.deepEqual(list.items.map((i) => i.metadata.name), ['flatcar-worker', 'ubuntu-worker']);
    const yaml = await cli(['get', 'cluster', 'prod', '-o', 'yaml'], READER);
    const doc = load(yaml.stdout) as { kind: string; spec: { bootstrapToken: string } };
    assert.equal(doc.kind, 'Cluster');
    assert.equal(doc.spec.bootstrapToken, '<redacted>');
    assert.ok(yaml.stdout.startsWith('apiVersion: bootwright.dev/v1alpha1\nkind: Cluster\n'), yaml.stdout);
  });

  it("the service's refusals print title, detail and each field, exit 3; usage errors exit 2", async () => {
    const bad = await cli(['get', 'machines', '-l', 'rack in ()'], READER);
    assert.equal(bad.code, 3);
    assert.equal(bad.stderr, 'Error from server (Malformed request): labelSelector is not valid\n  labelSelector: the set of "rack" in is empty: give at least one value\n');
    const missing = await cli(['get', 'machine', 'nope'], READER);
    assert.equal(missing.code, 3);
    assert.equal(missing.stderr, 'Error from server (Not found): Machine "nope" does not exist\n');
    const unauthorized = await cli(['get', 'machines'], '');
    assert.equal(unauthorized.code, 3);
    assert.match(unauthorized.stderr, /^Error from server \(Unauthorized\): a valid bearer token is required/);
    const usage = await cli(['get', 'widgets'], READER);
    assert.equal(usage.code, 2);
    assert.equal(usage.stderr, "error: unknown kind \"widgets\": use clusters|profiles|machines|discovered\nSee 'bootwright get --help' for usage.\n");
  });
});

describe('kubectl habits: round trips, dry runs, diff, delete -f, describe', () => {
  /** Write `text` to a file of the test's directory; its path. */
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  const newCluster = 'apiVersion: bootwright.dev/v1alpha1\nkind: Cluster\nmetadata: {name: rt}\nspec: {name: rt, controlPlaneEndpoint: "api.rt.example.com:6443"}\n';
  const revisionOf = async (path: string) => ((await (await fetch(`${server}${path}`, { headers: { authorization: `Bearer ${READER}` } })).json()) as { metadata: { revision: number } }).metadata.revision;

  it('get -o yaml and -o json, a single document or a List, apply again unchanged: what the service sets is ignored', async () => {
    for (const [name, args] of [
      ['one.yaml', ['get', 'machine', 'rack1-n1', '-o', 'yaml']],
      ['machines.yaml', ['get', 'machines', '-o', 'yaml']],
      ['clusters.json', ['get', 'clusters', '-o', 'json']],
      ['profiles.yaml', ['get', 'profiles', '-o', 'yaml']],
    ] as const) {
      const got = await cli([...args], READER);
      assert.equal(got.code, 0, got.stderr);
      assert.match(got.stdout, /revision|status/);
      const applied = await cli(['apply', '-f', file(name, got.stdout)]);
      assert.equal(applied.code, 0, applied.stderr);
      assert.match(applied.stdout, /^(\S+ unchanged\n)+$/, `${name}: ${applied.stdout}`);
    }
    assert.equal(await revisionOf('/v1/machines/rack1-n1'), 2, 'no revision written');
  });

  it('--dry-run=server checks with the service and keeps nothing; client dry runs are not offered', async () => {
    const created = await cli(['apply', '-f', file('rt.yaml', newCluster), '--dry-run=server']);
    assert.deepEqual([created.code, created.stdout], [0, 'cluster/rt created (server dry run)\n'], created.stderr);
    assert.equal((await cli(['get', 'cluster', 'rt'], READER)).code, 3, 'not created');
    const relabelled = (await cli(['get', 'machine', 'rack1-n1', '-o', 'yaml'], READER)).stdout.replace('state: burn-in', 'state: ready');
    const configured = await cli(['apply', '-f', file('relabel.yaml', relabelled), '--dry-run', 'server']);
    assert.deepEqual([configured.code, configured.stdout], [0, 'machine/rack1-n1 configured (server dry run)\n'], configured.stderr);
    assert.equal(await revisionOf('/v1/machines/rack1-n1'), 2);
    // The service's own checks run: a machine whose MAC another machine has is refused.
    const taken = await cli(['apply', '-f', file('taken.yaml', 'apiVersion: bootwright.dev/v1alpha1\nkind: Machine\nmetadata: {name: rt-n1}\nspec: {cluster: prod, profile: flatcar-worker, selectors: {mac: ["52-54-00-10-00-01"]}}\n'), '--dry-run=server']);
    assert.equal(taken.code, 3);
    assert.match(taken.stderr, /machine\/rt-n1: Error from server \(Conflict\): .*\n {2}spec\.selectors\.mac\[0\]: .*"rack1-n1"/);
    const client = await cli(['apply', '-f', join(dir, 'rt.yaml'), '--dry-run=client']);
    assert.equal(client.code, 2);
    assert.match(client.stderr, /^error: --dry-run=client is not offered: use --dry-run=server/);
  });

  it('diff shows what apply would change as a unified diff (exit 1), nothing for what is current (exit 0), and changes nothing', async () => {
    const current = await cli(['diff', '-f', file('prod.yaml', (await cli(['get', 'cluster', 'prod', '-o', 'yaml'], READER)).stdout)]);
    assert.deepEqual([current.code, current.stdout, current.stderr], [0, '', '']);
    // examples/ has rack1-n1 as it was before the label change above; rt is new.
    const changed = await cli(['diff', '-f', join(ROOT, 'examples/inventory/flatcar/machine.yaml')]);
    assert.equal(changed.code, 1, changed.stderr);
    assert.match(changed.stdout, /^--- live\/machine\/rack1-n1\n\+\+\+ merged\/machine\/rack1-n1\n@@ /);
    assert.match(changed.stdout, /^- {4}state: burn-in$/m);
    assert.match(changed.stdout, /^- {2}revision: 2\n\+ {2}revision: 3$/m);
    // -f again for more files, as kubectl takes it.
    const created = await cli(['diff', '-f', join(dir, 'prod.yaml'), '-f', join(dir, 'rt.yaml')]);
    assert.equal(created.code, 1);
    assert.match(created.stdout, /^--- \/dev\/null\n\+\+\+ merged\/cluster\/rt\n@@ -0,0 \+1,\d+ @@\n\+apiVersion: bootwright\.dev\/v1alpha1\n\+kind: Cluster\n/);
    assert.equal(await revisionOf('/v1/machines/rack1-n1'), 2);
    assert.equal((await cli(['get', 'cluster', 'rt'], READER)).code, 3);
  });

  it('delete -f deletes each document (a dry run keeps it); a missing one is exit 3 unless --ignore-not-found', async () => {
    const rt = join(dir, 'rt.yaml');
    assert.equal((await cli(['apply', '-f', rt])).code, 0);
    assert.deepEqual(await cli(['delete', '-f', rt, '--dry-run=server']), { code: 0, stdout: 'cluster "rt" deleted (server dry run)\n', stderr: '' });
    assert.equal((await cli(['get', 'cluster', 'rt'], READER)).code, 0, 'still there');
    assert.deepEqual(await cli(['delete', '-f', rt]), { code: 0, stdout: 'cluster "rt" deleted\n', stderr: '' });
    const again = await cli(['delete', '-f', rt]);
    assert.equal(again.code, 3);
    assert.equal(again.stderr, `${rt} (document 1): Error from server (Not found): Cluster "rt" does not exist\n`);
    assert.deepEqual(await cli(['delete', '-f', rt, '--ignore-not-found']), { code: 0, stdout: '', stderr: '' });
    const usage = await cli(['delete', 'cluster', 'rt', '-f', rt]);
    assert.equal(usage.code, 2);
  });

  it('describe shows a cluster, a profile and a discovered machine', async () => {
    const c = await cli(['describe', 'cluster', 'prod'], READER);
    assert.equal(c.code, 0, c.stderr);
    assert.match(c.stdout, /^Name: +prod\nLabels: +env=prod\nRevision: +1\n/);
    assert.match(c.stdout, /^Control plane endpoint: +api\.prod\.example\.com:6443$/m);
    assert.match(c.stdout, /^Join token: +the static spec\.bootstrapToken /m);
    assert.match(c.stdout, /^Machines \(2\):\n {2}NAME +PROFILE +PHASE\n {2}rack1-n1 +flatcar-worker +\S+\n {2}rack1-n2 +ubuntu-worker +\S+\n/m);
    assert.match(c.stdout, /^Revisions:\n {2}REVISION +UPDATED\n {2}1 +\S+\n$/m);
    assert.doesNotMatch(c.stdout, /abcdef\.|redacted/, 'no secret, not even its placeholder');
    const p = await cli(['describe', 'profile', 'flatcar-worker'], READER);
    assert.equal(p.code, 0, p.stderr);
    assert.match(p.stdout, /^Role: +worker\nKubernetes version: +v1\.33\.2\nFormat: +ignition\n/m);
    assert.match(p.stdout, /^Kernel: +\/assets\/flatcar\/flatcar_production_pxe\.vmlinuz$/m);
    assert.match(p.stdout, /^Butane additional config: +yes$/m);
    assert.match(p.stdout, /^Machines \(1\):\n {2}NAME +CLUSTER +PHASE\n {2}rack1-n1 +prod +\S+\n/m);
    await fetch(`${server}/ipxe?mac=52-54-00-10-00-07&uuid=6c1a3b2e-0000-4000-8000-000000000007&buildarch=x86_64&platform=efi`);
    const id = /^(\d+) +52:54:00:10:00:07 /m.exec((await cli(['get', 'discovered'], READER)).stdout)![1]!;
    const d = await cli(['describe', 'discovered', id], READER);
    assert.equal(d.code, 0, d.stderr);
    assert.match(d.stdout, new RegExp(`^ID: +${id}\nMAC: +52:54:00:10:00:07\nUUID: +6c1a3b2e-0000-4000-8000-000000000007\n`));
    assert.match(d.stdout, /^Architecture: +x86_64\nPlatform: +efi\n/m);
    assert.match(d.stdout, /^Why unmatched: +no machine has its mac, uuid$/m);
    assert.match(d.stdout, new RegExp(`^Enrolled: +no: bootwright enroll ${id} --cluster CLUSTER --profile PROFILE`, 'm'));
    assert.equal((await cli(['delete', 'discovered', id])).code, 0);
    const audit = await cli(['describe', 'cluster', 'prod', '--audit', '5'], READER);
    assert.equal(audit.code, 2);
  });

  it("a refused machine's answer names every problem at once: missing references and its own fields", async () => {
    const r = await cli(['apply', '-f', file('many.yaml', 'apiVersion: bootwright.dev/v1alpha1\nkind: Machine\nmetadata: {name: rt-n2}\nspec: {cluster: nowhere, profile: none, selectors: {mac: ["52:54:00:10:00:0c"]}, nodeLabels: {"bad key!": "v"}}\n')]);
    assert.equal(r.code, 3);
    const fields = r.stderr.split('\n').filter((l) => l.startsWith('  ')).map((l) => l.trim().split(':')[0]);
    assert.deepEqual(fields, ['spec.cluster', 'spec.profile', 'spec.nodeLabels.bad key!']);
  });

  it('profile boot paths on this service that nothing serves are stored with a warning; absolute URLs elsewhere are not', async () => {
    const profile = (kernel: string) => `apiVersion: bootwright.dev/v1alpha1\nkind: Profile\nmetadata: {name: rt-boot}\nspec: {role: worker, kubernetesVersion: v1.33.2, boot: {kernel: "${kernel}"}}\n`;
    const outside = await cli(['apply', '-f', file('boot.yaml', profile('/boot/vmlinuz'))]);
    assert.deepEqual([outside.code, outside.stdout], [0, 'profile/rt-boot created\n']);
    assert.equal(outside.stderr, 'Warning: spec.boot.kernel: resolves to http://192.168.10.5:8080/boot/vmlinuz on this service, which serves boot files only under http://192.168.10.5:8080/assets/ (BOOTWRIGHT_ASSETS_DIR): iPXE will get 404\n');
    const mirror = await cli(['apply', '-f', file('boot.yaml', profile('http://mirror.example/flatcar/vmlinuz'))]);
    assert.deepEqual(mirror, { code: 0, stdout: 'profile/rt-boot configured\n', stderr: '' });
    const perMachine = await cli(['apply', '-f', file('boot.yaml', profile('${publicUrl}/assets/vmlinuz'))]);
    assert.deepEqual(perMachine, { code: 0, stdout: 'profile/rt-boot configured\n', stderr: '' }, 'a boot variable is resolved per machine');
    assert.equal((await cli(['delete', 'profile', 'rt-boot'])).code, 0);
  });
});

describe('enroll, describe, status, delete', () => {
  it('a machine seen at /ipxe is enrolled from get discovered; describe shows its spec, revisions, phase and audit', async () => {
    const script = await (await fetch(`${server}/ipxe?mac=52-54-00-10-00-03&hostname_hex=72:61:63:6b:31:2d:6e:33`)).text();
    assert.match(script, /no registered machine matches/);
    const discovered = await cli(['get', 'discovered'], READER);
    const row = /^(\d+) +52:54:00:10:00:03 +<none> +<none> +rack1-n3 +1 +\d+s +<none>$/m.exec(discovered.stdout);
    assert.ok(row, discovered.stdout);
    const id = row[1]!;
    const enrolled = await cli(['enroll', id, '--profile', 'flatcar-worker', '--cluster', 'prod', '-L', 'rack=rack1']);
    assert.equal(enrolled.code, 0, enrolled.stderr);
    assert.equal(enrolled.stdout, `machine/rack1-n3 created (discovered ${id})\n`);
    assert.equal((await cli(['get', 'discovered'], READER)).stdout, 'No discovered found.\n');
    assert.match((await cli(['get', 'discovered', '-A'], READER)).stdout, new RegExp(`^${id} +52:54:00:10:00:03 .* rack1-n3$`, 'm'));
    // Its next boot is served, and audited.
    assert.match(await (await fetch(`${server}/ipxe?mac=52-54-00-10-00-03`)).text(), /ignition\.config\.url=http:\/\/192\.168\.10\.5:8080\/ignition\?machine=rack1-n3&/);
    const d = await cli(['describe', 'machine', 'rack1-n3'], READER);
    assert.equal(d.code, 0, d.stderr);
    assert.match(d.stdout, /^Name: +rack1-n3\nLabels: +rack=rack1\nRevision: +1\n/);
    assert.match(d.stdout, /^Cluster: +prod \(revision 1\)$/m);
    assert.match(d.stdout, /^Profile: +flatcar-worker \(revision 1\)$/m);
    // The phase is what the service reports: served its script, the machine is Booting,
    // in describe and in the list (docs/bare-metal.md: `get machines -l 'rack in (rack1)'`).
    assert.match(d.stdout, /^Phase: +Booting$/m);
    assert.match(d.stdout, /^Reported by iPXE: +mac=52:54:00:10:00:03, client=127\.0\.0\.1$/m);
    assert.match((await cli(['get', 'machines', '-l', 'rack in (rack1)'], READER)).stdout, /^rack1-n3 +prod +flatcar-worker +Booting +0 +1 +\d+s$/m);
    // Pinned by its MAC, not the host name DHCP gave it: renamed, it still matches.
    assert.match(d.stdout, /^Selectors:\n {2}mac: +\["52:54:00:10:00:03"\]\n(?! {2}hostname)/m);
    assert.match(await (await fetch(`${server}/ipxe?mac=52-54-00-10-00-03&hostname=renamed-by-dhcp`)).text(), /machine=rack1-n3&/);
    assert.match(d.stdout, /^Revisions:\n {2}REVISION +UPDATED +CLUSTER +PROFILE\n {2}1 +\S+ +prod@1 +flatcar-worker@1\n/m);
    assert.match(d.stdout, /^Audit \(newest \d+\):\n {2}TIME +ROUTE +STATUS +CLIENT +REASON\n( {2}.*\n)* {2}\S+ +\/ipxe +200 +127\.0\.0\.1\n/m);
  });

  it('enroll takes a MAC: the discovered entry with it, or, before any boot, a machine matched by that MAC alone; -L and --max-fetches set labels and the limit', async () => {
    await fetch(`${server}/ipxe?mac=52-54-00-10-00-06&uuid=6c1a3b2e-0000-4000-8000-000000000006&hostname=rack1-n6`);
    const byMac = await cli(['enroll', '52-54-00-10-00-06', '-p', 'flatcar-worker', '-c', 'prod', '-L', 'rack=rack1', '--max-fetches', '5']);
    assert.equal(byMac.code, 0, byMac.stderr);
    assert.match(byMac.stdout, /^machine\/rack1-n6 created \(discovered \d+\)\n$/);
    const six = (await (await fetch(`${server}/v1/machines/rack1-n6`, { headers: { authorization: `Bearer ${READER}` } })).json()) as { metadata: { labels: unknown }; spec: { selectors: unknown; maxFetches: number } };
    assert.deepEqual([six.metadata.labels, six.spec.selectors, six.spec.maxFetches], [{ rack: 'rack1' }, { mac: ['52:54:00:10:00:06'], uuid: '6c1a3b2e-0000-4000-8000-000000000006', labels: {} }, 5]);
    const ahead = await cli(['enroll', '52:54:00:10:00:0a', '-p', 'flatcar-worker', '-c', 'prod']);
    assert.deepEqual([ahead.code, ahead.stdout], [0, 'machine/m-52540010000a created\n'], ahead.stderr);
    assert.match(await (await fetch(`${server}/ipxe?mac=52:54:00:10:00:0a`)).text(), /machine=m-52540010000a&/);
    for (const [args, message] of [
      [['52:54:00', '-p', 'flatcar-worker', '-c', 'prod'], 'error: "52:54:00" is neither a discovered id nor a MAC\n'],
      [['52:54:00:10:00:0b', '-p', 'flatcar-worker', '-c', 'prod', '--max-fetches', '0'], 'error: --max-fetches: must be a whole number from 1\n'],
    ] as const) {
      const refused = await cli(['enroll', ...args]);
      assert.equal(refused.code, 2);
      assert.ok(refused.stderr.startsWith(message), refused.stderr);
    }
    for (const m of ['rack1-n6', 'm-52540010000a']) assert.equal((await cli(['delete', 'machine', m])).code, 0);
  });

  it('status counts machines by phase and the discovered ones still to enrol', async () => {
    await fetch(`${server}/ipxe?mac=52-54-00-10-00-04`);
    const s = await cli(['status', '-o', 'json'], READER);
    assert.equal(s.code, 0, s.stderr);
    const fleet = JSON.parse(s.stdout) as { machines: number; phases: Record<string, number>; discovered: number };
    assert.equal(fleet.machines, 3);
    assert.equal(fleet.discovered, 1);
    assert.equal(Object.values(fleet.phases).reduce((a, b) => a + b, 0), 3);
    const table = await cli(['status'], READER);
    assert.match(table.stdout, /^PHASE {10}MACHINES\nRegistered {5}\d+\nBooting {8}\d+\nProvisioning {3}\d+\nJoined {9}\d+\nFailed {9}\d+\nStalled {8}\d+\n\nMachines: 3 {3}Discovered, not enrolled: 1\n$/);
  });

  it('delete: a machine, a discovered entry; a profile in use is refused naming the machines (exit 3)', async () => {
    const inUse = await cli(['delete', 'profile', 'flatcar-worker']);
    assert.equal(inUse.code, 3);
    assert.match(inUse.stderr, /^Error from server \(Conflict\): Profile "flatcar-worker" is used by 2 machines: rack1-n1, rack1-n3;/);
    assert.deepEqual(await cli(['delete', 'machine', 'rack1-n3']), { code: 0, stdout: 'machine "rack1-n3" deleted\n', stderr: '' });
    const id = /^(\d+) /m.exec((await cli(['get', 'discovered'], READER)).stdout.split('\n')[1]!)![1]!;
    assert.deepEqual(await cli(['delete', 'discovered', id]), { code: 0, stdout: `discovered machine "${id}" deleted\n`, stderr: '' });
    assert.equal((await cli(['delete', 'discovered', id])).code, 3);
    assert.equal((await cli(['delete', 'machine', 'rack1-n3'], READER)).code, 3, 'the read scope cannot delete');
  });

  it('reset-fetches: a machine at its maxFetches is refused its data until reset, then served the same URL (write scope)', async () => {
    const machine = `apiVersion: bootwright.dev/v1alpha1
kind: Machine
metadata: {name: rack1-n9}
spec: {cluster: prod, profile: flatcar-worker, selectors: {mac: ["52:54:00:10:00:09"]}, maxFetches: 1}
`;
    const file = join(dir, 'rack1-n9.yaml');
    writeFileSync(file, machine);
    assert.equal((await cli(['apply', '-f', file])).code, 0);
    const configUrl = async () => {
      const script = await (await fetch(`${server}/ipxe?mac=52-54-00-10-00-09`)).text();
      return new URL(/ignition\.config\.url=(\S+)/.exec(script)![1]!.replace('http://192.168.10.5:8080', server));
    };
    assert.equal((await fetch(await configUrl())).status, 200);
    // First fetch wins: a fresh URL (another second's expiry) is needed for the second fetch.
    await new Promise((r) => setTimeout(r, 1100));
    const second = await configUrl();
    const refused = await fetch(second);
    assert.equal(refused.status, 403);
    assert.match(((await refused.json()) as { detail: string }).detail, /fetch limit reached/);
    assert.equal((await cli(['reset-fetches', 'rack1-n9'], READER)).code, 3, 'the read scope cannot reset');
    assert.deepEqual(await cli(['reset-fetches', 'rack1-n9']), { code: 0, stdout: 'machine "rack1-n9" fetches reset\n', stderr: '' });
    assert.equal((await fetch(second)).status, 200);
    const missing = await cli(['reset-fetches', 'rack1-n404']);
    assert.equal(missing.code, 3);
    assert.match(missing.stderr, /^Error from server \(Not found\): Machine "rack1-n404" does not exist\n/);
    assert.equal((await cli(['delete', 'machine', 'rack1-n9'])).code, 0);
  });

  it('without a token the refusal hints at --token-file', async () => {
    const refused = await cli(['get', 'machines'], '');
    assert.equal(refused.code, 3);
    assert.match(refused.stderr, /^Error from server \(Unauthorized\): .*\nhint: pass a token with --token-file FILE \(or BOOTWRIGHT_TOKEN_FILE, BOOTWRIGHT_TOKEN\)/);
  });

  it('a host name with control characters any client sent to /ipxe never reaches the terminal (no escape sequence, no forged row)', async () => {
    // An attacker pass stored ESC, BEL and line feeds this way: raw, they cleared the
    // operator's screen, retitled the window and forged a table row. Now such a value is
    // not kept at all (src/boot/identity.ts); what is printed is escaped besides.
    const sent = '\x1b[2J\x1b]0;t\x07evil\nrack9-n9   <none>';
    await fetch(`${server}/ipxe?mac=52-54-00-10-00-05&hostname_hex=${Buffer.from(sent).toString('hex')}`);
    const listed = await cli(['get', 'discovered'], READER);
    assert.equal(listed.code, 0, listed.stderr);
    assert.doesNotMatch(listed.stdout, /[\x00-\x09\x0b-\x1f\x7f]/);
    const row = listed.stdout.split('\n').find((l) => l.includes('52:54:00:10:00:05'));
    assert.ok(row !== undefined && !row.includes('evil'), listed.stdout);
    assert.equal(listed.stdout.trimEnd().split('\n').length, 2, 'one header, one row: no forged line');
    const id = /^(\d+) /.exec(row)![1]!;
    assert.equal((await cli(['delete', 'discovered', id])).code, 0);
  });

  it('as a process: a reader that closes the pipe early (| head) ends it quietly, exit 0', async () => {
    const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), join(ROOT, 'src/cli.ts'), 'get', 'machines', '-o', 'yaml'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', BOOTWRIGHT_URL: server, BOOTWRIGHT_TOKEN: READER },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    assert.deepEqual({ code, stderr }, { code: 0, stderr: '' });
  });

  it('as a process: an unreachable service exits 4; a token file works; --token and --token-file together exit 2', async () => {
    const free = createServer();
    await new Promise<void>((r) => free.listen(0, '127.0.0.1', r));
    const port = (free.address() as { port: number }).port;
    await new Promise<void>((r) => free.close(() => r()));
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${READER}\n`, { mode: 0o600 });
    const ok = cliProcess(['get', 'clusters', '-o', 'name', '--token-file', tokenFile], { BOOTWRIGHT_URL: server });
    assert.deepEqual([ok.code, ok.stdout], [0, 'cluster/prod\n'], ok.stderr);
    const down = cliProcess(['status'], { BOOTWRIGHT_URL: `http://127.0.0.1:${port}`, BOOTWRIGHT_TOKEN: READER });
    assert.equal(down.code, 4);
    assert.equal(down.stderr, `error: cannot reach the service at http://127.0.0.1:${port}: ECONNREFUSED\n`);
    const both = cliProcess(['get', 'clusters', '--token', 'x', '--token-file', tokenFile], { BOOTWRIGHT_URL: server });
    assert.equal(both.code, 2);
    assert.equal(both.stderr, 'error: --token and --token-file: give one of them\n');
  });
});
