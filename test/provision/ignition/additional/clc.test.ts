import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { load, YAML11_SCHEMA } from 'js-yaml';
import { readClcConfig } from '../../../../src/provision/ignition/additional/clc.js';

const doc = (text: string) => load(text, { schema: YAML11_SCHEMA }) as Record<string, unknown>;

describe('readClcConfig', () => {
  it('translates files, directories, links, units, networkd and users to Ignition 3.0.0', () => {
    const r = readClcConfig(
      doc(`ignition:
  config:
    append:
      - source: https://example.com/extra.ign
        verification: {hash: {function: sha512, sum: abc}}
storage:
  files:
    - filesystem: root
      path: /etc/app.conf
      mode: 0640
      user: {name: core}
      contents: {inline: "x=1\\n"}
    - path: /etc/motd
      append: true
      contents: {inline: "more\\n"}
    - path: /opt/bin/tool
      mode: 0755
      contents: {remote: {url: https://example.com/tool, verification: {hash: {function: sha512, sum: def}}}}
  directories: [{filesystem: root, path: /var/lib/app, mode: 0750}]
  links: [{path: /etc/l, target: /etc/app.conf}]
systemd:
  units:
    - name: app.service
      enable: true
      contents: "[Service]\\nExecStart=/opt/bin/tool\\n"
      dropins: [{name: 10-env.conf, contents: "[Service]\\nEnvironment=A=1\\n"}]
networkd:
  units:
    - name: 10-eth0.network
      contents: "[Match]\\nName=eth0\\n"
passwd:
  users:
    - name: core
      password_hash: $6$x
      ssh_authorized_keys: [ssh-rsa AAAA]
      groups: [docker]
`),
      false,
    );
    assert.deepEqual(r.problems, []);
    assert.deepEqual(r.warnings, []);
    assert.equal(r.version, '3.0.0');
    assert.deepEqual(r.config, {
      ignition: { config: { merge: [{ source: 'https://example.com/extra.ign', verification: { hash: 'sha512-abc' } }] } },
      storage: {
        files: [
          { path: '/etc/app.conf', overwrite: true, user: { name: 'core' }, mode: 0o640, contents: { source: 'data:,x%3D1%0A' } },
          { path: '/etc/motd', append: [{ source: 'data:,more%0A' }] },
          { path: '/opt/bin/tool', overwrite: true, mode: 0o755, contents: { source: 'https://example.com/tool', verification: { hash: 'sha512-def' } } },
          { path: '/etc/systemd/network/10-eth0.network', overwrite: true, mode: 0o644, contents: { source: 'data:,%5BMatch%5D%0AName%3Deth0%0A' } },
        ],
        directories: [{ path: '/var/lib/app', mode: 0o750 }],
        links: [{ path: '/etc/l', target: '/etc/app.conf' }],
      },
      systemd: { units: [{ name: 'app.service', enabled: true, contents: '[Service]\nExecStart=/opt/bin/tool\n', dropins: [{ name: '10-env.conf', contents: '[Service]\nEnvironment=A=1\n' }] }] },
      passwd: { users: [{ name: 'core', passwordHash: '$6$x', sshAuthorizedKeys: ['ssh-rsa AAAA'], groups: ['docker'] }] },
    });
  });

  it('refuses sections and fields with no Ignition 3 translation, naming the key', () => {
    const r = readClcConfig(doc('etcd: {name: x}\nlocksmith: {reboot_strategy: off}\nstorage:\n  files:\n    - {filesystem: oem, path: /a}\n    - {path: /b, contents: {local: b.txt}}\n'), false);
    assert.deepEqual(
      r.problems.map((p) => p.at),
      ['etcd', 'locksmith', 'storage.files[0].filesystem', 'storage.files[1].contents.local'],
    );
  });

  it('unknown keys are warnings unless strict: true (Cluster API / ct -strict)', () => {
    const d = doc('storage:\n  files:\n    - {path: /a, mdoe: 420}\n');
    assert.deepEqual(readClcConfig(d, false).warnings, ['storage.files[0].mdoe: unknown key, ignored']);
    assert.deepEqual(readClcConfig(d, true).problems, [{ at: 'storage.files[0].mdoe', message: 'unknown key' }]);
  });
});
