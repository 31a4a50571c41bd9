/**
 * The reference tools, built from pinned sources by `scripts/tools.sh` (`npm run tools`)
 * into a cache outside the repository: kubeadm, kube-apiserver and etcd at the
 * Kubernetes release pinned in tools/reference/kubernetes/go.mod (etcd at the version
 * that release pins), ignition, ignition-validate and butane at tools/reference/coreos/,
 * matchbox at tools/reference/matchbox/ (the bench's peer), schemathesis at tools/reference/schemathesis/requirements.txt; and the kubeadm of each
 * minor 1.N pinned in tools/reference/kubeadm-1.N/go.mod as `kubeadm-1.N` (with
 * `kubeadm-1.M` naming kubeadm itself, M its minor). kubeadm 1.N validates only configs of
 * control plane 1.N-1 and 1.N: {@link kubeadmFor} picks the one for a version.
 *
 * Where they are: `$BOOTWRIGHT_TOOLS_DIR` when set (a bin directory holding the tools by
 * name: say, ones built elsewhere); otherwise the bin directory that
 * `scripts/tools.sh --print` names for the current pins, under `$BOOTWRIGHT_TOOLS_CACHE`,
 * else `$XDG_CACHE_HOME/bootwright/tools`, else `~/.cache/bootwright/tools`. The script
 * is asked (once per process, synchronously, a fraction of a second) rather than its key
 * recomputed here, so the two can't disagree on which build matches the pins.
 *
 * Nothing here builds: a test whose tool is absent skips loudly outside CI and fails
 * under CI, as test/support/missing.ts does:
 *
 * ```ts
 * const skip = referenceToolMissing('kubeadm', 'kubeadm configs are NOT validated by kubeadm');
 * test('kubeadm accepts the config', { skip }, () => {
 *   const kubeadm = requireReferenceTool('kubeadm');
 *   ...
 * });
 * ```
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, readdirSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { missingDependency } from './missing.js';

/** The tools `scripts/tools.sh` builds. */
export const REFERENCE_TOOLS = ['kubeadm', 'kube-apiserver', 'etcd', 'kubeadm-bootstrap-manager', 'cluster-api-manager', 'ignition-validate', 'ignition', 'butane', 'matchbox', 'schemathesis'] as const;

/** The kubeadm of one minor, `kubeadm-1.N` (which of them are pinned: {@link kubeadmTools}). */
export type KubeadmToolName = `kubeadm-1.${number}`;

/** The name of one of {@link REFERENCE_TOOLS}, or of a {@link KubeadmToolName}. */
export type ReferenceToolName = (typeof REFERENCE_TOOLS)[number] | KubeadmToolName;

/** The repository this test runs from. */
const REPO = path.resolve(new URL('../..', import.meta.url).pathname);

/** The script that builds the tools and names their directory. */
export const TOOLS_SCRIPT = path.join(REPO, 'scripts', 'tools.sh');

let dir: string | null | undefined;

/**
 * The bin directory of the reference tools for the current pins: `$BOOTWRIGHT_TOOLS_DIR`,
 * else the last stdout line of `scripts/tools.sh --print` (which exits 1, still naming the
 * directory, when some tools are not built yet). The directory need not exist.
 *
 * @returns the absolute directory, or undefined when the script can't tell (no bash, no go)
 */
export function referenceToolsDir(): string | undefined {
  if (dir !== undefined) return dir ?? undefined;
  dir = null;
  const given = process.env.BOOTWRIGHT_TOOLS_DIR;
  if (given) {
    dir = path.resolve(given);
  } else {
    const r = spawnSync('bash', [TOOLS_SCRIPT, '--print'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    const last = r.stdout.trimEnd().split('\n').pop();
    if ((r.status === 0 || r.status === 1) && last && path.isAbsolute(last)) dir = last;
  }
  return dir ?? undefined;
}

/**
 * The executable of a reference tool, if it is built.
 *
 * @param name the tool
 * @returns its absolute path (a symlink into the cache), or undefined when not built
 */
export function referenceTool(name: ReferenceToolName): string | undefined {
  const bin = referenceToolsDir();
  if (bin === undefined) return undefined;
  const file = path.join(bin, name);
  try {
    accessSync(file, constants.X_OK);
    return file;
  } catch {
    return undefined;
  }
}

/**
 * For node:test's `skip` option: false when `name` is built; otherwise, outside CI, one
 * loud `*** SKIPPED: ... ***` line (per process) and that line; under CI false, so the test
 * runs and fails ({@link requireReferenceTool} says why).
 *
 * @param name the tool
 * @param what what goes unchecked without it
 */
export function referenceToolMissing(name: ReferenceToolName, what: string): string | false {
  if (referenceTool(name) !== undefined) return false;
  return missingDependency(`${name} not built (npm run tools, or scripts/tools.sh ${name}); ${what}`);
}

/**
 * The executable of a reference tool, which the test needs.
 *
 * @param name the tool
 * @throws Error naming the directory looked in and how to build it, when not built
 */
export function requireReferenceTool(name: ReferenceToolName): string {
  const file = referenceTool(name);
  if (file !== undefined) return file;
  const where = referenceToolsDir() ?? `(no directory: ${TOOLS_SCRIPT} --print failed; is go installed?)`;
  throw new Error(`reference ${name} not built in ${where}: run npm run tools (or scripts/tools.sh ${name})`);
}

let kubeadms: ReadonlyMap<number, string> | undefined;

/**
 * The kubeadm binaries that are built, by the Kubernetes minor they are of: each
 * executable `kubeadm-1.N` of {@link referenceToolsDir}, and plain `kubeadm` for its own
 * minor when no `kubeadm-1.N` has that minor (it is asked `kubeadm version -o short` for
 * it, once per process: say, a `$BOOTWRIGHT_TOOLS_DIR` holding only `kubeadm`).
 *
 * @returns minor -> absolute path (a symlink into the cache); empty when none is built
 */
export function kubeadmTools(): ReadonlyMap<number, string> {
  if (kubeadms !== undefined) return kubeadms;
  const found = new Map<number, string>();
  const bin = referenceToolsDir();
  if (bin !== undefined) {
    let names: string[] = [];
    try {
      names = readdirSync(bin);
    } catch {
      // not built yet
    }
    for (const name of names) {
      const m = /^kubeadm-1\.(0|[1-9]\d*)$/.exec(name);
      if (m) {
        const file = referenceTool(name as KubeadmToolName);
        if (file !== undefined) found.set(Number(m[1]), file);
      }
    }
    const plain = referenceTool('kubeadm');
    if (plain !== undefined && ![...found.values()].some((f) => sameFile(f, plain))) {
      const r = spawnSync(plain, ['version', '-o', 'short'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 30_000 });
      const minor = r.status === 0 ? kubernetesMinor(r.stdout.trim()) : undefined;
      if (minor !== undefined && !found.has(minor)) found.set(minor, plain);
    }
  }
  kubeadms = new Map([...found].sort(([a], [b]) => a - b));
  return kubeadms;
}

/**
 * The kubeadm that validates configs for a Kubernetes version. kubeadm 1.M accepts only a
 * control plane 1.M-1 or 1.M (it refuses others: "this version of kubeadm only supports
 * deploying clusters with the control plane version >= 1.(M-1).0"), so this is the built
 * `kubeadm-1.M` (see {@link kubeadmTools}) with M == the version's minor, else with
 * M == minor + 1.
 *
 * @param kubernetesVersion a config's kubernetesVersion: `v1.30.2`, `1.30.2`, `v1.30`,
 *   `1.30`, or such with a pre-release or build suffix (`v1.31.0-rc.1`)
 * @returns the absolute path of that kubeadm, or undefined when none that is built covers
 *   the version (none pinned, not built yet, or a major other than 1)
 * @throws TypeError when `kubernetesVersion` is no such version (e.g. `stable-1.30`)
 */
export function kubeadmFor(kubernetesVersion: string): string | undefined {
  const minor = kubernetesMinor(kubernetesVersion);
  if (minor === undefined) {
    if (/^v?\d+\.\d+/.test(kubernetesVersion)) return undefined; // another major
    throw new TypeError(`not a Kubernetes version: ${JSON.stringify(kubernetesVersion)}`);
  }
  const tools = kubeadmTools();
  return tools.get(minor) ?? tools.get(minor + 1);
}

/** N of `v1.N[.P][-pre][+build]`; undefined for anything else (including another major). */
function kubernetesMinor(version: string): number | undefined {
  const m = /^v?1\.(0|[1-9]\d*)(?:\.(?:0|[1-9]\d*))?(?:[-+][0-9A-Za-z.+-]*)?$/.exec(version);
  return m ? Number(m[1]) : undefined;
}

/** Whether two paths name the same file (after symlinks). */
function sameFile(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}
