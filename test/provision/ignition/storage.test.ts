import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RequestError } from '../../../src/errors.js';
import { renderIgnition } from '../../../src/provision/ignition/render.js';
import { partitionDevice } from '../../../src/provision/plan/devices.js';
import { typeGuidFor } from '../../../src/provision/ignition/storage.js';
import type { PlanDisk, PlanFilesystem, PlanMount, ProvisioningPlan } from '../../../src/provision/plan/types.js';
import { makePlan } from './plan.js';
import { assertValid } from './tools.js';

const disk = (i: number, d: Partial<PlanDisk> = {}): PlanDisk => ({
  origin: `spec.provisioning.diskSetup.partitions[${i}]`,
  device: '/dev/sdb',
  tableType: 'gpt',
  tableTypeGiven: false,
  layout: true,
  ...d,
});
const fs = (i: number, f: Partial<PlanFilesystem> = {}): PlanFilesystem => ({
  origin: `spec.provisioning.diskSetup.filesystems[${i}]`,
  device: '/dev/sdb',
  filesystem: 'ext4',
  extraOpts: [],
  ...f,
});
const mount = (i: number, m: Partial<PlanMount> & { device: string; mountPoint: string }): PlanMount => ({ origin: `spec.provisioning.mounts[${i}]`, ...m });

type Storage = { disks?: unknown[]; filesystems?: unknown[] };
const storage = (p: Partial<ProvisioningPlan>) => (renderIgnition(makePlan(p)).config as { storage: Storage }).storage;

function problemsOf(p: Partial<ProvisioningPlan>) {
  try {
    renderIgnition(makePlan(p));
  } catch (e) {
    assert.ok(e instanceof RequestError);
    return e.problems;
  }
  assert.fail('expected a RequestError');
}

describe('renderIgnition: disks and filesystems', () => {
  it('layout: true on /dev/sdb gives partition 1, its filesystem and var-lib-data.mount', async () => {
    const out = renderIgnition(
      makePlan({
        disks: [disk(0, { layout: true, overwrite: true })],
        filesystems: [fs(0, { label: 'data', partition: '1', overwrite: true, extraOpts: ['-E', 'lazy_itable_init=1'] })],
        mounts: [mount(0, { device: 'LABEL=data', mountPoint: '/var/lib/data' })],
      }),
    );
    const config = out.config as { storage: Storage; systemd: { units: { name: string; enabled?: boolean; contents?: string }[] } };
    assert.deepEqual(config.storage.disks, [{ device: '/dev/sdb', wipeTable: true, partitions: [{ number: 1 }] }]);
    assert.deepEqual(config.storage.filesystems, [{ device: '/dev/sdb1', format: 'ext4', label: 'data', wipeFilesystem: true, options: ['-E', 'lazy_itable_init=1'] }]);
    assert.deepEqual(config.systemd.units[0], {
      name: 'var-lib-data.mount',
      enabled: true,
      contents: '[Mount]\nWhat=/dev/disk/by-label/data\nWhere=/var/lib/data\nType=ext4\n\n[Install]\nWantedBy=local-fs.target\n',
    });
    await assertValid(out);
  });

  it('wipes only when overwrite === true', () => {
    for (const overwrite of [false, undefined]) {
      const s = storage({ disks: [disk(0, overwrite === undefined ? {} : { overwrite })], filesystems: [fs(0, { partition: '1', ...(overwrite === undefined ? {} : { overwrite }) })] });
      assert.deepEqual(s.disks, [{ device: '/dev/sdb', partitions: [{ number: 1 }] }]);
      assert.deepEqual(s.filesystems, [{ device: '/dev/sdb1', format: 'ext4' }]);
    }
  });

  it('layout: false leaves the disk alone, overwrite or not, as cloud-init does (cc_disk_setup mkpart: "Device is not to be partitioned")', () => {
    // ignition-validate v2.26 found the wipe: "device matches disk with wipeTable enabled; filesystem will be wiped".
    assert.equal(storage({ disks: [disk(0, { layout: false, overwrite: true })] }).disks, undefined);
  });

  it('one-partition layouts take the whole disk, with a type GUID from the MBR code or as given', async () => {
    const s = storage({
      disks: [
        disk(0, { device: '/dev/sdb', layout: [{ number: 1, percentage: 100, partitionType: '82' }] }),
        disk(1, { device: '/dev/sdc', layout: [{ number: 1, percentage: 100, partitionType: 'E6D6D379-F507-44C2-A23C-238F2A3DF928' }] }),
        disk(2, { device: '/dev/sdd', layout: [{ number: 1, percentage: 50 }] }),
      ],
    });
    assert.deepEqual(s.disks, [
      { device: '/dev/sdb', partitions: [{ number: 1, typeGuid: '0657FD6D-A4AB-43C4-84E5-0933C84B4F4F' }] },
      { device: '/dev/sdc', partitions: [{ number: 1, typeGuid: 'E6D6D379-F507-44C2-A23C-238F2A3DF928' }] },
      { device: '/dev/sdd', partitions: [{ number: 1 }] },
    ]);
    await assertValid(renderIgnition(makePlan({ disks: [disk(0, { layout: [{ number: 1, percentage: 100, partitionType: 'fd' }] })] })));
  });

  it('maps MBR type codes to GPT type GUIDs', () => {
    const table: [string, string][] = [
      ['83', '0FC63DAF-8483-4772-8E79-3D69D8477DE4'],
      ['82', '0657FD6D-A4AB-43C4-84E5-0933C84B4F4F'],
      ['fd', 'A19D880F-05FC-4D3B-A006-743F0F84911E'],
      ['FD', 'A19D880F-05FC-4D3B-A006-743F0F84911E'],
      ['8e', 'E6D6D379-F507-44C2-A23C-238F2A3DF928'],
      ['0c', 'EBD0A0A2-B9E5-4433-87C0-68B6B72699C7'],
      ['c', 'EBD0A0A2-B9E5-4433-87C0-68B6B72699C7'],
      ['07', 'EBD0A0A2-B9E5-4433-87C0-68B6B72699C7'],
      ['ef', 'C12A7328-F81F-11D2-BA4B-00A0C93EC93B'],
      ['0fc63daf-8483-4772-8e79-3d69d8477de4', '0fc63daf-8483-4772-8e79-3d69d8477de4'],
    ];
    for (const [code, guid] of table) assert.deepEqual(typeGuidFor(code), { guid }, code);
    for (const code of ['85', '05', '0f']) assert.match((typeGuidFor(code) as { problem: string }).problem, /extended/, code);
    assert.ok('problem' in typeGuidFor('a5'));
  });

  it('names partition devices as the kernel and udev do', () => {
    assert.equal(partitionDevice('/dev/sdb', 1), '/dev/sdb1');
    assert.equal(partitionDevice('/dev/vdc', 12), '/dev/vdc12');
    assert.equal(partitionDevice('/dev/nvme0n1', 1), '/dev/nvme0n1p1');
    assert.equal(partitionDevice('/dev/mmcblk0', 2), '/dev/mmcblk0p2');
    assert.equal(partitionDevice('/dev/disk/by-id/wwn-0x5000', 1), '/dev/disk/by-id/wwn-0x5000-part1');
    assert.equal(partitionDevice('/dev/disk/azure/scsi1/lun0', 1), '/dev/disk/azure/scsi1/lun0-part1');
  });

  it('resolves partition auto/any only on a disk the plan gives exactly one partition', () => {
    const s = storage({ disks: [disk(0, { device: '/dev/nvme1n1' })], filesystems: [fs(0, { device: '/dev/nvme1n1', partition: 'auto' }), fs(1, { device: '/dev/sdz', partition: 'none', filesystem: 'xfs' })] });
    assert.deepEqual(s.filesystems, [{ device: '/dev/nvme1n1p1', format: 'ext4' }, { device: '/dev/sdz', format: 'xfs' }]);
    assert.deepEqual(
      problemsOf({ filesystems: [fs(0, { device: '/dev/sdq', partition: 'any' })] }).map((p) => p.path),
      ['spec.provisioning.diskSetup.filesystems[0].partition'],
    );
  });

  it('refuses what Ignition cannot express, naming each origin field', () => {
    const problems = problemsOf({
      disks: [
        disk(0, { tableType: 'mbr', tableTypeGiven: true }),
        disk(1, { device: '/dev/sdc', layout: [{ number: 1, percentage: 50 }, { number: 2, percentage: 50 }] }),
        disk(2, { device: '/dev/sdd', layout: [{ number: 1, percentage: 100, partitionType: '85' }] }),
      ],
      filesystems: [
        fs(0, { filesystem: 'ext3' }),
        fs(1, { device: '/dev/sde', filesystem: 'ntfs' }),
        fs(2, { device: '/dev/sdf', replaceFS: 'ntfs' }),
        fs(3, { device: 'ephemeral0.1' }),
        fs(4, { device: '/dev/sdg', partition: '0' }),
      ],
    });
    assert.deepEqual(
      problems.map((p) => p.path),
      [
        'spec.provisioning.diskSetup.partitions[0].tableType',
        'spec.provisioning.diskSetup.partitions[1].diskLayout',
        'spec.provisioning.diskSetup.partitions[2].diskLayout[0].partitionType',
        'spec.provisioning.diskSetup.filesystems[0].filesystem',
        'spec.provisioning.diskSetup.filesystems[1].filesystem',
        'spec.provisioning.diskSetup.filesystems[2].replaceFS',
        'spec.provisioning.diskSetup.filesystems[3].device',
        'spec.provisioning.diskSetup.filesystems[4].partition',
      ],
    );
    assert.match(problems[0]!.message, /GPT/);
    assert.match(problems[1]!.message, /MiB/);
  });

  it('an implied mbr table type (cloud-init default) becomes GPT', () => {
    assert.deepEqual(storage({ disks: [disk(0, { tableType: 'mbr', tableTypeGiven: false })] }).disks, [{ device: '/dev/sdb', partitions: [{ number: 1 }] }]);
  });
});
