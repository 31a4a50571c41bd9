/**
 * One owner per node path. Ignition refuses a config where two files, directories or
 * links share a path, and (from Ignition 2.15) where one of them is also a unit or
 * drop-in it writes (`/etc/systemd/system/<name>`); the registry finds such clashes
 * before Ignition does and names the request fields involved.
 */
import type { FieldProblem } from '../../errors.js';

/** Where Ignition writes `systemd.units[]` entries. */
export const UNIT_DIR = '/etc/systemd/system';

/** Collects claims on paths and reports the second claim on any path as a problem. */
export class PathRegistry {
  private readonly owners = new Map<string, { what: string; origin: string }>();

  constructor(private readonly problems: FieldProblem[]) {}

  /**
   * Claim `path` for `what` (e.g. `file`, `unit kubeadm-bootstrap.service`).
   *
   * @param origin the request field claiming it, blamed if the path is taken
   * @returns false (and records a problem at `origin`) when it was claimed already
   */
  claim(path: string, what: string, origin: string): boolean {
    const owner = this.owners.get(path);
    if (owner) {
      const by = owner.origin === origin ? 'the same item' : owner.origin;
      this.problems.push({ path: origin, message: `${what} ${path} clashes with the ${owner.what} there (from ${by}); Ignition needs one entry per path` });
      return false;
    }
    this.owners.set(path, { what, origin });
    return true;
  }

  /** Claim the file Ignition writes for unit `name`. */
  claimUnit(name: string, origin: string): boolean {
    return this.claim(`${UNIT_DIR}/${name}`, `unit ${name} at`, origin);
  }
}
