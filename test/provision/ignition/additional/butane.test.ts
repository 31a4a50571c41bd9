import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { load } from 'js-yaml';
import { BUTANE_TARGETS, butaneScalar, readButaneConfig } from '../../../../src/provision/ignition/additional/butane.js';
import { detectAdditionalConfig } from '../../../../src/provision/ignition/additional/detect.js';
import { decodeDataUrl } from '../../../support/decode.js';

const doc = (text: string) => load(text) as Record<string, unknown>;

describe('readButaneConfig', () => {
  it('maps Butane specs to the Ignition specs they target (coreos/butane docs/specs.md)', () => {
    assert.deepEqual(BUTANE_TARGETS.fcos, { '1.0.0': '3.0.0', '1.1.0': '3.1.0', '1.2.0': '3.2.0', '1.3.0': '3.2.0', '1.4.0': '3.3.0', '1.5.0': '3.4.0', '1.6.0': '3.5.0', '1.7.0': '3.6.0' });
    assert.deepEqual(BUTANE_TARGETS.flatcar, { '1.0.0': '3.3.0', '1.1.0': '3.4.0' });
    assert.equal(readButaneConfig({ variant: 'flatcar', version: '1.1.0' }, true).version, '3.4.0');
    assert.equal(readButaneConfig({ variant: 'fcos', version: '1.7.0-experimental' }, true).problems[0]!.at, 'version');
    assert.equal(readButaneConfig({ variant: 'openshift', version: '4.8.0' }, true).problems[0]!.at, 'variant');
  });

  it('translates snake_case to camelCase and inline contents to data URLs', () => {
    const r = readButaneConfig(
      doc(`variant: fcos
version: 1.4.0
storage:
  files:
    - path: /etc/motd
      mode: 420
      overwrite: true
      user: {id: 0}
      contents:
        inline: "hello: world\\n"
  links: [{path: /etc/l, target: /etc/motd, hard: false}]
passwd:
  users:
    - name: core
      password_hash: $y$j9T$abc
      ssh_authorized_keys: [ssh-ed25519 AAAA]
      home_dir: /home/core
  groups: [{name: ops, gid: 2000}]
kernel_arguments:
  should_exist: [quiet]
`),
      true,
    );
    assert.deepEqual(r.problems, []);
    assert.equal(r.version, '3.3.0');
    assert.deepEqual(r.config, {
      storage: {
        files: [{ path: '/etc/motd', overwrite: true, user: { id: 0 }, mode: 420, contents: { source: 'data:,hello%3A%20world%0A' } }],
        links: [{ path: '/etc/l', target: '/etc/motd', hard: false }],
      },
      passwd: { users: [{ name: 'core', passwordHash: '$y$j9T$abc', sshAuthorizedKeys: ['ssh-ed25519 AAAA'], homeDir: '/home/core' }], groups: [{ name: 'ops', gid: 2000 }] },
      kernelArguments: { shouldExist: ['quiet'] },
    });
  });

  it('gzips large inline contents from Ignition 3.1.0 on, and decodes to the input', () => {
    const text = 'line of text\n'.repeat(200);
    const r = readButaneConfig({ variant: 'fcos', version: '1.1.0', storage: { files: [{ path: '/a', contents: { inline: text } }] } }, true);
    const contents = (r.config as { storage: { files: { contents: { compression?: string; source: string } }[] } }).storage.files[0]!.contents;
    assert.equal(contents.compression, 'gzip');
    const r0 = readButaneConfig({ variant: 'fcos', version: '1.0.0', storage: { files: [{ path: '/a', contents: { inline: text } }] } }, true);
    const plain = (r0.config as { storage: { files: { contents: { compression?: string; source: string } }[] } }).storage.files[0]!.contents;
    assert.equal(plain.compression, undefined);
    assert.equal(decodeDataUrl(plain.source).toString('utf8'), text);
  });

  it('unknown keys: errors naming the key path by default, warnings with strict false', () => {
    const d = { variant: 'fcos', version: '1.4.0', storage: { files: [{ path: '/a', contnts: { inline: 'x' } }] } };
    assert.deepEqual(readButaneConfig(d, true).problems, [{ at: 'storage.files[0].contnts', message: 'unknown key' }]);
    const lax = readButaneConfig(d, false);
    assert.deepEqual(lax.problems, []);
    assert.deepEqual(lax.warnings, ['storage.files[0].contnts: unknown key, ignored']);
    assert.deepEqual(lax.config, { storage: { files: [{ path: '/a' }] } });
  });

  it('refuses contents.local, trees and layout sugar whatever strict says', () => {
    const r = readButaneConfig(
      { variant: 'fcos', version: '1.4.0', storage: { files: [{ path: '/a', contents: { local: 'a.txt' } }], trees: [{ local: 'tree' }] }, boot_device: { mirror: {} } },
      false,
    );
    assert.deepEqual(
      r.problems.map((p) => p.at),
      ['boot_device', 'storage.trees', 'storage.files[0].contents.local'],
    );
    assert.match(r.problems[2]!.message, /files-dir/);
  });

  it('refuses a field the target spec does not have', () => {
    const r = readButaneConfig({ variant: 'fcos', version: '1.1.0', storage: { luks: [{ name: 'x', device: '/dev/sdb' }] } }, true);
    assert.deepEqual(r.problems, [{ at: 'storage.luks', message: 'storage.luks needs Ignition spec 3.2.0, but the config is Butane fcos 1.1.0 (Ignition 3.1.0)' }]);
  });
});

describe('readButaneConfig: ignition.version', () => {
  it('is not a Butane field: unknown key when strict, a warning otherwise', () => {
    const d = { variant: 'fcos', version: '1.4.0', ignition: { version: '3.3.0' } };
    assert.deepEqual(readButaneConfig(d, true).problems, [{ at: 'ignition.version', message: 'unknown key' }]);
    assert.deepEqual(readButaneConfig(d, false).warnings, ['ignition.version: unknown key, ignored']);
  });
});

describe('readButaneConfig: scalars as go-yaml v3 reads them into typed fields', () => {
  const read = (text: string) => {
    const detected = detectAdditionalConfig(text);
    assert.equal(detected.kind, 'butane');
    return readButaneConfig(detected.document, true);
  };

  it('mode: 0o644 (YAML 1.2 octal) is 420, like 0644', () => {
    const r = read('variant: fcos\nversion: 1.4.0\nstorage:\n  files: [{path: /etc/a, mode: 0o644}, {path: /etc/b, mode: 0644}]\n  directories: [{path: /etc/d, mode: 0o750}]\n');
    assert.deepEqual(r.problems, []);
    assert.deepEqual(r.config, { storage: { files: [{ path: '/etc/a', mode: 420 }, { path: '/etc/b', mode: 420 }], directories: [{ path: '/etc/d', mode: 0o750 }] } });
  });

  it('yes/no/on/off/y/n and their capitalised forms are booleans for boolean fields', () => {
    const r = read(
      'variant: fcos\nversion: 1.4.0\nstorage:\n  files:\n    - {path: /etc/a, overwrite: yes, contents: {source: "data:,a"}}\n    - {path: /etc/b, overwrite: OFF}\n  links: [{path: /etc/l, target: /etc/a, hard: N}]\nsystemd:\n  units: [{name: a.service, enabled: On, mask: no}]\n',
    );
    assert.deepEqual(r.problems, []);
    const config = r.config as { storage: { files: { overwrite: unknown }[]; links: { hard: unknown }[] }; systemd: { units: { enabled: unknown; mask: unknown }[] } };
    assert.deepEqual(config.storage.files.map((f) => f.overwrite), [true, false]);
    assert.equal(config.storage.links[0]!.hard, false);
    assert.deepEqual([config.systemd.units[0]!.enabled, config.systemd.units[0]!.mask], [true, false]);
  });

  it('a string field keeps yes and 0o644 as strings; other strings are still not booleans or integers', () => {
    const r = read('variant: fcos\nversion: 1.4.0\npasswd:\n  users: [{name: "yes", gecos: 0o644, shell: on}]\n');
    assert.deepEqual(r.problems, []);
    assert.deepEqual(r.config, { passwd: { users: [{ name: 'yes', gecos: '0o644', shell: 'on' }] } });
    assert.deepEqual(read('variant: fcos\nversion: 1.4.0\nstorage:\n  files: [{path: /etc/a, overwrite: "true", mode: 0o9}]\n').problems, [
      { at: 'storage.files[0].overwrite', message: 'must be a boolean' },
      { at: 'storage.files[0].mode', message: 'must be an integer' },
    ]);
  });
});

describe('butaneScalar', () => {
  it('reads go-yaml v3 booleans and YAML 1.2 octals only for fields of that type', () => {
    assert.equal(butaneScalar('Yes', 'boolean'), true);
    assert.equal(butaneScalar('n', 'boolean'), false);
    assert.equal(butaneScalar('yes', 'string'), 'yes');
    assert.equal(butaneScalar('0o644', 'integer'), 420);
    assert.equal(butaneScalar('-0o1', 'integer'), -1);
    assert.equal(butaneScalar('0o644', 'string'), '0o644');
    assert.equal(butaneScalar('yes', 'integer'), 'yes');
    assert.equal(butaneScalar(5, 'boolean'), 5);
  });
});
