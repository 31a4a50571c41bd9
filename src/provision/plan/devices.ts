/**
 * Block device names, provider-neutral: which device a partition of a disk is, as the
 * kernel and udev name it. Both renderers write these names, so a filesystem lands on the
 * same device whatever the format.
 */

/**
 * The device node of partition `n` of `device`: `/dev/disk/...` links get `-partN`
 * (udev's naming: `/dev/disk/by-id/x` → `/dev/disk/by-id/x-part1`); kernel names ending
 * in a digit get `pN`, as the kernel names partitions of such disks (block/partitions
 * `core.c` `disk_name`: `/dev/nvme0n1` → `/dev/nvme0n1p1`, `/dev/mmcblk0` →
 * `/dev/mmcblk0p1`, `/dev/loop0` → `/dev/loop0p1`); others get `N` (`/dev/sdb` →
 * `/dev/sdb1`).
 *
 * @param n the 1-based partition number
 */
export function partitionDevice(device: string, n: number): string {
  if (device.startsWith('/dev/disk/')) return `${device}-part${n}`;
  return /\d$/.test(device) ? `${device}p${n}` : `${device}${n}`;
}

/** The plan's disks by device, the first entry per device (as a find over the list would give): one pass, then lookups. */
export function disksByDevice<D extends PartitionedDisk>(disks: readonly D[]): Map<string, D> {
  const out = new Map<string, D>();
  for (const d of disks) if (!out.has(d.device)) out.set(d.device, d);
  return out;
}

/** What {@link filesystemTarget} needs to know of the disks the plan partitions. */
export interface PartitionedDisk {
  device: string;
  /** `true`: one partition of the whole disk; `false`: not partitioned; a list: those partitions. */
  layout: boolean | readonly unknown[];
}

/**
 * The exact device a plan filesystem goes on, when the plan alone decides it, as
 * cloud-init's `fs_setup` chooses it (cc_disk_setup `mkfs`): a numeric `partition` gives
 * that partition's device ({@link partitionDevice}); `none` the device itself; no
 * partition means cloud-init's default, `any`, which with `auto` takes the first
 * partition without a filesystem: on a disk the plan partitions that is partition 1 (a
 * CAPZ template partitions `/dev/disk/azure/scsi1/lun0` and names the filesystem by the
 * disk: cloud-init makes it on `lun0-part1`), and with no partition given on a disk the
 * plan does not partition, the device itself. `auto` and `any` on a disk the plan does
 * not partition are chosen on the node (undefined).
 *
 * @param disks the plan's disks by device ({@link disksByDevice})
 */
export function filesystemTarget(fs: { device: string; partition?: string }, disks: ReadonlyMap<string, PartitionedDisk> = new Map()): string | undefined {
  const p = fs.partition;
  if (p === 'none') return fs.device;
  if (p !== undefined && /^\d+$/.test(p)) return Number(p) >= 1 ? partitionDevice(fs.device, Number(p)) : undefined;
  const disk = disks.get(fs.device);
  const partitioned = disk !== undefined && (disk.layout === true || (Array.isArray(disk.layout) && disk.layout.length > 0));
  if (partitioned) return partitionDevice(fs.device, 1);
  return p === undefined ? fs.device : undefined;
}
