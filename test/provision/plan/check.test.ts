/**
 * The plan's rules (src/provision/plan/check.ts) through the whole pipeline: each request
 * is refused by both formats with the same fields named, or accepted by both.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FieldProblem } from '../../../src/errors.js';
import { renderNodeBootstrap } from '../../../src/render.js';
import { validateNodeBootstrap } from '../../../src/request/parse.js';
import { problemsOf } from '../../support/errors.js';
import { worker } from '../../support/requests.js';

const FORMATS = ['cloud-config', 'ignition'] as const;

/** The problems each format reports for a worker with `provisioning` (the same in both, asserted). */
function refused(provisioning: unknown): FieldProblem[] {
  const [cloud, ignition] = FORMATS.map((format) => problemsOf(() => renderNodeBootstrap(validateNodeBootstrap(worker({ provisioning })), { format })));
  assert.deepEqual(ignition, cloud, 'both formats refuse with the same problems');
  return cloud!;
}

function accepted(provisioning: unknown): void {
  for (const format of FORMATS) renderNodeBootstrap(validateNodeBootstrap(worker({ provisioning })), { format });
}

describe('checkPlan: one meaning in every format', () => {
  it('a disk listed twice', () => {
    const problems = refused({ diskSetup: { partitions: [{ device: '/dev/sdb', layout: true }, { device: '/dev/sdb', layout: true }] } });
    assert.deepEqual(problems.map((p) => p.path), ['spec.provisioning.diskSetup.partitions[1].device']);
    assert.match(problems[0]!.message, /listed twice \(first at spec\.provisioning\.diskSetup\.partitions\[0\]\.device\)/);
  });

  it('labels longer than mkfs allows, per filesystem type, in bytes', () => {
    const fs = (device: string, filesystem: string, label: string) => ({ device, filesystem, label });
    const problems = refused({
      diskSetup: {
        filesystems: [
          fs('/dev/sdb', 'ext4', 'a'.repeat(17)),
          fs('/dev/sdc', 'xfs', 'a'.repeat(13)),
          fs('/dev/sdd', 'vfat', 'a'.repeat(12)),
          fs('/dev/sde', 'swap', 'a'.repeat(16)),
          fs('/dev/sdf', 'btrfs', 'a'.repeat(256)),
          fs('/dev/sdg', 'ext4', 'é'.repeat(9)),
        ],
      },
    });
    assert.deepEqual(problems.map((p) => p.path), [0, 1, 2, 3, 4, 5].map((i) => `spec.provisioning.diskSetup.filesystems[${i}].label`));
    assert.match(problems[1]!.message, /xfs labels are at most 12 bytes/);
    accepted({
      diskSetup: {
        filesystems: [fs('/dev/sdb', 'ext4', 'a'.repeat(16)), fs('/dev/sdc', 'xfs', 'a'.repeat(12)), fs('/dev/sdd', 'vfat', 'a'.repeat(11)), fs('/dev/sde', 'swap', 'a'.repeat(15)), fs('/dev/sdf', 'btrfs', 'a'.repeat(255))],
      },
    });
  });

  it('two filesystems on one partition device', () => {
    const problems = refused({ diskSetup: { filesystems: [{ device: '/dev/nvme0n1', filesystem: 'ext4', partition: '1' }, { device: '/dev/nvme0n1p1', filesystem: 'xfs' }] } });
    assert.deepEqual(problems.map((p) => p.path), ['spec.provisioning.diskSetup.filesystems[1].device']);
    assert.match(problems[0]!.message, /\/dev\/nvme0n1p1 is listed twice/);
  });

  it('a filesystem over the partition table of a disk the request partitions (found by Ignition v2.26)', () => {
    const problems = refused({ diskSetup: { partitions: [{ device: '/dev/sdb', layout: true }], filesystems: [{ device: '/dev/sdb', filesystem: 'ext4', label: 'data', partition: 'none' }] } });
    assert.deepEqual(problems.map((p) => [p.path, p.rule]), [['spec.provisioning.diskSetup.filesystems[0].partition', 'filesystem-whole-disk']]);
    // The same without a partition is cloud-init's "any": partition 1.
    accepted({ diskSetup: { partitions: [{ device: '/dev/sdb', layout: true }], filesystems: [{ device: '/dev/sdb', filesystem: 'ext4', label: 'data' }] } });
    accepted({ diskSetup: { partitions: [{ device: '/dev/sdb', layout: false }], filesystems: [{ device: '/dev/sdb', filesystem: 'ext4', label: 'data', partition: 'none' }] } });
  });

  it('a mount point used twice (after simplification), and control characters in a mount', () => {
    const problems = refused({ mounts: [['/dev/sdb1', '/var/lib/etcd'], ['/dev/sdc1', '/var/lib//etcd/'], ['/dev/sdd1', '/mnt/x\ny']] });
    assert.deepEqual(problems.map((p) => p.path), ['spec.provisioning.mounts[1][1]', 'spec.provisioning.mounts[2][1]']);
    assert.match(problems[0]!.message, /\/var\/lib\/etcd is already used by spec\.provisioning\.mounts\[0\]/);
    accepted({ mounts: [['/dev/sdb1', '/mnt/my data'], ['/dev/sdc1', 'none', 'swap']] });
  });

  it('group names groupadd refuses, a sudo rule over two lines, an ntp server with a space', () => {
    const problems = refused({
      users: [{ name: 'a', groups: 'ok, bad name, -x' }, { name: 'b', sudo: 'ALL=(ALL) ALL\nroot ALL=(ALL) ALL' }],
      ntp: { servers: ['ok.example.com', 'a b'] },
    });
    assert.deepEqual(problems.map((p) => p.path), ['spec.provisioning.users[0].groups', 'spec.provisioning.users[1].sudo', 'spec.provisioning.ntp.servers[1]']);
    accepted({ users: [{ name: 'a', groups: 'sudo, ops, docker' }], ntp: { enabled: false } });
  });
});
