/**
 * Supplementary group memberships, applied by a first-boot unit instead of
 * `passwd.users[].groups`. Ignition creates a user with `useradd --groups <list>`, which
 * fails when one group does not exist on the image, and a failing `useradd` stops the
 * files stage: nothing is written and kubeadm never runs (the node is bricked).
 * cloud-init creates missing groups (`create_group` for each of a user's groups), so
 * the request means "member of these groups, created when missing" in both formats.
 *
 * Layout on the node: `/etc/kubeadm/groups.sh` (0700), run once, as the first line of the
 * bootstrap script (`./bootstrap.ts`): after the boot commands and before the pre
 * commands, as cloud-init's users-groups module runs after bootcmd and before runcmd.
 */
import { shellQuote } from '../shell.js';
import type { Owner, PlanDirectory, PlanFile, PlanUser } from '../plan/types.js';
import type { IgnitionFile, Sourced } from './config.js';
import type { EncodeOptions } from './dataurl.js';
import { generatedFile } from './files.js';

/** The script that adds users to their groups (under /etc/kubeadm, reserved since v0.1.0). */
export const GROUPS_SCRIPT = '/etc/kubeadm/groups.sh';
const SCRIPT_MODE = 0o700;

/** A file or directory whose group the groups script gives it, after the group exists. */
export interface LateGroup {
  path: string;
  group: string;
  /** Permission bits re-applied after `chgrp` (which clears setuid/setgid). */
  mode: number;
}

/**
 * Groups that may exist only once the groups script has run: the users' primary and
 * supplementary groups, except `root` and the users' own names (useradd makes each user's group in
 * Ignition's passwd stage, before files are written).
 */
function lateGroups(users: readonly PlanUser[]): Set<string> {
  const own = new Set(users.map((u) => u.name));
  return new Set(scriptGroups(users).filter((g) => g !== 'root' && !own.has(g)));
}

/** Every group the script makes sure of: primary groups and supplementary groups, in first use order. */
function scriptGroups(users: readonly PlanUser[]): string[] {
  return [...new Set(users.flatMap((u) => [...(u.primaryGroup !== undefined ? [u.primaryGroup] : []), ...u.groups]))];
}

/**
 * Files and directories whose group is one of {@link lateGroups}: Ignition resolves owner
 * names when it writes files, and a group the image lacks would stop the files stage
 * just as `useradd --groups` would. They are written with group `root` and given their
 * group by the groups script.
 *
 * @returns the plan entries with those groups replaced by root, and what the script must fix
 */
export function deferGroupOwners<T extends PlanFile | PlanDirectory>(users: readonly PlanUser[], entries: readonly T[]): { entries: T[]; late: LateGroup[] } {
  const groups = lateGroups(users);
  const late: LateGroup[] = [];
  const out = entries.map((e) => {
    if (!groups.has(e.owner.group)) return e;
    late.push({ path: e.path, group: e.owner.group, mode: e.mode });
    const owner: Owner = { user: e.owner.user, group: 'root' };
    return { ...e, owner };
  });
  return { entries: out, late };
}

/**
 * The script: for each group (first use order), make sure `/etc/group` has it, then for
 * each user `usermod -a -G <groups> <user>`. A group is looked up in `/etc/group` first;
 * one that only the NSS knows (Fedora CoreOS keeps `wheel`, `sudo`, `docker` in
 * `/usr/lib/group`, which `usermod` does not edit) is copied from `getent group` into
 * `/etc/group`, as Fedora CoreOS documents; a missing one is created with `groupadd`.
 * Primary groups are set with `usermod -g` (which also regroups the home's files), since
 * `useradd --gid` with a missing group would stop the files stage too; cloud-init
 * creates a missing `primary_group` with the user's groups.
 * Then each file or directory of `late` gets its group (`chgrp`, then its mode again,
 * since `chgrp` clears setuid/setgid). Every step is idempotent and a failing line does
 * not stop the next (no `set -e`), so
 * a group that cannot be added costs that membership only, never the bootstrap.
 * Names are valid group and user names (checked by the plan) and shell-quoted anyway.
 */
export function groupsScript(users: readonly PlanUser[], late: readonly LateGroup[] = []): string {
  const groups = scriptGroups(users);
  const lines = [
    '#!/bin/sh',
    ...groups.map((g) => {
      const q = shellQuote(g);
      return `grep -q ${shellQuote(`^${g}:`)} /etc/group || getent group ${q} >> /etc/group || groupadd ${q}`;
    }),
    ...users.filter((u) => u.primaryGroup !== undefined).map((u) => `usermod -g ${shellQuote(u.primaryGroup!)} ${shellQuote(u.name)}`),
    ...users.filter((u) => u.groups.length > 0).map((u) => `usermod -a -G ${shellQuote([...new Set(u.groups)].join(','))} ${shellQuote(u.name)}`),
    ...late.map((l) => `chgrp -- ${shellQuote(l.group)} ${shellQuote(l.path)} && chmod -- ${(l.mode & 0o7777).toString(8).padStart(4, '0')} ${shellQuote(l.path)}`),
  ];
  return `${lines.join('\n')}\n`;
}

/** Whether the plan needs the groups script: a user has a primary or supplementary group. */
export function needsGroups(users: readonly PlanUser[]): boolean {
  return users.some((u) => u.groups.length > 0 || u.primaryGroup !== undefined);
}

/**
 * The groups script when any user has a primary or supplementary group
 * ({@link needsGroups}); nothing otherwise (then `late` is empty too:
 * {@link deferGroupOwners} defers only those groups). The bootstrap script runs it.
 */
export function groupEntries(users: readonly PlanUser[], late: readonly LateGroup[], encoding: EncodeOptions): Sourced<IgnitionFile>[] {
  if (!needsGroups(users)) return [];
  return [generatedFile(GROUPS_SCRIPT, groupsScript(users, late), SCRIPT_MODE, encoding)];
}
