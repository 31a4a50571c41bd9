/**
 * `bootwright controller` on the command line: its flags (Go durations as Cluster API's
 * flags take them, addresses as controller-runtime's `--health-addr`), usage errors that
 * name the flag (exit 2), and the process itself against a real API server: it starts,
 * answers /healthz and /readyz, and stops on SIGTERM (exit 0).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { controllerOptions, parseAddress, parseDuration } from '../../src/cli/controller.js';
import { UsageError } from '../../src/cli/commands.js';
import { freePort, startControlPlane } from '../support/controlplane.js';
import { installCapiCrds, managementSkip } from '../support/management.js';

function cli(args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { encoding: 'utf8', env: { ...process.env, KUBECONFIG: '/nonexistent/kubeconfig' } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('bootwright controller flags', () => {
  it('parses durations as Go writes them', () => {
    assert.equal(parseDuration('x', '15m'), 900_000);
    assert.equal(parseDuration('x', '1h30m'), 5_400_000);
    assert.equal(parseDuration('x', '90s'), 90_000);
    assert.equal(parseDuration('x', '500ms'), 500);
    assert.equal(parseDuration('x', '1.5s'), 1_500);
    for (const bad of ['15', '0s', '-5m', '5 m', 'm', '', '5d', '1h 30m']) assert.throws(() => parseDuration('bootstrap-token-ttl', bad), (e: Error) => e instanceof UsageError && e.message.startsWith('--bootstrap-token-ttl: '), bad);
  });

  it('parses HOST:PORT, [V6]:PORT and :PORT', () => {
    assert.deepEqual(parseAddress('health-addr', '127.0.0.1:9440'), { host: '127.0.0.1', port: 9440 });
    assert.deepEqual(parseAddress('health-addr', ':9440'), { host: '0.0.0.0', port: 9440 });
    assert.deepEqual(parseAddress('health-addr', '[::1]:0'), { host: '::1', port: 0 });
    for (const bad of ['9440', 'host:', 'host:70000', '::1:80']) assert.throws(() => parseAddress('health-addr', bad), /--health-addr: /, bad);
  });

  it('defaults as CABPK does; checks leader election durations as client-go does', () => {
    const o = controllerOptions({ values: {}, positionals: [] });
    assert.equal(o.tokenTtlMs, 15 * 60_000);
    assert.equal(o.ignitionVersion, '2.3');
    assert.equal(o.concurrency, 10);
    assert.equal(o.leaderElection, undefined);
    assert.deepEqual(o.health, { host: '127.0.0.1', port: 9440 });
    const le = controllerOptions({ values: { 'leader-elect': true, 'leader-elect-namespace': 'capi-system' }, positionals: [] }).leaderElection;
    assert.deepEqual({ ...le, identity: undefined }, { namespace: 'capi-system', name: 'bootwright-controller-leader-election', identity: undefined, leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 });
    assert.throws(() => controllerOptions({ values: { 'leader-elect': true, 'leader-elect-renew-deadline': '20s' }, positionals: [] }), /--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline/);
    assert.throws(() => controllerOptions({ values: { 'ignition-version': '2.2.0' }, positionals: [] }), /--ignition-version: "2.2.0"/);
    assert.equal(controllerOptions({ values: { 'ignition-version': '3.4.0' }, positionals: [] }).ignitionVersion, '3.4.0');
  });

  it('a bad flag or an unreadable kubeconfig is a usage error naming it (exit 2)', () => {
    const ttl = cli(['controller', '--bootstrap-token-ttl', 'soon']);
    assert.equal(ttl.code, 2);
    assert.match(ttl.stderr, /^error: --bootstrap-token-ttl: "soon" is not a positive duration/);
    const kc = cli(['controller', '--kubeconfig', '/nonexistent/kubeconfig']);
    assert.equal(kc.code, 2);
    assert.match(kc.stderr, /^error: --kubeconfig: cannot load \/nonexistent\/kubeconfig/);
  });
});

const skip = managementSkip('`bootwright controller` against an API server');

describe('bootwright controller, the process', { skip, timeout: 180_000 }, () => {
  it('starts, is healthy and ready, and stops on SIGTERM with exit 0', async () => {
    const cp = await startControlPlane();
    const dir = mkdtempSync(path.join(tmpdir(), 'bw-controller-'));
    try {
      await installCapiCrds(cp);
      const kubeconfig = path.join(dir, 'kubeconfig');
      writeFileSync(kubeconfig, cp.kubeconfig, { mode: 0o600 });
      const port = await freePort();
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'controller', '--kubeconfig', kubeconfig, '--health-addr', `127.0.0.1:${String(port)}`, '--leader-elect', '--leader-elect-namespace', 'default'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr.on('data', (d: Buffer) => (output += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      const deadline = Date.now() + 60_000;
      let ready = 0;
      // Ready as the leader: its watches listed (a standby is ready at once).
      while (Date.now() < deadline && (ready !== 200 || !output.includes('"msg":"became the leader"'))) {
        await new Promise((r) => setTimeout(r, 200));
        ready = await fetch(`http://127.0.0.1:${String(port)}/readyz`).then(
          (r) => r.status,
          () => 0,
        );
      }
      assert.equal(ready, 200, output);
      assert.equal((await fetch(`http://127.0.0.1:${String(port)}/healthz`)).status, 200);
      assert.match(output, /"msg":"the controller started"/);
      assert.match(output, /"msg":"became the leader"/);
      child.kill('SIGTERM');
      assert.equal(await exited, 0, output);
      assert.match(output, /"msg":"released the leader Lease"/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await cp.stop();
    }
  });
});
