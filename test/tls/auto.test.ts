/**
 * BOOTWRIGHT_TLS=auto (src/tls/auto.ts): the CA and serving certificate are generated
 * once into the data directory with mode 0600, the CA is kept across starts, and the
 * serving certificate names the hosts asked for and is reissued when they change or it
 * nears expiry. Checked with Node's own X.509 parser and with openssl (test side only).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ensureAutoTls, namesHost, servingHosts, TLS_DIR } from '../../src/tls/auto.js';

const leafOf = (file: string) => new X509Certificate(readFileSync(file, 'utf8'));

describe('ensureAutoTls', () => {
  it('generates a CA and a serving certificate for the hosts, every file 0600, the directory 0700', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bw-tls-auto-'));
    const auto = await ensureAutoTls(dir, ['10.0.2.100', '127.0.0.1', 'localhost']);
    assert.deepEqual(auto.created, { ca: true, serving: true });
    for (const f of ['ca.crt', 'ca.key', 'server.crt', 'server.key']) assert.equal(statSync(join(dir, TLS_DIR, f)).mode & 0o777, 0o600, f);
    assert.equal(statSync(join(dir, TLS_DIR)).mode & 0o777, 0o700);
    const ca = new X509Certificate(auto.caPem);
    assert.equal(ca.ca, true);
    const leaf = leafOf(auto.certFile);
    assert.equal(leaf.ca, false);
    assert.ok(leaf.checkIssued(ca) && leaf.verify(ca.publicKey));
    assert.equal(leaf.subjectAltName, 'IP Address:10.0.2.100, IP Address:127.0.0.1, DNS:localhost');
    assert.ok(namesHost(leaf, '10.0.2.100') && namesHost(leaf, 'localhost') && !namesHost(leaf, '10.0.2.2') && !namesHost(leaf, 'example.com'));
    // openssl agrees the chain verifies for TLS servers.
    const out = execFileSync('openssl', ['verify', '-purpose', 'sslserver', '-CAfile', auto.caFile, auto.certFile], { encoding: 'utf8' });
    assert.match(out, /: OK$/m);
    assert.match(execFileSync('openssl', ['x509', '-noout', '-text', '-in', auto.caFile], { encoding: 'utf8' }), /CA:TRUE, pathlen:0/);
  });

  it('keeps the CA across starts; reissues the serving certificate only when the hosts change or it nears expiry', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bw-tls-auto-'));
    const first = await ensureAutoTls(dir, ['10.0.2.100']);
    const serial = leafOf(first.certFile).serialNumber;
    const again = await ensureAutoTls(dir, ['10.0.2.100']);
    assert.deepEqual(again.created, { ca: false, serving: false });
    assert.equal(again.caPem, first.caPem);
    assert.equal(leafOf(again.certFile).serialNumber, serial);
    const moved = await ensureAutoTls(dir, ['192.0.2.7']);
    assert.deepEqual(moved.created, { ca: false, serving: true });
    assert.equal(moved.caPem, first.caPem, 'the CA machines trust is kept');
    assert.equal(leafOf(moved.certFile).subjectAltName, 'IP Address:192.0.2.7');
    const later = await ensureAutoTls(dir, ['192.0.2.7'], new Date(Date.now() + 340 * 86_400_000));
    assert.equal(later.created.serving, true, 'reissued within 30 days of expiry');
  });

  it('refuses to replace half a CA', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bw-tls-auto-'));
    await ensureAutoTls(dir, ['localhost']);
    execFileSync('rm', [join(dir, TLS_DIR, 'ca.key')]);
    await assert.rejects(ensureAutoTls(dir, ['localhost']), /ca\.crt and ca\.key must both exist/);
  });
});

describe('servingHosts', () => {
  it('names the public URL host, a specific listen address and localhost', () => {
    assert.deepEqual(servingHosts('https://10.0.2.100:8443/bw', '127.0.0.1'), ['10.0.2.100', '127.0.0.1', 'localhost']);
    assert.deepEqual(servingHosts('https://[fd00::1]:8443', '0.0.0.0'), ['fd00::1', 'localhost']);
    assert.deepEqual(servingHosts(undefined, 'localhost'), ['localhost']);
  });
});
