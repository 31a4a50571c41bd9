/**
 * Cluster API inputs for tests, in the field's own words: the Cluster API quick start's
 * KubeadmControlPlane `kubeadmConfigSpec` and KubeadmConfigTemplate (Docker provider
 * flavour, plus the files, users, ntp and commands other providers' templates use), in
 * both bootstrap.cluster.x-k8s.io v1beta1 and v1beta2 shapes; wrapped with the cluster
 * context of the committed examples (their throwaway PKI and tokens).
 */
import { example } from './requests.js';

export type CapiVersion = 'v1beta1' | 'v1beta2';

const EVICTION = 'nodefs.available<0%,nodefs.inodesFree<0%,imagefs.available<0%';

/** Flag maps in v1beta1, `{name, value}` lists in v1beta2. */
function args(version: CapiVersion, map: Record<string, string>): unknown {
  return version === 'v1beta1' ? map : Object.entries(map).map(([name, value]) => ({ name, value }));
}

/** The provisioning part shared by both objects (Cluster API names). */
function provisioning(): Record<string, unknown> {
  return {
    files: [
      { path: '/etc/sysctl.d/99-kubernetes.conf', owner: 'root:root', permissions: '0644', content: 'net.ipv4.ip_forward = 1\n' },
    ],
    preKubeadmCommands: ['modprobe br_netfilter && sysctl --system'],
    postKubeadmCommands: ['echo "node joined: $(hostname)" | systemd-cat -t capi'],
    users: [{ name: 'capi', sudo: 'ALL=(ALL) NOPASSWD:ALL', sshAuthorizedKeys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG5vdC1hLXJlYWwta2V5LWp1c3QtYS10ZXN0 capi@example'] }],
    ntp: { enabled: true, servers: ['0.pool.ntp.org', '1.pool.ntp.org'] },
  };
}

/** The quick start's KubeadmControlPlane `spec.kubeadmConfigSpec`. */
export function controlPlaneSpec(version: CapiVersion): Record<string, unknown> {
  return {
    clusterConfiguration: {
      apiServer: { certSANs: ['localhost', '127.0.0.1', '0.0.0.0', 'host.docker.internal'] },
      controllerManager: { extraArgs: args(version, { 'enable-hostpath-provisioner': 'true' }) },
    },
    initConfiguration: { nodeRegistration: { kubeletExtraArgs: args(version, { 'eviction-hard': EVICTION }) } },
    joinConfiguration: { nodeRegistration: { kubeletExtraArgs: args(version, { 'eviction-hard': EVICTION }) } },
    ...provisioning(),
  };
}

/** The quick start's KubeadmControlPlane object, as `kubectl get -o yaml` prints it. */
export function controlPlaneObject(version: CapiVersion): Record<string, unknown> {
  return {
    apiVersion: `controlplane.cluster.x-k8s.io/${version}`,
    kind: 'KubeadmControlPlane',
    metadata: { name: 'capi-quickstart-control-plane', namespace: 'default' },
    spec: {
      kubeadmConfigSpec: controlPlaneSpec(version),
      machineTemplate: { infrastructureRef: { apiVersion: 'infrastructure.cluster.x-k8s.io/v1beta1', kind: 'DockerMachineTemplate', name: 'capi-quickstart-control-plane' } },
      replicas: 3,
      version: 'v1.33.2',
    },
    status: { replicas: 3, readyReplicas: 3 },
  };
}

/** The quick start's worker KubeadmConfigTemplate (`capi-quickstart-md-0`). */
export function workerTemplate(version: CapiVersion): Record<string, unknown> {
  return {
    apiVersion: `bootstrap.cluster.x-k8s.io/${version}`,
    kind: 'KubeadmConfigTemplate',
    metadata: { name: 'capi-quickstart-md-0', namespace: 'default' },
    spec: {
      template: {
        spec: {
          joinConfiguration: { nodeRegistration: { kubeletExtraArgs: args(version, { 'eviction-hard': EVICTION }) } },
          ...provisioning(),
        },
      },
    },
  };
}

/**
 * A NodeBootstrap in Cluster API shape for a role: the example's cluster context, the
 * control plane's `kubeadmConfigSpec` for init and control-plane nodes, the worker
 * KubeadmConfigTemplate (as `spec.kubeadmConfig`) for workers.
 */
export function capiRequest(role: 'init' | 'control-plane' | 'worker', version: CapiVersion): Record<string, unknown> & { spec: Record<string, unknown> } {
  const req = example(role);
  delete req.spec.kubeadm;
  delete req.spec.provisioning;
  if (role === 'worker') req.spec.kubeadmConfig = workerTemplate(version);
  else req.spec.kubeadmConfigSpec = controlPlaneSpec(version);
  return req;
}
