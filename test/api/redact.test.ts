/**
 * Signed URLs in logs (src/api/server.ts `redactSignedUrl`): a signature never reaches a
 * log line however the URL spells it. The spellings an attacker pass found leaking
 * (`%73ig=`, `/%6eocloud/`, `//nocloud/`, a signature after `../`) and, as a property,
 * any mix of percent-escapes the router and query parser decode.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { redactSignedUrl } from '../../src/api/server.js';

/** A signature as src/boot/sign.ts makes them: 32 bytes, base64url, 43 characters. */
const signature = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('base64url'));

/** `text` with some of its characters percent-escaped (upper- or lower-case hex), as a client may send them. */
const spelled = (text: string) =>
  fc.array(fc.constantFrom('raw', 'upper', 'lower'), { minLength: text.length, maxLength: text.length }).map((how) =>
    Array.from(text)
      .map((c, i) => {
        const hex = c.charCodeAt(0).toString(16).padStart(2, '0');
        return how[i] === 'raw' ? c : `%${how[i] === 'upper' ? hex.toUpperCase() : hex}`;
      })
      .join(''),
  );

/** Every percent-escape decoded (what the router and the query parser read). */
const decoded = (url: string) => url.replace(/%([0-9A-Fa-f]{2})/g, (_e, h: string) => String.fromCharCode(parseInt(h, 16)));

describe('signed URLs in logs', () => {
  it('the spellings that leaked are redacted', () => {
    const sig = 'Xy-7_abcdefghijABCDEFGHIJ0123456789klmnopqr';
    assert.equal(redactSignedUrl(`/ignition?machine=m1&exp=17&sig=${sig}`), '/ignition?machine=m1&exp=17&sig=[redacted]');
    assert.equal(redactSignedUrl(`/ignition?machine=m1&exp=17&%73ig=${sig}`), '/ignition?machine=m1&exp=17&%73ig=[redacted]');
    assert.equal(redactSignedUrl(`/%6eocloud/m2/17/${sig}/meta-data`), '/%6eocloud/m2/17/[redacted]/meta-data');
    assert.equal(redactSignedUrl(`//nocloud/m2/17/${sig}/meta-data`), '//nocloud/m2/17/[redacted]/meta-data');
    assert.equal(redactSignedUrl(`/nocloud/m2/17/x/../${sig}/meta-data`), '/nocloud/m2/17/[redacted]/../[redacted]/meta-data');
  });

  it('no spelling of a signature survives, in the query or a NoCloud path', () => {
    fc.assert(
      fc.property(
        signature,
        fc.constantFrom('/ignition', '/report', '/nope'),
        fc.constantFrom('', '/', '/x/..'),
        signature.chain((sig) => fc.tuple(fc.constant(sig), spelled(sig), spelled('sig'), spelled('nocloud'))),
        (_s, route, prefix, [sig, sigSpelled, key, nocloud]) => {
          for (const url of [`${route}?machine=m1&exp=17&${key}=${sigSpelled}`, `${prefix}/${nocloud}/m1/17/${sigSpelled}/user-data`, `${route}?other=${sigSpelled}`]) {
            const out = redactSignedUrl(url);
            assert.ok(!decoded(out).includes(sig), `${url} → ${out}`);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('names stay: a DNS-1123 name of any length, and URLs without signatures, are logged as they came', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/), (name) => {
        for (const url of [`/v1/machines/${name}`, `/v1/machines/${name}/bootstrap?revision=2`, `/ignition?machine=${name}&exp=17`]) assert.equal(redactSignedUrl(url), url);
      }),
      { numRuns: 300 },
    );
  });
});
