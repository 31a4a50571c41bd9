/**
 * Where a filesystem goes (src/provision/plan/devices.ts), as cloud-init's fs_setup puts
 * it (cc_disk_setup `mkfs`, Debian's cloud-init 22.4): a filesystem named by a disk the
 * request partitions, with no partition, is made on the disk's first partition (cloud-init's
 * default `partition: any`). Found by Ignition v2.26's ignition-validate on CAPZ's Flatcar
 * control-plane template (test/fixtures/capi-templates/azure-flatcar-kcp.yaml): "filesystem
 * overwrites partitioned device".
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkIgnitionRules } from '../../../src/provision/ignition/rules.js';
import { disksByDevice, filesystemTarget, partitionDevice } from '../../../src/provision/plan/devices.js';
import { renderNodeBootstrap } from '../../../src/render.js';
import { validateNodeBootstrap } from '../../../src/request/parse.js';
import { worker } from '../../support/requests.js';
import { ignitionValidate } from '../../support/validators.js';

const LUN0 = '/dev/disk/azure/scsi1/lun0';

describe('filesystemTarget', () => {
  const disks = disksByDevice([{ device: LUN0, layout: true }, { device: '/dev/sdc', layout: false }]);
  it('names partitions as udev and the kernel do', () => {
    assert.equal(partitionDevice(LUN0, 1), `${LUN0}-part1`);
    assert.equal(partitionDevice('/dev/nvme0n1', 2), '/dev/nvme0n1p2');
    assert.equal(partitionDevice('/dev/sdb', 1), '/dev/sdb1');
  });
  it('no partition on a disk the request partitions: its first partition; elsewhere the device itself', () => {
    assert.equal(filesystemTarget({ device: LUN0 }, disks), `${LUN0}-part1`);
    assert.equal(filesystemTarget({ device: LUN0, partition: 'any' }, disks), `${LUN0}-part1`);
    assert.equal(filesystemTarget({ device: '/dev/sdc' }, disks), '/dev/sdc');
    assert.equal(filesystemTarget({ device: '/dev/sdd' }, disks), '/dev/sdd');
    assert.equal(filesystemTarget({ device: '/dev/sdd', partition: 'auto' }, disks), undefined);
    assert.equal(filesystemTarget({ device: LUN0, partition: 'none' }, disks), LUN0);
    assert.equal(filesystemTarget({ device: LUN0, partition: '2' }, disks), `${LUN0}-part2`);
  });

  it("CAPZ's etcd disk: Ignition makes the filesystem on lun0-part1, which ignition-validate accepts", async () => {
    const req = worker({ provisioning: { diskSetup: { partitions: [{ device: LUN0, layout: true, overwrite: false }], filesystems: [{ device: LUN0, filesystem: 'ext4', label: 'etcd_disk', overwrite: false }] } } });
    const out = renderNodeBootstrap(validateNodeBootstrap(req), { format: 'ignition', ignitionVersion: '3.4.0' });
    const config = JSON.parse(out.body) as { storage: { filesystems: { device: string }[] } };
    assert.deepEqual(config.storage.filesystems.map((f) => f.device), [`${LUN0}-part1`]);
    assert.deepEqual(checkIgnitionRules(config as unknown as Record<string, unknown>), []);
    assert.deepEqual(await ignitionValidate(out.body), []);
  });
});
