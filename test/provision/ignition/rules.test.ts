import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderIgnition } from '../../../src/provision/ignition/render.js';
import { checkIgnitionRules } from '../../../src/provision/ignition/rules.js';
import { haveIgnitionValidate, ignitionValidate } from '../../support/validators.js';
import { fullPlan } from './plan.js';

const v = (rest: Record<string, unknown>) => ({ ignition: { version: '3.0.0' }, ...rest });
const file = (path: string, extra: Record<string, unknown> = {}) => ({ path, contents: { source: 'data:,x' }, ...extra });

/** Configs breaking one rule each, with the problem paths expected. */
const BREACHES: [string, Record<string, unknown>, string[]][] = [
  ['relative path', v({ storage: { files: [file('etc/x')] } }), ['storage.files[0].path']],
  ['unsimplified path', v({ storage: { directories: [{ path: '/etc//x/' }], links: [{ path: '/etc/./l', target: '/x' }] } }), ['storage.directories[0].path', 'storage.links[0].path']],
  ['parent reference', v({ storage: { files: [file('/etc/../x')] } }), ['storage.files[0].path']],
  ['duplicate paths across kinds', v({ storage: { files: [file('/etc/x')], directories: [{ path: '/etc/x' }], links: [{ path: '/etc/x', target: '/y' }] } }), ['storage.directories[0].path', 'storage.links[0].path']],
  ['mode above 07777', v({ storage: { files: [file('/etc/x', { mode: 4096 })], directories: [{ path: '/d', mode: -1 }] } }), ['storage.files[0].mode', 'storage.directories[0].mode']],
  ['overwrite without a source', v({ storage: { files: [{ path: '/etc/x', overwrite: true }] } }), ['storage.files[0].overwrite']],
  ['unit without a unit suffix', v({ systemd: { units: [{ name: 'kubeadm' }, { name: '.service' }, { name: 'a.conf' }] } }), ['systemd.units[0].name', 'systemd.units[1].name', 'systemd.units[2].name']],
  ['duplicate units', v({ systemd: { units: [{ name: 'a.service' }, { name: 'a.service' }] } }), ['systemd.units[1].name']],
  ['drop-in not .conf, duplicate drop-in', v({ systemd: { units: [{ name: 'a.service', dropins: [{ name: 'x' }, { name: 'y.conf' }, { name: 'y.conf' }] }] } }), ['systemd.units[0].dropins[0].name', 'systemd.units[0].dropins[2].name']],
  [
    'file where Ignition writes a unit or drop-in',
    v({ storage: { files: [file('/etc/systemd/system/a.service'), file('/etc/systemd/system/a.service.d/b.conf')] }, systemd: { units: [{ name: 'a.service', dropins: [{ name: 'b.conf' }] }] } }),
    ['systemd.units[0].name', 'systemd.units[0].dropins[0].name'],
  ],
  ['raw space in a data URL', v({ storage: { files: [{ path: '/a', contents: { source: 'data:,a b' } }] } }), ['storage.files[0].contents.source']],
  ['non-ASCII in a data URL', v({ storage: { files: [{ path: '/a', append: [{ source: 'data:,é' }] }] } }), ['storage.files[0].append[0].source']],
  ['bad base64 in a data URL', v({ ignition: { version: '3.0.0', config: { merge: [{ source: 'data:;base64,aGVsbG8' }] } } }), ['ignition.config.merge[0].source']],
  ['bad escape in a data URL', v({ ignition: { version: '3.0.0', security: { tls: { certificateAuthorities: [{ source: 'data:,%ZZ' }] } } } }), ['ignition.security.tls.certificateAuthorities[0].source']],
  ['data URL without a comma', v({ storage: { files: [{ path: '/a', contents: { source: 'data:abc' } }] } }), ['storage.files[0].contents.source']],
  [
    'duplicate disks, partitions, filesystems, users, groups',
    v({
      storage: {
        disks: [{ device: '/dev/sdb', partitions: [{ number: 1 }, { number: 1 }, { number: 0, label: 'a' }, { number: 0, label: 'b' }] }, { device: '/dev/sdb' }],
        filesystems: [{ device: '/dev/sdb1', format: 'ext4' }, { device: '/dev/sdb1', format: 'xfs' }],
      },
      passwd: { users: [{ name: 'a' }, { name: 'a' }], groups: [{ name: 'g' }, { name: 'g' }] },
    }),
    ['storage.disks[0].partitions[1].number', 'storage.disks[1].device', 'storage.filesystems[1].device', 'passwd.users[1].name', 'passwd.groups[1].name'],
  ],
  ['label too long for the format', v({ storage: { filesystems: [{ device: '/dev/sdb1', format: 'xfs', label: 'thirteen-char' }] } }), ['storage.filesystems[0].label']],
];

describe('checkIgnitionRules', () => {
  for (const [name, config, paths] of BREACHES) {
    it(`finds: ${name}`, async () => {
      assert.deepEqual(
        checkIgnitionRules(config).map((p) => p.path),
        paths,
      );
      // The real validator agrees that the config is invalid (it checks fewer things
      // in 2.14: not unit/file clashes).
      if (haveIgnitionValidate && name !== 'file where Ignition writes a unit or drop-in') {
        assert.notDeepEqual(await ignitionValidate(JSON.stringify(config)), [], 'ignition-validate also refuses it');
      }
    });
  }

  it('finds nothing in valid configs, including every render of a full plan', () => {
    assert.deepEqual(checkIgnitionRules(v({ storage: { files: [file('/etc/x', { mode: 0o7777 })], directories: [{ path: '/' }] } })), []);
    assert.deepEqual(checkIgnitionRules({}), []);
    for (const version of ['3.0.0', '3.3.0', '3.6.0'] as const) assert.deepEqual(checkIgnitionRules(renderIgnition(fullPlan(), { version }).config), []);
  });
});
