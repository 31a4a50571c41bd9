/**
 * The parts of an Ignition 3.x config that bootwright emits, typed with Ignition's own
 * field names (coreos/ignition `docs/configuration-v3_0.md`). Every field used here exists
 * in spec 3.0.0; properties are listed in the order the renderer writes them.
 */

/** A remote resource; bootwright only writes `data:` URLs. */
export interface IgnitionResource {
  /** `gzip` when `source` holds a gzip stream (spec ≥ 3.1.0 for `data:` URLs). */
  compression?: 'gzip';
  source: string;
}

/** A user or group named by name (Ignition resolves it in the target root at the files stage). */
export interface IgnitionOwner {
  name: string;
}

/** `storage.files[]`. */
export interface IgnitionFile {
  path: string;
  /** True to replace whatever is there; absent (false) for append-only entries. */
  overwrite?: boolean;
  contents?: IgnitionResource;
  append?: IgnitionResource[];
  /** Permission bits as a decimal integer (0644 → 420). */
  mode: number;
  user: IgnitionOwner;
  group: IgnitionOwner;
}

/** `storage.directories[]`. */
export interface IgnitionDirectory {
  path: string;
  mode: number;
  user: IgnitionOwner;
  group: IgnitionOwner;
}

/** `storage.disks[].partitions[]`. */
export interface IgnitionPartition {
  number: number;
  /** Absent (0): as large as possible. */
  sizeMiB?: number;
  /** Absent: Ignition's default, Linux filesystem data. */
  typeGuid?: string;
}

/** `storage.disks[]`. */
export interface IgnitionDisk {
  device: string;
  wipeTable?: boolean;
  partitions?: IgnitionPartition[];
}

/** `storage.filesystems[]`. */
export interface IgnitionFilesystem {
  device: string;
  format: string;
  label?: string;
  wipeFilesystem?: boolean;
  /** Extra mkfs arguments. */
  options?: string[];
}

/** `systemd.units[]`. */
export interface IgnitionUnit {
  name: string;
  enabled?: boolean;
  mask?: boolean;
  contents?: string;
}

/** `passwd.users[]`. */
export interface IgnitionUser {
  name: string;
  passwordHash?: string;
  sshAuthorizedKeys?: string[];
  gecos?: string;
  homeDir?: string;
  primaryGroup?: string;
  groups?: string[];
  shell?: string;
}

/** A config entry plus the request field it came from, for errors about it. */
export interface Sourced<T> {
  entry: T;
  /** Request field (e.g. `spec.provisioning.files[2]`), or `bootwright` for generated entries. */
  origin: string;
}

/** Origin of the entries bootwright generates itself (scripts, units, the kubeadm file). */
export const GENERATED = 'bootwright';
