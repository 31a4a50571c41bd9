/**
 * HTML form bodies (src/api/body.ts `parseForm`): what URLSearchParams (the WHATWG
 * parser) reads from any well-formed form, and a refusal where it would silently put
 * U+FFFD in place of bytes that are not UTF-8.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseForm } from '../../src/api/body.js';
import { RequestError } from '../../src/errors.js';

const TYPE = 'application/x-www-form-urlencoded';

describe('form bodies', () => {
  it('read as the WHATWG parser reads them, for any names and values (as browsers and curl encode them)', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.tuple(fc.string({ unit: 'grapheme', minLength: 1 }), fc.string({ unit: 'grapheme' })), { selector: ([name]) => name, maxLength: 8 }), (pairs) => {
        const text = new URLSearchParams(pairs).toString();
        assert.deepEqual({ ...parseForm(TYPE, Buffer.from(text)) }, Object.fromEntries(new URLSearchParams(text)));
      }),
      { numRuns: 300 },
    );
    // Hand-written forms too: a lone %, an empty pair, a name without a value.
    for (const text of ['a=50%&b', 'a=1&&b=2', 'x+y=%20z+', 'k=']) assert.deepEqual({ ...parseForm(TYPE, Buffer.from(text)) }, Object.fromEntries(new URLSearchParams(text)), text);
  });

  it('refuses what the WHATWG parser would replace: bytes or escapes that are not UTF-8, another charset, a name twice', () => {
    const refusal = (contentType: string, body: Buffer) => {
      try {
        parseForm(contentType, body);
      } catch (e) {
        return e instanceof RequestError ? e.problems : (e as Error).name;
      }
      return 'accepted';
    };
    assert.deepEqual(refusal(TYPE, Buffer.from([0x61, 0x3d, 0xe9, 0xff])), [{ path: '', message: 'the body is not well-formed UTF-8' }]);
    assert.deepEqual(refusal(TYPE, Buffer.from('a=%E9%FF')), [{ path: 'a', message: 'has a percent-escape that is not UTF-8' }]);
    assert.deepEqual(refusal(TYPE, Buffer.from('%FF=1')), [{ path: '%FF', message: 'has a percent-escape that is not UTF-8' }]);
    assert.deepEqual(refusal(TYPE, Buffer.from('a=1&a=2')), [{ path: 'a', message: 'is given more than once' }]);
    assert.equal(refusal(`${TYPE}; charset=iso-8859-1`, Buffer.from('a=1')), 'UnsupportedCharsetError');
    assert.deepEqual({ ...parseForm(`${TYPE}; charset=UTF-8`, Buffer.from('a=caf%C3%A9')) }, { a: 'café' });
  });
});
