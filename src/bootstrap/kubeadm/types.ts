/**
 * kubeadm's configuration types for kubeadm.k8s.io/v1beta3 and v1beta4, as strict zod
 * schemas: what kubeadm's strict decoder accepts, field for field (kubernetes
 * `cmd/kubeadm/app/apis/kubeadm/v1beta3/types.go` and `v1beta4/types.go`).
 *
 * Arguments (`extraArgs`, `kubeletExtraArgs`) are held here in one neutral form, an
 * ordered list of `{name, value}`; {@link ./args.ts} converts them to each version's form
 * (a map in v1beta3, a list in v1beta4) when the documents are emitted.
 */
import { z } from 'zod';
import { bootstrapToken, caCertHash, certificateKey } from '../../request/schema.js';
import type { KubeadmApiVersion } from './version.js';

/** Go `time.Duration` text as kubeadm reads it: `4m0s`, `30s`, `1h`, `500ms`. */
export const duration = z.string().regex(/^-?(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$|^0$/, 'must be a Go duration such as 4m0s');

/** A bootstrap token, `[a-z0-9]{6}.[a-z0-9]{16}` (kubeadm `bootstraptokenv1.BootstrapTokenString`); never echoed. */
const token = bootstrapToken;

/** One argument in neutral form. */
export const argSchema = z.strictObject({ name: z.string().min(1), value: z.string() });
export type Arg = z.infer<typeof argSchema>;
const args = z.array(argSchema);

const imageMeta = { imageRepository: z.string().optional(), imageTag: z.string().optional() };

const hostPathMount = z.strictObject({
  name: z.string(),
  hostPath: z.string(),
  mountPath: z.string(),
  readOnly: z.boolean().optional(),
  pathType: z.string().optional(),
});

const taint = z.strictObject({
  key: z.string(),
  value: z.string().optional(),
  effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']),
  timeAdded: z.string().optional(),
});

const apiEndpoint = z.strictObject({ advertiseAddress: z.string().optional(), bindPort: z.int().min(0).max(65535).optional() });

const bootstrapTokenObject = z.strictObject({
  token,
  description: z.string().optional(),
  ttl: duration.optional(),
  expires: z.string().optional(),
  usages: z.array(z.string()).optional(),
  groups: z.array(z.string()).optional(),
});

const patches = z.strictObject({ directory: z.string().optional() });

const envVar = z.strictObject({ name: z.string(), value: z.string().optional(), valueFrom: z.record(z.string(), z.unknown()).optional() });

const externalEtcd = z.strictObject({ endpoints: z.array(z.string()), caFile: z.string(), certFile: z.string(), keyFile: z.string() });

const bootstrapTokenDiscovery = z.strictObject({
  token,
  apiServerEndpoint: z.string().optional(),
  caCertHashes: z.array(caCertHash).optional(),
  unsafeSkipCAVerification: z.boolean().optional(),
});

const fileDiscovery = z.strictObject({ kubeConfigPath: z.string() });

function versionSchemas(v4: boolean) {
  const component = {
    extraArgs: args.optional(),
    extraVolumes: z.array(hostPathMount).optional(),
    ...(v4 ? { extraEnvs: z.array(envVar).optional() } : {}),
  };
  const nodeRegistration = z.strictObject({
    name: z.string().optional(),
    criSocket: z.string().optional(),
    taints: z.array(taint).nullable().optional(),
    kubeletExtraArgs: args.optional(),
    ignorePreflightErrors: z.array(z.string()).optional(),
    imagePullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).optional(),
    ...(v4 ? { imagePullSerial: z.boolean().optional() } : {}),
  });
  const timeouts = z.strictObject({
    controlPlaneComponentHealthCheck: duration.optional(),
    kubeletHealthCheck: duration.optional(),
    kubernetesAPICall: duration.optional(),
    etcdAPICall: duration.optional(),
    tlsBootstrap: duration.optional(),
    discovery: duration.optional(),
    upgradeManifests: duration.optional(),
  });
  const cluster = z.strictObject({
    etcd: z
      .strictObject({
        local: z
          .strictObject({
            ...imageMeta,
            dataDir: z.string().optional(),
            extraArgs: args.optional(),
            ...(v4 ? { extraEnvs: z.array(envVar).optional() } : {}),
            serverCertSANs: z.array(z.string()).optional(),
            peerCertSANs: z.array(z.string()).optional(),
          })
          .optional(),
        external: externalEtcd.optional(),
      })
      .optional(),
    networking: z
      .strictObject({ serviceSubnet: z.string().optional(), podSubnet: z.string().optional(), dnsDomain: z.string().optional() })
      .optional(),
    kubernetesVersion: z.string().optional(),
    controlPlaneEndpoint: z.string().optional(),
    apiServer: z
      .strictObject({
        ...component,
        certSANs: z.array(z.string()).optional(),
        ...(v4 ? {} : { timeoutForControlPlane: duration.optional() }),
      })
      .optional(),
    controllerManager: z.strictObject(component).optional(),
    scheduler: z.strictObject(component).optional(),
    dns: z.strictObject({ ...imageMeta, ...(v4 ? { disabled: z.boolean().optional() } : {}) }).optional(),
    ...(v4 ? { proxy: z.strictObject({ disabled: z.boolean().optional() }).optional() } : {}),
    certificatesDir: z.string().optional(),
    imageRepository: z.string().optional(),
    featureGates: z.record(z.string(), z.boolean()).optional(),
    clusterName: z.string().optional(),
    ...(v4
      ? {
          encryptionAlgorithm: z.enum(['RSA-2048', 'RSA-3072', 'RSA-4096', 'ECDSA-P256', 'ECDSA-P384']).optional(),
          certificateValidityPeriod: duration.optional(),
          caCertificateValidityPeriod: duration.optional(),
        }
      : {}),
  });
  const init = z.strictObject({
    bootstrapTokens: z.array(bootstrapTokenObject).optional(),
    ...(v4 ? { dryRun: z.boolean().optional() } : {}),
    nodeRegistration: nodeRegistration.optional(),
    localAPIEndpoint: apiEndpoint.optional(),
    certificateKey: certificateKey.optional(),
    skipPhases: z.array(z.string()).optional(),
    patches: patches.optional(),
    ...(v4 ? { timeouts: timeouts.optional() } : {}),
  });
  const join = z.strictObject({
    ...(v4 ? { dryRun: z.boolean().optional() } : {}),
    nodeRegistration: nodeRegistration.optional(),
    caCertPath: z.string().optional(),
    discovery: z
      .strictObject({
        bootstrapToken: bootstrapTokenDiscovery.optional(),
        file: fileDiscovery.optional(),
        tlsBootstrapToken: token.optional(),
        ...(v4 ? {} : { timeout: duration.optional() }),
      })
      .optional(),
    controlPlane: z.strictObject({ localAPIEndpoint: apiEndpoint.optional(), certificateKey: certificateKey.optional() }).optional(),
    skipPhases: z.array(z.string()).optional(),
    patches: patches.optional(),
    ...(v4 ? { timeouts: timeouts.optional() } : {}),
  });
  return { ClusterConfiguration: cluster, InitConfiguration: init, JoinConfiguration: join };
}

export type KubeadmKind = 'ClusterConfiguration' | 'InitConfiguration' | 'JoinConfiguration';

const SCHEMAS: Record<KubeadmApiVersion, Record<KubeadmKind, z.ZodType>> = {
  'kubeadm.k8s.io/v1beta3': versionSchemas(false),
  'kubeadm.k8s.io/v1beta4': versionSchemas(true),
};

/**
 * The strict schema of one kubeadm kind at one API version (arguments in neutral form).
 */
export function kubeadmSchema(apiVersion: KubeadmApiVersion, kind: KubeadmKind): z.ZodType {
  return SCHEMAS[apiVersion][kind];
}
