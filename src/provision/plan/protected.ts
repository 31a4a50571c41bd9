/**
 * The paths a node needs bootwright's own for the bootstrap to run, in every output
 * format: no request file, directory, mount or additional Ignition config may sit at,
 * below, or (as a file or link) above one of them. Provider-neutral: cloud-init and
 * Ignition output both refuse the same paths, in one place ({@link bootPathProblem},
 * applied to the plan by build.ts and to the additional config by the Ignition renderer).
 *
 * - `/etc/kubeadm`: the Ignition kubeadm configuration and scripts (`bootstrap.sh`, `bootcmd.sh`, `metadata.sh`);
 * - `/etc/kubeadm.yml`, `/etc/kubeadm.sh`: the same for Cluster API input (CABPK's names);
 * - `/run/kubeadm`: the cloud-config kubeadm configuration;
 * - `/etc/kubernetes/pki`: the cluster PKI kubeadm reads;
 * - `/run/cluster-api`: the success sentinel ({@link SUCCESS_SENTINEL});
 * - `/var/lib/bootwright`: the bootstrap unit's `StateDirectory=`, holding the stamp whose
 *   presence skips kubeadm (a file there would make kubeadm never run), and kubeadm's
 *   exit code and output for the boot report;
 * - `/etc/bootwright`: the boot report script (src/provision/plan/report.ts);
 * - the bootstrap units, `/etc/systemd/system/kubeadm-bootstrap.service`,
 *   `kubeadm-bootcmd.service`, `kubeadm-report-failure.service` and CABPK's `kubeadm.service` (their `.d` drop-in
 *   directories stay open).
 */
import { SUCCESS_SENTINEL } from './types.js';

/** The bootstrap unit's state directory (systemd `StateDirectory=bootwright`). */
export const BOOTSTRAP_STATE_DIR = '/var/lib/bootwright';

/** Directory trees bootwright owns on the node, without a trailing `/`. */
export const BOOT_TREES: readonly string[] = ['/etc/kubernetes/pki', '/run/kubeadm', '/etc/kubeadm', '/etc/kubeadm.yml', '/etc/kubeadm.sh', SUCCESS_SENTINEL.slice(0, SUCCESS_SENTINEL.lastIndexOf('/')), BOOTSTRAP_STATE_DIR, '/etc/bootwright'];

/** systemd's directory for local units. */
export const SYSTEMD_UNIT_DIR = '/etc/systemd/system';

/** The units bootwright writes to run the bootstrap (Ignition output). */
export const BOOT_UNITS: readonly string[] = ['kubeadm-bootstrap.service', 'kubeadm-bootcmd.service', 'kubeadm.service', 'kubeadm-report-failure.service'];

/** Every path bootwright needs: the trees and the unit files. */
export const BOOT_PATHS: readonly string[] = [...BOOT_TREES, ...BOOT_UNITS.map((u) => `${SYSTEMD_UNIT_DIR}/${u}`)];

/** What a request puts at a path: a file (or link) needs its path to be no directory; a directory or mount point does not. */
export type NodeEntryKind = 'file' | 'link' | 'directory';

const atOrUnder = (p: string, q: string) => p === q || p.startsWith(`${q}/`);

/**
 * Why a request entry of `kind` may not be at `path`, or undefined when it may.
 *
 * Refused: any entry at or below a boot path ({@link BOOT_PATHS}: it would replace or
 * shadow what bootwright writes there, e.g. the stamp that skips kubeadm); a file or link
 * at a proper ancestor of one (the node needs that path to be a directory, e.g. a file at
 * `/var/lib`). A directory above a boot path is fine.
 *
 * @param path an absolute, normalised path (no trailing `/`)
 * @returns a sentence naming the boot path concerned, or undefined
 */
export function bootPathProblem(path: string, kind: NodeEntryKind): string | undefined {
  const owned = BOOT_PATHS.find((q) => atOrUnder(path, q));
  if (owned !== undefined) return `is at or under ${owned}, which bootwright needs for the bootstrap: the node would not join`;
  if (kind === 'directory') return undefined;
  const below = BOOT_PATHS.find((q) => q.startsWith(`${path}/`));
  if (below !== undefined) return `may not be a ${kind}: bootwright needs it to be a directory for ${below}, or the node would not join`;
  return undefined;
}
