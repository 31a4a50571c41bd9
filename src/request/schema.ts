/**
 * The NodeBootstrap request (DESIGN §2, contract), as zod schemas.
 *
 * Field names are the field's own: Cluster API's KubeadmConfigSpec for provisioning,
 * kubeadm's for the kubeadm overrides. Every object is strict: an unknown field is an
 * error naming its path. Messages never echo a secret's value.
 */
import { posix } from 'node:path';
import { z } from 'zod';
import { OUTPUT_FORMATS } from '../provision/formats.js';
import { TARGET_OS } from '../provision/plan/types.js';
import { networkSchema } from './network.js';

// A field that is missing reads "required", whatever its type: zod's own messages name
// the type ("Invalid input: expected string, received undefined") or, for an enum,
// the options ("Invalid option: expected one of …"), which told a user who left out
// `role` or a signed URL's `sig` nothing about what was wrong. zod's global error map
// (zod 4 `z.config`), set once for every schema of the process (request bodies, stored
// documents, route parameters), since every validation imports this module; a schema's
// own message still wins.
z.config({ customError: (issue) => (issue.input === undefined && (issue.code === 'invalid_type' || issue.code === 'invalid_value') ? 'required' : undefined) });

/** A DNS-1123 label (RFC 1123): lower-case alphanumerics and `-`, at most 63 characters. */
const dns1123Label = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a DNS-1123 label: lower-case letters, digits and "-", 1 to 63 characters, starting and ending with a letter or digit');

/** A DNS-1123 subdomain: dot-separated labels, at most 253 characters. */
const dns1123Subdomain = z
  .string()
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, 'must be a DNS-1123 subdomain (lower-case letters, digits, "-" and ".")');

/** Kubernetes version: semver with an optional leading `v` (`v1.33.2`, `1.31.0-rc.1`). */
export const kubernetesVersion = z
  .string()
  .regex(/^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/, 'must be a semantic version such as v1.33.2');

/** `host:port` or `host` (IPv6 in brackets), as kubeadm's controlPlaneEndpoint. */
const endpoint = z
  .string()
  .regex(
    /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?)(:\d{1,5})?$/,
    'must be host or host:port (IPv6 addresses in brackets)',
  )
  .refine((v) => {
    const m = /:(\d+)$/.exec(v.startsWith('[') ? v.slice(v.indexOf(']')) : v);
    return !m || (Number(m[1]) >= 1 && Number(m[1]) <= 65535);
  }, 'port must be 1 to 65535');

/** One CIDR or a comma-separated dual-stack pair, as kubeadm's networking subnets. */
const cidrList = z.string().refine(
  (v) =>
    v.split(',').every((c) => {
      const m = /^(.+)\/(\d{1,3})$/.exec(c.trim());
      if (!m) return false;
      const bits = Number(m[2]);
      const isV4 = /^\d{1,3}(\.\d{1,3}){3}$/.test(m[1]!) && m[1]!.split('.').every((o) => Number(o) <= 255);
      const isV6 = /^[0-9A-Fa-f:]+$/.test(m[1]!) && m[1]!.includes(':');
      return (isV4 && bits <= 32) || (isV6 && bits <= 128);
    }),
  'must be a CIDR such as 10.96.0.0/12, or two comma-separated (dual-stack)',
);

/** kubeadm bootstrap token `[a-z0-9]{6}.[a-z0-9]{16}`. Secret: the message never echoes it. */
export const bootstrapToken = z.string().regex(/^[a-z0-9]{6}\.[a-z0-9]{16}$/, 'must match [a-z0-9]{6}.[a-z0-9]{16}');

/** A CA public key pin `sha256:<64 hex>` (kubeadm `discovery.bootstrapToken.caCertHashes`). */
export const caCertHash = z.string().regex(/^sha256:[0-9a-fA-F]{64}$/, 'must be sha256: followed by 64 hex digits');

/** kubeadm `certificateKey`: 32 bytes as 64 hex digits (AES-256 key for the kubeadm-certs Secret). */
export const certificateKey = z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits');

const pemBlock = (label: RegExp, what: string) =>
  z
    .string()
    .refine(
      (v) => new RegExp(`^\\s*-----BEGIN (${label.source})-----\\r?\\n[A-Za-z0-9+/=\\r\\n]+-----END \\1-----\\s*$`).test(v),
      `must be one PEM ${what} block`,
    );

const certPem = pemBlock(/CERTIFICATE/, 'CERTIFICATE');
const privateKeyPem = pemBlock(/(?:RSA |EC )?PRIVATE KEY/, 'PRIVATE KEY');
const publicKeyPem = pemBlock(/(?:RSA )?PUBLIC KEY/, 'PUBLIC KEY');

const keyPair = z.strictObject({ cert: certPem, key: privateKeyPem });

/** The cluster-wide certificate authorities and the service-account key pair. */
const certificates = z.strictObject({
  ca: keyPair.optional(),
  etcdCA: keyPair.optional(),
  frontProxyCA: keyPair.optional(),
  serviceAccount: z.strictObject({ cert: publicKeyPem, key: privateKeyPem }).optional(),
});

export const clusterSchema = z.strictObject({
  name: dns1123Subdomain,
  controlPlaneEndpoint: endpoint.optional(),
  network: z
    .strictObject({
      podSubnet: cidrList.optional(),
      serviceSubnet: cidrList.optional(),
      dnsDomain: dns1123Subdomain.optional(),
    })
    .optional(),
  bootstrapToken: bootstrapToken.optional(),
  caCertHashes: z.array(caCertHash).min(1).optional(),
  certificateKey: certificateKey.optional(),
  certificates: certificates.optional(),
  /**
   * The control plane's Kubernetes version, when it differs from the node's
   * (`spec.kubernetesVersion`): the value of `{{ .controlPlane.version }}` in Cluster API
   * files with `contentFormat: Template`. Default: `spec.kubernetesVersion`.
   */
  controlPlaneVersion: kubernetesVersion.optional(),
});

/**
 * A Windows absolute path: a drive letter, a colon and a separator (`c:/k/azure.json`,
 * `C:\\k\\azure.json`), as Cluster API's Windows templates write them. Only a Windows
 * node's plan may hold one (`src/provision/plan/os.ts`).
 */
export const WINDOWS_ABSOLUTE = /^[A-Za-z]:[\\/]/;

/**
 * Absolute, normalised path: POSIX (no `..`, no `.`, no `//`, no trailing `/`), or
 * Windows-absolute ({@link WINDOWS_ABSOLUTE}) with no `..` component and none of the
 * characters Windows refuses in a name (`<>:"|?*`, control characters).
 */
export const absolutePath = z
  .string()
  .min(2, 'must be an absolute file path')
  .refine((p) => p.startsWith('/') || WINDOWS_ABSOLUTE.test(p), 'must be absolute (start with /)')
  .refine((p) => !p.split(WINDOWS_ABSOLUTE.test(p) ? /[\\/]/ : '/').includes('..'), 'must not contain ".."')
  .refine((p) => WINDOWS_ABSOLUTE.test(p) || (posix.normalize(p) === p && !p.endsWith('/')), 'must be normalised (no "//", "/./" or trailing "/")')
  .refine(
    (p) => !WINDOWS_ABSOLUTE.test(p) || (!/[<>:"|?*\x00-\x1f]/.test(p.slice(2)) && !/[\\/]{2}|[\\/]$|[\\/]\.(?:[\\/]|$)/.test(p)),
    'must be a normalised Windows path (none of <>:"|?*, no "//", "/./" or trailing separator)',
  )
  .refine((p) => !p.includes('\0'), 'must not contain NUL');

/** Octal permission string `"0640"`/`"640"`, at most 07777. */
const permissions = z.string().regex(/^0?[0-7]{3,4}$/, 'must be an octal string such as "0640"').refine((p) => parseInt(p, 8) <= 0o7777, 'must be at most 07777');

/** `user` or `user:group` (POSIX-ish account names). */
const owner = z.string().regex(/^[A-Za-z_][A-Za-z0-9_.-]*\$?(:[A-Za-z_][A-Za-z0-9_.-]*\$?)?$/, 'must be user or user:group');

/**
 * Shell commands. A plain YAML item containing `: ` is read as a mapping, not a string
 * (`- echo "done: $(date)"`): say so, rather than a bare type error. Control
 * characters are the plan's to refuse (src/provision/plan/check.ts
 * `commandControlProblem`, rule `command-control`), so that a command an earlier
 * release stored still boots.
 */
const command = z.string({
  error: (issue) =>
    issue.input !== null && typeof issue.input === 'object' && !Array.isArray(issue.input)
      ? 'must be a string, but YAML read this item as a mapping because it contains ": " outside quotes; quote the whole command'
      : 'must be a string',
});
const commandList = z.array(command);

/** A file to write (Cluster API `files[]`). */
export const fileSchema = z.strictObject({
  path: absolutePath,
  content: z.union([z.string(), z.instanceof(Uint8Array)]).default(''),
  encoding: z.enum(['base64', 'gzip', 'gzip+base64']).optional(),
  owner: owner.optional(),
  permissions: permissions.optional(),
  append: z.boolean().optional(),
});

/** A user (Cluster API `users[]`, cloud-init `users`). */
export const userSchema = z.strictObject({
  name: z.string().regex(/^[a-z_][a-z0-9_-]*\$?$/, 'must be a POSIX user name (lower-case letters, digits, "_" and "-")').max(32),
  gecos: z.string().optional(),
  groups: z.string().optional(),
  homeDir: absolutePath.optional(),
  inactive: z.boolean().optional(),
  shell: absolutePath.optional(),
  passwd: z.string().min(1).optional(),
  primaryGroup: z.string().optional(),
  lockPassword: z.boolean().optional(),
  sudo: z.string().optional(),
  sshAuthorizedKeys: z.array(z.string()).optional(),
});

const devicePath = z.string().regex(/^\/dev\/\S+$/, 'must be a device path such as /dev/sdb');

const partitionType = z
  .string()
  .regex(/^([0-9a-fA-F]{1,2}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$/, 'must be an MBR type code such as 83 or a GPT type GUID');

/** Cluster API `diskSetup.partitions[]` (v1beta1 `layout`; v1beta2 `diskLayout`). */
export const partitionSchema = z.strictObject({
  device: devicePath,
  layout: z.boolean().optional(),
  diskLayout: z.array(z.strictObject({ percentage: z.int().min(1).max(100), partitionType: partitionType.optional() })).min(1).optional(),
  overwrite: z.boolean().optional(),
  tableType: z.enum(['gpt', 'mbr']).optional(),
});

/** Cluster API `diskSetup.filesystems[]` (cloud-init `fs_setup`). */
export const filesystemSchema = z.strictObject({
  device: z.string().min(1),
  filesystem: z.string().regex(/^[a-z0-9]+$/, 'must be a filesystem type such as ext4 or xfs'),
  label: z.string().min(1).optional(),
  partition: z.string().regex(/^(auto|any|none|\d+)$/, 'must be auto, any, none or a partition number').optional(),
  overwrite: z.boolean().optional(),
  replaceFS: z.string().optional(),
  extraOpts: z.array(z.string()).optional(),
});

/**
 * Cluster API `ignition` (KubeadmConfigSpec): `containerLinuxConfig.additionalConfig` is
 * an Ignition 3.x JSON config, a Butane config (`variant: fcos|flatcar`) or a Container
 * Linux Config, merged into the generated Ignition config (cloud-config ignores it, as
 * CABPK does). `strict`: unknown keys are errors (Butane and raw Ignition: unless
 * `strict: false`; Container Linux Config: only with `strict: true`, as Cluster API's
 * CLC transpiler). The string may hold secrets: errors never quote it.
 */
export const ignitionProvisioningSchema = z.strictObject({
  containerLinuxConfig: z
    .strictObject({
      additionalConfig: z.string().max(1024 * 1024, 'must be at most 1 MiB').optional(),
      strict: z.boolean().optional(),
    })
    .optional(),
});

export const provisioningSchema = z.strictObject({
  files: z.array(fileSchema).optional(),
  bootCommands: commandList.optional(),
  preKubeadmCommands: commandList.optional(),
  postKubeadmCommands: commandList.optional(),
  users: z.array(userSchema).optional(),
  ntp: z.strictObject({ enabled: z.boolean().optional(), servers: z.array(z.string().min(1)).optional() }).optional(),
  diskSetup: z
    .strictObject({ partitions: z.array(partitionSchema).optional(), filesystems: z.array(filesystemSchema).optional() })
    .optional(),
  /** fstab-style entries: [device, mountpoint, fstype?, options?, dump?, pass?]. */
  mounts: z.array(z.array(z.string()).min(2).max(6)).optional(),
  ignition: ignitionProvisioningSchema.optional(),
});

export const KUBEADM_API_VERSIONS = ['kubeadm.k8s.io/v1beta3', 'kubeadm.k8s.io/v1beta4'] as const;

const looseObject = z.record(z.string(), z.unknown());

/** kubeadm overrides in kubeadm's own field names; checked per API version by the builder. */
export const kubeadmSchema = z.strictObject({
  apiVersion: z.enum(KUBEADM_API_VERSIONS).optional(),
  clusterConfiguration: looseObject.optional(),
  initConfiguration: looseObject.optional(),
  joinConfiguration: looseObject.optional(),
  verbosity: z.int().min(0).max(10).optional(),
  /**
   * Retry `kubeadm join` (Cluster API v1beta1 `useExperimentalRetryJoin`): up to 5
   * attempts, `kubeadm reset --force` and 15 seconds between them. Joins only.
   */
  useExperimentalRetryJoin: z.boolean().optional(),
});

/** Payload formats: the registered ones (`src/provision/formats.ts`). */
export { OUTPUT_FORMATS, type OutputFormat } from '../provision/formats.js';

/** Cloud platforms whose user data size limit bootwright knows ({@link ../platform.ts}). */
export const PLATFORMS = ['aws', 'azure', 'gcp', 'openstack', 'vsphere'] as const;
export type Platform = (typeof PLATFORMS)[number];

export const outputSchema = z.strictObject({
  format: z.enum(OUTPUT_FORMATS).optional(),
  /**
   * The node's operating system (default linux; windows also when a kubeadm
   * `nodeRegistration.criSocket` is an `npipe://` URL): a Windows node gets cloud-config
   * for cloudbase-init.
   */
  os: z.enum(TARGET_OS).optional(),
  /** The platform the data is user data for: its size limit applies (cloud-config gzipped to fit). */
  platform: z.enum(PLATFORMS).optional(),
  ignitionVersion: z.string().regex(/^\d+\.\d+\.\d+$/, 'must be a spec version such as 3.4.0').optional(),
  /**
   * Ignition: the metadata environment file (`NAME=value` lines) the node reads
   * `${NAME}` variables from before kubeadm runs. Default: `/run/metadata/flatcar` for
   * `COREOS_*` variables (Flatcar's coreos-metadata), `/run/metadata/afterburn` for
   * `AFTERBURN_*` (Fedora CoreOS's afterburn).
   */
  metadataFile: absolutePath.optional(),
});

/**
 * The node's name when only the machine knows it (boot-time identity; the default is
 * `metadata.name`), one of:
 * - `fromMetadata`: read at boot, the way each format does it: cloud-config from
 *   cloud-init instance data (`instanceData`, a key path such as `v1.local_hostname` or
 *   `ds.meta_data.local_hostname`), Ignition from a variable of the metadata file
 *   (`variable`, such as `COREOS_EC2_HOSTNAME`);
 * - `fromHostname: true`: no `nodeRegistration.name` is written, so kubeadm names the node
 *   after the machine's hostname (kubeadm's default, which Cluster API's kubeadm bootstrap
 *   provider leaves in place; `bootwright controller` asks for it).
 */
export const nodeNameSchema = z
  .strictObject({
    fromMetadata: z
      .strictObject({
        instanceData: z
          .string()
          .max(128)
          .regex(/^(?:ds|v1|v2)(?:\.[A-Za-z_][A-Za-z0-9_]*)+$/, 'must be a cloud-init instance-data key path such as v1.local_hostname or ds.meta_data.local_hostname')
          .optional(),
        variable: z
          .string()
          .max(64)
          .regex(/^(?:COREOS|AFTERBURN)_[A-Z0-9_]+$/, 'must be a metadata variable such as COREOS_EC2_HOSTNAME (Flatcar) or AFTERBURN_AWS_HOSTNAME (Fedora CoreOS)')
          .optional(),
      })
      .optional(),
    fromHostname: z.literal(true).optional(),
  })
  .refine((n) => (n.fromMetadata === undefined) !== (n.fromHostname === undefined), { error: 'must have exactly one of fromMetadata and fromHostname' });

export const ROLES = ['init', 'control-plane', 'worker'] as const;
export type Role = (typeof ROLES)[number];

export const nodeBootstrapSchema = z.strictObject({
  apiVersion: z.literal('bootwright.dev/v1alpha1'),
  kind: z.literal('NodeBootstrap'),
  metadata: z.strictObject({
    name: dns1123Label,
    labels: z.record(z.string(), z.string()).optional(),
    annotations: z.record(z.string(), z.string()).optional(),
  }),
  spec: z.strictObject({
    role: z.enum(ROLES),
    kubernetesVersion,
    cluster: clusterSchema,
    nodeName: nodeNameSchema.optional(),
    kubeadm: kubeadmSchema.optional(),
    provisioning: provisioningSchema.optional(),
    output: outputSchema.optional(),
    /** The node's network: netplan / cloud-init network-config v2 (./network.ts). */
    network: networkSchema.optional(),
  }),
});

/** A validated NodeBootstrap request. */
export type NodeBootstrap = z.infer<typeof nodeBootstrapSchema>;
export type ClusterInput = z.infer<typeof clusterSchema>;
export type FileInput = z.infer<typeof fileSchema>;
