/**
 * BOOTWRIGHT_TLS=auto (src/tls/auto.ts): the CA and serving certificate are generated
 * once into the data directory with mode 0600, the CA is kept across starts, and the
 * serving certificate names the hosts asked for and is reissued when they change or it
 * nears expiry. Checked with Node's own X.509 parser and with openssl (test side only).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CaRotationNeeded, ensureAutoTls, namesHost, servingHosts, TLS_DIR } from '../../src/tls/auto.js';

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
    const later = await ensureAutoTls(dir, ['10.0.2.100'], new Date(Date.now() + 340 * 86_400_000));
    assert.equal(later.created.serving, true, 'reissued within 30 days of expiry');
  });

  it('the CA may sign only for its hosts (critical name constraints, checked by openssl), for two years; elsewhere it must be rotated', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bw-tls-auto-'));
    const hosts = ['10.0.2.100', 'boot.example', 'localhost'];
    const auto = await ensureAutoTls(dir, hosts);
    assert.equal(auto.constrained, true);
    const ca = new X509Certificate(auto.caPem);
    assert.ok(Date.parse(ca.validTo) - Date.now() <= 731 * 86_400_000, `valid to ${ca.validTo}`);
    const text = execFileSync('openssl', ['x509', '-noout', '-text'], { input: auto.caPem, encoding: 'utf8' });
    assert.match(text, /X509v3 Name Constraints: critical\n\s+Permitted:\n\s+IP:10\.0\.2\.100\/255\.255\.255\.255\n\s+DNS:boot\.example\n\s+DNS:localhost\n\s+Excluded:\n\s+IP:0:0:0:0:0:0:0:0\/0:0:0:0:0:0:0:0/);
    // openssl verify: the serving certificate passes; one the same key signs for another name does not.
    const caFile = join(dir, TLS_DIR, 'ca.crt');
    execFileSync('openssl', ['verify', '-CAfile', caFile, auto.certFile]);
    const forged = join(dir, 'forged.pem');
    const key = join(dir, 'forged.key');
    execFileSync('openssl', ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-subj', '/CN=www.bank.example', '-out', join(dir, 'forged.csr')], { stdio: 'ignore' });
    writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=DNS:www.bank.example\n');
    execFileSync('openssl', ['x509', '-req', '-in', join(dir, 'forged.csr'), '-CA', caFile, '-CAkey', join(dir, TLS_DIR, 'ca.key'), '-set_serial', '7', '-days', '1', '-extfile', join(dir, 'ext.cnf'), '-out', forged], { stdio: 'ignore' });
    const verdict = spawnSync('openssl', ['verify', '-CAfile', caFile, forged], { encoding: 'utf8' });
    assert.notEqual(verdict.status, 0);
    assert.match(verdict.stdout + verdict.stderr, /permitted subtree violation|name constraints/i);
    // A host outside the constraints: refused at start, naming the rotation.
    await assert.rejects(ensureAutoTls(dir, ['192.0.2.7']), (e) => e instanceof CaRotationNeeded && e.message.includes('may sign only for boot.example, localhost, 10.0.2.100, not 192.0.2.7: rotate it'));
    // Rotating: the directory moved aside, the next start makes a new CA for the new hosts.
    renameSync(join(dir, TLS_DIR), join(dir, 'tls.old'));
    const rotated = await ensureAutoTls(dir, ['192.0.2.7', 'localhost']);
    assert.deepEqual(rotated.created, { ca: true, serving: true });
    assert.notEqual(rotated.caPem, auto.caPem);
  });

  it('a CA made before name constraints (by an earlier release) keeps serving any host, and says so', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bw-tls-auto-'));
    mkdirSync(join(dir, TLS_DIR), { mode: 0o700 });
    // The CA v0.1.0 made: ECDSA P-256, no name constraints.
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', join(dir, TLS_DIR, 'ca.key'), '-out', join(dir, TLS_DIR, 'ca.crt'), '-subj', '/CN=bootwright CA 0001', '-days', '3650', '-addext', 'basicConstraints=critical,CA:true,pathlen:0', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], { stdio: 'ignore' });
    const old = await ensureAutoTls(dir, ['192.0.2.7']);
    assert.equal(old.constrained, false);
    assert.deepEqual(old.created, { ca: false, serving: true });
    assert.equal(leafOf(old.certFile).subjectAltName, 'IP Address:192.0.2.7');
    execFileSync('openssl', ['verify', '-CAfile', join(dir, TLS_DIR, 'ca.crt'), old.certFile]);
  });

  it('refuses to replace half a CA', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bw-tls-auto-'));
    await ensureAutoTls(dir, ['localhost']);
    execFileSync('rm', [join(dir, TLS_DIR, 'ca.crt')]);
    await assert.rejects(ensureAutoTls(dir, ['localhost']), /ca\.key is there without ca\.crt/);
  });

  it('runs with the CA key offline while the serving certificate holds; asks for it back to issue one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bw-tls-auto-'));
    const first = await ensureAutoTls(dir, ['10.0.2.100']);
    assert.equal(first.caKeyOnline, true);
    const offline = join(dir, 'ca.key.offline');
    renameSync(join(dir, TLS_DIR, 'ca.key'), offline);
    const serial = leafOf(first.certFile).serialNumber;
    const without = await ensureAutoTls(dir, ['10.0.2.100']);
    assert.deepEqual([without.caKeyOnline, without.renewalDue, without.created], [false, false, { ca: false, serving: false }]);
    assert.equal(leafOf(without.certFile).serialNumber, serial);
    // Near expiry it keeps serving, and says the key is needed.
    const soon = await ensureAutoTls(dir, ['10.0.2.100'], new Date(Date.now() + 340 * 86_400_000));
    assert.deepEqual([soon.renewalDue, soon.created.serving], [true, false]);
    // An expired or missing certificate needs the key: the start stops, naming the way back.
    await assert.rejects(ensureAutoTls(dir, ['10.0.2.100'], new Date(Date.now() + 400 * 86_400_000)), /expired on .* and ca\.key is offline: put it back/);
    execFileSync('rm', [join(dir, TLS_DIR, 'server.crt')]);
    await assert.rejects(ensureAutoTls(dir, ['10.0.2.100']), /\(it is missing\) and ca\.key is offline/);
    // Back for one start: reissued by the same CA.
    renameSync(offline, join(dir, TLS_DIR, 'ca.key'));
    const back = await ensureAutoTls(dir, ['10.0.2.100']);
    assert.equal(back.created.serving, true);
    assert.equal(back.caPem, first.caPem, 'the same CA');
  });
});

describe('servingHosts', () => {
  it('names the public URL host, a specific listen address and localhost', () => {
    assert.deepEqual(servingHosts('https://10.0.2.100:8443/bw', '127.0.0.1'), ['10.0.2.100', '127.0.0.1', 'localhost']);
    assert.deepEqual(servingHosts('https://[fd00::1]:8443', '0.0.0.0'), ['fd00::1', 'localhost']);
    assert.deepEqual(servingHosts(undefined, 'localhost'), ['localhost']);
  });
});
