/**
 * The boot report rule (src/provision/plan/report.ts): the kubeadm line keeps the
 * sentinel's meaning and records kubeadm's real exit code, run by the real `sh`; the
 * scrubbing removes every token- or key-shaped string.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { KUBEADM_LOG, KUBEADM_RC, reportedKubeadmLine, scrubSecrets } from '../../../src/provision/plan/report.js';
import { BOOTSTRAP_STATE_DIR } from '../../../src/provision/plan/protected.js';

describe('reportedKubeadmLine', () => {
  it('records the exit code (0–255), writes the sentinel only on 0, keeps the output (mode 0600) and prints it too', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bootwright-report-'));
    try {
      for (const code of [0, 1, 2, 7, 127, 255]) {
        const sentinel = join(dir, `sentinel-${code}`);
        const line = reportedKubeadmLine(`sh -c 'echo out; echo err >&2; exit ${code}'`, sentinel).replaceAll(BOOTSTRAP_STATE_DIR, join(dir, 'state'));
        const run = spawnSync('sh', ['-c', line], { encoding: 'utf8' });
        assert.equal(run.stdout, 'out\nerr\n');
        assert.equal(readFileSync(KUBEADM_RC.replace(BOOTSTRAP_STATE_DIR, join(dir, 'state')), 'utf8'), `${code}\n`);
        assert.equal(readFileSync(KUBEADM_LOG.replace(BOOTSTRAP_STATE_DIR, join(dir, 'state')), 'utf8'), 'out\nerr\n');
        assert.equal(existsSync(sentinel), code === 0);
      }
      const mode = spawnSync('stat', ['-c', '%a', KUBEADM_LOG.replace(BOOTSTRAP_STATE_DIR, join(dir, 'state'))], { encoding: 'utf8' }).stdout.trim();
      assert.equal(mode, '600');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('scrubSecrets', () => {
  it('removes every bootstrap-token- and certificate-key-shaped string, and the known values', () => {
    const lower = fc.constantFrom(...Array.from('abcdefghijklmnopqrstuvwxyz0123456789'));
    const token = fc.tuple(fc.string({ unit: lower, minLength: 6, maxLength: 6 }), fc.string({ unit: lower, minLength: 16, maxLength: 16 })).map(([a, b]) => `${a}.${b}`);
    const key = fc.string({ unit: fc.constantFrom(...Array.from('0123456789abcdefABCDEF')), minLength: 64, maxLength: 64 });
    fc.assert(
      fc.property(fc.string(), fc.oneof(token, key), fc.string(), (before, secret, after) => {
        const out = scrubSecrets(`${before} ${secret} ${after}`, ['s3cr3t-value']);
        assert.ok(!out.includes(secret), out);
      }),
    );
    assert.equal(scrubSecrets('password s3cr3t-value here', ['s3cr3t-value']), 'password <redacted> here');
  });

  it("removes a known bootstrap token's secret half on its own, and PEM private keys (an attacker pass found the half kept)", () => {
    const lower = fc.constantFrom(...Array.from('abcdefghijklmnopqrstuvwxyz0123456789'));
    fc.assert(
      fc.property(fc.string({ unit: lower, minLength: 6, maxLength: 6 }), fc.string({ unit: lower, minLength: 16, maxLength: 16 }), fc.string(), (id, secret, around) => {
        const out = scrubSecrets(`${around}--token ${id} ${secret}${around}`, [`${id}.${secret}`]);
        assert.ok(!out.includes(secret), out);
      }),
    );
    const pem = '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg\n-----END EC PRIVATE KEY-----';
    assert.equal(scrubSecrets(`key:\n${pem}\nnext line`), 'key:\n<redacted>\nnext line');
    assert.equal(scrubSecrets('cut: -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg'), 'cut: <redacted>');
  });
});
