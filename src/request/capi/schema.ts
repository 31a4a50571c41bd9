/**
 * Cluster API input (DESIGN §2): a `bootstrap.cluster.x-k8s.io` KubeadmConfigSpec, in
 * the shapes of API versions v1beta1 and v1beta2, and the KubeadmConfig and
 * KubeadmConfigTemplate objects that carry one (Cluster API
 * `api/bootstrap/kubeadm/{v1beta1,v1beta2}/kubeadmconfig_types.go`).
 *
 * The provisioning fields (files, users, diskSetup, mounts, ntp, commands) are the
 * NodeBootstrap's own (`spec.provisioning` already uses Cluster API's names) plus what
 * only Cluster API has: `contentFrom`, `contentFormat`, `passwdFrom`. The kubeadm
 * configurations stay open objects here: they are checked field by field against
 * kubeadm's strict types for the target kubeadm version when the node is built.
 */
import { z } from 'zod';
import { fileSchema, filesystemSchema, nodeBootstrapSchema, partitionSchema, userSchema } from '../schema.js';
import { secretListSchema } from './secrets.js';

/** The two Cluster API versions of the bootstrap group that bootwright reads. */
export const CLUSTER_API_VERSIONS = ['bootstrap.cluster.x-k8s.io/v1beta1', 'bootstrap.cluster.x-k8s.io/v1beta2'] as const;
/** The same versions of the control plane group (KubeadmControlPlane carries a KubeadmConfigSpec of its version). */
export const CONTROL_PLANE_API_VERSIONS = ['controlplane.cluster.x-k8s.io/v1beta1', 'controlplane.cluster.x-k8s.io/v1beta2'] as const;
export type ClusterApiVersion = (typeof CLUSTER_API_VERSIONS)[number] | (typeof CONTROL_PLANE_API_VERSIONS)[number];

const looseObject = z.record(z.string(), z.unknown());

/** A reference to a key of a Secret (`contentFrom.secret`, `passwdFrom.secret`). */
const secretKeyRef = z.strictObject({ secret: z.strictObject({ name: z.string().min(1), key: z.string().min(1) }) });

/** `files[]`: a NodeBootstrap file plus `contentFrom` and v1beta2's `contentFormat`. */
const capiFile = fileSchema.extend({
  content: z.union([z.string(), z.instanceof(Uint8Array)]).optional(),
  contentFrom: secretKeyRef.optional(),
  contentFormat: z.enum(['Template']).optional(),
});

/** `users[]`: a NodeBootstrap user plus `passwdFrom`. */
const capiUser = userSchema.extend({ passwdFrom: secretKeyRef.optional() });

/** Cluster API's `ignition` block (`containerLinuxConfig.additionalConfig`, `strict`). */
const capiIgnition = z.strictObject({
  containerLinuxConfig: z.strictObject({ additionalConfig: z.string().optional(), strict: z.boolean().optional() }).optional(),
});

/** A Cluster API KubeadmConfigSpec (v1beta1 or v1beta2 shapes). */
export const kubeadmConfigSpecSchema = z
  .strictObject({
    clusterConfiguration: looseObject.optional(),
    initConfiguration: looseObject.optional(),
    joinConfiguration: looseObject.optional(),
    files: z.array(capiFile).optional(),
    diskSetup: z.strictObject({ partitions: z.array(partitionSchema).optional(), filesystems: z.array(filesystemSchema).optional() }).optional(),
    mounts: z.array(z.array(z.string()).min(2).max(6)).optional(),
    bootCommands: z.array(z.string()).optional(),
    preKubeadmCommands: z.array(z.string()).optional(),
    postKubeadmCommands: z.array(z.string()).optional(),
    users: z.array(capiUser).optional(),
    ntp: z.strictObject({ enabled: z.boolean().optional(), servers: z.array(z.string().min(1)).optional() }).optional(),
    format: z.enum(['cloud-config', 'ignition']).optional(),
    verbosity: z.int().min(0).max(10).optional(),
    /** v1beta1 only. */
    useExperimentalRetryJoin: z.boolean().optional(),
    ignition: capiIgnition.optional(),
  })
  .meta({
    id: 'KubeadmConfigSpec',
    description:
      'A Cluster API KubeadmConfigSpec (bootstrap.cluster.x-k8s.io v1beta1 or v1beta2 shapes). ' +
      'clusterConfiguration/initConfiguration/joinConfiguration are checked against kubeadm for the target version.',
  });
export type KubeadmConfigSpec = z.infer<typeof kubeadmConfigSpecSchema>;

/**
 * A KubeadmConfigSpec that may be left out: v1beta2 marks specs `omitzero`, so
 * `kubectl get -o yaml` omits an empty one.
 */
const specOrEmpty = kubeadmConfigSpecSchema.prefault({});

/** A field of a control plane's spec that is about its Machines, not a node's bootstrap data: accepted as it is, and read for nothing. */
const machineField = z.unknown().optional();

/**
 * The rest of a KubeadmControlPlane's spec, and of a KubeadmControlPlaneTemplate's
 * `template.spec` (Cluster API's KubeadmControlPlaneSpec and
 * KubeadmControlPlaneTemplateResourceSpec): v1beta1's names and v1beta2's (which groups
 * the rollout fields under `rollout` and renames the strategies). Named one by one, so a
 * misspelt `kubeadmConfigSpec` is an unknown field rather than a spec silently empty.
 */
const controlPlaneMachineFields = {
  machineTemplate: machineField,
  rolloutBefore: machineField,
  rolloutAfter: machineField,
  rolloutStrategy: machineField,
  remediationStrategy: machineField,
  machineNamingStrategy: machineField,
  rollout: machineField,
  remediation: machineField,
  machineNaming: machineField,
};

/** Object metadata as Kubernetes writes it; read for nothing, so left open. */
const objectMeta = looseObject.optional();

/** A `KubeadmConfig` or `KubeadmConfigTemplate` object, as `kubectl get -o yaml` prints it (status ignored). */
export const kubeadmConfigObjectSchema = z
  .discriminatedUnion('kind', [
    z.strictObject({
      apiVersion: z.enum(CLUSTER_API_VERSIONS),
      kind: z.literal('KubeadmConfig'),
      metadata: objectMeta,
      spec: specOrEmpty,
      status: looseObject.optional(),
    }),
    z.strictObject({
      apiVersion: z.enum(CLUSTER_API_VERSIONS),
      kind: z.literal('KubeadmConfigTemplate'),
      metadata: objectMeta,
      spec: z.strictObject({ template: z.strictObject({ metadata: objectMeta, spec: specOrEmpty }).prefault({}) }).prefault({}),
    }),
    z.strictObject({
      apiVersion: z.enum(CONTROL_PLANE_API_VERSIONS),
      kind: z.literal('KubeadmControlPlane'),
      metadata: objectMeta,
      spec: z.strictObject({ kubeadmConfigSpec: specOrEmpty, version: z.string().optional(), replicas: machineField, ...controlPlaneMachineFields }).prefault({}),
      status: looseObject.optional(),
    }),
    z.strictObject({
      apiVersion: z.enum(CONTROL_PLANE_API_VERSIONS),
      kind: z.literal('KubeadmControlPlaneTemplate'),
      metadata: objectMeta,
      spec: z.strictObject({ template: z.strictObject({ metadata: objectMeta, spec: z.strictObject({ kubeadmConfigSpec: specOrEmpty, ...controlPlaneMachineFields }).prefault({}) }).prefault({}) }).prefault({}),
    }),
  ])
  .meta({
    id: 'KubeadmConfig',
    description: 'A Cluster API object carrying a KubeadmConfigSpec: KubeadmConfig, KubeadmConfigTemplate, KubeadmControlPlane or KubeadmControlPlaneTemplate (v1beta1 or v1beta2)',
  });
export type KubeadmConfigObject = z.infer<typeof kubeadmConfigObjectSchema>;

/**
 * The NodeBootstrap as callers may send it (the OpenAPI request body): the native
 * request, or one whose spec carries Cluster API input (`kubeadmConfigSpec` or
 * `kubeadmConfig`) in place of `kubeadm` and `provisioning`.
 */
export const nodeBootstrapInputSchema = nodeBootstrapSchema.extend({
  spec: nodeBootstrapSchema.shape.spec.extend({
    kubeadmConfigSpec: kubeadmConfigSpecSchema.optional().meta({
      description: 'Cluster API KubeadmConfigSpec (e.g. a KubeadmControlPlane spec.kubeadmConfigSpec), in place of kubeadm and provisioning',
    }),
    kubeadmConfig: kubeadmConfigObjectSchema.optional().meta({
      description: 'A whole Cluster API KubeadmConfig or KubeadmConfigTemplate object, in place of kubeadm and provisioning',
    }),
    secrets: secretListSchema.optional(),
  }),
});
