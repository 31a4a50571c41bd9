/**
 * Plan users as `passwd.users[]` plus sudoers drop-ins (cloud-init `users` semantics,
 * Cluster API `users[]`; coreos/ignition `docs/configuration-v3_0.md` "passwd").
 */
import type { FieldProblem } from '../../errors.js';
import type { PlanUser } from '../plan/types.js';
import type { IgnitionFile, IgnitionUser, Sourced } from './config.js';
import type { EncodeOptions } from './dataurl.js';
import { generatedFile } from './files.js';

/** Where sudo reads drop-ins (sudoers(5) `@includedir /etc/sudoers.d`). */
export const SUDOERS_DIR = '/etc/sudoers.d';
const SUDOERS_MODE = 0o440;

/**
 * The sudoers drop-in file name for a user: the name itself, with every character other
 * than `A-Z a-z 0-9 -` written as `_` and two hex digits (`a$` → `a_24`, `a_` → `a_5f`),
 * because sudo silently skips drop-ins whose names contain `.` or end in `~` (sudoers(5)
 * "Including other files from within sudoers"); escaping `_` too keeps distinct users in
 * distinct files.
 */
export function sudoersFileName(user: string): string {
  return user.replace(/[^A-Za-z0-9-]/g, (c) => `_${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * Users and their sudoers files, in plan order.
 *
 * - `passwd` → `passwordHash`. `lockPassword: true` with a hash → the hash prefixed with
 *   `!` (what `passwd -l` / `usermod -L` write, and what cloud-init's `lock_passwd` does
 *   to a user with `hashed_passwd`: the hash is kept, password login is refused).
 *   Without a hash Ignition leaves the account locked already, so `lockPassword` changes
 *   nothing then; `lockPassword: false` without a hash has no password to unlock.
 * - `sshAuthorizedKeys` without repeats (Ignition refuses duplicates), `gecos`,
 *   `homeDir`, `shell`. `primaryGroup` and supplementary `groups` are not written here:
 *   `useradd --gid`/`--groups` with a group the image lacks stops Ignition's files
 *   stage, so they are set at first boot by `kubeadm-groups.service` (`./groups.ts`).
 * - `sudo` → `/etc/sudoers.d/<name>` (0440, root) holding `<name> <rule>\n`.
 *
 * Problems (pushed, not thrown) at `<origin>.<field>`: `inactive: true` (Ignition cannot
 * expire an account), a repeated user name. (A `sudo` rule with a line break is refused
 * for every format by the plan's `checkPlan`.)
 */
export function passwdEntries(
  users: readonly PlanUser[],
  encoding: EncodeOptions,
  problems: FieldProblem[],
): { users: Sourced<IgnitionUser>[]; files: Sourced<IgnitionFile>[] } {
  const out: Sourced<IgnitionUser>[] = [];
  const files: Sourced<IgnitionFile>[] = [];
  const seen = new Set<string>();
  for (const [i, u] of users.entries()) {
    const origin = u.origin ?? `spec.provisioning.users[${i}]`;
    if (seen.has(u.name)) {
      problems.push({ path: `${origin}.name`, message: `user ${u.name} is listed twice` });
      continue;
    }
    seen.add(u.name);
    if (u.inactive === true) {
      problems.push({ path: `${origin}.inactive`, message: 'Ignition cannot expire an account (it has no equivalent of cloud-init inactive); remove it or use cloud-config' });
    }
    const keys = [...new Set(u.sshAuthorizedKeys)];
    const entry: IgnitionUser = {
      name: u.name,
      ...(u.passwd !== undefined ? { passwordHash: u.lockPassword === true && !u.passwd.startsWith('!') ? `!${u.passwd}` : u.passwd } : {}),
      ...(keys.length ? { sshAuthorizedKeys: keys } : {}),
      ...(u.gecos !== undefined ? { gecos: u.gecos } : {}),
      ...(u.homeDir !== undefined ? { homeDir: u.homeDir } : {}),
      ...(u.shell !== undefined ? { shell: u.shell } : {}),
    };
    out.push({ entry, origin });
    if (u.sudo) {
      const path = `${SUDOERS_DIR}/${sudoersFileName(u.name)}`;
      files.push(generatedFile(path, `${u.name} ${u.sudo}\n`, SUDOERS_MODE, encoding, `${origin}.sudo`));
    }
  }
  return { users: out, files };
}
