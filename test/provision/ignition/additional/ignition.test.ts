import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readIgnitionConfig } from '../../../../src/provision/ignition/additional/ignition.js';

describe('readIgnitionConfig', () => {
  it('reads a 3.x config, dropping nulls and ignition.version, in Ignition field order', () => {
    const r = readIgnitionConfig({ storage: { files: [{ mode: 420, path: '/a', user: null }] }, ignition: { version: '3.2.0' } }, true);
    assert.deepEqual(r, { config: { storage: { files: [{ path: '/a', mode: 420 }] } }, version: '3.2.0', problems: [], warnings: [] });
  });

  it('refuses spec 2.x with a message, and experimental or unknown specs', () => {
    assert.match(readIgnitionConfig({ ignition: { version: '2.3.0' } }, true).problems[0]!.message, /2\.3\.0 is not accepted: give an Ignition 3\.x config/);
    assert.equal(readIgnitionConfig({ ignition: { version: '3.5.0-experimental' } }, true).problems[0]!.at, 'ignition.version');
    assert.equal(readIgnitionConfig({ ignition: { version: 3 } }, true).problems[0]!.at, 'ignition.version');
  });

  it('checks types and unknown keys (strict: errors; strict false: warnings)', () => {
    const doc = { ignition: { version: '3.0.0' }, storage: { files: [{ path: '/a', mode: '0644', contnts: {} }] } };
    assert.deepEqual(readIgnitionConfig(doc, true).problems, [
      { at: 'storage.files[0].contnts', message: 'unknown key' },
      { at: 'storage.files[0].mode', message: 'must be an integer' },
    ]);
    const lax = readIgnitionConfig(doc, false);
    assert.deepEqual(lax.warnings, ['storage.files[0].contnts: unknown key, ignored']);
    assert.equal(lax.problems.length, 1);
  });

  it('refuses a field newer than the declared spec', () => {
    const r = readIgnitionConfig({ ignition: { version: '3.1.0' }, kernelArguments: { shouldExist: ['quiet'] } }, true);
    assert.deepEqual(r.problems, [{ at: 'kernelArguments', message: 'kernelArguments needs Ignition spec 3.3.0, but the config is Ignition spec 3.1.0' }]);
  });
});
