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

/**
 * The exact device a plan filesystem goes on, when the plan alone decides it: a numeric
 * `partition` gives that partition's device ({@link partitionDevice}), `none` or no
 * partition the device itself; `auto` and `any` are chosen on the node (undefined).
 */
export function filesystemTarget(fs: { device: string; partition?: string }): string | undefined {
  const p = fs.partition;
  if (p === undefined || p === 'none') return fs.device;
  if (/^\d+$/.test(p) && Number(p) >= 1) return partitionDevice(fs.device, Number(p));
  return undefined;
}
