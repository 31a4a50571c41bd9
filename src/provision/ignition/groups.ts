/**
 * Supplementary group memberships, applied by a first-boot unit instead of
 * `passwd.users[].groups`. Ignition creates a user with `useradd --groups <list>`, which
 * fails when one group does not exist on the image, and a failing `useradd` stops the
 * files stage: nothing is written and kubeadm never runs (the node is bricked).
 * cloud-init creates missing groups (`create_group` for each of a user's groups), so
 * the request means "member of these groups, created when missing" in both formats.
 *
 * Layout on the node: `/etc/kubeadm/groups.sh` (0700), run once by
 * `kubeadm-groups.service`, ordered before `kubeadm-bootstrap.service`.
 */
import { shellQuote } from '../shell.js';
import type { PlanUser } from '../plan/types.js';
import { GENERATED, type IgnitionFile, type IgnitionUnit, type Sourced } from './config.js';
import type { EncodeOptions } from './dataurl.js';
import { BOOTSTRAP_STATE_DIR, BOOTSTRAP_UNIT, KUBEADM_DIR } from './bootstrap.js';
import { generatedFile } from './files.js';

/** The script that adds users to their groups. */
export const GROUPS_SCRIPT = `${KUBEADM_DIR}/groups.sh`;
/** The oneshot unit that runs {@link GROUPS_SCRIPT} once, before kubeadm. */
export const GROUPS_UNIT = 'kubeadm-groups.service';
/** Written when {@link GROUPS_SCRIPT} has run; while it exists the unit is skipped. */
export const GROUPS_STAMP = `${BOOTSTRAP_STATE_DIR}/kubeadm-groups.done`;
const SCRIPT_MODE = 0o700;

/**
 * The script: for each group (first use order), make sure `/etc/group` has it, then for
 * each user `usermod -a -G <groups> <user>`. A group is looked up in `/etc/group` first;
 * one that only the NSS knows (Fedora CoreOS keeps `wheel`, `sudo`, `docker` in
 * `/usr/lib/group`, which `usermod` does not edit) is copied from `getent group` into
 * `/etc/group`, as Fedora CoreOS documents; a missing one is created with `groupadd`.
 * Every step is idempotent and a failing line does not stop the next (no `set -e`), so
 * a group that cannot be added costs that membership only, never the bootstrap.
 * Names are valid group and user names (checked by the plan) and shell-quoted anyway.
 */
export function groupsScript(users: readonly PlanUser[]): string {
  const groups = [...new Set(users.flatMap((u) => u.groups))];
  const lines = [
    '#!/bin/sh',
    ...groups.map((g) => {
      const q = shellQuote(g);
      return `grep -q ${shellQuote(`^${g}:`)} /etc/group || getent group ${q} >> /etc/group || groupadd ${q}`;
    }),
    ...users.filter((u) => u.groups.length > 0).map((u) => `usermod -a -G ${shellQuote([...new Set(u.groups)].join(','))} ${shellQuote(u.name)}`),
  ];
  return `${lines.join('\n')}\n`;
}

/** `kubeadm-groups.service`: runs the script once (stamp in the bootstrap unit's state directory), before kubeadm. */
export function groupsUnit(): string {
  return [
    '[Unit]',
    'Description=Add node users to their supplementary groups (once)',
    `Before=${BOOTSTRAP_UNIT}`,
    `ConditionPathExists=!${GROUPS_STAMP}`,
    '',
    '[Service]',
    'Type=oneshot',
    'RemainAfterExit=yes',
    'StateDirectory=bootwright',
    `ExecStart=/bin/sh ${GROUPS_SCRIPT}`,
    `ExecStartPost=touch ${GROUPS_STAMP}`,
    `ExecStopPost=touch ${GROUPS_STAMP}`,
    'StandardOutput=journal+console',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
}

/**
 * The groups script and unit when any user has supplementary groups; nothing otherwise.
 */
export function groupEntries(users: readonly PlanUser[], encoding: EncodeOptions): { files: Sourced<IgnitionFile>[]; units: Sourced<IgnitionUnit>[] } {
  if (!users.some((u) => u.groups.length > 0)) return { files: [], units: [] };
  return {
    files: [generatedFile(GROUPS_SCRIPT, groupsScript(users), SCRIPT_MODE, encoding)],
    units: [{ entry: { name: GROUPS_UNIT, enabled: true, contents: groupsUnit() }, origin: GENERATED }],
  };
}
