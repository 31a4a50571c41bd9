/**
 * The cloudbase-init renderer: a Windows node's ProvisioningPlan in, a `#cloud-config`
 * document for cloudbase-init out, as Cluster API's kubeadm bootstrap provider (CABPK)
 * serves Windows machines (Cluster API Provider Azure's Windows flavours). Pure and
 * deterministic; YAML through the serializer (src/yaml/dump.ts), with instance-data Jinja as cloud-config has it (`../cloudinit/jinja-document.ts`).
 *
 * Only keys cloudbase-init's cloud-config plugin reads are written
 * (`cloudbaseinit/plugins/common/userdataplugins/cloudconfigplugins/factory.py`), with
 * only the sub-keys its plugins read ({@link CLOUDBASE_INIT_KEYS}). cloudbase-init runs the
 * plugins in the document's key order (its `cloud_config_plugins` option is empty by
 * default, so every plugin has the same priority and the sort keeps the YAML order):
 * `users`, then `write_files`, then `ntp`, then `runcmd` last, which runs as one cmd.exe
 * script (`RunCmdPlugin`, the Windows default script header).
 */
import { WINDOWS_CLUSTER_API_DIR, WINDOWS_KUBEADM_DIR } from '../plan/os.js';
import type { PlanFile, PlanUser, ProvisioningPlan } from '../plan/types.js';
import { fileContent, octal } from '../cloudinit/render.js';
import { cloudConfigWithJinja, LITERAL, type Mark } from '../cloudinit/jinja-document.js';
import { RequestError } from '../../errors.js';

/**
 * The keys each cloudbase-init cloud-config plugin reads (its source: `WriteFilesPlugin`
 * path/content/permissions/encoding/append, `UsersPlugin` name/gecos/groups/
 * primary_group/passwd/expiredate/inactive/no_create_home/ssh_authorized_keys,
 * `SetNtpPlugin` enabled/servers/pools, `RunCmdPlugin` a list of strings or argv lists),
 * for the tests that hold the output to them.
 */
export const CLOUDBASE_INIT_KEYS: Readonly<Record<string, readonly string[] | null>> = {
  write_files: ['path', 'content', 'permissions', 'encoding', 'append'],
  users: ['name', 'gecos', 'groups', 'primary_group', 'passwd', 'expiredate', 'inactive', 'no_create_home', 'ssh_authorized_keys'],
  groups: null,
  ntp: ['enabled', 'servers', 'pools'],
  runcmd: null,
  set_timezone: null,
  timezone: null,
  set_hostname: null,
  hostname: null,
};

/** The encodings cloudbase-init's `write_files` decodes (`_decode_steps`): the ones written here. */
export const CLOUDBASE_INIT_ENCODINGS = ['b64', 'gz+b64'] as const;

/** CABPK's placeholder, which makes cloudbase-init create the sentinel's directory (cmd.exe's `>` does not). */
const PLACEHOLDER = {
  path: `${WINDOWS_CLUSTER_API_DIR}/placeholder`,
  content: 'This placeholder file is used to create the /run/cluster-api sub directory in a way that is compatible with both Linux and Windows (mkdir -p /run/cluster-api does not work with Windows)',
};

/**
 * One `write_files` entry: text as it is, other bytes as `b64`, a gzip stream the request
 * supplied as `gz+b64`. No `owner` (cloudbase-init sets none; the plan allows only root)
 * and no `defer` (cloudbase-init has no stages).
 */
function writeFile(file: PlanFile, mark: Mark = LITERAL): Record<string, unknown> {
  const entry: Record<string, unknown> = { path: file.path, permissions: octal(file.mode), ...fileContent(file, mark) };
  if (file.append) entry.append = true;
  return entry;
}

/**
 * One `users` entry in cloudbase-init's names. Groups as one `, `-separated string (how
 * `UsersPlugin` splits them); an inactive user is disabled (`inactive: true`) and, as
 * cloudbase-init requires of a disabled user, gets no profile (`no_create_home: true`).
 */
function user(u: PlanUser): Record<string, unknown> {
  const entry: Record<string, unknown> = { name: u.name };
  if (u.gecos !== undefined) entry.gecos = u.gecos;
  if (u.groups.length > 0) entry.groups = u.groups.join(', ');
  if (u.primaryGroup !== undefined) entry.primary_group = u.primaryGroup;
  if (u.inactive) {
    entry.inactive = true;
    entry.no_create_home = true;
  }
  if (u.sshAuthorizedKeys.length > 0) entry.ssh_authorized_keys = u.sshAuthorizedKeys;
  return entry;
}

/** A word cmd.exe passes through unchanged: no spaces, quotes, `%`, `!` or `&|<>^()`. */
const CMD_PLAIN = /^[\w.:/\\=,@+-]+$/;

/**
 * A command line for cmd.exe from the builder's argv (kubeadm and its flags: plain words).
 *
 * @throws TypeError for a word cmd.exe would read otherwise (never produced by the builder)
 */
function cmdLine(argv: readonly string[]): string {
  for (const w of argv) if (!CMD_PLAIN.test(w)) throw new TypeError(`not a plain cmd.exe word: ${JSON.stringify(w)}`);
  return argv.join(' ');
}

/**
 * Render a Windows plan as cloud-config for cloudbase-init.
 *
 * - `users` (see {@link user});
 * - `write_files`: the request's files at their Windows paths, the kubeadm configuration at
 *   `C:/run/kubeadm/<name>` (0640) and the `C:/run/cluster-api` placeholder, where CABPK's
 *   `/run/...` paths land on Windows;
 * - `ntp` as given;
 * - `runcmd`: pre commands (cmd.exe lines, e.g. `powershell C:/x.ps1`), then
 *   `kubeadm … --config <file> && echo success > C:\run\cluster-api\bootstrap-success.complete`
 *   (the Cluster API sentinel for Windows; `&&` so it is written only on success), then
 *   post commands.
 *
 * @param plan a plan with `os: windows`, checked by `osPlanProblems`
 * @returns the document: first line `#cloud-config`, ending in a newline
 */
export function renderCloudbaseInit(plan: ProvisioningPlan): string {
  const variables = plan.bootValues?.variables ?? [];
  if (variables.length > 0) {
    throw new RequestError(variables.map((v) => ({ path: v.path, message: `uses the metadata variable ${v.source}, which only the Ignition output fills in; cloudbase-init reads instance data with Jinja, e.g. {{ ds.meta_data["local_hostname"] }} (see docs/boot-identity.md)` })));
  }
  return cloudConfigWithJinja(plan, (mark) => {
    const main = plan.commands.main;
    const configPath = `${WINDOWS_KUBEADM_DIR}/${main.configFile.name}`;
    const doc: Record<string, unknown> = {};
    if (plan.users.length > 0) doc.users = plan.users.map(user);
    doc.write_files = [
      ...plan.files.map((f) => writeFile(f, mark)),
      { path: configPath, permissions: '0640', content: mark.kubeadm && main.configFile.documents ? mark.kubeadm(main.configFile.documents) : main.configFile.contents },
      { path: PLACEHOLDER.path, permissions: '0640', content: PLACEHOLDER.content },
    ];
    if (plan.ntp) {
      const ntp: Record<string, unknown> = {};
      if (plan.ntp.enabled !== undefined) ntp.enabled = plan.ntp.enabled;
      if (plan.ntp.servers.length > 0) ntp.servers = plan.ntp.servers;
      doc.ntp = ntp;
    }
    const [program, action, ...flags] = main.argv;
    const kubeadm = cmdLine([program!, action!, '--config', configPath, ...flags]);
    doc.runcmd = [...plan.commands.pre.map(mark.text), `${kubeadm} && echo success > ${plan.successSentinel}`, ...plan.commands.post.map(mark.text)];
    return doc;
  });
}
