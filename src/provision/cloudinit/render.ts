/**
 * The cloud-config renderer (DESIGN §3): a ProvisioningPlan in, a `#cloud-config`
 * document out. It knows cloud-init and nothing about kubeadm. Pure and deterministic:
 * objects are built in a fixed key order and serialized by {@link dumpYaml}.
 *
 * Layout follows Cluster API's kubeadm bootstrap provider (CABPK) so existing nodes
 * see the same files: kubeadm configuration under `/run/kubeadm/`, the
 * `/run/cluster-api/placeholder` file, certificates first in `write_files`.
 */
import { partitionDevice } from '../plan/devices.js';
import { fstabEscape, needsFstabEscape } from '../plan/fstab.js';
import type { PlanDirectory, PlanDisk, PlanFile, PlanFilesystem, PlanMount, PlanUser, ProvisioningPlan } from '../plan/types.js';
import { RequestError } from '../../errors.js';
import { reportCommand, reportedKubeadmLine } from '../plan/report.js';
import { retriedCommand, shellCommand } from '../shell.js';
import { cloudConfigWithJinja, type Mark } from './jinja-document.js';

export { CLOUD_CONFIG_MEDIA_TYPE } from './format.js';

/** Where cloud-config nodes get their kubeadm configuration (CABPK's path). */
export const CLOUD_CONFIG_KUBEADM_DIR = '/run/kubeadm';

/**
 * CABPK's placeholder, which makes cloud-init create `/run/cluster-api` before runcmd
 * writes the sentinel there (CABPK `cloudinit.go`).
 */
const PLACEHOLDER = {
  path: '/run/cluster-api/placeholder',
  content: 'This placeholder file is used to create the /run/cluster-api sub directory in a way that is compatible with both Linux and Windows (mkdir -p /run/cluster-api does not work with Windows)',
};

/** Octal permissions as cloud-init reads them: a string `'0640'` (quoted by the serializer). */
export function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, '0')}`;
}

/**
 * True when the bytes can travel as a YAML string and come back identical through
 * PyYAML: valid UTF-8 without C0/C1 controls other than tab and line feed, and without
 * the characters YAML 1.1 treats as line breaks or a byte-order mark (CR, NEL, U+2028,
 * U+2029, U+FEFF).
 */
export function isPlainText(bytes: Uint8Array): string | undefined {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
  return /[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff]/.test(text) ? undefined : text;
}

/**
 * The `encoding` and `content` of a `write_files` entry, as cloud-init and cloudbase-init
 * both read them: text stays readable (a request's plain text through `mark`, which
 * writes instance-data Jinja back or escapes braces); other bytes go as `b64`; a gzip
 * stream the request supplied is passed through as `gz+b64` (no recompression).
 */
export function fileContent(file: PlanFile, mark: Mark): { encoding?: 'b64' | 'gz+b64'; content: string } {
  if (file.gzip) return { encoding: 'gz+b64', content: Buffer.from(file.gzip).toString('base64') };
  const text = isPlainText(file.contents);
  if (text === undefined) return { encoding: 'b64', content: Buffer.from(file.contents).toString('base64') };
  return { content: file.origin !== undefined && file.sourceEncoding === 'plain' ? mark.text(text) : text };
}

/** One `write_files` entry ({@link fileContent}), with its owner, mode, append and defer. */
function writeFile(file: PlanFile, mark: Mark): Record<string, unknown> {
  const entry: Record<string, unknown> = { path: file.path, owner: `${file.owner.user}:${file.owner.group}`, permissions: octal(file.mode), ...fileContent(file, mark) };
  if (file.append) entry.append = true;
  if (file.deferred) entry.defer = true;
  return entry;
}

/**
 * One `users` entry in cloud-init's names. CAPI's boolean `inactive` has no cloud-init
 * boolean: an inactive user gets `expiredate: '1970-01-02'` (an expired account, what
 * `useradd --expiredate` does), since cloud-init's `inactive` takes a number of days.
 */
function user(u: PlanUser): Record<string, unknown> {
  const entry: Record<string, unknown> = { name: u.name };
  if (u.gecos !== undefined) entry.gecos = u.gecos;
  if (u.groups.length > 0) entry.groups = u.groups.join(', ');
  if (u.homeDir !== undefined) entry.homedir = u.homeDir;
  if (u.inactive) entry.expiredate = '1970-01-02';
  if (u.shell !== undefined) entry.shell = u.shell;
  if (u.passwd !== undefined) entry.passwd = u.passwd;
  if (u.primaryGroup !== undefined) entry.primary_group = u.primaryGroup;
  if (u.lockPassword !== undefined) entry.lock_passwd = u.lockPassword;
  if (u.sudo !== undefined) entry.sudo = u.sudo;
  if (u.sshAuthorizedKeys.length > 0) entry.ssh_authorized_keys = u.sshAuthorizedKeys;
  return entry;
}

/**
 * A partition type as cloud-init's `layout` takes it. MBR tables: the sfdisk type code.
 * GPT tables: cloud-init hands the type to `sgdisk -t`, which wants its own 4-hex codes,
 * so MBR codes are translated (`83` → `8300`, `0c`/`07` → `0700`); GUIDs pass through.
 * All-digit codes are integers, which every cloud-init schema accepts (22.4 takes only
 * integers); others stay strings.
 */
function partitionType(type: string, table: 'gpt' | 'mbr'): number | string {
  let code = type.toLowerCase();
  if (table === 'gpt' && /^[0-9a-f]{1,2}$/.test(code)) code = code === '0c' || code === '07' || code === 'c' || code === '7' ? '0700' : `${code.padStart(2, '0')}00`;
  return /^\d+$/.test(code) && !code.startsWith('0') ? Number(code) : code;
}

/** `disk_setup` for one disk: `layout` true/false or a list of percentages and `[percentage, type]`. */
function diskSetup(d: PlanDisk): Record<string, unknown> {
  const entry: Record<string, unknown> = {};
  if (d.tableTypeGiven) entry.table_type = d.tableType;
  entry.layout = Array.isArray(d.layout)
    ? d.layout.map((p) => (p.partitionType ? [p.percentage, partitionType(p.partitionType, d.tableTypeGiven ? d.tableType : 'mbr')] : p.percentage))
    : d.layout;
  if (d.overwrite !== undefined) entry.overwrite = d.overwrite;
  return entry;
}

/**
 * One `fs_setup` entry. A partition number is written into the device name, as the
 * kernel names the partition (`/dev/sdb` + 1 → `/dev/sdb1`, `/dev/nvme0n1` + 1 →
 * `/dev/nvme0n1p1`, see `partitionDevice`), never as `partition: N` or `device.N`: for
 * those, cloud-init before 24.2 appends the digit to the disk name (`/dev/nvme0n11`),
 * and its schema (22.4 on) refuses a number in `partition`. With the partition's own
 * device, `partition: auto` keeps cloud-init's safety for numbered partitions (an
 * existing filesystem of that type and label is reused, any other existing filesystem
 * is left alone: `find_device_node` on the partition itself), and `overwrite: true`
 * becomes `partition: none` (make the filesystem on that device, forced), the only form
 * in which cloud-init overwrites.
 */
function fsSetup(f: PlanFilesystem): Record<string, unknown> {
  const entry: Record<string, unknown> = {};
  if (f.label !== undefined) entry.label = f.label;
  entry.filesystem = f.filesystem;
  const numbered = f.partition !== undefined && /^\d+$/.test(f.partition) && Number(f.partition) >= 1;
  entry.device = numbered ? partitionDevice(f.device, Number(f.partition)) : f.device;
  if (numbered) entry.partition = f.overwrite === true ? 'none' : 'auto';
  else if (f.partition !== undefined) entry.partition = f.partition;
  if (f.overwrite !== undefined) entry.overwrite = f.overwrite;
  if (f.replaceFS !== undefined) entry.replace_fs = f.replaceFS;
  if (f.extraOpts.length > 0) entry.extra_opts = f.extraOpts;
  return entry;
}

/**
 * One `mounts` entry: cloud-init joins the fields with tabs into an fstab line, so the
 * device and mount point are fstab-escaped (`/mnt/my disk` → `/mnt/my\040disk`,
 * fstab(5)); other fields are written as given (the plan refuses control characters).
 */
function mount(m: PlanMount): string[] {
  return [fstabEscape(m.device), fstabEscape(m.mountPoint), m.fsType, m.options, m.dump, m.pass].filter((v): v is string => v !== undefined);
}

/**
 * `bootcmd` lines creating mount points that need fstab escapes: cloud-init's `mounts`
 * module creates each mount point from the escaped fstab text (a directory named
 * `my\040disk`) and then runs `mount -a`, which needs the real one. bootcmd runs before
 * the mounts module; `mkdir -p` is idempotent on every boot.
 */
function mountPointCommands(mounts: readonly PlanMount[]): string[] {
  const dirs = [...new Set(mounts.filter((m) => m.mountPoint.startsWith('/') && needsFstabEscape(m.mountPoint)).map((m) => m.mountPoint))];
  return dirs.length ? [shellCommand(['mkdir', '-p', '--', ...dirs])] : [];
}

/**
 * `runcmd` lines giving the plan's directories their owner: cloud-init creates the
 * parents of `write_files` entries as root (`util.write_file` → `ensure_dir`, mode 0755
 * under its umask 022) and chowns only the file. Deferred files are written in the final
 * stage before `runcmd`, so the directories exist; one `chown` per owner, in plan order.
 */
function directoryCommands(dirs: readonly PlanDirectory[]): string[] {
  const byOwner = new Map<string, string[]>();
  for (const d of dirs) {
    const owner = `${d.owner.user}:${d.owner.group}`;
    byOwner.set(owner, [...(byOwner.get(owner) ?? []), d.path]);
  }
  return [...byOwner].map(([owner, paths]) => shellCommand(['chown', '--', owner, ...paths]));
}

/**
 * Render a plan as cloud-config.
 *
 * - `write_files`: PKI, the request's files, the kubeadm configuration at
 *   `/run/kubeadm/<name>` (0640) and the `/run/cluster-api` placeholder; files owned by
 *   anyone but root carry `defer: true` (cloud-init writes them in the final stage, after
 *   users exist).
 * - `runcmd`: the `chown` of the plan's directories (see {@link directoryCommands}), pre
 *   commands, then `kubeadm … --config <file> && echo success > <sentinel>` (runcmd
 *   items do not stop on failure, so the sentinel is chained with `&&`), then post
 *   commands. With a boot report (src/provision/plan/report.ts), the kubeadm line keeps
 *   its output and status and is followed by the report script. `bootcmd` holds the every-boot commands, after a `mkdir -p` of mount
 *   points that need fstab escapes.
 * - `ntp` as given: `enabled: false` skips cloud-init's NTP module, leaving the image's
 *   time sync as it is (the meaning Ignition output has too).
 * - `users`, `ntp`, `disk_setup`, `fs_setup`, `mounts` in cloud-init's names; an explicit
 *   `false` stays `false`, an absent field is omitted.
 *
 * Boot-time values (`plan.bootValues`): with instance-data Jinja, the document starts
 * with `## template: jinja` and every other `{{`, `{%` and `{#` in it is escaped, so
 * cloud-init renders the expressions and nothing else (`./jinja-document.ts`); values
 * holding an expression are double-quoted, so what cloud-init substitutes stays one
 * string. Without, the document is plain `#cloud-config`: braces need no escape.
 *
 * @returns the document: first line `#cloud-config` (or the Jinja header, then
 *   `#cloud-config`), ending in a newline.
 * @throws RequestError at the field of each metadata variable (`${COREOS_…}`), which
 *   only Ignition output fills in, and (Cluster API input) of each command naming the
 *   Ignition output's `/etc/kubeadm.yml` or `/etc/kubeadm.sh`
 */
export function renderCloudConfig(plan: ProvisioningPlan): string {
  const variables = plan.bootValues?.variables ?? [];
  if (variables.length > 0) {
    throw new RequestError(
      variables.map((v) => ({
        path: v.path,
        message: `uses the metadata variable ${v.source}, which only the Ignition output fills in (from ${plan.bootValues?.metadataFile ?? 'the metadata file'}); cloud-config reads cloud-init instance data instead, e.g. {{ ds.meta_data.local_hostname }} (see docs/boot-identity.md)`,
      })),
    );
  }
  const ignitionPaths = plan.layout === 'cluster-api' ? ignitionLayoutCommands(plan) : [];
  if (ignitionPaths.length > 0) throw new RequestError(ignitionPaths);
  return cloudConfigWithJinja(plan, (mark) => cloudConfigDocument(plan, mark));
}

/** CABPK's Ignition file names, which a cloud-config node does not have. */
const IGNITION_LAYOUT_PATHS = /\/etc\/kubeadm\.(?:yml|sh)\b/;

/**
 * Commands naming CABPK's Ignition files (`envsubst < /etc/kubeadm.yml …` of a Flatcar
 * template), each at its request field: on a cloud-config node the file does not exist
 * (the configuration is under `/run/kubeadm/`), so the edit would be lost.
 */
function ignitionLayoutCommands(plan: ProvisioningPlan): { path: string; message: string }[] {
  const out: { path: string; message: string }[] = [];
  for (const [key, list] of [['bootCommands', plan.commands.boot], ['preKubeadmCommands', plan.commands.pre], ['postKubeadmCommands', plan.commands.post]] as const) {
    list.forEach((c, i) => {
      if (IGNITION_LAYOUT_PATHS.test(c)) {
        out.push({ path: `spec.provisioning.${key}[${i}]`, message: `names /etc/kubeadm.yml or /etc/kubeadm.sh, the files of the Ignition output; a cloud-config node has its kubeadm configuration at ${CLOUD_CONFIG_KUBEADM_DIR}/${plan.commands.main.configFile.name}: render this template as Ignition (format: ignition)` });
      }
    });
  }
  return out;
}

/** The cloud-config document of a plan (see {@link renderCloudConfig}), request text through `mark`. */
function cloudConfigDocument(plan: ProvisioningPlan, mark: Mark): Record<string, unknown> {
  const main = plan.commands.main;
  const configPath = `${CLOUD_CONFIG_KUBEADM_DIR}/${main.configFile.name}`;
  const doc: Record<string, unknown> = {};
  const bootcmd = [...mountPointCommands(plan.mounts), ...plan.commands.boot.map(mark.text)];
  if (bootcmd.length > 0) doc.bootcmd = bootcmd;
  if (plan.disks.length > 0) doc.disk_setup = Object.fromEntries(plan.disks.map((d) => [d.device, diskSetup(d)]));
  if (plan.filesystems.length > 0) doc.fs_setup = plan.filesystems.map(fsSetup);
  if (plan.mounts.length > 0) doc.mounts = plan.mounts.map(mount);
  if (plan.ntp) {
    const ntp: Record<string, unknown> = {};
    if (plan.ntp.enabled !== undefined) ntp.enabled = plan.ntp.enabled;
    if (plan.ntp.servers.length > 0) ntp.servers = plan.ntp.servers;
    doc.ntp = ntp;
  }
  if (plan.users.length > 0) doc.users = plan.users.map(user);
  doc.write_files = [
    ...plan.files.map((f) => writeFile(f, mark)),
    { path: configPath, owner: 'root:root', permissions: '0640', content: mark.kubeadm && main.configFile.documents ? mark.kubeadm(main.configFile.documents) : main.configFile.contents },
    { path: PLACEHOLDER.path, owner: 'root:root', permissions: '0640', content: PLACEHOLDER.content },
  ];
  const [program, action, ...flags] = main.argv;
  const command = shellCommand([program!, action!, '--config', configPath, ...flags]);
  const kubeadm = main.retry ? retriedCommand(command, main.retry) : command;
  const kubeadmLines = plan.report ? [reportedKubeadmLine(kubeadm, plan.successSentinel), reportCommand()] : [`${kubeadm} && echo success > ${plan.successSentinel}`];
  doc.runcmd = [...directoryCommands(plan.directories), ...plan.commands.pre.map(mark.text), ...kubeadmLines, ...plan.commands.post.map(mark.text)];
  return doc;
}
