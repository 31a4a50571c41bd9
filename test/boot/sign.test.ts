import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError } from '../../src/config.js';
import {
  bootstrapUrl,
  decodeConfiguredKey,
  IGNITION_PATH,
  KEY_FILE,
  loadOrCreateKey,
  nocloudPrefix,
  routeUrl,
  signedUrl,
  signPath,
  verifySignature,
  splitExpiry,
} from '../../src/boot/sign.js';

const KEY = Buffer.alloc(32, 7);
const OTHER_KEY = Buffer.alloc(32, 8);
const NOW = 1_700_000_000;

describe('signPath', () => {
  it('is base64url HMAC-SHA256 over machine\\npath\\nexp', () => {
    const { exp, sig } = signPath(KEY, 'node-1', '/ignition', NOW + 3600);
    assert.equal(exp, '1700003600');
    assert.equal(sig, createHmac('sha256', KEY).update('node-1\n/ignition\n1700003600').digest('base64url'));
    assert.match(sig, /^[A-Za-z0-9_-]{43}$/);
  });

  it('refuses a path without a leading slash, line breaks and bad expiries', () => {
    assert.throws(() => signPath(KEY, 'node-1', 'ignition', NOW), TypeError);
    assert.throws(() => signPath(KEY, 'node\n1', '/ignition', NOW), TypeError);
    assert.throws(() => signPath(KEY, '', '/ignition', NOW), TypeError);
    assert.throws(() => signPath(KEY, 'node-1', '/ignition', 1.5), TypeError);
    assert.throws(() => signPath(KEY, 'node-1', '/ignition', -1), TypeError);
  });
});

describe('verifySignature', () => {
  const { exp, sig } = signPath(KEY, 'node-1', '/ignition', NOW + 60);

  it('accepts a genuine signature until its expiry', () => {
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', exp, sig, NOW), 'ok');
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', exp, sig, NOW + 59), 'ok');
  });

  it('says expired from the expiry second on', () => {
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', exp, sig, NOW + 60), 'expired');
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', exp, sig, NOW + 86400), 'expired');
  });

  it('refuses another machine, path, expiry or key', () => {
    assert.equal(verifySignature(KEY, 'node-2', '/ignition', exp, sig, NOW), 'invalid');
    assert.equal(verifySignature(KEY, 'node-1', nocloudPrefix('node-1'), exp, sig, NOW), 'invalid');
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', String(NOW + 61), sig, NOW), 'invalid');
    assert.equal(verifySignature(OTHER_KEY, 'node-1', '/ignition', exp, sig, NOW), 'invalid');
  });

  it('refuses tampered and malformed signatures and expiries, even when expired', () => {
    const flipped = (sig.startsWith('A') ? 'B' : 'A') + sig.slice(1);
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', exp, flipped, NOW), 'invalid');
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', exp, flipped, NOW + 3600), 'invalid');
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', exp, `${sig}=`, NOW), 'invalid');
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', exp, sig.slice(1), NOW), 'invalid');
    // Standard base64 with padding (44 characters) is not the URL form.
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', exp, Buffer.from(sig, 'base64url').toString('base64'), NOW), 'invalid');
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', `0${exp}`, sig, NOW), 'invalid');
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', `${exp}.0`, sig, NOW), 'invalid');
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', '', sig, NOW), 'invalid');
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', exp, '', NOW), 'invalid');
  });

  it('accepts only the canonical spelling of the last base64url character', () => {
    // 32 bytes = 43 characters whose last carries 2 unused bits: 4 spellings decode alike.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(sig.at(-1)!);
    const alias = sig.slice(0, -1) + alphabet[last ^ 1]!;
    assert.deepEqual(Buffer.from(alias, 'base64url'), Buffer.from(sig, 'base64url'));
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', exp, alias, NOW), 'invalid');
  });
});

describe('signedUrl', () => {
  it('puts machine, exp and sig in the query of the Ignition route', () => {
    const url = new URL(signedUrl('http://10.0.0.1:8080', IGNITION_PATH, 'node-1', KEY, 3600, NOW));
    assert.equal(url.origin, 'http://10.0.0.1:8080');
    assert.equal(url.pathname, '/ignition');
    assert.deepEqual([...url.searchParams.keys()], ['machine', 'exp', 'sig']);
    assert.equal(url.searchParams.get('machine'), 'node-1');
    assert.equal(url.searchParams.get('exp'), '1700003600');
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', url.searchParams.get('exp')!, url.searchParams.get('sig')!, NOW), 'ok');
  });

  it('puts exp and sig in the path of the NoCloud prefix, so every appended file verifies', () => {
    const seed = signedUrl('http://10.0.0.1:8080', nocloudPrefix('node-1'), 'node-1', KEY, 3600, NOW);
    const m = /^http:\/\/10\.0\.0\.1:8080\/nocloud\/node-1\/(\d+)\/([A-Za-z0-9_-]{43})\/$/.exec(seed);
    assert.ok(m, seed);
    for (const file of ['meta-data', 'user-data', 'vendor-data', 'network-config']) {
      // cloud-init builds the URL as seed + file name (util.read_seeded).
      const parts = new URL(`${seed}${file}`).pathname.split('/');
      assert.deepEqual(parts.slice(0, 3), ['', 'nocloud', 'node-1']);
      assert.equal(parts[5], file);
      assert.equal(verifySignature(KEY, parts[2]!, nocloudPrefix(parts[2]!), parts[3]!, parts[4]!, NOW), 'ok');
    }
  });

  it('keeps a base path prefix and drops the base query', () => {
    assert.equal(routeUrl('https://boot.example.com/bw/?x=1', '/ignition').href, 'https://boot.example.com/bw/ignition');
    const url = signedUrl('https://boot.example.com/bw', IGNITION_PATH, 'node-1', KEY, 60, NOW);
    assert.ok(url.startsWith('https://boot.example.com/bw/ignition?machine=node-1&exp=1700000060&sig='), url);
  });

  it('defaults to a one-hour lifetime from the system clock', () => {
    const before = Math.floor(Date.now() / 1000);
    const exp = Number(new URL(signedUrl('http://h', IGNITION_PATH, 'n', KEY)).searchParams.get('exp'));
    assert.ok(exp >= before + 3600 && exp <= Math.floor(Date.now() / 1000) + 3600, String(exp));
  });

  it('refuses bad base URLs, machine ids, lifetimes and prefixes naming another machine', () => {
    assert.throws(() => signedUrl('10.0.0.1:8080', IGNITION_PATH, 'n', KEY, 60, NOW), TypeError);
    assert.throws(() => signedUrl('ftp://h', IGNITION_PATH, 'n', KEY, 60, NOW), TypeError);
    assert.throws(() => signedUrl('http://u:p@h', IGNITION_PATH, 'n', KEY, 60, NOW), TypeError);
    assert.throws(() => signedUrl('http://h', IGNITION_PATH, 'Node_1', KEY, 60, NOW), TypeError);
    assert.throws(() => signedUrl('http://h', IGNITION_PATH, 'n', KEY, 0, NOW), TypeError);
    assert.throws(() => signedUrl('http://h', nocloudPrefix('other'), 'n', KEY, 60, NOW), TypeError);
  });

  it('bootstrapUrl picks the route by format', () => {
    assert.equal(bootstrapUrl('ignition', 'http://h', 'n', KEY, 60, NOW), signedUrl('http://h', '/ignition', 'n', KEY, 60, NOW));
    assert.equal(bootstrapUrl('cloud-config', 'http://h', 'n', KEY, 60, NOW), signedUrl('http://h', '/nocloud/n/', 'n', KEY, 60, NOW));
  });
});

describe('URL-signing key', () => {
  const dirs: string[] = [];
  const tmp = () => {
    const d = mkdtempSync(path.join(os.tmpdir(), 'bootwright-key-'));
    dirs.push(d);
    return d;
  };
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('generates 32 random bytes with mode 0600 and reuses them on restart', () => {
    const dataDir = path.join(tmp(), 'data');
    const first = loadOrCreateKey(dataDir);
    assert.equal(first.created, true);
    assert.equal(first.source, 'file');
    assert.equal(first.path, path.join(dataDir, KEY_FILE));
    assert.equal(first.key.length, 32);
    assert.deepEqual(readFileSync(first.path), first.key);
    assert.equal(statSync(first.path).mode & 0o777, 0o600);
    assert.equal(statSync(dataDir).mode & 0o777, 0o700);
    const second = loadOrCreateKey(dataDir);
    assert.equal(second.created, false);
    assert.deepEqual(second.key, first.key);
    assert.notDeepEqual(loadOrCreateKey(tmp()).key, first.key);
  });

  it('prefers a configured key, hex or base64, and writes no file', () => {
    const dataDir = tmp();
    const hex = 'ab'.repeat(32);
    assert.deepEqual(loadOrCreateKey(dataDir, hex), { key: Buffer.from(hex, 'hex'), source: 'config', created: false });
    const raw = Buffer.from(Array.from({ length: 48 }, (_, i) => i * 5));
    assert.deepEqual(loadOrCreateKey(dataDir, raw.toString('base64')).key, raw);
    assert.deepEqual(loadOrCreateKey(dataDir, raw.toString('base64url')).key, raw);
    assert.throws(() => readFileSync(path.join(dataDir, KEY_FILE)), { code: 'ENOENT' });
  });

  it('refuses short or undecodable configured keys without quoting them', () => {
    for (const bad of ['ab'.repeat(31), Buffer.alloc(16).toString('base64'), 'not a key!']) {
      assert.throws(
        () => decodeConfiguredKey(bad),
        (e: unknown) => e instanceof ConfigError && !e.message.includes(bad),
      );
    }
  });

  it('refuses a key file of the wrong size instead of replacing it', () => {
    const dataDir = tmp();
    writeFileSync(path.join(dataDir, KEY_FILE), 'short');
    assert.throws(() => loadOrCreateKey(dataDir), ConfigError);
    assert.equal(readFileSync(path.join(dataDir, KEY_FILE), 'utf8'), 'short');
  });
});

describe('signed URLs bound to a client address (issue 16)', () => {
  it('the signature covers the address: a fourth line of the HMAC message', () => {
    const { exp, sig } = signPath(KEY, 'node-1', '/ignition', NOW + 60, '10.0.0.5');
    assert.equal(sig, createHmac('sha256', KEY).update(`node-1\n/ignition\n${exp}\n10.0.0.5`).digest('base64url'));
    assert.notEqual(sig, signPath(KEY, 'node-1', '/ignition', NOW + 60).sig);
    assert.throws(() => signPath(KEY, 'node-1', '/ignition', NOW + 60, '10.0.0.5\nx'), TypeError);
  });

  it('verifies from the bound address, is elsewhere from another, invalid with the address edited or dropped', () => {
    const { exp, sig } = signPath(KEY, 'node-1', '/ignition', NOW + 60, '10.0.0.5');
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', exp, sig, NOW, { client: '10.0.0.5', from: '10.0.0.5' }), 'ok');
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', exp, sig, NOW, { client: '10.0.0.5', from: '10.0.0.6' }), 'elsewhere');
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', exp, sig, NOW, { client: '10.0.0.6', from: '10.0.0.6' }), 'invalid');
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', exp, sig, NOW), 'invalid');
    assert.equal(verifySignature(KEY, 'node-1', '/ignition', exp, sig, NOW + 60, { client: '10.0.0.5', from: '10.0.0.6' }), 'expired');
  });

  it('signedUrl carries the address: client= in the query, <exp>~<client> in a NoCloud prefix', () => {
    const ign = new URL(signedUrl('https://h:8443', IGNITION_PATH, 'node-1', KEY, 60, NOW, 'fd00::5'));
    assert.deepEqual([...ign.searchParams.keys()], ['machine', 'exp', 'client', 'sig']);
    assert.equal(ign.searchParams.get('client'), 'fd00::5');
    const seed = signedUrl('https://h:8443', nocloudPrefix('node-1'), 'node-1', KEY, 60, NOW, '10.0.0.5');
    const segment = new URL(seed).pathname.split('/')[3]!;
    assert.deepEqual(splitExpiry(segment), { exp: String(NOW + 60), client: '10.0.0.5' });
    assert.deepEqual(splitExpiry(String(NOW)), { exp: String(NOW) });
  });
});
