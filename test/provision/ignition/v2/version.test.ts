import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { legacySpecAtMost } from '../../../../src/provision/ignition/v2/version.js';
import { resolveIgnitionVersion, servedIgnitionVersion } from '../../../../src/render.js';
import { RequestError } from '../../../../src/errors.js';

describe('legacySpecAtMost', () => {
  // Ignition v0.x accepts a config whose version is at or below its own 2.x spec, so only
  // an Ignition speaking 2.3.0 or later can read the 2.3.0 bootwright writes.
  const table: [string, string | undefined][] = [
    ['2.3.0', '2.3.0'],
    ['2.3', '2.3.0'],
    ['2.3.1', '2.3.0'],
    [' 2.3.0 ', '2.3.0'],
    ['2.4.0', '2.3.0'],
    ['2.4.0-experimental', '2.3.0'],
    ['2.9.0', '2.3.0'],
    ['2.3.0-experimental', '2.3.0'],
    ['2.2.0', '2.3.0'],
    ['2.2', '2.3.0'],
    ['2.1.0', '2.3.0'],
    ['2.0.0', '2.3.0'],
    ['1', undefined],
    ['1.0.0', undefined],
    ['3.0.0', undefined],
    ['', undefined],
    ['2', undefined],
    ['v2.3.0', undefined],
  ];
  for (const [requested, expected] of table) {
    it(`${JSON.stringify(requested)} → ${String(expected)}`, () => assert.equal(legacySpecAtMost(requested), expected));
  }
});

describe('servedIgnitionVersion / resolveIgnitionVersion', () => {
  it('3.x keeps the highest supported spec not above it; 2.3 and later 2.x give 2.3.0', () => {
    assert.equal(servedIgnitionVersion('3.9.0'), '3.6.0');
    assert.equal(servedIgnitionVersion('3.0'), '3.0.0');
    assert.equal(servedIgnitionVersion('2.4.0'), '2.3.0');
    assert.equal(servedIgnitionVersion('2.2.0'), '2.3.0');
    assert.equal(servedIgnitionVersion('2.0.0'), '2.3.0');
    assert.equal(servedIgnitionVersion('1.0.0'), undefined);
    assert.equal(resolveIgnitionVersion('2.3.0', 'f'), '2.3.0');
  });

  it('refuses 1.x and 4.0.0 naming the field', () => {
    for (const v of ['1.0.0', '4.0.0']) {
      assert.throws(
        () => resolveIgnitionVersion(v, 'Accept'),
        (e: unknown) => e instanceof RequestError && e.problems[0]!.path === 'Accept' && e.problems[0]!.message === `Ignition spec ${v} is not supported; bootwright emits 2.3.0 and 3.0.0 to 3.6.0`,
      );
    }
  });
});
