/**
 * What each renderer version changed in the meaning of what a node receives (issue 27):
 * the list CHANGELOG.md tells in prose, kept as data so `bootwright upgrade check` can
 * say, for each stored machine, what its next boot gets that its last one did not. Bytes
 * change with every `RENDERER_VERSION` (src/version.ts); an entry here is a change a
 * node would notice, with the test of whether a machine's request is concerned.
 *
 * Adding a renderer version: its entries here, its section in CHANGELOG.md
 * (test/compat/changes.test.ts holds the two to each other and to `RENDERER_VERSION`).
 */
import type { OutputFormat } from '../provision/formats.js';
import type { NodeBootstrap } from '../request/schema.js';

/** What an entry's test looks at: the stored machine's assembled request and the format it is served. */
export interface ChangeSubject {
  req: NodeBootstrap;
  format: OutputFormat;
}

/** One change in meaning. */
export interface OutputChange {
  /** The renderer version that brought it. */
  rendererVersion: number;
  summary: string;
  /** Whether a machine of this request and format gets something else because of it. */
  applies: (s: ChangeSubject) => boolean;
}

type Users = NonNullable<NonNullable<NodeBootstrap['spec']['provisioning']>['users']>;
const users = (s: ChangeSubject): Users => s.req.spec.provisioning?.users ?? [];
const groupsOf = (u: Users[number]): string[] => (u.groups ?? '').split(',').map((g) => g.trim()).filter(Boolean);
const hasGroups = (s: ChangeSubject) => users(s).some((u) => groupsOf(u).length > 0 || u.primaryGroup !== undefined);

/** Every change since v0.1.0 (renderer version 1), oldest first. */
export const OUTPUT_CHANGES: readonly OutputChange[] = [
  {
    rendererVersion: 2,
    summary: "Ignition: users' supplementary groups are added on the first boot by a script, not by passwd.users[].groups (a group the image lacks no longer stops Ignition)",
    applies: (s) => s.format === 'ignition' && hasGroups(s),
  },
  {
    rendererVersion: 2,
    summary: 'a user listed in a group of its own name gets that group as its primary group',
    applies: (s) => users(s).some((u) => u.primaryGroup === undefined && groupsOf(u).includes(u.name)),
  },
  {
    rendererVersion: 2,
    summary: "the directories between a created user's home and a file the user owns are owned by the user",
    applies: (s) => {
      const homes = new Map(users(s).map((u) => [u.name, u.homeDir ?? `/home/${u.name}`]));
      return (s.req.spec.provisioning?.files ?? []).some((f) => {
        const home = homes.get((f.owner ?? 'root').split(':')[0]!);
        return home !== undefined && f.path.startsWith(`${home}/`) && f.path.slice(home.length + 1).includes('/');
      });
    },
  },
  {
    rendererVersion: 2,
    summary: "a filesystem on a partition is made on the partition's own device name (nvme0n1p1 for nvme0n1, sda1 for sda)",
    applies: (s) => (s.req.spec.provisioning?.diskSetup?.filesystems ?? []).some((f) => f.partition !== undefined),
  },
  {
    rendererVersion: 2,
    summary: 'mount entries with white space are written fstab-escaped (\\040)',
    applies: (s) => (s.req.spec.provisioning?.mounts ?? []).some((m) => m.some((field) => /\s/.test(field))),
  },
  {
    rendererVersion: 2,
    summary: 'ntp.enabled: false leaves the image\'s time synchronisation alone, in both formats',
    applies: (s) => s.req.spec.provisioning?.ntp?.enabled === false,
  },
  {
    rendererVersion: 3,
    summary: "the data served to a stored machine carries a boot report: kubeadm's output and status are kept and sent to the machine's signed report URL (status phase Joined or Failed)",
    applies: () => true,
  },
  {
    rendererVersion: 4,
    summary:
      "the boot report script is /etc/kubeadm/report.sh (was /etc/bootwright/report.sh) and kubeadm's output and status are kept in /run/kubeadm (was /var/lib/bootwright); Ignition reports a failure from the bootstrap unit's ExecStopPost= (kubeadm-report-failure.service is gone)",
    applies: () => true,
  },
  {
    rendererVersion: 4,
    summary: "Ignition: the supplementary-groups script runs as the bootstrap script's first line (kubeadm-groups.service is gone)",
    applies: (s) => s.format === 'ignition' && hasGroups(s),
  },
  {
    rendererVersion: 4,
    summary: "Ignition: a filesystem named by a disk the request partitions, with no partition, is made on the disk's first partition, where cloud-init's fs_setup makes it (was: on the whole disk, over the partition table)",
    applies: (s) => {
      if (s.format !== 'ignition') return false;
      const setup = s.req.spec.provisioning?.diskSetup;
      const partitioned = new Set((setup?.partitions ?? []).filter((p) => p.layout === true || (p.diskLayout?.length ?? 0) > 0).map((p) => p.device));
      return (setup?.filesystems ?? []).some((f) => (f.partition === undefined || f.partition === 'any' || f.partition === 'auto') && partitioned.has(f.device));
    },
  },
  {
    rendererVersion: 4,
    summary: 'Ignition: a disk with layout: false is left alone, as cloud-init leaves it (was: its partition table wiped when overwrite: true)',
    applies: (s) => s.format === 'ignition' && (s.req.spec.provisioning?.diskSetup?.partitions ?? []).some((p) => p.layout === false && p.overwrite === true),
  },
  {
    rendererVersion: 4,
    summary: 'an NTP server named twice is written once (cloud-init refuses a list with repeats)',
    applies: (s) => {
      const servers = s.req.spec.provisioning?.ntp?.servers ?? [];
      return new Set(servers).size < servers.length;
    },
  },
];

/**
 * The changes a machine's next boot gets over its last one.
 *
 * @param since the renderer version that last served it (undefined: never served, so
 *   nothing changes for it)
 */
export function changesSince(since: number | undefined, subject: ChangeSubject): string[] {
  if (since === undefined) return [];
  return OUTPUT_CHANGES.filter((c) => c.rendererVersion > since && c.applies(subject)).map((c) => `renderer ${c.rendererVersion}: ${c.summary}`);
}
