/**
 * The stored inventory (DESIGN §4, issue "Machine inventory"): clusters, profiles and
 * machines, Kubernetes-style documents whose `spec` reuses the NodeBootstrap's own
 * sections, so a machine's bootstrap data is the NodeBootstrap assembled from the three.
 */
import { z } from 'zod';
import { BOOT_VARIABLE_NAME, BUILTIN_BOOT_VARIABLES } from '../boot/ipxe.js';
import { durationMs } from '../kube/duration.js';
import { networkSchema } from '../request/network.js';
import { clusterSchema, kubeadmSchema, kubernetesVersion, outputSchema, provisioningSchema, ROLES } from '../request/schema.js';

export const RESOURCE_API_VERSION = 'bootwright.dev/v1alpha1';

/** Resource kinds, with their collection names under /v1. */
export const RESOURCE_KINDS = { Cluster: 'clusters', Profile: 'profiles', Machine: 'machines' } as const;
export type ResourceKind = keyof typeof RESOURCE_KINDS;

/** Resource names and machine ids: DNS-1123 labels. */
export const resourceName = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a DNS-1123 label: lower-case letters, digits and "-", 1 to 63 characters');

const labels = z.record(
  z.string().regex(/^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/, 'must be a Kubernetes label key'),
  z.string().regex(/^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/, 'must be a Kubernetes label value'),
);

/** The longest and shortest `bootstrapTokenTTL` (a token must outlive a boot; kubeadm's own default is 24h). */
export const BOOTSTRAP_TOKEN_TTL_BOUNDS_MS = { min: 60_000, max: 24 * 3_600_000 } as const;
/** The `bootstrapTokenTTL` of a cluster that names none (Cluster API's `--bootstrap-token-ttl` default). */
export const DEFAULT_BOOTSTRAP_TOKEN_TTL_MS = 15 * 60_000;

/**
 * Where bootwright reaches the workload cluster's API server to mint per-machine
 * bootstrap tokens (src/boot/tokens.ts): a kubeconfig `file` (a base name in
 * `BOOTWRIGHT_WORKLOAD_KUBECONFIG_DIR`), or a `secretRef` to a Secret in the management
 * cluster (`BOOTWRIGHT_MANAGEMENT_KUBECONFIG`, else the pod's service account), key
 * `value` by default, as Cluster API's `<cluster>-kubeconfig` Secret holds it.
 */
export const workloadKubeconfigSchema = z.union([
  z.strictObject({
    file: z
      .string()
      .regex(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,254}$/, 'must be a file name (no "/") in BOOTWRIGHT_WORKLOAD_KUBECONFIG_DIR')
      .describe('a kubeconfig file name in BOOTWRIGHT_WORKLOAD_KUBECONFIG_DIR'),
  }),
  z.strictObject({
    secretRef: z.strictObject({
      namespace: resourceName.describe('the Secret\'s namespace in the management cluster'),
      name: z
        .string()
        .regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/, 'must be a Kubernetes object name (DNS-1123 subdomain)')
        .describe('the Secret\'s name, e.g. <cluster>-kubeconfig'),
      key: z
        .string()
        .regex(/^[-._a-zA-Z0-9]{1,253}$/, 'must be a Secret data key')
        .default('value')
        .describe('the data key holding the kubeconfig'),
    }),
  }),
]);

/**
 * A cluster: the `cluster` section of a NodeBootstrap, secrets included, and how its
 * join tokens are made: the static `bootstrapToken`, or, with `workloadKubeconfig`, a
 * token minted per machine at fetch time and valid for `bootstrapTokenTTL` (a Go
 * duration, default 15m), refreshed until the node joins. The two fields are the
 * service's, never part of the assembled NodeBootstrap.
 */
export const clusterSpecSchema = clusterSchema.extend({
  workloadKubeconfig: workloadKubeconfigSchema.optional(),
  bootstrapTokenTTL: z
    .string()
    .refine((t) => {
      const ms = durationMs(t);
      return ms !== undefined && ms >= BOOTSTRAP_TOKEN_TTL_BOUNDS_MS.min && ms <= BOOTSTRAP_TOKEN_TTL_BOUNDS_MS.max;
    }, 'must be a duration from 1m to 24h (e.g. 15m, 1h30m)')
    .optional()
    .describe('how long a minted token is valid (refreshed until the node joins); default 15m'),
});

/** A minting cluster's token lifetime, milliseconds. */
export const bootstrapTokenTtlMs = (spec: Pick<ClusterSpec, 'bootstrapTokenTTL'>): number =>
  spec.bootstrapTokenTTL === undefined ? DEFAULT_BOOTSTRAP_TOKEN_TTL_MS : durationMs(spec.bootstrapTokenTTL)!;

/** What iPXE boots: kernel, initrds and kernel arguments (URLs or paths the firmware can fetch). */
export const bootSchema = z.strictObject({
  kernel: z.string().min(1),
  initrd: z.array(z.string().min(1)).default([]),
  args: z.array(z.string()).default([]),
});

/** A profile: how a kind of node is built. */
export const profileSpecSchema = z.strictObject({
  role: z.enum(ROLES),
  kubernetesVersion,
  kubeadm: kubeadmSchema.optional(),
  provisioning: provisioningSchema.optional(),
  output: outputSchema.optional(),
  boot: bootSchema.optional(),
  /** The default network of the profile's machines (a machine's own `network` replaces it whole). */
  network: networkSchema.optional(),
});

/** Hardware identity a booting machine reports, any of which selects it. */
export const selectorsSchema = z.strictObject({
  /** MAC addresses, any common spelling (normalised to lower-case colon form). */
  mac: z.array(z.string()).default([]),
  /** SMBIOS system UUID, any case. */
  uuid: z.string().optional(),
  serial: z.string().optional(),
  hostname: z.string().optional(),
  /** Free labels matched against query parameters of the same name. */
  labels: z.record(z.string(), z.string()).default({}),
});

/** A machine: identity, the cluster and profile it uses, per-machine values. */
export const machineSpecSchema = z.strictObject({
  selectors: selectorsSchema,
  cluster: resourceName,
  profile: resourceName,
  /** Node name (`nodeRegistration.name`); default the machine id. */
  nodeName: resourceName.optional(),
  /** The control-plane node's advertise address (`localAPIEndpoint.advertiseAddress`). */
  advertiseAddress: z.string().optional(),
  /** Node labels and taints at registration (kubelet `--node-labels`, `nodeRegistration.taints`). */
  nodeLabels: z.record(z.string(), z.string()).default({}),
  taints: z.array(z.strictObject({ key: z.string(), value: z.string().optional(), effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']) })).default([]),
  /** Limit on fetches of secret-bearing data; beyond it 403 until an operator resets it. */
  maxFetches: z.int().min(1).optional(),
  /** The machine's network (netplan v2, src/request/network.ts); replaces the profile's whole. */
  network: networkSchema.optional(),
  /** Kernel arguments after the profile's `boot.args` (src/boot/ipxe.ts `machineScript`). */
  kernelArgs: z.array(z.string().min(1).max(1024)).max(64).optional(),
  /**
   * Values for `${name}` in the profile's `boot` section and in `kernelArgs`, beside the
   * built-in `${publicUrl}` and `${machine}`.
   */
  variables: z
    .record(
      z
        .string()
        .regex(BOOT_VARIABLE_NAME, 'must be a variable name: a letter or "_", then letters, digits or "_", at most 63 characters')
        .refine((n) => !(BUILTIN_BOOT_VARIABLES as readonly string[]).includes(n), 'is a variable bootwright defines (publicUrl, machine)'),
      z.string().max(1024),
    )
    .optional(),
});

export const SPEC_SCHEMAS = { Cluster: clusterSpecSchema, Profile: profileSpecSchema, Machine: machineSpecSchema } as const;

export type ClusterSpec = z.infer<typeof clusterSpecSchema>;
export type ProfileSpec = z.infer<typeof profileSpecSchema>;
export type MachineSpec = z.infer<typeof machineSpecSchema>;
export type BootSpec = z.infer<typeof bootSchema>;

/** The metadata an operator writes. */
export const writeMetadataSchema = z.strictObject({ name: resourceName, labels: labels.optional() });

/** A stored resource as read back: `revision` grows by one on every change. */
export interface StoredResource<S = unknown> {
  kind: ResourceKind;
  name: string;
  labels: Record<string, string>;
  /** 1 on create, +1 on every replace. */
  revision: number;
  spec: S;
  /** For machines: the cluster and profile revisions current when this revision was written (pins renders). */
  refs?: { clusterRevision: number; profileRevision: number };
  /**
   * The rules version (src/rules.ts `RULES_VERSION`) this revision was accepted under: 0
   * for revisions written before releases recorded it. A rule that came in later does
   * not refuse it at boot (ratcheting, DESIGN §8).
   */
  rules: number;
  /** ISO 8601 UTC. */
  createdAt: string;
  updatedAt: string;
}
