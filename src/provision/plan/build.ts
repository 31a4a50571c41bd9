/**
 * Assembling the ProvisioningPlan from a request and the kubeadm builder's output: the
 * one place where bootstrap (kubeadm) meets provisioning (files, users, disks, commands).
 */
import { planNetwork } from './network.js';
import { osPlanProblems, targetOs, WINDOWS_SUCCESS_SENTINEL } from './os.js';
import { gunzipSync } from 'node:zlib';
import type { KubeadmBootstrap } from '../../bootstrap/kubeadm/build.js';
import type { FileInput, NodeBootstrap } from '../../request/schema.js';
import { type FieldProblem, RequestError } from '../../errors.js';
import type { Ratchet } from '../../rules.js';
import { checkPlan } from './check.js';
import { findBootValues, type MetadataNodeName } from './bootvalues.js';
import { bootPathProblem } from './protected.js';
import { reportFile } from './report.js';
import { type Owner, type PlanDirectory, type PlanDisk, type PlanFile, type PlanNtp, type PlanReport, type PlanUser, type ProvisioningPlan, SUCCESS_SENTINEL } from './types.js';

/** cloud-init's default file mode for `write_files` (0644). */
const DEFAULT_FILE_MODE = 0o644;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Decode base64 strictly: whitespace (line breaks) is ignored, anything else outside
 * the RFC 4648 §4 alphabet or a wrong length is refused.
 */
function decodeBase64(text: string, path: string): Buffer {
  const compact = text.replace(/\s+/g, '');
  if (!BASE64.test(compact) || compact.length % 4 === 1) throw new RequestError([{ path, message: 'is not valid base64' }]);
  return Buffer.from(compact, 'base64');
}

function gunzip(gz: Uint8Array, path: string): Buffer {
  try {
    return gunzipSync(gz);
  } catch {
    throw new RequestError([{ path, message: 'is not a valid gzip stream' }]);
  }
}

/**
 * Turn a request file's `content` + `encoding` into bytes (Cluster API `Encoding`):
 * none → the UTF-8 text; `base64` → decoded; `gzip+base64` → base64-decoded then
 * gunzipped; `gzip` → a gzip stream given as YAML `!!binary` or as a string of byte
 * values 0–255 (latin1), gunzipped.
 *
 * @throws RequestError naming `content` when it does not decode.
 */
function decodeContent(file: FileInput, path: string): { contents: Uint8Array; gzip?: Uint8Array } {
  const content = file.content;
  switch (file.encoding) {
    case undefined:
      return { contents: Buffer.from(content as string, 'utf8') };
    case 'base64':
      return { contents: decodeBase64(content as string, path) };
    case 'gzip+base64': {
      const gz = decodeBase64(content as string, path);
      return { contents: gunzip(gz, path), gzip: gz };
    }
    case 'gzip': {
      if (typeof content === 'string' && /[^\x00-\xff]/.test(content)) {
        throw new RequestError([{ path, message: 'with encoding gzip must be binary (YAML !!binary) or bytes 0-255; use gzip+base64 for text' }]);
      }
      const gz = typeof content === 'string' ? Buffer.from(content, 'latin1') : content;
      return { contents: gunzip(gz, path), gzip: gz };
    }
  }
}

/** `user` or `user:group`; a lone user keeps the root group, as chown would. */
function parseOwner(owner: string | undefined): Owner {
  if (!owner) return { user: 'root', group: 'root' };
  const [user, group] = owner.split(':');
  return { user: user!, group: group ?? 'root' };
}

function planFiles(req: NodeBootstrap, kubeadm: KubeadmBootstrap): PlanFile[] {
  const pki: PlanFile[] = kubeadm.pki.map((f) => ({
    path: f.path,
    contents: Buffer.from(f.contents, 'utf8'),
    mode: f.mode,
    owner: { user: 'root', group: 'root' },
    append: false,
    sourceEncoding: 'plain',
    deferred: false,
    secret: f.secret,
  }));
  const given: PlanFile[] = (req.spec.provisioning?.files ?? []).map((f, i) => {
    const origin = `spec.provisioning.files[${i}]`;
    const owner = parseOwner(f.owner);
    return {
      origin,
      path: f.path,
      ...decodeContent(f, `${origin}.content`),
      mode: f.permissions ? parseInt(f.permissions, 8) : DEFAULT_FILE_MODE,
      owner,
      append: f.append ?? false,
      sourceEncoding: f.encoding ?? 'plain',
      deferred: owner.user !== 'root' || owner.group !== 'root',
      secret: false,
    };
  });
  return [...pki, ...given];
}

function planDisks(req: NodeBootstrap): PlanDisk[] {
  return (req.spec.provisioning?.diskSetup?.partitions ?? []).map((p, i) => ({
    origin: `spec.provisioning.diskSetup.partitions[${i}]`,
    device: p.device,
    tableType: p.tableType ?? 'gpt',
    tableTypeGiven: p.tableType !== undefined,
    layout: p.diskLayout
      ? p.diskLayout.map((d, n) => ({ number: n + 1, percentage: d.percentage, ...(d.partitionType ? { partitionType: d.partitionType } : {}) }))
      : (p.layout ?? false),
    ...(p.overwrite !== undefined ? { overwrite: p.overwrite } : {}),
  }));
}

/** Mode of the directories created above a user's file: what `mkdir` and cloud-init's `ensure_dir` give under umask 022. */
const HOME_DIRECTORY_MODE = 0o755;

/**
 * The directories between a user's home and a file that user owns, owned like the file
 * (`/home/bob/.kube/config` owned by bob → `/home/bob/.kube`, bob:bob's group), so the
 * user can manage what is theirs. Without them both formats would leave those
 * directories to root: cloud-init's `write_files` creates parents with `ensure_dir`
 * (root, 0755) and chowns only the file; Ignition creates missing parents as root.
 * Only for users the request creates (their home is known: `homeDir`, else
 * `/home/<name>`, as useradd picks); the home itself is made by useradd. In file order,
 * shallow first; a directory is listed once, owned by the first file that needs it.
 */
function homeDirectories(files: readonly PlanFile[], users: readonly PlanUser[]): PlanDirectory[] {
  const homes = new Map(users.map((u) => [u.name, (u.homeDir ?? `/home/${u.name}`).replace(/\/+$/, '')]));
  const out = new Map<string, PlanDirectory>();
  for (const f of files) {
    const home = homes.get(f.owner.user);
    if (home === undefined || home === '' || !f.path.startsWith(`${home}/`)) continue;
    const rest = f.path.slice(home.length + 1).split('/').slice(0, -1);
    let dir = home;
    for (const part of rest) {
      dir = `${dir}/${part}`;
      if (!out.has(dir)) out.set(dir, { path: dir, mode: HOME_DIRECTORY_MODE, owner: { ...f.owner } });
    }
  }
  return [...out.values()];
}

/**
 * A user's primary group: the one the request names, else the user's own name when the
 * request lists it among the user's groups. useradd makes a user-private group of the
 * user's name (USERGROUPS_ENAB, the default on Debian, Ubuntu, Fedora and Flatcar), and
 * refuses to when a group of that name exists already ("group ops exists - if you want
 * to add this user to that group, use -g"); cloud-init creates every listed group before
 * useradd, so `groups: sudo, ops` for user `ops` left the user uncreated on a real first
 * boot. Naming the group as the primary one is what both meant, in both formats.
 */
function primaryGroupOf(u: { name: string; groups?: string; primaryGroup?: string }): { primaryGroup?: string } {
  if (u.primaryGroup !== undefined) return { primaryGroup: u.primaryGroup };
  const groups = (u.groups ?? '').split(',').map((g) => g.trim());
  return groups.includes(u.name) ? { primaryGroup: u.name } : {};
}

/** NTP servers each once, first mention first, with the field that first named each. */
function planNtpServers(servers: readonly string[]): Required<Pick<PlanNtp, 'servers' | 'origins'>> {
  const first = new Map<string, number>();
  servers.forEach((s, i) => {
    if (!first.has(s)) first.set(s, i);
  });
  return { servers: [...first.keys()], origins: [...first.values()].map((i) => `spec.provisioning.ntp.servers[${i}]`) };
}

/** The additional Ignition config, when the request gives one (Cluster API `ignition.containerLinuxConfig`). */
function planIgnition(prov: NonNullable<NodeBootstrap['spec']['provisioning']>): Pick<ProvisioningPlan, 'ignition'> {
  const clc = prov.ignition?.containerLinuxConfig;
  if (clc?.additionalConfig === undefined) return {};
  return {
    ignition: {
      origin: 'spec.provisioning.ignition.containerLinuxConfig.additionalConfig',
      additionalConfig: clc.additionalConfig,
      ...(clc.strict !== undefined ? { strict: clc.strict } : {}),
    },
  };
}

/**
 * Request files and mount points at a path bootwright needs ({@link bootPathProblem}),
 * whatever the output format, each tagged with its rule when a later release brought it.
 */
function bootPathProblems(plan: ProvisioningPlan): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const problem = (path: string, p: ReturnType<typeof bootPathProblem>) => {
    if (p) problems.push({ path, message: p.message, ...(p.rule ? { rule: p.rule } : {}) });
  };
  // Entries without an origin are bootwright's own (the PKI, the report script).
  for (const f of plan.files) if (f.origin !== undefined) problem(`${f.origin}.path`, bootPathProblem(f.path, 'file', plan.layout));
  for (const m of plan.mounts) if (m.origin !== undefined) problem(`${m.origin}[1]`, bootPathProblem(m.mountPoint, 'directory', plan.layout));
  return problems;
}

/** What {@link buildPlan} needs beyond the request and the kubeadm builder's output. */
export interface BuildPlanOptions {
  /**
   * The request came in Cluster API shape: its instance-data Jinja and metadata variables
   * are used as CABPK's users write them, and the Ignition layout is CABPK's.
   */
  clusterApi?: boolean;
  /** The node name read from metadata (`spec.nodeName.fromMetadata`), as the format writes it. */
  nodeName?: MetadataNodeName;
  /** Where the node reports kubeadm's outcome (data served for a stored machine); absent for a bare render. Linux nodes only. */
  report?: PlanReport;
  /** What a stored machine is excused from (src/rules.ts); absent: every rule holds. */
  ratchet?: Ratchet;
}

/**
 * Build the plan: PKI and request files (decoded to bytes, modes as numbers, owners
 * split, non-root owners deferred until users exist), users (groups split on commas),
 * ntp, disks, filesystems, mounts, and the command phases with kubeadm as the main
 * command and Cluster API's success sentinel, and the additional Ignition config
 * (`spec.provisioning.ignition.containerLinuxConfig`, kept as text for the Ignition
 * renderer), and the directories above files a created user owns under their home
 * ({@link homeDirectories}), the values the node reads at boot ({@link findBootValues}),
 * the layout (Cluster API's for Cluster API input). With `report` (data served for a
 * stored Linux machine), the boot report script is added as bootwright's own file and the
 * plan carries the target (src/provision/plan/report.ts). The node's OS is `targetOs` (`./os.ts`); a Windows plan's
 * sentinel is `C:\run\cluster-api\bootstrap-success.complete`. The plan is then checked
 * once for every format (`checkPlan`) and for its OS (`osPlanProblems`); with
 * `options.ratchet`, what a stored machine is excused from is recorded there instead.
 *
 * @throws RequestError naming the field for contents that do not decode, for request
 *   files and mount points at a path bootwright needs ({@link bootPathProblem}), and for
 *   every problem `checkPlan` and `osPlanProblems` find, except those excused
 */
export function buildPlan(req: NodeBootstrap, kubeadm: KubeadmBootstrap, options: BuildPlanOptions = {}): ProvisioningPlan {
  const prov = req.spec.provisioning ?? {};
  const clusterApi = options.clusterApi ?? false;
  const bootValues = findBootValues(req, clusterApi, options.nodeName, options.ratchet);
  const files = planFiles(req, kubeadm);
  const os = targetOs(req);
  // The report script is a shell script: Linux nodes only (cloudbase-init runs cmd.exe).
  const report = os.os === 'linux' ? options.report : undefined;
  if (report) files.push(reportFile(report));
  const users: PlanUser[] = (prov.users ?? []).map((u, i) => ({
      origin: `spec.provisioning.users[${i}]`,
      name: u.name,
      ...(u.gecos !== undefined ? { gecos: u.gecos } : {}),
      groups: (u.groups ?? '').split(',').map((g) => g.trim()).filter(Boolean),
      ...(u.homeDir !== undefined ? { homeDir: u.homeDir } : {}),
      ...(u.inactive !== undefined ? { inactive: u.inactive } : {}),
      ...(u.shell !== undefined ? { shell: u.shell } : {}),
      ...(u.passwd !== undefined ? { passwd: u.passwd } : {}),
      ...primaryGroupOf(u),
      ...(u.lockPassword !== undefined ? { lockPassword: u.lockPassword } : {}),
      ...(u.sudo !== undefined ? { sudo: u.sudo } : {}),
      sshAuthorizedKeys: u.sshAuthorizedKeys ?? [],
    }));
  const plan: ProvisioningPlan = {
    nodeName: req.metadata.name,
    os: os.os,
    ...(os.field !== undefined ? { osField: os.field } : {}),
    files,
    directories: homeDirectories(files, users),
    users,
    ...(prov.ntp ? { ntp: { ...(prov.ntp.enabled !== undefined ? { enabled: prov.ntp.enabled } : {}), ...planNtpServers(prov.ntp.servers ?? []) } } : {}),
    disks: planDisks(req),
    filesystems: (prov.diskSetup?.filesystems ?? []).map((f, i) => ({
      origin: `spec.provisioning.diskSetup.filesystems[${i}]`,
      device: f.device,
      filesystem: f.filesystem,
      ...(f.label !== undefined ? { label: f.label } : {}),
      ...(f.partition !== undefined ? { partition: f.partition } : {}),
      ...(f.overwrite !== undefined ? { overwrite: f.overwrite } : {}),
      ...(f.replaceFS !== undefined ? { replaceFS: f.replaceFS } : {}),
      extraOpts: f.extraOpts ?? [],
    })),
    mounts: (prov.mounts ?? []).map((m, i) => {
      const [device, mountPoint, fsType, options, dump, pass] = m;
      return {
        origin: `spec.provisioning.mounts[${i}]`,
        device: device!,
        mountPoint: mountPoint!,
        ...(fsType !== undefined ? { fsType } : {}),
        ...(options !== undefined ? { options } : {}),
        ...(dump !== undefined ? { dump } : {}),
        ...(pass !== undefined ? { pass } : {}),
      };
    }),
    ...(req.spec.network ? { network: planNetwork(req.spec.network)! } : {}),
    units: [],
    commands: {
      boot: prov.bootCommands ?? [],
      pre: prov.preKubeadmCommands ?? [],
      main: { argv: kubeadm.argv, configFile: { name: kubeadm.fileName, contents: kubeadm.yaml, documents: kubeadm.documents }, ...(kubeadm.retry ? { retry: kubeadm.retry } : {}) },
      post: prov.postKubeadmCommands ?? [],
    },
    successSentinel: os.os === 'windows' ? WINDOWS_SUCCESS_SENTINEL : SUCCESS_SENTINEL,
    ...planIgnition(prov),
    bootValues,
    layout: clusterApi ? 'cluster-api' : 'bootwright',
    ...(report ? { report } : {}),
    warnings: [...kubeadm.warnings],
  };
  const found = [...bootPathProblems(plan), ...checkPlan(plan), ...osPlanProblems(plan, req)];
  const problems = options.ratchet ? options.ratchet.refuse(found) : found;
  if (problems.length > 0) throw new RequestError(problems);
  return plan;
}
