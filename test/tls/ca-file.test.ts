/**
 * BOOTWRIGHT_TLS_CA is published (`GET /ca.crt`, pointer configs): only its certificates
 * are, and a file that holds a private key is refused at start, naming the setting, never
 * read further or served.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { publishableCa } from '../../src/api/serve.js';
import { ConfigError } from '../../src/config.js';

const dir = mkdtempSync(join(tmpdir(), 'bw-tls-ca-'));
execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', join(dir, 'ca.key'), '-out', join(dir, 'ca.crt'), '-subj', '/CN=site CA', '-days', '30'], { stdio: 'ignore' });
const cert = readFileSync(join(dir, 'ca.crt'), 'utf8');
const key = readFileSync(join(dir, 'ca.key'), 'utf8');

describe('BOOTWRIGHT_TLS_CA', () => {
  it('publishes its certificates only', () => {
    assert.equal(publishableCa(`# the site CA\n${cert}trailing notes\n`, 'ca.pem'), cert);
    assert.equal(publishableCa(`${cert}${cert}`, 'ca.pem'), `${cert.trimEnd()}\n${cert}`);
  });

  it('refuses a file holding a private key, or no certificate, naming the setting and not the key', () => {
    for (const text of [`${cert}${key}`, `${key}${cert}`, key.replace('PRIVATE KEY', 'EC PRIVATE KEY').replace('PRIVATE KEY-----\n', 'PRIVATE KEY-----\n')]) {
      assert.throws(() => publishableCa(text, 'bundle.pem'), (e) => e instanceof ConfigError && e.message.startsWith("tlsCa (BOOTWRIGHT_TLS_CA) bundle.pem: holds a private key") && !e.message.includes(key.split('\n')[1]!));
    }
    assert.throws(() => publishableCa('not a certificate\n', 'x.pem'), /holds no PEM certificate/);
  });

  it('bootwright serve refuses to start on such a file (exit 2), naming it', () => {
    writeFileSync(join(dir, 'bundle.pem'), `${cert}${key}`);
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', '--data-dir', join(dir, 'data'), '--port', '0'], { encoding: 'utf8', env: { ...process.env, BOOTWRIGHT_TLS_CA: join(dir, 'bundle.pem') }, timeout: 60_000 });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /tlsCa \(BOOTWRIGHT_TLS_CA\) .*bundle\.pem: holds a private key/);
    assert.ok(!r.stderr.includes(key.split('\n')[1]!));
  });
});
