/**
 * Nothing the service sends reaches the operator's terminal as a control: the CLI against
 * a service whose answers carry what an unauthenticated client on the boot network can put
 * in them (a reported host name with C1 controls and bidirectional overrides: U+009B, the
 * C1 CSI; U+0085, NEL; U+202E, RIGHT-TO-LEFT OVERRIDE; an ESC sequence), in problem titles,
 * details and `errors[]`, `get -o name|json|yaml` and `enroll`. JSON and YAML keep their
 * meaning (they parse back to the same values); the rest is escaped as `\xHH`/`\uHHHH`, as
 * the tables already are. And a token or a server URL is never printed: a token with a
 * newline, or a URL with a password, is refused naming the flag only.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { load } from 'js-yaml';

const EVIL = 'evil\u009b31m\u0085x\u202etxt.exe\u001b]0;owned\u0007';
/** What a terminal acts on, but the line feeds the CLI writes itself. */
const CONTROLS = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

const discovered = { id: `d-${EVIL}`, mac: '52:54:00:00:00:01', hostname: EVIL, firstSeen: '2026-12-04T00:00:00Z', lastSeen: '2026-12-04T00:00:00Z', requests: 1 };
const problem = { type: 'https://bootwright.dev/problems/not-found', title: `Not Found ${EVIL}`, status: 404, detail: `machine ${EVIL} not found`, errors: [{ path: `spec.${EVIL}`, message: `bad ${EVIL}` }] };

let server: Server;
let url: string;

before(async () => {
  server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/v1/discovered') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ items: [discovered] }));
    } else if (req.method === 'GET' && path === `/v1/discovered/${encodeURIComponent(discovered.id)}`) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(discovered));
    } else if (req.method === 'POST' && path === '/v1/machines') {
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ apiVersion: 'bootwright.dev/v1alpha1', kind: 'Machine', metadata: { name: `m-${EVIL}` }, spec: {} }));
    } else {
      res.writeHead(404, { 'content-type': 'application/problem+json' }).end(JSON.stringify(problem));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${String((server.address() as AddressInfo).port)}`;
});
after(() => {
  server.close();
});

/** Run the CLI from source against the fake service. */
async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { env: { ...process.env, BOOTWRIGHT_URL: url, BOOTWRIGHT_TOKEN: 'cli-terminal-token', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stdout, stderr };
}

describe('what reaches the terminal', () => {
  it('a refusal: title, detail and every field escaped', async () => {
    const r = await cli(['get', 'machine', 'nope']);
    assert.equal(r.code, 3);
    assert.doesNotMatch(r.stderr, CONTROLS, r.stderr);
    assert.match(r.stderr, /\\x9b31m\\x85x\\u202etxt\.exe\\x1b\]0;owned\\x07/);
  });

  it('get -o name, json and yaml: escaped, and JSON and YAML parse back to the same values', async () => {
    const name = await cli(['get', 'discovered', '-o', 'name']);
    assert.equal(name.code, 0, name.stderr);
    assert.doesNotMatch(name.stdout, CONTROLS);
    const json = await cli(['get', 'discovered', '-o', 'json']);
    assert.equal(json.code, 0, json.stderr);
    assert.doesNotMatch(json.stdout, CONTROLS);
    assert.deepEqual(JSON.parse(json.stdout), { items: [discovered] });
    const yaml = await cli(['get', 'discovered', '-o', 'yaml']);
    assert.equal(yaml.code, 0, yaml.stderr);
    assert.doesNotMatch(yaml.stdout, CONTROLS);
    assert.deepEqual(load(yaml.stdout), { items: [discovered] });
  });

  it('enroll: the names it prints escaped', async () => {
    const r = await cli(['enroll', discovered.id, '--profile', 'p', '--cluster', 'c']);
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stdout, CONTROLS, r.stdout);
  });

  it('a token with a newline, a server URL with a password: refused naming the setting, neither printed', async () => {
    for (const [args, env, setting] of [
      [['get', 'machines', '--token', 'secret-one\nsecond-line'], {}, '--token'],
      [['get', 'machines'], { BOOTWRIGHT_TOKEN: 'secret-one\r\nx' }, 'BOOTWRIGHT_TOKEN'],
      [['get', 'machines', '--server', 'http://ops:hunter2@127.0.0.1:1'], {}, '--server'],
      [['get', 'machines'], { BOOTWRIGHT_URL: 'http://ops:hunter2@127.0.0.1:1' }, 'BOOTWRIGHT_URL'],
    ] as const) {
      const r = await cli([...args], env);
      assert.equal(r.code, 2, `${setting}: ${r.stderr}`);
      assert.ok(r.stderr.includes(setting), r.stderr);
      assert.doesNotMatch(r.stderr + r.stdout, /secret-one|second-line|hunter2/);
    }
  });
});
