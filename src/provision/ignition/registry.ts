/**
 * One owner per node path. Ignition refuses a config where two files, directories or
 * links share a path (and a file cannot sit where a directory must be), and (from Ignition 2.15) where one of them is also a unit or
 * drop-in it writes (`/etc/systemd/system/<name>`); the registry finds such clashes
 * before Ignition does and names the request fields involved.
 */
import type { FieldProblem } from '../../errors.js';

/** Where Ignition writes `systemd.units[]` entries. */
export const UNIT_DIR = '/etc/systemd/system';

/** An owner of a node path: what it is and the request field that claimed it. */
interface Owner {
  path: string;
  what: string;
  origin: string;
}

/** A node of the path trie: one path component; `owner` claims it, `below` is the first claim under it. */
interface PathNode {
  children: Map<string, PathNode>;
  owner?: Owner;
  below?: Owner;
}

/**
 * Collects claims on paths and reports the second claim on any path as a problem.
 * Paths are kept in a trie of their `/`-separated components, so a claim costs time
 * linear in its path's length, whatever the number of claims before it.
 */
export class PathRegistry {
  private readonly root: PathNode = { children: new Map() };

  constructor(private readonly problems: FieldProblem[]) {}

  /**
   * Claim `path` for `what` (`file`, `directory`, `unit <name>`); a path claimed already
   * records a problem at `origin`, the request field making the second claim, as does a
   * path under a claimed file or link, or a file or link above a claimed path.
   */
  claim(path: string, what: string, origin: string): void {
    const parts = path.split('/');
    const ancestors: PathNode[] = [];
    let node = this.root;
    for (const part of parts) {
      ancestors.push(node);
      let next = node.children.get(part);
      if (!next) {
        next = { children: new Map() };
        node.children.set(part, next);
      }
      node = next;
    }
    const owner = node.owner;
    if (owner) {
      const by = owner.origin === origin ? 'the same item' : owner.origin;
      this.problems.push({ path: origin, message: `${what} at ${path} clashes with the ${owner.what} there (from ${by}); Ignition needs one entry per path` });
      return;
    }
    // A file cannot also be a directory that holds other entries.
    for (const above of ancestors) {
      const o = above.owner;
      if (o && o.what !== 'directory') this.problems.push({ path: origin, message: `${what} at ${path} is under ${o.path}, which is a ${o.what} (from ${o.origin})` });
    }
    const under = node.below;
    if (what !== 'directory' && under) {
      this.problems.push({ path: origin, message: `${what} at ${path} would have to be a directory: ${under.what} ${under.path} (from ${under.origin}) is under it` });
    }
    const claimed = { path, what, origin };
    node.owner = claimed;
    for (const above of ancestors) above.below ??= claimed;
  }

  /** Claim the file Ignition writes for unit `name`. */
  claimUnit(name: string, origin: string): void {
    this.claim(`${UNIT_DIR}/${name}`, `unit ${name}`, origin);
  }
}
