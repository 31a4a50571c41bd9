/**
 * What a plan may say, enforced once for every output format (DESIGN §1: renderers turn
 * one plan into one format). A request these rules refuse is refused whatever format it
 * asks for, with the same field named; a renderer refuses on its own only what its format
 * cannot express (e.g. an MBR table in Ignition, a file under /run that Ignition would
 * write before a tmpfs hides it).
 */
import type { FieldProblem } from '../../errors.js';
import { filesystemTarget } from './devices.js';
import type { ProvisioningPlan } from './types.js';

/**
 * Longest filesystem label per format, in bytes, as each mkfs takes it: mke2fs (ext2,
 * ext3, ext4) 16 (`EXT2_LABEL_LEN`), mkfs.xfs 12, mkfs.vfat/fat 11, mkfs.btrfs 255
 * (`BTRFS_LABEL_SIZE` 256 with the final NUL), mkswap 15 (swap header `volume_name[16]`
 * with its NUL). Ignition's limits (`filesystem labels cannot be longer than N`) are the
 * same or longer, so a label within these is valid in every format.
 */
export const LABEL_BYTES: Readonly<Record<string, number>> = { ext2: 16, ext3: 16, ext4: 16, xfs: 12, vfat: 11, fat: 11, btrfs: 255, swap: 15 };

/**
 * A group name as shadow-utils' `groupadd` and `useradd --groups` take it by default
 * (`is_valid_group_name`: a letter or `_` first, then letters, digits, `_`, `-`, `.`,
 * an optional final `$`; at most 32 bytes). cloud-init hands groups to these tools.
 */
const GROUP_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*\$?$/;
const GROUP_NAME_MAX = 32;
/** Characters no fstab field, unit setting or cloud-init mount entry can hold. */
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;

/** `path` without `.` segments, repeated or trailing `/`: how the kernel resolves a mount point. */
function cleanMountPoint(path: string): string {
  const parts = path.split('/').filter((p) => p !== '' && p !== '.');
  return `/${parts.join('/')}`;
}

function isSwapMount(m: { mountPoint: string; fsType?: string }): boolean {
  return m.fsType === 'swap' || m.mountPoint === 'none' || m.mountPoint === 'swap';
}

/**
 * Check a plan against the rules every format shares:
 * - disks: a device listed once (`<origin>.device`);
 * - filesystems: a label within its format's byte limit ({@link LABEL_BYTES},
 *   `<origin>.label`); one filesystem per exact device (a device and partition number,
 *   see `filesystemTarget`; `<origin>.device`);
 * - mounts: no control character or line break in any field (`<origin>[k]`); a mount
 *   point used once, compared after simplification (`/mnt/a/` = `/mnt/a`; `<origin>[1]`);
 * - users: group names shadow-utils accepts (`<origin>.groups`, `<origin>.primaryGroup`),
 *   a `sudo` rule on one line (sudo refuses a whole drop-in with a bad line; `<origin>.sudo`);
 * - ntp: servers without whitespace or control characters
 *   (`spec.provisioning.ntp.servers[i]`).
 *
 * @returns the problems found, each at the request field it came from; `[]` when none
 */
export function checkPlan(plan: ProvisioningPlan): FieldProblem[] {
  const problems: FieldProblem[] = [];

  const disks = new Map<string, string>();
  plan.disks.forEach((d, i) => {
    const origin = d.origin ?? `spec.provisioning.diskSetup.partitions[${i}]`;
    const first = disks.get(d.device);
    if (first !== undefined) problems.push({ path: `${origin}.device`, message: `disk ${d.device} is listed twice (first at ${first}.device)` });
    else disks.set(d.device, origin);
  });

  const targets = new Map<string, string>();
  plan.filesystems.forEach((f, i) => {
    const origin = f.origin ?? `spec.provisioning.diskSetup.filesystems[${i}]`;
    const limit = LABEL_BYTES[f.filesystem];
    if (f.label !== undefined && limit !== undefined && Buffer.byteLength(f.label, 'utf8') > limit) {
      problems.push({ path: `${origin}.label`, message: `${f.filesystem} labels are at most ${limit} bytes (mkfs refuses or cuts a longer one)` });
    }
    const target = filesystemTarget(f);
    if (target === undefined) return;
    const first = targets.get(target);
    if (first !== undefined) problems.push({ path: `${origin}.device`, message: `a filesystem on ${target} is listed twice (first at ${first})` });
    else targets.set(target, origin);
  });

  const mountPoints = new Map<string, string>();
  plan.mounts.forEach((m, i) => {
    const origin = m.origin ?? `spec.provisioning.mounts[${i}]`;
    const fields = [m.device, m.mountPoint, m.fsType, m.options, m.dump, m.pass];
    const bad = fields.findIndex((v) => v !== undefined && CONTROL.test(v));
    if (bad >= 0) {
      problems.push({ path: `${origin}[${bad}]`, message: 'has a line break or control character, which no fstab line or mount unit can hold' });
      return;
    }
    if (isSwapMount(m) || !m.mountPoint.startsWith('/')) return;
    const where = cleanMountPoint(m.mountPoint);
    const first = mountPoints.get(where);
    if (first !== undefined) problems.push({ path: `${origin}[1]`, message: `mount point ${where} is already used by ${first}` });
    else mountPoints.set(where, origin);
  });

  plan.users.forEach((u, i) => {
    const origin = u.origin ?? `spec.provisioning.users[${i}]`;
    const badGroup = (g: string) => !GROUP_NAME.test(g) || Buffer.byteLength(g, 'utf8') > GROUP_NAME_MAX;
    const bad = u.groups.filter(badGroup);
    if (bad.length) {
      problems.push({ path: `${origin}.groups`, message: `${bad.map((g) => JSON.stringify(g)).join(', ')} is not a group name groupadd accepts (a letter or _, then letters, digits, _ - ., at most ${GROUP_NAME_MAX})` });
    }
    if (u.primaryGroup !== undefined && badGroup(u.primaryGroup)) {
      problems.push({ path: `${origin}.primaryGroup`, message: 'is not a group name groupadd accepts' });
    }
    if (u.sudo !== undefined && /[\r\n]/.test(u.sudo)) problems.push({ path: `${origin}.sudo`, message: 'must be one sudoers rule on one line' });
  });

  plan.ntp?.servers.forEach((server, i) => {
    if (server === '' || /[\s\x00-\x1f\x7f]/.test(server)) {
      problems.push({ path: `spec.provisioning.ntp.servers[${i}]`, message: 'must be a host name or address without whitespace' });
    }
  });
  return problems;
}
