/**
 * The provisioner registry (src/provision/registry.ts): every format and OS has one
 * provisioner chosen unasked, versions resolve to the provisioner that writes them, and a
 * format with no provisioner for the plan's OS is a 422 naming the field that chose it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RequestError } from '../../src/errors.js';
import { FORMATS, OUTPUT_FORMATS } from '../../src/provision/formats.js';
import { TARGET_OS } from '../../src/provision/plan/types.js';
import { PROVISIONERS, selectProvisioner, servedVersion } from '../../src/provision/registry.js';
import type { Provisioner } from '../../src/provision/provisioner.js';
import { makePlan } from './ignition/plan.js';

describe('provisioner registry', () => {
  it('names each provisioner once and each media type once', () => {
    assert.equal(new Set(PROVISIONERS.map((p) => p.name)).size, PROVISIONERS.length);
    assert.equal(new Set(FORMATS.map((f) => f.mediaType)).size, FORMATS.length);
    assert.deepEqual(OUTPUT_FORMATS, ['cloud-config', 'ignition']);
  });

  it('has exactly one default provisioner per format and OS it serves, and every format serves linux', () => {
    for (const f of FORMATS) {
      for (const os of TARGET_OS) {
        const mine = PROVISIONERS.filter((p) => p.format === f && p.os === os);
        if (mine.length === 0) continue;
        // Variants (with `accepts`) may be defaults too; the general one must be exactly one.
        assert.equal(mine.filter((p) => p.default && !p.accepts).length, 1, `${f.name}/${os}`);
      }
      assert.ok(PROVISIONERS.some((p) => p.format === f && p.os === 'linux'), f.name);
    }
  });

  it('gives versioned formats only to provisioners that serve versions', () => {
    for (const p of PROVISIONERS) assert.equal(p.serves !== undefined, p.format.versions !== undefined, p.name);
  });

  it('resolves a requested Ignition spec to the provisioner writing it', () => {
    const plan = makePlan();
    assert.equal(selectProvisioner('ignition', plan, '3.9.0', 'f').provisioner.name, 'ignition');
    assert.equal(selectProvisioner('ignition', plan, '3.9.0', 'f').version, '3.6.0');
    assert.equal(selectProvisioner('ignition', plan, '2.4.0', 'f').provisioner.name, 'ignition-2.3');
    assert.equal(selectProvisioner('ignition', plan, '2.4.0', 'f').version, '2.3.0');
    assert.equal(selectProvisioner('ignition', plan, undefined, 'f').provisioner.name, 'ignition');
    assert.equal(selectProvisioner('cloud-config', plan, '3.4.0', 'f').provisioner.name, 'cloud-init');
    assert.equal(servedVersion('ignition', '1.0.0'), undefined);
    assert.equal(servedVersion('cloud-config', '3.4.0'), undefined);
    assert.throws(
      () => selectProvisioner('ignition', plan, '4.0.0', 'Accept'),
      (e: unknown) => e instanceof RequestError && e.problems[0]!.path === 'Accept' && e.problems[0]!.message === 'Ignition spec 4.0.0 is not supported; bootwright emits 2.3.0 and 3.0.0 to 3.6.0',
    );
  });

  it('a variant listed before the provisioner it refines is chosen for the plans it accepts, and only those', () => {
    const general = PROVISIONERS.find((p) => p.name === 'cloud-init')!;
    const variant: Provisioner = { ...general, name: 'cloud-init-variant', accepts: (plan) => plan.nodeName === 'templated', render: () => ({ body: '## variant\n', warnings: [] }) };
    const list = [variant, ...PROVISIONERS];
    assert.equal(selectProvisioner('cloud-config', makePlan({ nodeName: 'templated' }), undefined, 'f', list).provisioner.name, 'cloud-init-variant');
    assert.equal(selectProvisioner('cloud-config', makePlan(), undefined, 'f', list).provisioner.name, 'cloud-init');
    assert.equal(selectProvisioner('cloud-config', makePlan({ os: 'windows' }), undefined, 'f', list).provisioner.name, 'cloudbase-init');
  });

  it('a format with no provisioner for the plan\'s OS is a 422 at the field that chose the OS', () => {
    assert.throws(
      () => selectProvisioner('ignition', makePlan({ os: 'windows', osField: 'spec.output.os' }), '3.4.0', 'Accept'),
      (e: unknown) => e instanceof RequestError && e.status === 422 && e.problems[0]!.path === 'spec.output.os' && e.problems[0]!.message === 'Ignition is not served for windows nodes; windows nodes get cloud-config',
    );
  });
});
