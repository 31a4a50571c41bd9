/**
 * Machine lifecycle through real fetches and real reports (issue 14), in both formats:
 * a service listening on 127.0.0.1, its /ipxe script and signed config fetched over
 * HTTP, and the report command taken from the served config — cloud-config `runcmd`
 * and `write_files`, Ignition's bootstrap script and units — RUN by `sh` with a fake
 * kubeadm (exit code chosen by the test) and the real `curl`, `tee`, `sed` and `tail`.
 * The node's paths are moved under a temporary root; nothing else is changed.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { RENDERER_VERSION } from '../../src/version.js';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { load } from 'js-yaml';
import { BOOTSTRAP_SCRIPT, BOOTSTRAP_UNIT } from '../../src/provision/ignition/bootstrap.js';
import { KUBEADM_LOG, REPORT_SCRIPT } from '../../src/provision/plan/report.js';
import { SUCCESS_SENTINEL } from '../../src/provision/plan/types.js';
import { cloudConfigFiles, ignitionFiles } from '../support/decode.js';
import { missingDependency } from '../support/missing.js';
import { example } from '../support/requests.js';
import { ADMIN, READER, RENDERER, testService, type TestService } from '../support/server.js';

const IGN = 'application/vnd.coreos.ignition+json';
const API = 'bootwright.dev/v1alpha1';
const CLUSTER: Record<string, unknown> = { ...(example('init').spec as { cluster: Record<string, unknown> }).cluster, name: 'prod' };
const TOKEN = CLUSTER.bootstrapToken as string;
const CERT_KEY = CLUSTER.certificateKey as string;
const BOOT = { kernel: 'http://images.example.com/vmlinuz', initrd: ['http://images.example.com/initrd.img'], args: ['console=ttyS0'] };

const tools = ['sh', 'curl', 'tee', 'sed', 'tail'].filter((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0);
const skip = tools.length > 0 ? missingDependency(`${tools.join(', ')} not found: the served boot report commands are not run`) : false;

let svc: TestService;
let base: string;
const dir = mkdtempSync(join(tmpdir(), 'bootwright-lifecycle-'));

async function api(method: string, path: string, body?: unknown, token = ADMIN): Promise<{ status: number; json: Record<string, unknown>; text: string }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, text, json: text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

const create = async (kind: string, collection: string, name: string, spec: unknown) => {
  const res = await api('POST', `/v1/${collection}`, { apiVersion: API, kind, metadata: { name }, spec });
  assert.equal(res.status, 201, res.text);
};

interface Status {
  phase: string;
  transitions: { phase: string; time: string }[];
  served?: { revision: number; sha256: string; format: string; ignitionVersion?: string; time: string };
  lastReport?: { outcome: string; exitCode?: number; output: string; time: string };
}
/** A machine's status as `GET /v1/machines/{name}` reads it, checked to be what the list (`bootwright get machines`) shows too. */
const status = async (name: string): Promise<Status> => {
  const res = await api('GET', `/v1/machines/${name}`, undefined, READER);
  assert.equal(res.status, 200, res.text);
  const list = await api('GET', '/v1/machines?limit=1000', undefined, READER);
  assert.equal(list.status, 200, list.text);
  const item = (list.json.items as { metadata: { name: string }; status: Status }[]).find((m) => m.metadata.name === name);
  assert.deepEqual(item?.status, res.json.status, 'the list carries the same live status as the single read');
  return res.json.status as Status;
};

before(async () => {
  svc = await testService({ dataDir: join(dir, 'data'), refusedAuditIntervalSeconds: 0, reportsPerFetch: 3 });
  await svc.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(svc.app.server.address() as AddressInfo).port}`;
  await create('Cluster', 'clusters', 'prod', CLUSTER);
  const profile = { role: 'worker', kubernetesVersion: 'v1.33.2' };
  await create('Profile', 'profiles', 'ign', { ...profile, output: { format: 'ignition' }, boot: BOOT });
  await create('Profile', 'profiles', 'cc', { ...profile, boot: BOOT });
  await create('Machine', 'machines', 'node-ign', { selectors: { mac: ['52:54:00:14:00:01'] }, cluster: 'prod', profile: 'ign' });
  await create('Machine', 'machines', 'node-cc', { selectors: { mac: ['52:54:00:14:00:02'] }, cluster: 'prod', profile: 'cc' });
});
after(async () => {
  await svc.app.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A node's file system: absolute node paths under `root`, and a fake kubeadm first in PATH. */
function nodeRoot(name: string): { root: string; relocate: (text: string) => string; write: (path: string, contents: string | Buffer) => void; env: (exit: number) => NodeJS.ProcessEnv } {
  const root = join(dir, name);
  mkdirSync(join(root, 'bin'), { recursive: true });
  // kubeadm init/join print the join command, token and certificate key included: the report must not carry them.
  writeFileSync(
    join(root, 'bin', 'kubeadm'),
    [
      '#!/bin/sh',
      'echo "[preflight] Running pre-flight checks"',
      `echo "kubeadm join api.prod.example.com:6443 --token ${TOKEN} --certificate-key ${CERT_KEY}"`,
      'echo "fake kubeadm: $* exits $FAKE_KUBEADM_EXIT" >&2',
      'exit "$FAKE_KUBEADM_EXIT"',
      '',
    ].join('\n'),
  );
  chmodSync(join(root, 'bin', 'kubeadm'), 0o755);
  const relocate = (text: string) => text.replace(/(?<![\w.-])\/(var\/lib\/bootwright|etc\/bootwright|etc\/kubeadm|run\/cluster-api|run\/kubeadm)(?=[^\w.-]|$)/gm, `${root}/$1`);
  return {
    root,
    relocate,
    write: (path, contents) => {
      const target = join(root, path);
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, typeof contents === 'string' ? relocate(contents) : contents, { mode: 0o700 });
    },
    env: (exit) => ({ ...process.env, PATH: `${join(root, 'bin')}:${process.env.PATH ?? ''}`, FAKE_KUBEADM_EXIT: String(exit) }),
  };
}

/** Boot `name`: fetch its /ipxe script and the config it points at, as iPXE and Ignition or cloud-init would. */
async function boot(name: string, mac: string, format: 'ignition' | 'cloud-config'): Promise<{ body: string; sha256: string }> {
  const script = await (await fetch(`${base}/ipxe?mac=${mac}`)).text();
  assert.equal((await status(name)).phase, 'Booting');
  const url =
    format === 'ignition'
      ? /ignition\.config\.url=(\S+)/.exec(script)![1]!
      : `${/ds=nocloud(?:-net)?;s=(\S+)/.exec(script)![1]!}user-data`;
  const res = await fetch(url, { headers: format === 'ignition' ? { accept: `${IGN};version=3.4.0, */*;q=0.1`, 'user-agent': 'Ignition/2.20.0' } : { 'user-agent': 'Cloud-Init/24.1' } });
  assert.equal(res.status, 200);
  const body = await res.text();
  return { body, sha256: createHash('sha256').update(body).digest('hex') };
}

/**
 * Run `sh -c command` without blocking the event loop (the service answering the report
 * runs in this process): its exit status, stdout and stderr.
 */
function sh(command: string, env: NodeJS.ProcessEnv): Promise<{ status: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = execFile('sh', ['-c', command], { env, encoding: 'utf8', timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, out: `${stdout}${stderr}${error && typeof error.code !== 'number' ? error.message : ''}` });
    });
    child.stdin?.end();
  });
}

/** Run the served cloud-config's runcmd as cloud-init does (one `sh` script), its write_files (the `/run/cluster-api` placeholder too) written first. */
async function runCloudConfig(body: string, node: ReturnType<typeof nodeRoot>, exit: number): Promise<void> {
  for (const [path, contents] of cloudConfigFiles(body)) node.write(path, path === REPORT_SCRIPT ? contents.toString('utf8') : contents);
  const runcmd = (load(body) as { runcmd: string[] }).runcmd;
  const result = await sh(node.relocate(runcmd.join('\n')), node.env(exit));
  assert.equal(result.status, 0, result.out);
}

/**
 * Run the served Ignition bootstrap as systemd would: the script, then `ExecStartPost=`
 * on success; `ExecStopPost=` at once after a failure (systemd's `SERVICE_RESULT` then
 * `exit-code`), and at shutdown after a success (`SERVICE_RESULT=success`: the report
 * script must send nothing more, which the report count checks).
 */
async function runIgnition(body: string, node: ReturnType<typeof nodeRoot>, exit: number): Promise<void> {
  const config = JSON.parse(body) as { systemd: { units: { name: string; contents?: string }[] } };
  const files = ignitionFiles(config);
  for (const path of [REPORT_SCRIPT, BOOTSTRAP_SCRIPT]) node.write(path, files.get(path)!.toString('utf8'));
  const unit = (n: string) => config.systemd.units.find((u) => u.name === n)!.contents!;
  const settings = (contents: string, key: string) => contents.split('\n').filter((l) => l.startsWith(`${key}=`)).map((l) => l.slice(key.length + 1).replace(/^-/, ''));
  const bootstrap = unit(BOOTSTRAP_UNIT);
  assert.deepEqual(settings(bootstrap, 'OnFailure'), []);
  const run = (command: string, serviceResult?: string) => sh(node.relocate(command), { ...node.env(exit), ...(serviceResult ? { SERVICE_RESULT: serviceResult } : {}) });
  const main = await run(settings(bootstrap, 'ExecStart')[0]!);
  assert.equal(main.status, exit, main.out);
  const post = (key: string, serviceResult?: string) => settings(bootstrap, key).filter((c) => !c.startsWith('touch ')).map((c) => run(c, serviceResult));
  if (main.status === 0) {
    for (const r of await Promise.all(post('ExecStartPost'))) assert.equal(r.status, 0, r.out);
    // The node shuts down later: the unit stops, and its ExecStopPost= sends nothing.
    for (const r of await Promise.all(post('ExecStopPost', 'success'))) assert.equal(r.status, 0, r.out);
  } else {
    for (const r of await Promise.all(post('ExecStopPost', 'exit-code'))) assert.equal(r.status, 0, r.out);
  }
}

for (const [format, name, mac] of [
  ['ignition', 'node-ign', '52:54:00:14:00:01'],
  ['cloud-config', 'node-cc', '52:54:00:14:00:02'],
] as const) {
  describe(`lifecycle: ${format}`, { skip }, () => {
    it('Registered → Booting → Provisioning → Failed → Joined: real fetches, the served report command run with kubeadm exiting 7, then 0', async () => {
      assert.deepEqual(await status(name), { clusterRevision: 1, profileRevision: 1, phase: 'Registered', transitions: [] });
      const { body, sha256 } = await boot(name, mac, format);
      const provisioning = await status(name);
      assert.equal(provisioning.phase, 'Provisioning');
      assert.deepEqual(provisioning.transitions.map((t) => t.phase), ['Booting', 'Provisioning']);
      assert.deepEqual({ ...provisioning.served, time: undefined }, { revision: 1, sha256, format, ...(format === 'ignition' ? { ignitionVersion: '3.4.0' } : {}), rendererVersion: RENDERER_VERSION, time: undefined });
      const files = format === 'ignition' ? ignitionFiles(JSON.parse(body)) : cloudConfigFiles(body);
      assert.ok(files.get(REPORT_SCRIPT)!.toString('utf8').includes(`'${base}/report?machine=${name}&inc=`), 'the data carries the signed report URL of this machine');

      const node = nodeRoot(name);
      const run = format === 'ignition' ? runIgnition : runCloudConfig;
      await run(body, node, 7);
      const failed = await status(name);
      assert.equal(failed.phase, 'Failed');
      assert.equal(failed.lastReport!.outcome, 'failure');
      assert.equal(failed.lastReport!.exitCode, 7);
      assert.match(failed.lastReport!.output, /\[preflight\] Running pre-flight checks\n/);
      assert.match(failed.lastReport!.output, /fake kubeadm: join --config \S+ exits 7\n$/);
      assert.ok(!failed.lastReport!.output.includes(TOKEN) && !failed.lastReport!.output.includes(CERT_KEY), failed.lastReport!.output);
      assert.match(failed.lastReport!.output, /--token <redacted> --certificate-key <redacted>/);
      assert.equal(existsSync(join(node.root, SUCCESS_SENTINEL)), false, 'no sentinel after a failed kubeadm');
      // kubeadm's output (with the token) stays on the node readable by root only.
      assert.equal(spawnSync('stat', ['-c', '%a', join(node.root, KUBEADM_LOG)], { encoding: 'utf8' }).stdout.trim(), '600');

      await run(body, node, 0);
      const joined = await status(name);
      assert.equal(joined.phase, 'Joined');
      assert.deepEqual([joined.lastReport!.outcome, joined.lastReport!.exitCode], ['success', 0]);
      assert.equal(readFileSync(join(node.root, SUCCESS_SENTINEL), 'utf8'), 'success\n');
      assert.deepEqual(joined.transitions.map((t) => t.phase), ['Booting', 'Provisioning', 'Failed', 'Joined']);

      // Audited with the details: what was served, to whom, and the reports.
      const audit = (await api('GET', `/v1/machines/${name}/audit`, undefined, READER)).json.items as Record<string, unknown>[];
      const fetchRoute = format === 'ignition' ? '/ignition' : '/nocloud/user-data';
      const served = audit.find((r) => r.route === fetchRoute)!;
      assert.deepEqual([served.status, served.revision, served.sha256, served.format, served.userAgent], [200, 1, sha256, format, format === 'ignition' ? 'Ignition/2.20.0' : 'Cloud-Init/24.1']);
      assert.deepEqual(audit.filter((r) => r.route === '/report').map((r) => [r.status, r.outcome, (r.userAgent as string).split('/')[0]]), [[204, 'success', 'curl'], [204, 'failure', 'curl']]);
    });
  });
}

describe('boot reports: refusals and bounds', () => {
  it('a forged or another machine\'s report URL is a 403 with its reason audited; a deleted machine 404', async () => {
    const { body } = await boot('node-ign', '52:54:00:14:00:01', 'ignition');
    const url = new URL(/'(http:\/\/[^']+\/report\?[^']+)'/.exec(ignitionFiles(JSON.parse(body)).get(REPORT_SCRIPT)!.toString('utf8'))![1]!);
    const post = (u: URL, form: string) => fetch(u, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form });
    const other = new URL(url);
    other.searchParams.set('machine', 'node-cc');
    const forged = await post(other, 'outcome=success');
    assert.equal(forged.status, 403);
    assert.match(((await forged.json()) as { detail: string }).detail, /not valid for this machine/);
    const rows = (await api('GET', '/v1/machines/node-cc/audit', undefined, READER)).json.items as Record<string, unknown>[];
    assert.deepEqual([rows[0]!.route, rows[0]!.status, rows[0]!.reason], ['/report', 403, 'the signature is not valid for this machine and route']);
    const bad = await post(url, 'outcome=maybe');
    assert.equal(bad.status, 400);
    const twice = await post(url, 'outcome=success&outcome=failure');
    assert.equal(twice.status, 400);
    // Form bodies are UTF-8, strictly (an attacker pass got Latin-1 bytes stored as U+FFFD).
    const form = (body: Uint8Array | string, type = 'application/x-www-form-urlencoded') => fetch(url, { method: 'POST', headers: { 'content-type': type }, body });
    assert.equal((await form('outcome=success&output=caf%C3%A9', 'application/x-www-form-urlencoded; charset=iso-8859-1')).status, 415);
    const latin1 = await form(Buffer.concat([Buffer.from('outcome=success&output='), Buffer.from([0xe9, 0xff])]));
    assert.equal(latin1.status, 400);
    const badEscape = await form('outcome=success&output=%E9%FF');
    assert.equal(badEscape.status, 400);
    assert.deepEqual((JSON.parse(await badEscape.text()) as { errors: unknown }).errors, [{ path: 'output', message: 'has a percent-escape that is not UTF-8' }]);
    // reportsPerFetch is 3 here: the fourth report since the fetch is a 429, and changes nothing.
    for (let i = 0; i < 3; i++) assert.equal((await post(url, `outcome=success&exitCode=0&output=${i}`)).status, 204);
    assert.equal((await post(url, 'outcome=failure&exitCode=1')).status, 429);
    assert.equal((await status('node-ign')).lastReport!.output, '2');
    const huge = await post(url, `outcome=success&output=${'x'.repeat(20_000)}`);
    assert.equal(huge.status, 413);
    assert.equal((JSON.parse(await huge.text()) as { detail: string }).detail, "the request body is larger than this route's limit of 16384 bytes (BOOTWRIGHT_MAX_REPORT_BYTES)");
  });

  it('POST /v1/render of a bare request carries no report; GET /v1/fleet and /metrics count phases and reports', async () => {
    const res = await fetch(`${base}/v1/render`, { method: 'POST', headers: { authorization: `Bearer ${RENDERER}`, 'content-type': 'application/json', accept: 'text/cloud-config' }, body: JSON.stringify(example('worker')) });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    assert.ok(!text.includes(REPORT_SCRIPT) && !text.includes('/report?'), 'no report without a machine');
    const fleet = await api('GET', '/v1/fleet', undefined, READER);
    assert.equal(fleet.status, 200);
    assert.deepEqual(Object.keys(fleet.json), ['machines', 'phases', 'discovered']);
    assert.equal(fleet.json.machines, 2);
    const phases = fleet.json.phases as Record<string, number>;
    assert.equal(Object.values(phases).reduce((a, b) => a + b, 0), 2);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    for (const [phase, n] of Object.entries(phases)) assert.ok(metrics.includes(`bootwright_machines{phase="${phase}"} ${n}\n`), `${phase} ${n}`);
    assert.match(metrics, /bootwright_boot_reports_total\{outcome="failure"\} [1-9]/);
    assert.match(metrics, /bootwright_firmware_fetches_total\{route="\/report",status="403"\} 1\n/);
    assert.match(metrics, /bootwright_firmware_fetches_total\{route="\/ignition",status="200"\} [1-9]/);
    assert.ok(!metrics.includes(TOKEN) && !metrics.includes('sig='));
  });
});

describe('Stalled', () => {
  it('a machine that fetched its config and did not report within the timeout is Stalled, on read and in the fleet', async () => {
    const quick = await testService({ dataDir: join(dir, 'stalled'), reportTimeoutSeconds: 1 });
    try {
      await quick.app.listen({ host: '127.0.0.1', port: 0 });
      const url = `http://127.0.0.1:${(quick.app.server.address() as AddressInfo).port}`;
      const call = async (method: string, path: string, body?: unknown) =>
        fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
      for (const [kind, collection, name, spec] of [
        ['Cluster', 'clusters', 'prod', CLUSTER],
        ['Profile', 'profiles', 'cc', { role: 'worker', kubernetesVersion: 'v1.33.2', boot: BOOT }],
        ['Machine', 'machines', 'slow', { selectors: { mac: ['52:54:00:14:00:09'] }, cluster: 'prod', profile: 'cc' }],
      ] as const) assert.equal((await call('POST', `/v1/${collection}`, { apiVersion: API, kind, metadata: { name }, spec })).status, 201);
      const script = await (await fetch(`${url}/ipxe?mac=52:54:00:14:00:09`)).text();
      assert.equal((await fetch(`${/ds=nocloud(?:-net)?;s=(\S+)/.exec(script)![1]!}user-data`)).status, 200);
      assert.equal(((await (await call('GET', '/v1/machines/slow')).json()) as { status: Status }).status.phase, 'Provisioning');
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const stalled = ((await (await call('GET', '/v1/machines/slow')).json()) as { status: Status }).status;
      assert.equal(stalled.phase, 'Stalled');
      assert.deepEqual(stalled.transitions.map((t) => t.phase), ['Booting', 'Provisioning', 'Stalled']);
      assert.equal(Date.parse(stalled.transitions[2]!.time) - Date.parse(stalled.transitions[1]!.time), 1000);
      assert.equal((((await (await call('GET', '/v1/fleet')).json()) as { phases: Record<string, number> }).phases).Stalled, 1);
    } finally {
      await quick.app.close();
    }
  });
});

// The test's own tools, for the record when it fails.
if (!skip) execFileSync('curl', ['--version']);
