/**
 * One owner per node path. Ignition refuses a config where two files, directories or
 * links share a path (and a file cannot sit where a directory must be), and (from Ignition 2.15) where one of them is also a unit or
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
   * Claim `path` for `what` (`file`, `directory`, `unit <name>`); a path claimed already
   * records a problem at `origin`, the request field making the second claim.
   */
  claim(path: string, what: string, origin: string): void {
    const owner = this.owners.get(path);
    if (owner) {
      const by = owner.origin === origin ? 'the same item' : owner.origin;
      this.problems.push({ path: origin, message: `${what} at ${path} clashes with the ${owner.what} there (from ${by}); Ignition needs one entry per path` });
      return;
    }
    // A file cannot also be a directory that holds other entries.
    for (const [other, o] of this.owners) {
      if (o.what !== 'directory' && path.startsWith(`${other}/`)) {
        this.problems.push({ path: origin, message: `${what} at ${path} is under ${other}, which is a ${o.what} (from ${o.origin})` });
      } else if (what !== 'directory' && other.startsWith(`${path}/`)) {
        this.problems.push({ path: origin, message: `${what} at ${path} would have to be a directory: ${o.what} ${other} (from ${o.origin}) is under it` });
      }
    }
    this.owners.set(path, { what, origin });
  }

  /** Claim the file Ignition writes for unit `name`. */
  claimUnit(name: string, origin: string): void {
    this.claim(`${UNIT_DIR}/${name}`, `unit ${name}`, origin);
  }
}
