/**
 * The ProvisioningPlan: the provider-neutral form between the kubeadm builder and the
 * renderers (DESIGN §1). It knows nothing about kubeadm, cloud-init or Ignition; every
 * renderer turns one plan into one format, and the same plan always gives the same bytes.
 *
 * Field names follow Cluster API's KubeadmConfigSpec where it has one (files, users, ntp,
 * diskSetup, mounts), so a reader of CABPK finds the same concepts here.
 */

import type { Retry } from '../shell.js';
import type { PlanNetwork } from './network.js';

/** Owner of a file or directory: a user name and a group name (`root:root` by default). */
export interface Owner {
  user: string;
  group: string;
}

/** How a file's bytes were given by the request; a renderer may reuse the encoded form. */
export type SourceEncoding = 'plain' | 'base64' | 'gzip' | 'gzip+base64';

/** A file to write on the node. */
export interface PlanFile {
  /** The request field this came from (e.g. `spec.provisioning.users[0]`), for errors. */
  origin?: string;
  /** Absolute, normalised path (no `..`, no `//`, no trailing `/`). */
  path: string;
  /** The exact bytes the node must end up with (decoded, decompressed). */
  contents: Uint8Array;
  /** Permission bits, 0 to 0o7777 (e.g. 0o640). */
  mode: number;
  owner: Owner;
  /** Append to an existing file instead of replacing it. */
  append: boolean;
  /**
   * The gzip stream the request supplied for these bytes, when it supplied one
   * (`encoding: gzip` or `gzip+base64`). Renderers that emit gzip reuse these bytes
   * rather than recompressing, so output stays stable whatever the zlib version.
   */
  gzip?: Uint8Array;
  /** The request's encoding of this file, kept so cloud-config can mirror it. */
  sourceEncoding: SourceEncoding;
  /**
   * True when the file is owned by a user that does not exist before users are created
   * (cloud-init: `defer: true`, written in the final stage).
   */
  deferred: boolean;
  /** True when the contents are secret (keys, tokens): renderers never log them. */
  secret: boolean;
}

/** A directory to create on the node. */
export interface PlanDirectory {
  path: string;
  mode: number;
  owner: Owner;
}

/** A user account, in cloud-init / Cluster API terms. */
export interface PlanUser {
  /** The request field this came from (e.g. `spec.provisioning.users[0]`), for errors. */
  origin?: string;
  name: string;
  gecos?: string;
  /** Supplementary groups, in the order given. */
  groups: string[];
  homeDir?: string;
  /** Expire the account (cloud-init `inactive`). */
  inactive?: boolean;
  shell?: string;
  /** A crypt(3) password hash. Secret. */
  passwd?: string;
  primaryGroup?: string;
  /** Lock the password (cloud-init `lock_passwd`); undefined leaves the provider default. */
  lockPassword?: boolean;
  /** A sudoers rule such as `ALL=(ALL) NOPASSWD:ALL`. */
  sudo?: string;
  sshAuthorizedKeys: string[];
}

/**
 * NTP client settings. `servers` each once, in first-mention order (a server named twice
 * is one server; cloud-init's schema refuses a list with repeats), with `origins[i]` the
 * request field that first named `servers[i]` (absent: `spec.provisioning.ntp.servers[i]`).
 */
export interface PlanNtp {
  enabled?: boolean;
  servers: string[];
  origins?: string[];
}

/** One partition in a disk layout, sized as a percentage of the disk. */
export interface PlanPartition {
  /** 1-based partition number, in layout order. */
  number: number;
  /** Share of the disk in percent (1..100). */
  percentage: number;
  /**
   * Partition type as given: an MBR type code (`83`, `82`, `fd`, `8e`, `0c`, `07`, `85`)
   * or a GPT type GUID. Undefined means Linux filesystem.
   */
  partitionType?: string;
}

/** A disk to partition. */
export interface PlanDisk {
  /** The request field this came from (e.g. `spec.provisioning.users[0]`), for errors. */
  origin?: string;
  /** Device path such as `/dev/sdb`. */
  device: string;
  tableType: 'gpt' | 'mbr';
  /**
   * `true`: one partition over the whole disk; `false`: no partitions (table only);
   * a list: explicit partitions.
   */
  layout: boolean | PlanPartition[];
  /** Undefined: provider default (do not overwrite). */
  overwrite?: boolean;
  /** Whether the request gave `tableType` explicitly (cloud-config keeps what was said). */
  tableTypeGiven: boolean;
}

/** A filesystem to create. */
export interface PlanFilesystem {
  /** The request field this came from (e.g. `spec.provisioning.users[0]`), for errors. */
  origin?: string;
  device: string;
  filesystem: string;
  label?: string;
  /** cloud-init `partition`: `auto`, `any`, `none` or a partition number. */
  partition?: string;
  overwrite?: boolean;
  replaceFS?: string;
  /** Extra mkfs options, one argument per entry. */
  extraOpts: string[];
}

/** An fstab-style mount: [device, mountpoint, fstype?, options?, dump?, pass?]. */
export interface PlanMount {
  /** The request field this came from (e.g. `spec.provisioning.users[0]`), for errors. */
  origin?: string;
  device: string;
  mountPoint: string;
  fsType?: string;
  options?: string;
  dump?: string;
  pass?: string;
}

/** A systemd unit the plan asks for beyond the ones renderers generate themselves. */
export interface PlanUnit {
  /** Unit name with its suffix, e.g. `containerd.service`. */
  name: string;
  contents?: string;
  enabled?: boolean;
}

/** Shell command lines, each run by `sh` as one line of a script (cloud-init semantics). */
export type CommandList = string[];

/** The kubeadm step: the command that turns the machine into a node. */
export interface MainCommand {
  /**
   * The argv of the kubeadm invocation *without* the config path argument, e.g.
   * `['kubeadm', 'join']`, plus extra flags such as `--v=5`.
   */
  argv: string[];
  /** The file (a member of `files`, by logical name) holding the kubeadm configuration. */
  configFile: KubeadmConfigFile;
  /** Retry the command on failure (joins with `useExperimentalRetryJoin`). */
  retry?: Retry;
}

/** The kubeadm configuration file, placed by each renderer at its own path. */
export interface KubeadmConfigFile {
  /** File name under the renderer's kubeadm directory, e.g. `kubeadm-join-config.yaml`. */
  name: string;
  /** The multi-document YAML stream. */
  contents: string;
  /**
   * The documents `contents` serializes (`---` + {@link dumpYaml} of each), so a renderer
   * that must write them differently (cloud-init Jinja: values quoted) can.
   */
  documents?: readonly Record<string, unknown>[];
}

/** The ordered command phases. */
export interface CommandPhases {
  /** Every boot, as early as possible (cloud-init `bootcmd`). */
  boot: CommandList;
  /** Once, before kubeadm. */
  pre: CommandList;
  /** kubeadm itself. */
  main: MainCommand;
  /** Once, after kubeadm (whatever its outcome, as cloud-init's runcmd). */
  post: CommandList;
}

/** Path of the file written only when kubeadm succeeded (Cluster API's contract). */
export const SUCCESS_SENTINEL = '/run/cluster-api/bootstrap-success.complete';

/**
 * A user-supplied Ignition config to merge into the generated one (Cluster API
 * `ignition.containerLinuxConfig`). Only the Ignition renderer reads it; it is kept as
 * given (the text is parsed at render time, where its version matters).
 */
export interface PlanIgnitionAdditional {
  /** The request field it came from, for errors. */
  origin: string;
  /** The config text: Ignition 3.x JSON, Butane YAML or a Container Linux Config. */
  additionalConfig: string;
  /** Cluster API `strict` as given; undefined when the request left it out. */
  strict?: boolean;
}

/** One use of a value the node reads at boot, where the request gave it. */
export interface BootValueUse {
  /** The request field (e.g. `spec.kubeadm.joinConfiguration.nodeRegistration.name`). */
  path: string;
  /** The text as written: `{{ ds.meta_data.local_hostname }}` or `${COREOS_EC2_HOSTNAME}`. */
  source: string;
}

/**
 * Values known only on the node at boot (DESIGN: boot-time identity), each provisioner
 * its own way: cloud-init instance-data Jinja for cloud-config, variables of a metadata
 * environment file (`/run/metadata/flatcar`, `/run/metadata/afterburn`) for Ignition.
 */
export interface PlanBootValues {
  /**
   * Where cloud-config reads instance-data Jinja: `request` (Cluster API input, as CABPK:
   * kubeadm values, commands, plain-text file contents) or `kubeadm` (a native request's
   * `spec.nodeName.fromMetadata`: the kubeadm configuration only). Absent: nowhere.
   */
  jinja?: 'request' | 'kubeadm';
  /** The instance-data expressions the request uses. */
  jinjaUses: BootValueUse[];
  /** The metadata variables (`${NAME}`) the kubeadm configuration uses, with their names. */
  variables: (BootValueUse & { name: string })[];
  /** The metadata environment file the variables are read from on the node. */
  metadataFile?: string;
}

/**
 * Whose names the node's bootstrap files and units have where formats differ (Ignition):
 * bootwright's (`/etc/kubeadm/`, `kubeadm-bootstrap.service`) or Cluster API's kubeadm
 * bootstrap provider's (`/etc/kubeadm.yml`, `/etc/kubeadm.sh`, `kubeadm.service`), which
 * Cluster API input gets so that templates' commands and drop-ins find what they name.
 */
export type PlanLayout = 'bootwright' | 'cluster-api';

/** The operating system a plan is for; each provisioner writes for one. */
export const TARGET_OS = ['linux', 'windows'] as const;
export type TargetOs = (typeof TARGET_OS)[number];

/** The boot report target of a plan (src/provision/plan/report.ts). */
export interface PlanReport {
  /** The signed report URL (absolute http or https, URI-safe characters only). */
  url: string;
}

/** The whole plan. */
export interface ProvisioningPlan {
  /** Node name, used for hostnames and unit descriptions. */
  nodeName: string;
  /** The node's operating system: only provisioners for it can render the plan (absent: linux). */
  os?: TargetOs;
  /** The request field that chose `os` (for errors); absent: the default, linux. */
  osField?: string;
  files: PlanFile[];
  directories: PlanDirectory[];
  users: PlanUser[];
  ntp?: PlanNtp;
  disks: PlanDisk[];
  filesystems: PlanFilesystem[];
  mounts: PlanMount[];
  /** The node's network (`spec.network`, ./network.ts); absent: the image's own or DHCP. */
  network?: PlanNetwork;
  units: PlanUnit[];
  commands: CommandPhases;
  /** Absolute path written when the main command succeeded. */
  successSentinel: string;
  /** Extra Ignition config to merge (Ignition output only; other renderers ignore it). */
  ignition?: PlanIgnitionAdditional;
  /** Values the node fills in at boot; absent: none. */
  bootValues?: PlanBootValues;
  /** File and unit names of the bootstrap (Ignition); absent: `bootwright`. */
  layout?: PlanLayout;
  /**
   * Where the node reports kubeadm's outcome (a signed, expiring URL), when the data is
   * served for a stored machine; absent for a bare render. See src/provision/plan/report.ts.
   */
  report?: PlanReport;
  /** Non-fatal remarks for the caller (e.g. "kubeadm will generate a new CA"). */
  warnings: string[];
}
