import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gunzipSync, gzipSync } from 'node:zlib';
import { dataUrlResource, decodeDataUrl as decodeInSrc, gzipDeterministic, gzipShared } from '../../../src/provision/ignition/dataurl.js';
import { decodeDataUrl } from '../../support/decode.js';
import { HARD_TEXTS, bulkText, seededBytes } from './plan.js';

const COMPRESSION_COST = ',"compression":"gzip"'.length;

/** Bytes a resource decodes to, as Ignition reads it. */
function decode(r: { source: string; compression?: string }): Buffer {
  const raw = decodeDataUrl(r.source);
  return r.compression === 'gzip' ? gunzipSync(raw) : raw;
}

/** Serialised size of a resource, what "shortest" is measured in. */
const cost = (r: { source: string; compression?: string }) => r.source.length + (r.compression ? COMPRESSION_COST : 0);

describe('dataUrlResource', () => {
  const inputs: [string, Buffer][] = [
    ...Object.entries(HARD_TEXTS).map(([name, text]): [string, Buffer] => [name, Buffer.from(text, 'utf8')]),
    ['invalid UTF-8', Buffer.from([0x61, 0xff, 0xfe, 0x62, 0xc3])],
    ['NUL bytes', Buffer.from('a\0b\0\n')],
    ['random binary 4 KiB', seededBytes(4096)],
    ['1 MiB of text', Buffer.from(bulkText(1 << 20), 'utf8')],
  ];
  for (const gzip of [false, true]) {
    for (const [name, bytes] of inputs) {
      it(`${name} round-trips${gzip ? ' with gzip allowed' : ''}`, () => {
        const r = dataUrlResource(bytes, { gzip });
        assert.ok(/^[\x21-\x7e]*$/.test(r.source), 'only printable ASCII, no space');
        assert.ok(r.source.startsWith('data:,') || r.source.startsWith('data:;base64,'), r.source.slice(0, 20));
        if (!gzip) assert.equal(r.compression, undefined);
        assert.deepEqual(decode(r), bytes);

        // It is the shortest of the allowed forms.
        const b64 = { source: `data:;base64,${bytes.toString('base64')}` };
        assert.ok(cost(r) <= cost(b64));
        const text = bytes.toString('utf8');
        if (Buffer.from(text, 'utf8').equals(bytes)) assert.ok(cost(r) <= cost({ source: `data:,${encodeURIComponent(text)}` }));
        if (gzip) assert.ok(cost(r) <= cost({ compression: 'gzip', source: `data:;base64,${Buffer.from(gzipDeterministic(bytes)).toString('base64')}` }));
      });
    }
  }

  it('percent-encodes text exactly as encodeURIComponent, keeping a BOM', () => {
    assert.deepEqual(dataUrlResource(Buffer.from("a b!'()*~_.-/:\n"), { gzip: false }), { source: "data:,a%20b!'()*~_.-%2F%3A%0A" });
    assert.deepEqual(dataUrlResource(Buffer.from('\ufeffx'), { gzip: false }), { source: 'data:,%EF%BB%BFx' });
    assert.deepEqual(dataUrlResource(Buffer.alloc(0), { gzip: true }), { source: 'data:,' });
  });

  it('uses padded base64 for binary and when shorter', () => {
    assert.deepEqual(dataUrlResource(Buffer.from([0xff, 0x00]), { gzip: false }), { source: 'data:;base64,/wA=' });
    // Mostly non-ASCII text: 3 bytes of UTF-8 → 9 characters percent-encoded, 4 in base64.
    assert.ok(dataUrlResource(Buffer.from('日本語日本語日本語'), { gzip: false }).source.startsWith('data:;base64,'));
  });

  it('gzips only when allowed and strictly smaller', () => {
    const text = Buffer.from('all work and no play makes jack a dull boy\n'.repeat(200));
    const gz = dataUrlResource(text, { gzip: true });
    assert.equal(gz.compression, 'gzip');
    assert.deepEqual(decode(gz), text);
    assert.equal(dataUrlResource(text, { gzip: false }).compression, undefined);
    assert.equal(dataUrlResource(Buffer.from('short text\n'), { gzip: true }).compression, undefined);
    assert.equal(dataUrlResource(seededBytes(4096), { gzip: true }).compression, undefined);
  });

  it('reuses a supplied gzip stream byte for byte', () => {
    const text = Buffer.from('reuse me, do not recompress\n'.repeat(100));
    const supplied = gzipSync(text, { level: 1 }); // not what fflate level 9 would give
    assert.notDeepEqual(Buffer.from(gzipDeterministic(text)), supplied);
    const r = dataUrlResource(text, { gzip: true }, supplied);
    assert.equal(r.compression, 'gzip');
    assert.deepEqual(decodeDataUrl(r.source), supplied);
    // Not allowed: the bytes themselves.
    const plain = dataUrlResource(text, { gzip: false }, supplied);
    assert.equal(plain.compression, undefined);
    assert.deepEqual(decode(plain), text);
  });
});

describe('gzipDeterministic', () => {
  it('has no timestamp or name and is stable', () => {
    const text = Buffer.from(bulkText(10_000));
    const a = Buffer.from(gzipDeterministic(text));
    assert.deepEqual(a.subarray(0, 10), Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 3]), 'ID, deflate, no flags, mtime 0, max compression, Unix');
    assert.deepEqual(Buffer.from(gzipDeterministic(text)), a);
    assert.deepEqual(gunzipSync(a), text);
  });
});

describe('gzipShared', () => {
  it('compresses each content once per thread, to the same bytes as gzipDeterministic', () => {
    const text = Buffer.from(bulkText(4000));
    const first = gzipShared(text);
    // Equal content in another buffer: the remembered stream itself, not a new one.
    assert.equal(gzipShared(Buffer.from(text)), first);
    assert.deepEqual(Buffer.from(first), Buffer.from(gzipDeterministic(text)));
    const other = Buffer.from(text);
    other[0] = other[0]! ^ 1;
    assert.notEqual(gzipShared(other), first);
    assert.deepEqual(gunzipSync(gzipShared(other)), other);
  });
});

describe('decodeDataUrl (src, used by the 2.3.0 translation)', () => {
  it('reads back every encoding dataUrlResource writes, as the test decoder does', () => {
    for (const bytes of [Buffer.from(''), Buffer.from(HARD_TEXTS.percent!), Buffer.from(bulkText(5000)), seededBytes(777)]) {
      const r = dataUrlResource(bytes, { gzip: false });
      assert.deepEqual(Buffer.from(decodeInSrc(r.source)!), bytes);
      assert.deepEqual(Buffer.from(decodeInSrc(r.source)!), decodeDataUrl(r.source));
    }
  });

  it('ignores the media type and its parameters; percent-decodes to raw bytes', () => {
    assert.deepEqual(Buffer.from(decodeInSrc('data:text/plain;charset=utf-8;base64,aGk=')!), Buffer.from('hi'));
    assert.deepEqual(Buffer.from(decodeInSrc('data:,%FF%00a')!), Buffer.from([0xff, 0, 0x61]));
  });

  it('refuses what is not a well-formed data URL', () => {
    for (const bad of ['https://x/y', 'data:abc', 'data:,%ZZ', 'data:,%4', 'data:;base64,aGVsbG8', 'data:;base64,a$==']) assert.equal(decodeInSrc(bad), undefined, bad);
  });
});
