import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { load } from 'js-yaml';
import { BUTANE_TARGETS, readButaneConfig } from '../../../../src/provision/ignition/additional/butane.js';
import { decodeDataUrl } from '../../../support/decode.js';

const doc = (text: string) => load(text) as Record<string, unknown>;

describe('readButaneConfig', () => {
  it('maps Butane specs to the Ignition specs they target (coreos/butane docs/specs.md)', () => {
    assert.deepEqual(BUTANE_TARGETS.fcos, { '1.0.0': '3.0.0', '1.1.0': '3.1.0', '1.2.0': '3.2.0', '1.3.0': '3.2.0', '1.4.0': '3.3.0', '1.5.0': '3.4.0', '1.6.0': '3.5.0' });
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
