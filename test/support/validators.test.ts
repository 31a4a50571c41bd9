/**
 * The validators themselves: each one passes a real valid document and catches a real
 * error, so a test that relies on them is not trusting a validator that accepts anything.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, it } from 'node:test';
import {
  cloudInitSchema,
  haveCloudInit,
  haveIgnitionValidate,
  ignitionValidate,
  ignitionValidateKnows,
  validateCloudConfigSchema,
  validateIgnitionSchema,
} from './validators.js';
import { cloudConfigSchemaFile, cloudConfigSchemaSkip, ignitionSchemaFile, ignitionSchemasSkip } from './conformance.js';
import { IGNITION_SPEC_VERSIONS } from '../../src/provision/ignition/versions.js';

const GOOD_CC = '#cloud-config\nruncmd: [ls]\n';
const BAD_CC = '#cloud-config\nruncmd: 5\n';
const GOOD_IGN = '{"ignition":{"version":"3.0.0"}}';
const RELATIVE_PATH_IGN = '{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"etc/hostname"}]}}';

/** This process's validator temp directories left in os.tmpdir(). */
const leftovers = () => readdirSync(tmpdir()).filter((n) => n.startsWith(`bootwright-validate-${process.pid}-`));

describe('conformance data', { skip: ignitionSchemasSkip(['2.3.0', ...IGNITION_SPEC_VERSIONS]) || cloudConfigSchemaSkip() }, () => {
  it('holds the published schemas', () => {
    assert.ok(existsSync(cloudConfigSchemaFile() ?? '/nonexistent'));
    for (const v of ['2.3.0', ...IGNITION_SPEC_VERSIONS]) assert.ok(existsSync(ignitionSchemaFile(v) ?? '/nonexistent'), v);
  });
});

describe('validateCloudConfigSchema', { skip: cloudConfigSchemaSkip() }, () => {
  it('passes a valid cloud-config', () => {
    assert.deepEqual(validateCloudConfigSchema(GOOD_CC), []);
  });

  it('catches runcmd that is not a list', () => {
    const problems = validateCloudConfigSchema(BAD_CC);
    assert.ok(problems.some((p) => p.startsWith('/runcmd ') && p.includes('must be array')), problems.join('\n'));
  });

  it('reads YAML 1.1, as cloud-init does: an unquoted 0644 is an integer', () => {
    const problems = validateCloudConfigSchema('#cloud-config\nwrite_files:\n- path: /etc/x\n  content: hi\n  permissions: 0644\n');
    assert.ok(problems.some((p) => p.startsWith('/write_files/0/permissions ')), problems.join('\n'));
    assert.deepEqual(validateCloudConfigSchema('#cloud-config\nwrite_files:\n- path: /etc/x\n  content: hi\n  permissions: "0644"\n'), []);
  });

  it('rejects unknown top-level keys', () => {
    const problems = validateCloudConfigSchema('#cloud-config\nruncmd: [ls]\nrun_cmd: [ls]\n');
    assert.ok(problems.some((p) => p.includes('"run_cmd"')), problems.join('\n'));
  });

  it('needs the #cloud-config header, valid YAML and a mapping', () => {
    assert.equal(validateCloudConfigSchema('runcmd: [ls]\n').length, 1);
    assert.equal(validateCloudConfigSchema('#cloud-config\nruncmd: [ls\n').length, 1);
    assert.equal(validateCloudConfigSchema('#cloud-config\n- ls\n').length, 1);
    assert.equal(validateCloudConfigSchema('#cloud-config\n').length, 1);
  });
});

describe('validateIgnitionSchema', { skip: ignitionSchemasSkip(['2.3.0', ...IGNITION_SPEC_VERSIONS]) }, () => {
  it('passes a minimal 3.0.0 config', () => {
    assert.deepEqual(validateIgnitionSchema(GOOD_IGN, '3.0.0'), []);
  });

  it('catches a wrong type', () => {
    const problems = validateIgnitionSchema('{"ignition":{"version":"3.0.0"},"storage":{"files":[{"path":"/etc/x","mode":"0644"}]}}', '3.0.0');
    assert.ok(problems.some((p) => p.startsWith('/storage/files/0/mode ')), problems.join('\n'));
  });

  it('catches a version that is not the one claimed, and bad JSON', () => {
    assert.equal(validateIgnitionSchema(GOOD_IGN, '3.4.0').length, 1);
    assert.equal(validateIgnitionSchema('{"ignition":', '3.0.0').length, 1);
  });

  it('knows every published spec version', () => {
    for (const v of ['2.3.0', '3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.4.0', '3.5.0', '3.6.0']) {
      assert.deepEqual(validateIgnitionSchema(`{"ignition":{"version":"${v}"}}`, v), [], v);
    }
    assert.throws(() => validateIgnitionSchema(GOOD_IGN, '9.9.0'), /no Ignition schema/);
  });

  it('does not see what only ignition-validate checks (a relative path)', () => {
    // The schema has no rule for it: this is why ignitionValidate() exists too.
    assert.deepEqual(validateIgnitionSchema(RELATIVE_PATH_IGN, '3.0.0'), []);
  });
});

describe('cloudInitSchema (cloud-init schema)', { skip: !haveCloudInit && !process.env.CI ? 'cloud-init not installed' : false }, () => {
  it('passes a valid cloud-config', async () => {
    assert.deepEqual(await cloudInitSchema(GOOD_CC), []);
  });

  it('catches runcmd that is not a list', async () => {
    assert.deepEqual(await cloudInitSchema(BAD_CC), ["runcmd: 5 is not of type 'array'"]);
  });

  it('reports each of several errors separately', async () => {
    const problems = await cloudInitSchema('#cloud-config\nruncmd: 5\nbootcmd: x\nwrite_files:\n- {path: /etc/x, permissions: 0644}\n');
    assert.deepEqual(problems, [
      "bootcmd: 'x' is not of type 'array'",
      "runcmd: 5 is not of type 'array'",
      "write_files.0.permissions: 420 is not of type 'string'",
    ]);
  });

  it('catches a missing header, bad YAML and a non-mapping, without leaking the temp path', async () => {
    const [header, yaml, list] = await Promise.all([
      cloudInitSchema('runcmd: [ls]\n'),
      cloudInitSchema('#cloud-config\nruncmd: [ls\n'),
      cloudInitSchema('#cloud-config\n- ls\n'),
    ]);
    assert.match(header.join('\n'), /needs to begin with "#cloud-config"/);
    assert.match(yaml.join('\n'), /is not valid yaml/);
    assert.match(list.join('\n'), /not a YAML dict/);
    for (const p of [...header, ...yaml, ...list]) assert.doesNotMatch(p, /bootwright-validate-/);
  });

  it('counts deprecations as valid unless asked', async () => {
    const deprecated = '#cloud-config\nchpasswd:\n  list: |\n    root:RANDOM\n';
    assert.deepEqual(await cloudInitSchema(deprecated), []);
    const problems = await cloudInitSchema(deprecated, { deprecationsAreProblems: true });
    assert.ok(problems.length === 1 && problems[0]!.startsWith('deprecated: chpasswd.list: DEPRECATED'), problems.join('\n'));
  });

  it('runs many checks concurrently and cleans up its temp files', async () => {
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => cloudInitSchema(i % 2 ? BAD_CC : GOOD_CC)));
    results.forEach((r, i) => assert.equal(r.length, i % 2, `document ${i}`));
    assert.deepEqual(leftovers(), []);
  });
});

describe('ignitionValidate (ignition-validate)', { skip: !haveIgnitionValidate && !process.env.CI ? 'ignition-validate not installed' : false }, () => {
  it('passes a minimal 3.0.0 config', async () => {
    assert.deepEqual(await ignitionValidate(GOOD_IGN), []);
  });

  it('catches a relative file path', async () => {
    const problems = await ignitionValidate(RELATIVE_PATH_IGN);
    assert.equal(problems.length, 1, problems.join('\n'));
    assert.match(problems[0]!, /^error at \$\.storage\.files\.0\.path, .*path not absolute$/);
  });

  it('counts a warning (unknown key) as a problem', async () => {
    const problems = await ignitionValidate('{"ignition":{"version":"3.0.0"},"storag":{}}');
    assert.equal(problems.length, 1, problems.join('\n'));
    // Debian's 2.14 says "Unused key", the reference v2.26 "unused key".
    assert.match(problems[0]!, /^warning at \$\.storag, .*[Uu]nused key storag$/);
  });

  it('catches duplicate paths and unit names without a suffix, line by line', async () => {
    const problems = await ignitionValidate(
      JSON.stringify({
        ignition: { version: '3.0.0' },
        storage: { files: [{ path: '/etc/a' }, { path: '/etc/a' }] },
        systemd: { units: [{ name: 'kubeadm' }] },
      }),
    );
    assert.equal(problems.length, 2, problems.join('\n'));
    assert.ok(problems.some((p) => p.includes('duplicate entry')));
    assert.ok(problems.some((p) => p.includes('invalid systemd unit extension')));
  });

  it('catches bad JSON and specs it does not know', async () => {
    assert.equal((await ignitionValidate('{"ignition":')).length, 1);
    assert.ok(ignitionValidateKnows('3.3.0') && !ignitionValidateKnows('2.3.0'));
    // The reference ignition-validate (v2.26) knows 3.0.0-3.6.0; Debian's 2.14 stops at 3.3.0.
    const unknown = ignitionValidateKnows('3.6.0') ? '3.7.0' : '3.4.0';
    assert.equal(ignitionValidateKnows(unknown), false);
    assert.match((await ignitionValidate(`{"ignition":{"version":"${unknown}"}}`)).join('\n'), /unsupported config version/);
  });

  it('cleans up its temp files', () => {
    assert.deepEqual(leftovers(), []);
  });
});
