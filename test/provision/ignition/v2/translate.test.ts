import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import type { FieldProblem } from '../../../../src/errors.js';
import { toIgnitionV2 } from '../../../../src/provision/ignition/v2/translate.js';
import { checkIgnitionV2Rules } from '../../../../src/provision/ignition/v2/rules.js';
import { ignitionFiles } from '../../../support/decode.js';
import { validateIgnitionSchema } from '../../../support/validators.js';

const v3 = (rest: Record<string, unknown>) => ({ ignition: { version: '3.0.0' }, ...rest });
const owner = { user: { name: 'root' }, group: { name: 'root' } };

function translate(config: Record<string, unknown>): { out: Record<string, unknown>; problems: FieldProblem[] } {
  const problems: FieldProblem[] = [];
  const out = toIgnitionV2(config, problems);
  return { out, problems };
}

/** Translate, expecting no problems and a valid 2.3.0 config. */
function ok(config: Record<string, unknown>): Record<string, unknown> {
  const { out, problems } = translate(config);
  assert.deepEqual(problems, []);
  assert.deepEqual(validateIgnitionSchema(JSON.stringify(out), '2.3.0'), []);
  assert.deepEqual(checkIgnitionV2Rules(out), []);
  return out;
}

describe('toIgnitionV2', () => {
  it('writes version 2.3.0 and an empty config stays empty', () => {
    assert.deepEqual(ok(v3({})), { ignition: { version: '2.3.0' } });
  });

  it('files: filesystem root, overwrite written out (2.x defaults it to true), append as a boolean', () => {
    const out = ok(
      v3({
        storage: {
          files: [
            { path: '/etc/a', overwrite: true, contents: { source: 'data:,a' }, mode: 420, ...owner },
            { path: '/etc/b', append: [{ source: 'data:,b' }], mode: 420, ...owner },
            { path: '/etc/c', contents: { source: 'data:,c' }, mode: 384 },
          ],
        },
      }),
    );
    assert.deepEqual((out.storage as { files: unknown[] }).files, [
      { filesystem: 'root', path: '/etc/a', overwrite: true, contents: { source: 'data:,a' }, mode: 420, ...owner },
      { filesystem: 'root', path: '/etc/b', append: true, contents: { source: 'data:,b' }, mode: 420, ...owner },
      { filesystem: 'root', path: '/etc/c', overwrite: false, contents: { source: 'data:,c' }, mode: 384 },
    ]);
  });

  it('a file with contents and appends becomes one entry holding their concatenation', () => {
    const gz = gzipSync(Buffer.from('three\n')).toString('base64');
    const config = v3({
      storage: {
        files: [
          { path: '/etc/r', overwrite: true, contents: { source: 'data:,one%0A' }, append: [{ source: 'data:;base64,dHdvCg==' }, { compression: 'gzip', source: `data:;base64,${gz}` }], mode: 420 },
          { path: '/etc/a', append: [{ source: 'data:,x' }, { source: 'data:,y' }], mode: 420 },
        ],
      },
    });
    const out = ok(config);
    const files = (out.storage as { files: Record<string, unknown>[] }).files;
    assert.equal(files[0]!.overwrite, true);
    assert.equal(files[1]!.append, true);
    assert.equal(files[1]!.overwrite, undefined);
    const bytes = ignitionFiles(out);
    assert.equal(bytes.get('/etc/r')!.toString(), 'one\ntwo\nthree\n');
    assert.equal(bytes.get('/etc/a')!.toString(), 'xy');
  });

  it('a gzip data URL is written plain (Ignition v0.x cannot decompress data: URLs)', () => {
    const gz = gzipSync(Buffer.from('hello\n')).toString('base64');
    const out = ok(v3({ storage: { files: [{ path: '/etc/z', overwrite: true, contents: { compression: 'gzip', source: `data:;base64,${gz}` } }] } }));
    const file = (out.storage as { files: Record<string, unknown>[] }).files[0]!;
    assert.deepEqual(file.contents, { source: 'data:,hello%0A' });
  });

  it('filesystems move into mount; disks, directories, links, units, users keep their fields', () => {
    const out = ok(
      v3({
        storage: {
          disks: [{ device: '/dev/sdb', wipeTable: true, partitions: [{ number: 1, sizeMiB: 0, typeGuid: '0FC63DAF-8483-4772-8E79-3D69D8477DE4', label: 'x' }] }],
          filesystems: [{ device: '/dev/sdb1', format: 'ext4', label: 'data', wipeFilesystem: true, options: ['-E', 'lazy_itable_init=1'] }],
          directories: [{ path: '/var/lib/app', mode: 488, ...owner }],
          links: [{ path: '/etc/l', target: '/etc/a', hard: false }],
        },
        systemd: { units: [{ name: 'a.service', enabled: true, contents: '[Service]\n', dropins: [{ name: 'x.conf', contents: '[Unit]\n' }] }, { name: 'b.service', mask: true }] },
        passwd: { users: [{ name: 'alice', passwordHash: '$6$x', sshAuthorizedKeys: ['ssh-ed25519 A'], groups: ['wheel'], shell: '/bin/bash' }], groups: [{ name: 'g', gid: 1000 }] },
      }),
    );
    const storage = out.storage as Record<string, unknown>;
    assert.deepEqual(storage.disks, [{ device: '/dev/sdb', wipeTable: true, partitions: [{ label: 'x', number: 1, sizeMiB: 0, typeGuid: '0FC63DAF-8483-4772-8E79-3D69D8477DE4' }] }]);
    assert.deepEqual(storage.filesystems, [{ mount: { device: '/dev/sdb1', format: 'ext4', wipeFilesystem: true, label: 'data', options: ['-E', 'lazy_itable_init=1'] } }]);
    assert.deepEqual(storage.directories, [{ filesystem: 'root', path: '/var/lib/app', mode: 488, ...owner }]);
    assert.deepEqual(storage.links, [{ filesystem: 'root', path: '/etc/l', target: '/etc/a', hard: false }]);
    assert.deepEqual((out.systemd as { units: unknown[] }).units[0], { name: 'a.service', enabled: true, contents: '[Service]\n', dropins: [{ name: 'x.conf', contents: '[Unit]\n' }] });
    assert.deepEqual(out.passwd, { users: [{ name: 'alice', passwordHash: '$6$x', sshAuthorizedKeys: ['ssh-ed25519 A'], groups: ['wheel'], shell: '/bin/bash' }], groups: [{ name: 'g', gid: 1000 }] });
  });

  it('null fields count as unset', () => {
    const out = ok({ ignition: { version: '3.0.0', config: { replace: null }, timeouts: { httpTotal: 30 } }, storage: { files: null } });
    assert.deepEqual(out.ignition, { version: '2.3.0', timeouts: { httpTotal: 30 } });
  });

  it('refuses ignition.config.merge and replace: they name spec 3 configs, which Ignition v0.x cannot read', () => {
    const hash = `sha512-${'a'.repeat(128)}`;
    const { problems } = translate({ ignition: { version: '3.0.0', config: { merge: [{ source: 'https://x/c.ign', verification: { hash } }], replace: { source: 'data:,{}' } } } });
    assert.deepEqual(problems, [
      { path: 'ignition.config.merge', message: 'names a spec 3 config, which Ignition v0.x (spec 2.x) cannot read' },
      { path: 'ignition.config.replace', message: 'names a spec 3 config, which Ignition v0.x (spec 2.x) cannot read' },
    ]);
  });

  it('refuses a file without contents (kept in 3.x, emptied by Ignition v0.x)', () => {
    const { problems } = translate({ ignition: { version: '3.0.0' }, storage: { files: [{ path: '/etc/hostname', mode: 420 }] } });
    assert.deepEqual(problems, [{ path: 'storage.files[0].contents', message: 'is missing: without contents Ignition 3 keeps an existing file, but Ignition v0.x (spec 2.x) would empty it' }]);
  });

  it('refuses, at the 3.x config path, what 2.3.0 cannot express', () => {
    const { problems } = translate({
      ignition: { version: '3.6.0', proxy: { httpProxy: 'http://p' } },
      kernelArguments: { shouldExist: ['a'] },
      storage: {
        luks: [{ name: 'x', device: '/dev/sdb' }],
        filesystems: [{ device: '/dev/sdb1', format: 'ext4', path: '/var', mountOptions: ['ro'] }],
        disks: [{ device: '/dev/sdc', partitions: [{ number: 1, resize: true }] }],
        files: [
          { path: '/etc/h', contents: { source: 'https://x/h', httpHeaders: [{ name: 'a', value: 'b' }] } },
          { path: '/etc/r', contents: { source: 'https://x/r' }, append: [{ source: 'data:,x' }] },
          { path: '/etc/s', contents: { source: 'https://x/s', verification: { hash: `sha256-${'a'.repeat(64)}` } } },
        ],
      },
      passwd: { users: [{ name: 'a', shouldExist: false }] },
    });
    assert.deepEqual(
      problems.map((p) => p.path),
      [
        'kernelArguments',
        'ignition.proxy',
        'storage.luks',
        'storage.disks[0].partitions[0].resize',
        'storage.filesystems[0].path',
        'storage.filesystems[0].mountOptions',
        'storage.files[0].contents.httpHeaders',
        'storage.files[1].append',
        'storage.files[2].contents.verification.hash',
        'passwd.users[0].shouldExist',
      ],
    );
  });
});
