/**
 * Plan disks and filesystems as `storage.disks[]` and `storage.filesystems[]` (cloud-init
 * `disk_setup` / `fs_setup` semantics, Cluster API `diskSetup`; coreos/ignition
 * `docs/configuration-v3_0.md` "storage").
 */
import type { FieldProblem } from '../../errors.js';
import { disksByDevice, filesystemTarget } from '../plan/devices.js';
import type { PlanDisk, PlanFilesystem } from '../plan/types.js';
import type { IgnitionDisk, IgnitionFilesystem, IgnitionPartition, Sourced } from './config.js';

/** GPT partition type GUIDs for the MBR type codes that have one (by code value). */
const MBR_TYPE_GUIDS = new Map<number, string>([
  [0x83, '0FC63DAF-8483-4772-8E79-3D69D8477DE4'], // Linux filesystem
  [0x82, '0657FD6D-A4AB-43C4-84E5-0933C84B4F4F'], // Linux swap
  [0xfd, 'A19D880F-05FC-4D3B-A006-743F0F84911E'], // Linux RAID
  [0x8e, 'E6D6D379-F507-44C2-A23C-238F2A3DF928'], // Linux LVM
  [0x07, 'EBD0A0A2-B9E5-4433-87C0-68B6B72699C7'], // NTFS/exFAT → Microsoft basic data
  [0x0b, 'EBD0A0A2-B9E5-4433-87C0-68B6B72699C7'], // FAT32 → Microsoft basic data
  [0x0c, 'EBD0A0A2-B9E5-4433-87C0-68B6B72699C7'], // FAT32 LBA → Microsoft basic data
  [0x0e, 'EBD0A0A2-B9E5-4433-87C0-68B6B72699C7'], // FAT16 LBA → Microsoft basic data
  [0xef, 'C12A7328-F81F-11D2-BA4B-00A0C93EC93B'], // EFI system partition
]);
/** MBR extended-partition containers: they exist only inside MBR tables. */
const MBR_EXTENDED = new Set([0x05, 0x0f, 0x85]);
const GUID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;
const MBR_CODE = /^[0-9A-Fa-f]{1,2}$/;

/**
 * The GPT type GUID for a plan partition type: an MBR code (`83` Linux filesystem, `82`
 * swap, `fd` RAID, `8e` LVM, `07`/`0b`/`0c`/`0e` Microsoft basic data, `ef` EFI system) or
 * a GUID, returned as given.
 *
 * @returns the GUID, or a reason it has none (extended partitions, unknown codes)
 */
export function typeGuidFor(partitionType: string): { guid: string } | { problem: string } {
  if (GUID.test(partitionType)) return { guid: partitionType };
  if (!MBR_CODE.test(partitionType)) return { problem: 'must be an MBR type code or a GPT type GUID' };
  const code = parseInt(partitionType, 16);
  if (MBR_EXTENDED.has(code)) return { problem: `${partitionType} is an MBR extended partition, which a GPT table (all Ignition writes) does not have` };
  const guid = MBR_TYPE_GUIDS.get(code);
  if (!guid) {
    return { problem: `MBR type ${partitionType} has no GPT equivalent bootwright knows; use 83, 82, fd, 8e, 07, 0b, 0c, 0e, ef or give the GPT type GUID` };
  }
  return { guid };
}

/**
 * Plan disks as Ignition disks, in plan order. GPT only; `wipeTable: true` only when
 * `overwrite === true`. Layout `true` → one partition, number 1, as large as possible;
 * `false` → no entry at all (cloud-init's `mkpart` leaves a disk not to be partitioned
 * alone, `overwrite` included: a `wipeTable` there would wipe what the node has); a list
 * → partitions numbered as in the plan. Cloud-init gives
 * the last partition of a layout the rest of the disk whatever its percentage, so a
 * one-partition list is exact (as large as possible); earlier partitions would need a
 * size in MiB, which a percentage of a disk of unknown size is not, so longer lists are
 * refused. An explicit partition type becomes `typeGuid`; none leaves Ignition's default
 * (Linux filesystem), which also matches an existing partition of any type.
 *
 * Problems (pushed) at `<origin>.tableType` (an explicit `mbr`: Ignition writes only GPT;
 * an implied one is cloud-init's default and becomes GPT), `<origin>.diskLayout`,
 * `<origin>.diskLayout[i].partitionType`. (A repeated device is refused for every format
 * by the plan's `checkPlan`.)
 */
export function diskEntries(disks: readonly PlanDisk[], problems: FieldProblem[]): Sourced<IgnitionDisk>[] {
  const out: Sourced<IgnitionDisk>[] = [];
  for (const [i, disk] of disks.entries()) {
    const origin = disk.origin ?? `spec.provisioning.diskSetup.partitions[${i}]`;
    if (disk.layout === false) continue;
    if (disk.tableType === 'mbr' && disk.tableTypeGiven) {
      problems.push({ path: `${origin}.tableType`, message: 'Ignition writes GPT partition tables only and cannot create an MBR table; use gpt, or cloud-config' });
      continue;
    }
    let partitions: IgnitionPartition[] | undefined;
    if (disk.layout === true) {
      partitions = [{ number: 1 }];
    } else if (Array.isArray(disk.layout)) {
      if (disk.layout.length > 1) {
        problems.push({
          path: `${origin}.diskLayout`,
          message:
            'Ignition sizes partitions in MiB and the disk size is unknown when rendering, so only one partition (taking the whole disk, as the last partition does in cloud-init) can be expressed; use one partition, or cloud-config',
        });
        continue;
      }
      partitions = [];
      for (const [j, p] of disk.layout.entries()) {
        const part: IgnitionPartition = { number: p.number };
        if (p.partitionType !== undefined) {
          const t = typeGuidFor(p.partitionType);
          if ('problem' in t) {
            problems.push({ path: `${origin}.diskLayout[${j}].partitionType`, message: t.problem });
            continue;
          }
          part.typeGuid = t.guid;
        }
        partitions.push(part);
      }
    }
    out.push({
      entry: { device: disk.device, ...(disk.overwrite === true ? { wipeTable: true } : {}), ...(partitions ? { partitions } : {}) },
      origin,
    });
  }
  return out;
}

/** Filesystem formats of spec 3.0.0 (`none` needs 3.3.0 and has no cloud-init equivalent). */
export const FILESYSTEM_FORMATS: readonly string[] = ['ext4', 'btrfs', 'xfs', 'vfat', 'swap'];

/**
 * Longest label per format, as `ignition-validate` checks it (`filesystem labels cannot
 * be longer than N`), for checking configs; the plan's own limits (`LABEL_BYTES`) are
 * the same or shorter.
 */
export const LABEL_LIMITS: Readonly<Record<string, number>> = { ext4: 16, btrfs: 256, xfs: 12, vfat: 11, swap: 15 };

/** A plan filesystem with its device resolved, for mounts to find. */
export interface ResolvedFilesystem {
  device: string;
  format: string;
  label?: string;
  origin: string;
}

/** The device a filesystem goes on (the plan's `filesystemTarget`, as cloud-init chooses it), or a problem. */
function filesystemDevice(fs: PlanFilesystem, disks: ReadonlyMap<string, PlanDisk>): { device: string } | { problem: string } {
  if (!fs.device.startsWith('/')) return { problem: `Ignition needs an absolute device path, not ${JSON.stringify(fs.device)}` };
  if (fs.partition !== undefined && /^\d+$/.test(fs.partition) && Number(fs.partition) < 1) return { problem: 'partition numbers start at 1' };
  const device = filesystemTarget(fs, disks);
  if (device !== undefined) return { device };
  return { problem: `Ignition needs the exact device; "${fs.partition!}" is chosen on the node by cloud-init, so give the partition number or none` };
}

/**
 * Plan filesystems as Ignition filesystems, in plan order: the device cloud-init's
 * `fs_setup` would use (the plan's `filesystemTarget`: a numeric `partition`, that
 * partition's device; no partition, `auto` or `any` on a disk the plan partitions, its
 * partition 1; no partition otherwise, the device itself; `auto`/`any` otherwise refused),
 * `format`, `label`, `wipeFilesystem: true` only when `overwrite === true`, `options`
 * from `extraOpts`.
 *
 * Problems (pushed) at `<origin>.<field>`: a format Ignition does not make (it makes
 * ext4, btrfs, xfs, vfat, swap), `replaceFS` (Ignition
 * cannot wipe only a given filesystem type), an undecidable partition, a relative or
 * repeated device.
 */
export function filesystemEntries(
  filesystems: readonly PlanFilesystem[],
  disks: readonly PlanDisk[],
  problems: FieldProblem[],
): { entries: Sourced<IgnitionFilesystem>[]; resolved: ResolvedFilesystem[] } {
  const entries: Sourced<IgnitionFilesystem>[] = [];
  const resolved: ResolvedFilesystem[] = [];
  const seen = new Set<string>();
  const diskOf = disksByDevice(disks);
  for (const [i, fs] of filesystems.entries()) {
    const origin = fs.origin ?? `spec.provisioning.diskSetup.filesystems[${i}]`;
    const before = problems.length;
    if (!FILESYSTEM_FORMATS.includes(fs.filesystem)) {
      problems.push({ path: `${origin}.filesystem`, message: `Ignition cannot make ${fs.filesystem} filesystems; it makes ${FILESYSTEM_FORMATS.join(', ')}` });
    }
    if (fs.replaceFS !== undefined) {
      problems.push({ path: `${origin}.replaceFS`, message: 'Ignition cannot replace only a filesystem of a given type; use overwrite, or cloud-config' });
    }
    const dev = filesystemDevice(fs, diskOf);
    if ('problem' in dev) {
      problems.push({ path: `${origin}.${fs.device.startsWith('/') ? 'partition' : 'device'}`, message: dev.problem });
    } else if (seen.has(dev.device)) {
      problems.push({ path: `${origin}.device`, message: `a filesystem on ${dev.device} is listed twice` });
    }
    if (problems.length > before || 'problem' in dev) continue;
    seen.add(dev.device);
    entries.push({
      entry: {
        device: dev.device,
        format: fs.filesystem,
        ...(fs.label !== undefined ? { label: fs.label } : {}),
        ...(fs.overwrite === true ? { wipeFilesystem: true } : {}),
        ...(fs.extraOpts.length ? { options: [...fs.extraOpts] } : {}),
      },
      origin,
    });
    resolved.push({ device: dev.device, format: fs.filesystem, ...(fs.label !== undefined ? { label: fs.label } : {}), origin });
  }
  return { entries, resolved };
}
