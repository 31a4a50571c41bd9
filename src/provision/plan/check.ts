/**
 * What a plan may say, enforced once for every output format (DESIGN §1: renderers turn
 * one plan into one format). A request these rules refuse is refused whatever format it
 * asks for, with the same field named; a renderer refuses on its own only what its format
 * cannot express (e.g. an MBR table in Ignition, a file under /run that Ignition would
 * write before a tmpfs hides it).
 */
import type { FieldProblem } from '../../errors.js';
import type { RuleName } from '../../rules.js';
import { disksByDevice, filesystemTarget } from './devices.js';
import type { ProvisioningPlan } from './types.js';

/** Control characters a command may not contain: C0 but TAB and LF, and DEL. */
const COMMAND_CONTROL = /[\x00-\x08\x0b-\x1f\x7f]/;

/**
 * Why a command is not what it looks like, or undefined: a C0 control character other
 * than TAB and line feed, or DEL. A CR hides what precedes it on a terminal (and the
 * shell reads it as part of a word), NUL ends the string for C and cuts the line short,
 * ESC starts a terminal escape; cloud-init and the Ignition script would run the bytes
 * as written. Line feeds stay (a multi-line command, such as a here-document).
 */
export function commandControlProblem(text: string): string | undefined {
  const m = COMMAND_CONTROL.exec(text);
  if (!m) return undefined;
  const code = m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
  return `contains the control character U+${code} at offset ${m.index}: a command must be what it looks like (only TAB and line feed are allowed)`;
}

/** The request field of each command phase. */
const COMMAND_FIELDS = { boot: 'spec.provisioning.bootCommands', pre: 'spec.provisioning.preKubeadmCommands', post: 'spec.provisioning.postKubeadmCommands' } as const;

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

/** A problem of `rule` (src/rules.ts). */
const tagged = (rule: RuleName, path: string, message: string): FieldProblem => ({ path, message, rule });

/**
 * Check a plan against the rules every format shares, each problem tagged with its rule
 * (src/rules.ts: what an earlier release stored is excused from a later rule):
 * - commands: no control character but TAB and line feed ({@link commandControlProblem},
 *   `spec.provisioning.<phase>Commands[i]`);
 * - disks: a device listed once (`<origin>.device`);
 * - filesystems: a label within its format's byte limit ({@link LABEL_BYTES},
 *   `<origin>.label`); not on the whole of a disk the request partitions
 *   (`partition: none` there, `<origin>.partition`: Ignition's "filesystem overwrites
 *   partitioned device"); one filesystem per exact device (a device and partition number,
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

  for (const phase of ['boot', 'pre', 'post'] as const) {
    plan.commands[phase].forEach((c, i) => {
      const problem = commandControlProblem(c);
      if (problem) problems.push(tagged('command-control', `${COMMAND_FIELDS[phase]}[${i}]`, problem));
    });
  }

  const disks = new Map<string, string>();
  plan.disks.forEach((d, i) => {
    const origin = d.origin ?? `spec.provisioning.diskSetup.partitions[${i}]`;
    const first = disks.get(d.device);
    if (first !== undefined) problems.push(tagged('disk-device', `${origin}.device`, `disk ${d.device} is listed twice (first at ${first}.device)`));
    else disks.set(d.device, origin);
  });

  const targets = new Map<string, string>();
  const disksOf = disksByDevice(plan.disks);
  plan.filesystems.forEach((f, i) => {
    const origin = f.origin ?? `spec.provisioning.diskSetup.filesystems[${i}]`;
    const limit = LABEL_BYTES[f.filesystem];
    if (f.label !== undefined && limit !== undefined && Buffer.byteLength(f.label, 'utf8') > limit) {
      problems.push(tagged('filesystem-label', `${origin}.label`, `${f.filesystem} labels are at most ${limit} bytes (mkfs refuses or cuts a longer one)`));
    }
    const disk = disksOf.get(f.device);
    if (f.partition === 'none' && disk !== undefined && (disk.layout === true || (Array.isArray(disk.layout) && disk.layout.length > 0))) {
      problems.push(tagged('filesystem-whole-disk', `${origin}.partition`, `is none on ${f.device}, which the request partitions: the filesystem would be made over the partition table just written; give the partition number`));
    }
    const target = filesystemTarget(f, disksOf);
    if (target === undefined) return;
    const first = targets.get(target);
    if (first !== undefined) problems.push(tagged('filesystem-device', `${origin}.device`, `a filesystem on ${target} is listed twice (first at ${first})`));
    else targets.set(target, origin);
  });

  const mountPoints = new Map<string, string>();
  plan.mounts.forEach((m, i) => {
    const origin = m.origin ?? `spec.provisioning.mounts[${i}]`;
    const fields = [m.device, m.mountPoint, m.fsType, m.options, m.dump, m.pass];
    const bad = fields.findIndex((v) => v !== undefined && CONTROL.test(v));
    if (bad >= 0) {
      problems.push(tagged('mount-field', `${origin}[${bad}]`, 'has a line break or control character, which no fstab line or mount unit can hold'));
      return;
    }
    if (isSwapMount(m) || !m.mountPoint.startsWith('/')) return;
    const where = cleanMountPoint(m.mountPoint);
    const first = mountPoints.get(where);
    if (first !== undefined) problems.push(tagged('mount-point', `${origin}[1]`, `mount point ${where} is already used by ${first}`));
    else mountPoints.set(where, origin);
  });

  plan.users.forEach((u, i) => {
    const origin = u.origin ?? `spec.provisioning.users[${i}]`;
    const badGroup = (g: string) => !GROUP_NAME.test(g) || Buffer.byteLength(g, 'utf8') > GROUP_NAME_MAX;
    const bad = u.groups.filter(badGroup);
    if (bad.length) {
      problems.push(tagged('group-name', `${origin}.groups`, `${bad.map((g) => JSON.stringify(g)).join(', ')} is not a group name groupadd accepts (a letter or _, then letters, digits, _ - ., at most ${GROUP_NAME_MAX})`));
    }
    if (u.primaryGroup !== undefined && badGroup(u.primaryGroup)) {
      problems.push(tagged('group-name', `${origin}.primaryGroup`, 'is not a group name groupadd accepts'));
    }
    if (u.sudo !== undefined && /[\r\n]/.test(u.sudo)) problems.push(tagged('sudo-line', `${origin}.sudo`, 'must be one sudoers rule on one line'));
  });

  plan.ntp?.servers.forEach((server, i) => {
    if (server === '' || /[\s\x00-\x1f\x7f]/.test(server)) {
      problems.push(tagged('ntp-server', plan.ntp!.origins?.[i] ?? `spec.provisioning.ntp.servers[${i}]`, 'must be a host name or address without whitespace'));
    }
  });
  return problems;
}
