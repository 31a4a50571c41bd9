/**
 * `GET /assets/*` from BOOTWRIGHT_ASSETS_DIR over real HTTP (a listening service, Node's
 * fetch and curl as iPXE-like clients): whole files, byte ranges (206, Content-Range,
 * 416 past the end), validators, HEAD; traversal, dotfiles and directories refused as
 * problems; no route without the setting; a missing directory refused at start.
 */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { ConfigError } from '../../src/config.js';
import { missingDependency } from '../support/missing.js';
import { testService, type TestService } from '../support/server.js';

const root = mkdtempSync(join(tmpdir(), 'bootwright-assets-'));
const assets = join(root, 'assets');
const KERNEL = randomBytes(300_000);
let svc: TestService;
let base: string;

before(async () => {
  mkdirSync(join(assets, 'flatcar'), { recursive: true });
  writeFileSync(join(assets, 'flatcar', 'flatcar_production_pxe.vmlinuz'), KERNEL);
  writeFileSync(join(assets, '.secret'), 'dotfile');
  // Files a browser would run on the service's origin, if served as their types.
  writeFileSync(join(assets, 'page.html'), '<!doctype html><script>document.title = "ran"</script>');
  writeFileSync(join(assets, 'image.svg'), '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
  writeFileSync(join(assets, 'notes.txt'), 'plain text\n');
  symlinkSync(join(assets, 'flatcar', 'flatcar_production_pxe.vmlinuz'), join(assets, 'current.vmlinuz'));
  writeFileSync(join(root, 'outside.txt'), 'outside the assets directory');
  symlinkSync(join(root, 'outside.txt'), join(assets, 'escape'));
  svc = await testService({ assetsDir: assets });
  await svc.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(svc.app.server.address() as AddressInfo).port}`;
});
after(async () => {
  await svc.app.close();
  rmSync(root, { recursive: true, force: true });
});

const KPATH = '/assets/flatcar/flatcar_production_pxe.vmlinuz';

describe('GET /assets/*', () => {
  it('serves a file whole, with its length, an ETag and no token', async () => {
    const res = await fetch(`${base}${KPATH}`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('accept-ranges'), 'bytes');
    assert.equal(res.headers.get('content-length'), String(KERNEL.length));
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(KERNEL));
    const etag = res.headers.get('etag')!;
    assert.ok(etag);
    // (Node's fetch adds Cache-Control: no-cache to a conditional request, which makes any server answer 200.)
    assert.equal((await svc.app.inject({ url: KPATH, headers: { 'if-none-match': etag } })).statusCode, 304);
    const head = await fetch(`${base}${KPATH}`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), String(KERNEL.length));
  });

  it('answers byte ranges: 206 with Content-Range, a suffix range, and 416 past the end', async () => {
    const part = await fetch(`${base}${KPATH}`, { headers: { range: 'bytes=1000-1999' } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('content-range'), `bytes 1000-1999/${KERNEL.length}`);
    assert.ok(Buffer.from(await part.arrayBuffer()).equals(KERNEL.subarray(1000, 2000)));
    const tail = await fetch(`${base}${KPATH}`, { headers: { range: 'bytes=-100' } });
    assert.equal(tail.status, 206);
    assert.ok(Buffer.from(await tail.arrayBuffer()).equals(KERNEL.subarray(KERNEL.length - 100)));
    const past = await fetch(`${base}${KPATH}`, { headers: { range: `bytes=${KERNEL.length + 10}-` } });
    assert.equal(past.status, 416);
    assert.equal(past.headers.get('content-range'), `bytes */${KERNEL.length}`);
  });

  const noCurl = spawnSync('curl', ['--version']).status === 0 ? false : missingDependency('curl is not installed: resuming a download with curl is NOT checked');
  it('curl resumes a partial download with -C - to the same bytes', { skip: noCurl }, async () => {
    const out = join(root, 'resumed.vmlinuz');
    writeFileSync(out, KERNEL.subarray(0, 123_456));
    // Asynchronously: the service answers from this process's event loop.
    const r = await promisify(execFile)('curl', ['-sS', '-f', '-C', '-', '-o', out, '-w', '%{http_code}', `${base}${KPATH}`], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.stdout, '206', r.stderr);
    assert.ok(readFileSync(out).equals(KERNEL));
  });

  it('refuses traversal, dotfiles and directories as problems, never a file outside', async () => {
    for (const path of ['/assets/../package.json', '/assets/%2e%2e/outside.txt', '/assets/flatcar/%2e%2e/%2e%2e/outside.txt', '/assets/.secret', '/assets/flatcar/', '/assets/nope', '/assets/%00x']) {
      const res = await fetch(`${base}${path}`);
      assert.ok(res.status === 403 || res.status === 404 || res.status === 400, `${path}: ${res.status}`);
      const text = await res.text();
      assert.doesNotMatch(text, /outside the assets directory|dotfile|"name": "bootwright"/, path);
    }
  });

  it('nothing in the directory runs on the service\'s origin: nosniff, a sandboxing CSP, attachment, and no active type', async () => {
    for (const [path, type] of [
      ['/assets/page.html', 'application/octet-stream'],
      ['/assets/image.svg', 'application/octet-stream'],
      ['/assets/notes.txt', 'text/plain; charset=utf-8'],
      [KPATH, 'application/octet-stream'],
    ] as const) {
      const res = await fetch(`${base}${path}`);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get('content-type'), type, path);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', path);
      assert.equal(res.headers.get('content-security-policy'), "sandbox; default-src 'none'", path);
      assert.equal(res.headers.get('content-disposition'), 'attachment', path);
      await res.arrayBuffer();
    }
  });

  it('follows a symlink that stays in the directory, never one that leaves it', async () => {
    const inside = await fetch(`${base}/assets/current.vmlinuz`);
    assert.equal(inside.status, 200);
    assert.ok(Buffer.from(await inside.arrayBuffer()).equals(KERNEL));
    const outside = await fetch(`${base}/assets/escape`);
    assert.equal(outside.status, 404);
    assert.doesNotMatch(await outside.text(), /outside the assets directory/);
  });

  it('is not rate limited per address, as the other firmware routes (a boot storm behind one NAT address)', async () => {
    const limited = await testService({ assetsDir: assets, rateLimitMax: 2 });
    try {
      for (let i = 0; i < 6; i++) assert.equal((await limited.app.inject({ url: '/assets/notes.txt' })).statusCode, 200, `fetch ${String(i + 1)}`);
    } finally {
      await limited.app.close();
    }
  });

  it('without BOOTWRIGHT_ASSETS_DIR there is no /assets route; a missing directory is refused at start, naming the variable', async () => {
    const plain = await testService();
    try {
      assert.equal((await plain.app.inject({ url: KPATH })).statusCode, 404);
    } finally {
      await plain.app.close();
    }
    await assert.rejects(testService({ assetsDir: join(root, 'missing') }), (e) => e instanceof ConfigError && e.message.includes('BOOTWRIGHT_ASSETS_DIR'));
  });
});
