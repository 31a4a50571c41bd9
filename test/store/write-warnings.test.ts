/**
 * Write-time warnings (src/store/write-warnings.ts): which boot references resolve to
 * nothing the service serves, and the `Warning` headers that carry them, read back by the
 * CLI's parser (src/cli/inventory/client.ts `warningTexts`) to the same text for any
 * message, quotes and backslashes included.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { warningTexts } from '../../src/cli/inventory/client.js';
import type { ProfileSpec } from '../../src/store/resources.js';
import { bootPathWarnings, warningHeaders } from '../../src/store/write-warnings.js';

const profile = (kernel: string, initrd: string[] = []): ProfileSpec => ({ role: 'worker', kubernetesVersion: 'v1.33.2', boot: { kernel, initrd, args: [] } });
const paths = (spec: ProfileSpec, base: string, assets?: string) => bootPathWarnings(spec, base, assets).map((w) => w.path);

describe('bootPathWarnings', () => {
  it('relative references under <base>/assets/ warn only without an assets directory; elsewhere on the service always', () => {
    const base = 'http://10.0.0.5:8080/bw';
    assert.deepEqual(paths(profile('assets/vmlinuz', ['assets/initrd']), base), ['spec.boot.kernel', 'spec.boot.initrd[0]']);
    assert.deepEqual(paths(profile('assets/vmlinuz', ['assets/initrd']), base, '/srv/assets'), []);
    // `/assets/x` resolves to the origin's /assets/, outside the /bw prefix.
    assert.deepEqual(paths(profile('/assets/vmlinuz'), base, '/srv/assets'), ['spec.boot.kernel']);
    assert.deepEqual(paths(profile('http://10.0.0.5:8080/bw/assets/vmlinuz'), base), ['spec.boot.kernel']);
  });

  it('another host, tftp, a boot variable or no boot section: no warning', () => {
    const base = 'http://10.0.0.5:8080';
    assert.deepEqual(paths(profile('http://mirror.example/vmlinuz', ['tftp://10.0.0.1/initrd']), base), []);
    assert.deepEqual(paths(profile('${publicUrl}/assets/vmlinuz'), base), []);
    assert.deepEqual(bootPathWarnings({ role: 'worker', kubernetesVersion: 'v1.33.2' }, base, undefined), []);
  });
});

describe('warningHeaders', () => {
  it('each warning reads back as "<field>: <message>" (printable ASCII), at most max plus a count', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ path: fc.string({ maxLength: 20 }), message: fc.string({ maxLength: 60 }) }), { maxLength: 30 }), (warnings) => {
        const headers = new Headers();
        for (const h of warningHeaders(warnings, 20)) headers.append('warning', h);
        const texts = warningTexts(headers);
        const ascii = (t: string) => t.replace(/[^\x20-\x7e]/g, '?');
        assert.deepEqual(texts.slice(0, 20), warnings.slice(0, 20).map((w) => ascii(`${w.path}: ${w.message}`)));
        assert.equal(texts.length, Math.min(warnings.length, 20) + (warnings.length > 20 ? 1 : 0));
      }),
    );
  });
});
