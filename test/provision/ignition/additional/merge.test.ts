import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergeIgnitionConfigs } from '../../../../src/provision/ignition/additional/merge.js';

const parent = () => ({
  ignition: { version: '3.0.0' },
  storage: {
    files: [
      { path: '/etc/a', overwrite: true, contents: { compression: 'gzip', source: 'data:;base64,AAAA' }, mode: 420, user: { name: 'root' }, group: { name: 'root' } },
      { path: '/etc/b', contents: { source: 'data:,b' }, append: [{ source: 'data:,1' }] },
      { path: '/etc/c', contents: { source: 'data:,c' } },
    ],
    directories: [{ path: '/var/lib/d', mode: 493 }],
  },
  systemd: {
    units: [
      { name: 'a.service', enabled: true, contents: '[Service]\n', dropins: [{ name: '10-a.conf', contents: 'A' }] },
      { name: 'b.service', enabled: true },
    ],
  },
  passwd: { users: [{ name: 'alice', shell: '/bin/bash', groups: ['wheel'], sshAuthorizedKeys: ['key-1', 'key-2'] }] },
});

describe('mergeIgnitionConfigs (Ignition config/merge rules)', () => {
  it('child scalars override a parent user; string lists are appended without repeats', () => {
    const out = mergeIgnitionConfigs(parent(), { passwd: { users: [{ name: 'alice', shell: '/bin/zsh', groups: ['docker', 'wheel'], sshAuthorizedKeys: ['key-2', 'key-3'] }, { name: 'bob' }] } });
    assert.deepEqual(out.passwd, {
      users: [
        { name: 'alice', shell: '/bin/zsh', groups: ['wheel', 'docker'], sshAuthorizedKeys: ['key-1', 'key-2', 'key-3'] },
        { name: 'bob' },
      ],
    });
  });

  it('merges units by name, dropins by name (new ones appended), keeps parent fields the child leaves unset', () => {
    const out = mergeIgnitionConfigs(parent(), {
      systemd: {
        units: [
          { name: 'new.service', enabled: true },
          { name: 'a.service', enabled: false, dropins: [{ name: '20-b.conf', contents: 'B' }, { name: '10-a.conf', contents: 'A2' }] },
        ],
      },
    });
    assert.deepEqual(out.systemd, {
      units: [
        { name: 'a.service', enabled: false, contents: '[Service]\n', dropins: [{ name: '10-a.conf', contents: 'A2' }, { name: '20-b.conf', contents: 'B' }] },
        { name: 'b.service', enabled: true },
        { name: 'new.service', enabled: true },
      ],
    });
  });

  it('files by path: fields merged, append lists concatenated, a child source replaces the whole resource', () => {
    const out = mergeIgnitionConfigs(parent(), {
      storage: {
        files: [
          { path: '/etc/a', contents: { source: 'data:,new' }, mode: 384 },
          { path: '/etc/b', append: [{ source: 'data:,2' }] },
        ],
      },
    });
    const files = (out.storage as { files: unknown[] }).files;
    assert.deepEqual(files[0], { path: '/etc/a', overwrite: true, contents: { source: 'data:,new' }, mode: 384, user: { name: 'root' }, group: { name: 'root' } });
    assert.deepEqual(files[1], { path: '/etc/b', contents: { source: 'data:,b' }, append: [{ source: 'data:,1' }, { source: 'data:,2' }] });
  });

  it('a path the child holds as another kind removes the parent entry (files, directories and links share keys)', () => {
    const out = mergeIgnitionConfigs(parent(), { storage: { links: [{ path: '/etc/c', target: '/etc/a' }], files: [{ path: '/var/lib/d', contents: { source: 'data:,d' } }] } });
    const storage = out.storage as { files: { path: string }[]; directories: unknown[]; links: unknown[] };
    assert.deepEqual(storage.files.map((f) => f.path), ['/etc/a', '/etc/b', '/var/lib/d']);
    assert.deepEqual(storage.directories, []);
    assert.deepEqual(storage.links, [{ path: '/etc/c', target: '/etc/a' }]);
  });

  it('keys: disks by device, partitions by number then label, filesystems by device', () => {
    const out = mergeIgnitionConfigs(
      { storage: { disks: [{ device: '/dev/sdb', wipeTable: true, partitions: [{ number: 1, sizeMiB: 100 }, { label: 'x', number: 0 }] }], filesystems: [{ device: '/dev/sdb1', format: 'ext4', options: ['-a'] }] } },
      { storage: { disks: [{ device: '/dev/sdb', partitions: [{ number: 1, sizeMiB: 200 }, { label: 'x', number: 0, typeGuid: 'g' }, { number: 2 }] }], filesystems: [{ device: '/dev/sdb1', label: 'data', options: ['-b'] }] } },
    );
    assert.deepEqual(out.storage, {
      disks: [{ device: '/dev/sdb', wipeTable: true, partitions: [{ number: 1, sizeMiB: 200 }, { label: 'x', number: 0, typeGuid: 'g' }, { number: 2 }] }],
      filesystems: [{ device: '/dev/sdb1', format: 'ext4', options: ['-a', '-b'], label: 'data' }],
    });
  });

  it('is deterministic and leaves its inputs alone', () => {
    const p = parent();
    const c = { storage: { files: [{ path: '/etc/z', contents: { source: 'data:,z' } }] }, kernelArguments: { shouldExist: ['quiet'] } };
    const before = JSON.stringify([p, c]);
    const a = JSON.stringify(mergeIgnitionConfigs(p, c));
    assert.equal(JSON.stringify([p, c]), before);
    assert.equal(JSON.stringify(mergeIgnitionConfigs(parent(), structuredClone(c))), a);
    assert.deepEqual(Object.keys(JSON.parse(a) as object), ['ignition', 'storage', 'systemd', 'passwd', 'kernelArguments']);
  });
});
