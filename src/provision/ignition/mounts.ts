/**
 * Plan mounts (fstab-style entries, cloud-init `mounts`) as systemd `.mount` and `.swap`
 * units (systemd.mount(5), systemd.swap(5)): Ignition has no fstab, and units it writes
 * are enabled at first boot.
 */
import type { FieldProblem } from '../../errors.js';
import type { PlanMount } from '../plan/types.js';
import type { IgnitionUnit, Sourced } from './config.js';
import type { ResolvedFilesystem } from './storage.js';
import { UNIT_NAME_MAX, cleanPath, escapeSpecifiers, escapeUnitPath, unitValueProblem } from './systemd.js';

/** fstab source tags and the udev link directories they name. */
const TAGS: Record<string, string> = {
  LABEL: '/dev/disk/by-label',
  UUID: '/dev/disk/by-uuid',
  PARTLABEL: '/dev/disk/by-partlabel',
  PARTUUID: '/dev/disk/by-partuuid',
};
/** Bytes udev keeps in `/dev/disk/by-*` link names (libblkid blkid_encode_string). */
const UDEV_SAFE = /^[A-Za-z0-9#+\-.:=@_]$/;
const FS_TYPE = /^[A-Za-z0-9._+-]+$/;

/**
 * A tag value as udev writes it in link names: ASCII outside `A-Z a-z 0-9 # + - . : = @ _`
 * becomes `\xNN` (so `my disk` → `my\x20disk`); UTF-8 beyond ASCII is kept.
 */
export function udevEncode(value: string): string {
  let out = '';
  for (const ch of value) out += ch.codePointAt(0)! >= 0x80 || UDEV_SAFE.test(ch) ? ch : `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`;
  return out;
}

/**
 * The device path for an fstab source: `LABEL=x` → `/dev/disk/by-label/x` (likewise
 * `UUID=`, `PARTLABEL=`, `PARTUUID=`), so systemd waits for the device; anything else as
 * given (a device path, or `host:/path` for network filesystems).
 */
export function mountSource(device: string): string {
  const eq = device.indexOf('=');
  const dir = eq > 0 ? TAGS[device.slice(0, eq)] : undefined;
  return dir ? `${dir}/${udevEncode(device.slice(eq + 1))}` : device;
}

function isSwap(m: PlanMount): boolean {
  return m.fsType === 'swap' || m.mountPoint === 'none' || m.mountPoint === 'swap';
}

/** The unit file text: settings are checked and `%`-escaped by the caller. */
function unitText(sections: [string, string[]][]): string {
  return sections.map(([name, lines]) => [`[${name}]`, ...lines].join('\n')).join('\n\n') + '\n';
}

/**
 * Mounts as units, in plan order, each enabled:
 * - a mount → `<systemd-escape --path mountpoint>.mount` with `What=` ({@link mountSource}),
 *   `Where=` (the simplified mount point), `Type=` (the entry's fstype unless `auto`, else
 *   the format of the plan filesystem on that device or label), `Options=` when given,
 *   `[Install] WantedBy=local-fs.target`; with a non-zero fsck pass number on a `/dev`
 *   source, `Requires=`/`After=` its `systemd-fsck@` instance, as systemd-fstab-generator
 *   does;
 * - swap (fstype `swap`, or mount point `none`/`swap`) → `<escaped device>.swap` with
 *   `What=`, `Options=` when given, `WantedBy=swap.target`.
 * `dump` is ignored (no one reads it). `%` in settings is written `%%`.
 *
 * Problems (pushed) at the entry's origin: cloud-init's `ephemeralN` device aliases, a
 * relative mount point or swap device, a
 * mount point `/`, a non-swap fstype on a `none` mount point, a setting a unit file
 * cannot hold (line break, edge whitespace, trailing `\`), a bad fstype, a unit name over
 * 255 characters.
 */
export function mountUnits(mounts: readonly PlanMount[], filesystems: readonly ResolvedFilesystem[], problems: FieldProblem[]): Sourced<IgnitionUnit>[] {
  const out: Sourced<IgnitionUnit>[] = [];
  // The first filesystem on each device and with each label, so each mount looks its
  // filesystem up in constant time.
  const byDevice = new Map<string, number>();
  const byLabel = new Map<string, number>();
  filesystems.forEach((f, j) => {
    if (!byDevice.has(f.device)) byDevice.set(f.device, j);
    if (f.label !== undefined && !byLabel.has(f.label)) byLabel.set(f.label, j);
  });
  for (const [i, m] of mounts.entries()) {
    const origin = m.origin ?? `spec.provisioning.mounts[${i}]`;
    const fail = (message: string) => problems.push({ path: origin, message });
    if (/^ephemeral\d+$/.test(m.device)) {
      fail(`${m.device} is cloud-init's name for the datasource's ephemeral disk, which Ignition cannot resolve: give a device path (e.g. /dev/nvme1n1) or LABEL=`);
      continue;
    }
    const what = mountSource(m.device);
    const settings = [what, m.mountPoint, ...(m.options !== undefined ? [m.options] : [])];
    const bad = settings.map(unitValueProblem).find((p) => p !== undefined);
    if (bad) {
      fail(`a value ${bad}`);
      continue;
    }
    const options = m.options !== undefined ? [`Options=${escapeSpecifiers(m.options)}`] : [];

    if (isSwap(m)) {
      if (m.fsType !== undefined && m.fsType !== 'swap') {
        fail(`mount point ${m.mountPoint} is for swap, but the filesystem type is ${m.fsType}`);
        continue;
      }
      if (!what.startsWith('/')) {
        fail(`swap needs a device path or LABEL=/UUID=, not ${JSON.stringify(m.device)}`);
        continue;
      }
      const name = `${escapeUnitPath(what)}.swap`;
      if (name.length > UNIT_NAME_MAX) {
        fail(`the swap unit name for ${what} is longer than ${UNIT_NAME_MAX} characters`);
        continue;
      }
      const contents = unitText([
        ['Swap', [`What=${escapeSpecifiers(what)}`, ...options]],
        ['Install', ['WantedBy=swap.target']],
      ]);
      out.push({ entry: { name, enabled: true, contents }, origin });
      continue;
    }

    if (!m.mountPoint.startsWith('/') || m.mountPoint.split('/').includes('..')) {
      fail(`the mount point must be an absolute path without "..", not ${JSON.stringify(m.mountPoint)}`);
      continue;
    }
    const where = cleanPath(m.mountPoint);
    if (where === '/') {
      fail('cannot mount over /');
      continue;
    }
    const name = `${escapeUnitPath(where)}.mount`;
    if (name.length > UNIT_NAME_MAX) {
      fail(`the mount unit name for ${where} is longer than ${UNIT_NAME_MAX} characters`);
      continue;
    }
    const onDevice = byDevice.get(what);
    const withLabel = m.device.startsWith('LABEL=') ? byLabel.get(m.device.slice('LABEL='.length)) : undefined;
    const first = Math.min(onDevice ?? Infinity, withLabel ?? Infinity);
    const fs = first === Infinity ? undefined : filesystems[first];
    const type = m.fsType !== undefined && m.fsType !== 'auto' ? m.fsType : fs?.format;
    if (type !== undefined && !FS_TYPE.test(type)) {
      fail(`filesystem type ${JSON.stringify(type)} is not a type name`);
      continue;
    }
    const fsck = m.pass !== undefined && m.pass !== '0' && what.startsWith('/dev/') ? `systemd-fsck@${escapeUnitPath(what)}.service` : undefined;
    const contents = unitText([
      ...(fsck ? [['Unit', [`Requires=${fsck}`, `After=${fsck}`]] as [string, string[]]] : []),
      ['Mount', [`What=${escapeSpecifiers(what)}`, `Where=${escapeSpecifiers(where)}`, ...(type !== undefined ? [`Type=${type}`] : []), ...options]],
      ['Install', ['WantedBy=local-fs.target']],
    ]);
    out.push({ entry: { name, enabled: true, contents }, origin });
  }
  return out;
}
