/**
 * The paths a node needs bootwright's own for the bootstrap to run, in every output
 * format: no request file, directory or mount point may sit at or below one of them,
 * and no file or link above one (the node needs a directory there). Provider-neutral:
 * cloud-config and Ignition output refuse the same paths, in one place
 * ({@link bootPathProblem}, applied to the plan by build.ts; the Ignition renderer holds
 * an additional config to the same trees and to the exact entries it generates).
 *
 * Only what bootwright writes is reserved (issue 27: reserving all of `/etc/bootwright`
 * for one script refused, at boot, a profile an earlier release had stored):
 *
 * - four **trees**, reserved since v0.1.0: `/etc/kubernetes/pki` (the cluster PKI
 *   kubeadm reads), `/run/kubeadm` (the cloud-config kubeadm configuration; kubeadm's
 *   output and status for the boot report), `/etc/kubeadm` (the Ignition configuration
 *   and scripts, the boot report script), `/run/cluster-api` (the success sentinel);
 *   what bootwright writes later goes under these;
 * - **exact paths**: the bootstrap stamp `/var/lib/bootwright/kubeadm-bootstrap.done`
 *   (its presence skips kubeadm), the units `kubeadm-bootstrap.service` and
 *   `kubeadm-bootcmd.service` under `/etc/systemd/system` (their `.d` drop-in
 *   directories stay open), and, for Cluster API input, CABPK's `/etc/kubeadm.yml`,
 *   `/etc/kubeadm.sh` and `kubeadm.service`.
 *
 * A request file under a tree is refused by every release; the rest (mount points in a
 * tree, exact paths, files above an exact path) came in with rules version 1 and carry
 * the rule `boot-path` (src/rules.ts), so what an earlier release stored is excused.
 */
import type { RuleName } from '../../rules.js';
import type { PlanLayout } from './types.js';
import { SUCCESS_SENTINEL } from './types.js';

/** The bootstrap unit's state directory (systemd `StateDirectory=bootwright`). */
export const BOOTSTRAP_STATE_DIR = '/var/lib/bootwright';
/** The stamp whose presence skips kubeadm (written when the bootstrap script has run). */
export const BOOTSTRAP_STAMP = `${BOOTSTRAP_STATE_DIR}/kubeadm-bootstrap.done`;

/** systemd's directory for local units. */
export const SYSTEMD_UNIT_DIR = '/etc/systemd/system';

/** Directory trees bootwright owns on the node (reserved since v0.1.0), without a trailing `/`. */
export const BOOT_TREES: readonly string[] = ['/etc/kubernetes/pki', '/run/kubeadm', '/etc/kubeadm', SUCCESS_SENTINEL.slice(0, SUCCESS_SENTINEL.lastIndexOf('/'))];

/** The units bootwright writes to run the bootstrap, by layout (Ignition output). */
export const BOOT_UNITS: Readonly<Record<PlanLayout, readonly string[]>> = {
  bootwright: ['kubeadm-bootstrap.service', 'kubeadm-bootcmd.service'],
  'cluster-api': ['kubeadm.service', 'kubeadm-bootcmd.service'],
};

/** The exact paths bootwright writes outside {@link BOOT_TREES}, by layout. */
export const BOOT_FILES: Readonly<Record<PlanLayout, readonly string[]>> = {
  bootwright: [BOOTSTRAP_STAMP, ...BOOT_UNITS.bootwright.map((u) => `${SYSTEMD_UNIT_DIR}/${u}`)],
  'cluster-api': [BOOTSTRAP_STAMP, '/etc/kubeadm.yml', '/etc/kubeadm.sh', ...BOOT_UNITS['cluster-api'].map((u) => `${SYSTEMD_UNIT_DIR}/${u}`)],
};

/** What a request puts at a path: a file (or link) needs its path to be no directory; a directory or mount point does not. */
export type NodeEntryKind = 'file' | 'link' | 'directory';

/** Why an entry may not be at a path, and the rule, when a release after v0.1.0 brought it. */
export interface BootPathProblem {
  message: string;
  rule?: RuleName;
}

const atOrUnder = (p: string, q: string) => p === q || p.startsWith(`${q}/`);

/**
 * Why a request entry of `kind` may not be at `path`, or undefined when it may.
 *
 * Refused: a file or link at or below a tree ({@link BOOT_TREES}); a mount point at or
 * below one (it would hide what bootwright wrote there: rule `boot-path`); anything at or
 * below an exact path of the layout ({@link BOOT_FILES}: it would replace or shadow what
 * bootwright writes, e.g. the stamp that skips kubeadm; rule `boot-path`); a file or link
 * at a proper ancestor of either (the node needs a directory there: at `/etc` since
 * v0.1.0, at `/var/lib` under rule `boot-path`). A directory above is fine.
 *
 * @param path an absolute, normalised path (no trailing `/`)
 * @param layout the plan's layout (Cluster API input adds CABPK's names)
 */
export function bootPathProblem(path: string, kind: NodeEntryKind, layout: PlanLayout = 'bootwright'): BootPathProblem | undefined {
  const tree = BOOT_TREES.find((q) => atOrUnder(path, q));
  if (tree !== undefined) {
    const message = `is at or under ${tree}, where bootwright writes for the bootstrap: the node would not join${tree === '/etc/kubernetes/pki' ? ' (give the cluster CAs in spec.cluster.certificates)' : ''}`;
    return kind === 'directory' ? { message, rule: 'boot-path' } : { message };
  }
  const owned = BOOT_FILES[layout].find((q) => atOrUnder(path, q));
  if (owned !== undefined) return { message: `is at or under ${owned}, which bootwright writes for the bootstrap: the node would not join`, rule: 'boot-path' };
  if (kind === 'directory') return undefined;
  const treeBelow = BOOT_TREES.find((q) => q.startsWith(`${path}/`));
  if (treeBelow !== undefined) return { message: `may not be a ${kind}: bootwright needs it to be a directory for ${treeBelow}, or the node would not join` };
  const below = BOOT_FILES[layout].find((q) => q.startsWith(`${path}/`));
  if (below !== undefined) return { message: `may not be a ${kind}: bootwright needs it to be a directory for ${below}, or the node would not join`, rule: 'boot-path' };
  return undefined;
}
