/**
 * `bootwright serve` as users start it: flags over variables over the file, `--detach`
 * with its PID file, a start that fails fast with the service's own error, and the
 * README's first command run as written (tsx in place of the build).
 */
import assert from 'node:assert/strict';
import { Agent, fetch as undiciFetch } from 'undici';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';

const ROOT = resolve(import.meta.dirname, '../..');
/** The CLI from source; tsx by its URL, so it loads from any working directory. */
const CLI = ['--import', import.meta.resolve('tsx'), join(ROOT, 'src/cli.ts')];
const base = mkdtempSync(join(tmpdir(), 'bootwright-serve-'));
/** Only what a user's shell would have: no BOOTWRIGHT_* from the test run. */
const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: base };

/** A port nothing listens on (the kernel's pick, released). */
async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A port some other program holds for the rest of the file. */
async function takenPort(): Promise<number> {
  const s: Server = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  after(() => s.close());
  return (s.address() as { port: number }).port;
}

/** Run the CLI to completion with `env`, from `cwd`. */
function run(args: string[], env: Record<string, string> = {}, cwd = ROOT) {
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [...CLI, ...args], { encoding: 'utf8', env: { ...ENV, ...env }, cwd, timeout: 90_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, ms: Date.now() - t0 };
}

/** Data directories of services the tests started: any still running at the end is stopped. */
const started: string[] = [];
after(() => {
  for (const dir of started) {
    try {
      process.kill(Number(readFileSync(join(dir, 'bootwright.pid'), 'utf8')), 'SIGTERM');
    } catch {
      // stopped by its test, or never started
    }
  }
});

/** Stop the service whose PID file is in `dataDir`; resolves when the process is gone and the file removed. */
async function stop(dataDir: string): Promise<void> {
  const pid = Number(readFileSync(join(dataDir, 'bootwright.pid'), 'utf8'));
  process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 200; i++) {
    try {
      process.kill(pid, 0);
    } catch {
      break;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.throws(() => process.kill(pid, 0), 'the service is gone after SIGTERM');
  assert.ok(!existsSync(join(dataDir, 'bootwright.pid')), 'a clean stop removes the PID file');
}

describe('bootwright serve', () => {
  it('--detach returns once the service listens and is ready; --port, --host and --data-dir beat the variables; the PID file names it', async () => {
    const port = await freePort();
    const dataDir = join(base, 'detach');
    started.push(dataDir);
    const r = run(['serve', '--detach', '--port', String(port), '--host', '127.0.0.1', '--data-dir', dataDir], {
      BOOTWRIGHT_PORT: String(await takenPort()),
      BOOTWRIGHT_HOST: '0.0.0.0',
      BOOTWRIGHT_DATA_DIR: join(base, 'not-this-one'),
    });
    assert.equal(r.code, 0, r.stderr);
    const pid = readFileSync(join(dataDir, 'bootwright.pid'), 'utf8');
    assert.match(pid, /^\d+\n$/);
    assert.equal(r.stdout, `bootwright is serving at http://127.0.0.1:${port} (PID ${pid.trim()})\n  logs: ${dataDir}/bootwright.log\n  stop: kill $(cat ${dataDir}/bootwright.pid)\n`);
    assert.ok(!existsSync(join(base, 'not-this-one')));
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    assert.equal(ready.status, 200);
    // The generated token works: the service is the one in this data directory.
    const token = readFileSync(join(dataDir, 'admin-token'), 'utf8').trim();
    const list = await fetch(`http://127.0.0.1:${port}/v1/machines`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(list.status, 200);
    await stop(dataDir);
  });

  it('--detach starts an HTTPS service (BOOTWRIGHT_TLS=auto) and says https', async () => {
    const port = await freePort();
    const dataDir = join(base, 'detach-tls');
    started.push(dataDir);
    const r = run(['serve', '--detach', '--port', String(port), '--host', '127.0.0.1', '--data-dir', dataDir], { BOOTWRIGHT_TLS: 'auto' });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^bootwright is serving at https://127\\.0\\.0\\.1:${String(port)} `));
    const ca = readFileSync(join(dataDir, 'tls', 'ca.crt'), 'utf8');
    const agent = new Agent({ connect: { ca } });
    try {
      assert.equal((await undiciFetch(`https://127.0.0.1:${String(port)}/readyz`, { dispatcher: agent })).status, 200);
    } finally {
      await agent.close();
    }
    await stop(dataDir);
  });

  it('--config names the file; a flag beats it, the file beats the defaults', async () => {
    const dataDir = join(base, 'config');
    mkdirSync(dataDir);
    started.push(dataDir);
    const port = await freePort();
    const file = join(dataDir, 'bootwright.yaml');
    writeFileSync(file, `port: ${await takenPort()}\ndataDir: ${dataDir}\nlogLevel: warn\n`);
    const r = run(['serve', '-d', '--config', file, '--port', String(port)]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^bootwright is serving at http://127\\.0\\.0\\.1:${port} `));
    assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
    await stop(dataDir);
  });

  it('a taken port: the foreground and --detach both exit 1 within seconds with the service\'s own error', async () => {
    const port = String(await takenPort());
    const fg = run(['serve', '--port', port, '--data-dir', join(base, 'taken-fg')]);
    assert.equal(fg.code, 1);
    assert.match(fg.stderr, new RegExp(`cannot start: listen EADDRINUSE: address already in use 127\\.0\\.0\\.1:${port}`));
    const bg = run(['serve', '--detach', '--port', port, '--data-dir', join(base, 'taken-bg')]);
    assert.equal(bg.code, 1);
    assert.equal(bg.stdout, '');
    assert.match(bg.stderr, new RegExp(`cannot start: listen EADDRINUSE: address already in use 127\\.0\\.0\\.1:${port}`));
    assert.match(bg.stderr, /serve: the service exited \(code 1\) before listening; its log is above/);
    // Within seconds, not the detach timeout (60 s): two Node starts through tsx.
    assert.ok(bg.ms < 45_000, `${bg.ms} ms`);
    assert.ok(!existsSync(join(base, 'taken-bg', 'bootwright.pid')));
  });

  it('a bad setting names the flag or variable, exit 2, nothing started', () => {
    const r = run(['serve', '--port', '70000', '--data-dir', join(base, 'bad')]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^error: port \(--port\): /);
    const v = run(['serve', '--data-dir', join(base, 'bad')], { BOOTWRIGHT_RETRY_AFTER_SECONDS: 'soon' });
    assert.equal(v.code, 2);
    assert.match(v.stderr, /^error: retryAfterSeconds \(BOOTWRIGHT_RETRY_AFTER_SECONDS\): /);
    assert.ok(!existsSync(join(base, 'bad')));
  });
});

describe("the README's first command", () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = /```sh\n([^\n]+)\n([^\n]+)\n```/.exec(readme);
  const [first, second] = [block?.[1] ?? '', block?.[2] ?? ''];
  const PREFIX = 'npm ci && npm run build && ';

  it('installs, builds, starts the service detached and makes a real request; the second runs the suite', () => {
    assert.ok(first.startsWith(`${PREFIX}node dist/cli.js serve --detach && curl `), first);
    assert.equal(second, 'npm test');
  });

  /**
   * Run the README line after its install and build steps, in a directory of its own
   * (examples/ linked in), with the built CLI replaced by the same CLI from source and
   * port 8080 by `port` (in BOOTWRIGHT_PORT and the curl URL).
   */
  function runFirstLine(port: number) {
    const cwd = mkdtempSync(join(base, 'readme-'));
    started.push(join(cwd, 'data'));
    symlinkSync(join(ROOT, 'examples'), join(cwd, 'examples'));
    const line = first.slice(PREFIX.length).replace('node dist/cli.js', `${process.execPath} ${CLI.join(' ')}`).replaceAll('127.0.0.1:8080', `127.0.0.1:${port}`);
    const t0 = Date.now();
    const r = spawnSync('sh', ['-c', line], { encoding: 'utf8', cwd, env: { ...ENV, BOOTWRIGHT_PORT: String(port) }, timeout: 90_000 });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr, ms: Date.now() - t0, cwd };
  }

  it('answers with the example worker as Ignition 3.4.0, then stops by its PID file', async () => {
    const r = runFirstLine(await freePort());
    assert.equal(r.code, 0, r.stderr);
    const [started, json] = [r.stdout.slice(0, r.stdout.indexOf('{')), r.stdout.slice(r.stdout.indexOf('{'))];
    assert.match(started, /^bootwright is serving at http:\/\/127\.0\.0\.1:\d+ \(PID \d+\)\n/);
    const config = JSON.parse(json) as { ignition?: { version: string }; systemd: { units: { name: string }[] } };
    assert.equal(config.ignition?.version, '3.4.0', json.slice(0, 300));
    assert.ok(config.systemd.units.some((u) => u.name === 'kubeadm-bootstrap.service'));
    await stop(join(r.cwd, 'data'));
  });

  it('fails fast with the real error when the port is taken, and makes no request', async () => {
    const r = runFirstLine(await takenPort());
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /cannot start: listen EADDRINUSE: address already in use/);
    assert.ok(!r.stdout.includes('"ignition"'), r.stdout);
    assert.ok(r.ms < 45_000, `${r.ms} ms`);
  });
});
