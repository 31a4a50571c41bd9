/**
 * The node's operating system, and what a plan for it can hold (DESIGN §1: rules in the
 * plan, once, whatever the format). Linux is the default. A Windows node is chosen by
 * `spec.output.os: windows`, or by a kubeadm `nodeRegistration.criSocket` that is a
 * Windows named pipe (`npipe:////./pipe/containerd-containerd`, as Cluster API Provider
 * Azure's Windows templates write it). Windows nodes boot with cloudbase-init, which
 * reads cloud-config through its own, smaller set of modules (cloudbase-init
 * `cloudbaseinit/plugins/common/userdataplugins/cloudconfigplugins/factory.py`:
 * `write_files`, `set_timezone`/`timezone`, `set_hostname`/`hostname`, `ntp`, `groups`,
 * `users`, `runcmd`) and runs `runcmd` as one cmd.exe script.
 */
import type { FieldProblem } from '../../errors.js';
import { WINDOWS_ABSOLUTE } from '../../request/schema.js';
import type { NodeBootstrap } from '../../request/schema.js';
import type { ProvisioningPlan, TargetOs } from './types.js';

/** The operating system chosen, and the request field that chose it (absent: the default). */
export interface OsChoice {
  os: TargetOs;
  field?: string;
}

/** A CRI endpoint on a Windows named pipe (kubeadm's Windows default is `npipe:////./pipe/containerd-containerd`). */
const NPIPE = /^npipe:\/\//i;

/** Where kubeadm's `nodeRegistration.criSocket` sits in a request. */
const CRI_SOCKET_FIELDS = ['joinConfiguration', 'initConfiguration'] as const;

/** The `criSocket` fields a request sets, with their values. */
function criSockets(req: NodeBootstrap): { field: string; value: string }[] {
  const out: { field: string; value: string }[] = [];
  for (const key of CRI_SOCKET_FIELDS) {
    const reg = (req.spec.kubeadm?.[key] as { nodeRegistration?: { criSocket?: unknown } } | undefined)?.nodeRegistration;
    if (typeof reg?.criSocket === 'string') out.push({ field: `spec.kubeadm.${key}.nodeRegistration.criSocket`, value: reg.criSocket });
  }
  return out;
}

/**
 * The node's operating system: `spec.output.os`, else windows when a `criSocket` is an
 * `npipe://` URL, else linux.
 */
export function targetOs(req: NodeBootstrap): OsChoice {
  const given = req.spec.output?.os;
  if (given) return { os: given, field: 'spec.output.os' };
  const pipe = criSockets(req).find((s) => NPIPE.test(s.value));
  return pipe ? { os: 'windows', field: pipe.field } : { os: 'linux' };
}

/** A path as Windows compares it: case-insensitive, `\` and `/` alike. */
export function windowsPathKey(path: string): string {
  return path.replaceAll('\\', '/').toLowerCase();
}

/**
 * Where a Windows node's bootstrap state lives, as Cluster API's kubeadm bootstrap
 * provider writes it there: CABPK's `/run/kubeadm/…` and `/run/cluster-api/…` paths,
 * which cloudbase-init (Python's `os.path.abspath`) and cmd.exe resolve on the system
 * drive, and the Cluster API contract's sentinel `C:\run\cluster-api\bootstrap-success.complete`.
 */
export const WINDOWS_KUBEADM_DIR = 'C:/run/kubeadm';
export const WINDOWS_CLUSTER_API_DIR = 'C:/run/cluster-api';
export const WINDOWS_SUCCESS_SENTINEL = 'C:\\run\\cluster-api\\bootstrap-success.complete';

const atOrUnder = (key: string, dir: string) => key === dir || key.startsWith(`${dir}/`);

/**
 * What keeps a plan from booting on its OS.
 *
 * Linux: no Windows path (a file, `homeDir` or `shell`), no `npipe://` CRI socket when
 * `spec.output.os` says linux.
 *
 * Windows (cloudbase-init, whose modules are listed in this module's comment):
 * - a worker only (kubeadm has no Windows control plane: `spec.role`);
 * - files at Windows-absolute paths (`c:/k/azure.json`), none twice as Windows compares
 *   paths, none at or under `C:/run/kubeadm` or `C:/run/cluster-api` (bootwright's), no
 *   owner but root:root (cloudbase-init's `write_files` sets no owner);
 * - users without `passwd` (cloudbase-init takes it as the password itself, not a crypt(3)
 *   hash), `homeDir`, `shell`, `sudo` or `lockPassword` (no Windows meaning there), and
 *   an `inactive` user has no `sshAuthorizedKeys` (cloudbase-init refuses both);
 * - no `bootCommands`, `diskSetup` or `mounts` (no cloudbase-init module: bootcmd,
 *   disk_setup, fs_setup and mounts are cloud-init's, Linux-only);
 * - no `useExperimentalRetryJoin` (its retry loop is a POSIX shell script; cloudbase-init
 *   runs `runcmd` in cmd.exe).
 *
 * @param plan the plan, with `os` and `osField` set
 * @returns the problems, each at the request field it concerns; `[]` when none
 */
export function osPlanProblems(plan: ProvisioningPlan, req: NodeBootstrap): FieldProblem[] {
  return plan.os === 'windows' ? windowsProblems(plan, req) : linuxProblems(plan, req);
}

function linuxProblems(plan: ProvisioningPlan, req: NodeBootstrap): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const hint = 'this node is linux (for a Windows node set spec.output.os: windows)';
  for (const f of plan.files) {
    if (f.origin && WINDOWS_ABSOLUTE.test(f.path)) problems.push({ path: `${f.origin}.path`, message: `is a Windows path; ${hint}` });
  }
  for (const u of plan.users) {
    const origin = u.origin ?? 'spec.provisioning.users';
    if (u.homeDir !== undefined && WINDOWS_ABSOLUTE.test(u.homeDir)) problems.push({ path: `${origin}.homeDir`, message: `is a Windows path; ${hint}` });
    if (u.shell !== undefined && WINDOWS_ABSOLUTE.test(u.shell)) problems.push({ path: `${origin}.shell`, message: `is a Windows path; ${hint}` });
  }
  if (plan.osField === 'spec.output.os') {
    for (const s of criSockets(req)) {
      if (NPIPE.test(s.value)) problems.push({ path: s.field, message: 'is a Windows named pipe (npipe://), but spec.output.os is linux' });
    }
  }
  return problems;
}

function windowsProblems(plan: ProvisioningPlan, req: NodeBootstrap): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const prov = req.spec.provisioning ?? {};
  if (req.spec.role !== 'worker') {
    problems.push({ path: 'spec.role', message: `must be worker on a Windows node (${plan.osField ?? 'spec.output.os'}): kubeadm has no Windows control plane` });
  }
  if (plan.network) problems.push({ path: 'spec.network', message: `is not rendered for a Windows node (${plan.osField ?? 'spec.output.os'}): cloudbase-init reads network configuration from its metadata service` });
  const seen = new Map<string, string>();
  const ours = [WINDOWS_KUBEADM_DIR, WINDOWS_CLUSTER_API_DIR].map(windowsPathKey);
  for (const f of plan.files) {
    if (!f.origin) continue;
    const at = `${f.origin}.path`;
    if (!WINDOWS_ABSOLUTE.test(f.path)) {
      problems.push({ path: at, message: 'must be a Windows absolute path such as c:/k/azure.json on a Windows node' });
      continue;
    }
    const key = windowsPathKey(f.path);
    const first = seen.get(key);
    if (first !== undefined) problems.push({ path: at, message: `is the same Windows path as ${first} (Windows compares paths case-insensitively, \\ and / alike)` });
    else seen.set(key, at);
    const dir = ours.find((d) => atOrUnder(key, d));
    if (dir !== undefined) problems.push({ path: at, message: `is under ${dir === ours[0] ? WINDOWS_KUBEADM_DIR : WINDOWS_CLUSTER_API_DIR}, where bootwright writes the kubeadm configuration and the sentinel` });
    if (f.owner.user !== 'root' || f.owner.group !== 'root') {
      problems.push({ path: `${f.origin}.owner`, message: "cloudbase-init's write_files sets no owner on Windows: leave owner out (or root:root)" });
    }
  }
  for (const u of plan.users) {
    const origin = u.origin ?? 'spec.provisioning.users';
    const unsupported: [keyof typeof u, string][] = [
      ['passwd', 'cloudbase-init sets passwd as the password itself, not a crypt(3) hash'],
      ['homeDir', 'cloudbase-init creates the profile where Windows puts it'],
      ['shell', 'Windows users have no login shell'],
      ['sudo', 'Windows has no sudo: add the user to the Administrators group instead'],
      ['lockPassword', 'cloudbase-init has no lock_passwd'],
    ];
    for (const [key, why] of unsupported) {
      if (u[key] !== undefined) problems.push({ path: `${origin}.${key}`, message: `is not supported on a Windows node: ${why}` });
    }
    if (u.inactive && u.sshAuthorizedKeys.length > 0) {
      problems.push({ path: `${origin}.inactive`, message: 'cloudbase-init refuses to disable a user that has sshAuthorizedKeys' });
    }
  }
  if ((prov.bootCommands ?? []).length > 0) problems.push({ path: 'spec.provisioning.bootCommands', message: 'cloudbase-init has no bootcmd module: use preKubeadmCommands on a Windows node' });
  if (prov.diskSetup !== undefined) problems.push({ path: 'spec.provisioning.diskSetup', message: 'cloudbase-init has no disk_setup or fs_setup module (they are cloud-init, Linux-only)' });
  if (prov.mounts !== undefined) problems.push({ path: 'spec.provisioning.mounts', message: 'cloudbase-init has no mounts module (it is cloud-init, Linux-only)' });
  if (plan.commands.main.retry) {
    problems.push({ path: 'spec.kubeadm.useExperimentalRetryJoin', message: "its retry loop is a POSIX shell script; cloudbase-init runs runcmd in cmd.exe on a Windows node" });
  }
  return problems;
}
