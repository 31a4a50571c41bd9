import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkIgnitionV2Rules } from '../../../../src/provision/ignition/v2/rules.js';
import { validateIgnitionSchema } from '../../../support/validators.js';

const v = (rest: Record<string, unknown>) => ({ ignition: { version: '2.3.0' }, ...rest });
const file = (path: string, extra: Record<string, unknown> = {}) => ({ filesystem: 'root', path, contents: { source: 'data:,x' }, ...extra });

/** Configs breaking one rule each (all valid against the 2.3 JSON schema), with the problem paths expected. */
const BREACHES: [string, Record<string, unknown>, string[]][] = [
  ['another version', { ignition: { version: '2.2.0' } }, ['ignition.version']],
  ['relative path', v({ storage: { files: [file('etc/x')] } }), ['storage.files[0].path']],
  ['undefined filesystem', v({ storage: { files: [file('/etc/x', { filesystem: 'oem' })], directories: [{ filesystem: '', path: '/d' }] } }), ['storage.files[0].filesystem', 'storage.directories[0].filesystem']],
  ['duplicate paths across kinds', v({ storage: { files: [file('/etc/x')], directories: [{ filesystem: 'root', path: '/etc/x' }], links: [{ filesystem: 'root', path: '/etc/x', target: '/y' }] } }), ['storage.directories[0].path', 'storage.links[0].path']],
  ['mode above 07777 or negative', v({ storage: { files: [file('/etc/x', { mode: 4096 })], directories: [{ filesystem: 'root', path: '/d', mode: -1 }] } }), ['storage.files[0].mode', 'storage.directories[0].mode']],
  ['append with overwrite', v({ storage: { files: [file('/etc/x', { append: true, overwrite: true })] } }), ['storage.files[0].overwrite']],
  ['compression of a data URL, unknown compression', v({ storage: { files: [file('/a', { contents: { compression: 'gzip', source: 'data:;base64,H4sIAAAAAAAAAwMAAAAAAAAAAAA=' } }), file('/b', { contents: { compression: 'xz', source: 'https://x/b' } })] } }), ['storage.files[0].contents.compression', 'storage.files[1].contents.compression']],
  ['bad data URLs', v({ storage: { files: [file('/a', { contents: { source: 'data:,a b' } }), file('/b', { contents: { source: 'data:;base64,aGVsbG8' } }), file('/c', { contents: { source: 'data:,%ZZ' } })] } }), ['storage.files[0].contents.source', 'storage.files[1].contents.source', 'storage.files[2].contents.source']],
  ['hash not sha512', v({ ignition: { version: '2.3.0', config: { replace: { source: 'https://x', verification: { hash: 'sha256-abc' } } } } }), ['ignition.config.replace.verification.hash']],
  [
    'partitions: repeated number, negative size, bad GUID; repeated disk',
    v({ storage: { disks: [{ device: '/dev/sdb', partitions: [{ number: 1 }, { number: 1, sizeMiB: -1 }, { number: 0, typeGuid: 'linux' }] }, { device: '/dev/sdb' }, { device: 'sdc' }] } }),
    ['storage.disks[0].partitions[1].sizeMiB', 'storage.disks[0].partitions[2].typeGuid', 'storage.disks[0].partitions[1].number', 'storage.disks[2].device', 'storage.disks[1].device'],
  ],
  [
    'filesystems: relative device, unknown format, long label, repeats, neither mount nor path',
    v({
      storage: {
        filesystems: [
          { name: 'a', mount: { device: 'sdb1', format: 'ext4' } },
          { name: 'a', mount: { device: '/dev/sdc1', format: 'zfs' } },
          { mount: { device: '/dev/sdc1', format: 'xfs', label: 'thirteen-char' } },
          { name: 'b' },
        ],
      },
    }),
    ['storage.filesystems[0].mount.device', 'storage.filesystems[1].mount.format', 'storage.filesystems[2].mount.label', 'storage.filesystems[3]', 'storage.filesystems[2].mount.device', 'storage.filesystems[1].name'],
  ],
  ['unit suffix, duplicate unit, drop-in suffix', v({ systemd: { units: [{ name: 'kubeadm' }, { name: 'a.service', dropins: [{ name: 'x' }] }, { name: 'a.service' }] } }), ['systemd.units[0].name', 'systemd.units[1].dropins[0].name', 'systemd.units[2].name']],
  ['duplicate users and groups', v({ passwd: { users: [{ name: 'a' }, { name: 'a' }], groups: [{ name: 'g' }, { name: 'g' }] } }), ['passwd.users[1].name', 'passwd.groups[1].name']],
];

describe('checkIgnitionV2Rules', () => {
  for (const [name, config, paths] of BREACHES) {
    it(`finds: ${name}`, () => {
      assert.deepEqual(validateIgnitionSchema(JSON.stringify(config), '2.3.0').filter((p) => !p.startsWith('/ignition/version')), [], 'the schema alone accepts it');
      assert.deepEqual(
        checkIgnitionV2Rules(config).map((p) => p.path),
        paths,
      );
    });
  }

  it('accepts a file in a filesystem the config names', () => {
    const config = v({ storage: { filesystems: [{ name: 'data', mount: { device: '/dev/sdb1', format: 'ext4' } }], files: [file('/x', { filesystem: 'data' })] } });
    assert.deepEqual(checkIgnitionV2Rules(config), []);
  });
});
