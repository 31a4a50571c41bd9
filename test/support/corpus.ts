/**
 * The corpus of published Cluster API templates (test/fixtures/capi-templates/, each
 * file's header names its source) and what each must give: the role and format it is
 * rendered in, the Secrets passed beside it, the instance data or metadata file of its
 * provider, and the node name (or other boot-time values) the node must end up with.
 *
 * Instance data follows cloud-init's `/run/cloud-init/instance-data.json` (cloud-init docs,
 * "Instance data": `v1` standardized keys, `ds.meta_data` as the datasource read it, with
 * the datasource's own `-` spellings, which cloud-init aliases to `_` for Jinja). Metadata
 * files follow Flatcar's coreos-metadata (`/run/metadata/flatcar`, `COREOS_<PLATFORM>_*`
 * lines), or the file a template's own unit writes (vSphere, Proxmox: `/run/metadata/coreos`).
 * All names, ids and addresses are made up.
 */
import { execFile } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { load, loadAll } from 'js-yaml';
import { kubeadmSchema, type KubeadmKind } from '../../src/bootstrap/kubeadm/types.js';
import type { KubeadmApiVersion } from '../../src/bootstrap/kubeadm/version.js';
import { example } from './requests.js';

/** The fixture directory. */
export const CORPUS_DIR = new URL('../fixtures/capi-templates/', import.meta.url);

/** cloud-init instance data of one provider's node (the keys templates read). */
type InstanceData = { v1: Record<string, unknown>; ds: { meta_data: Record<string, unknown> } };

/** Instance data by provider, shaped as each datasource writes it. */
export const INSTANCE_DATA: Record<string, InstanceData> = {
  // DataSourceEc2: meta_data from IMDS, hyphenated keys.
  aws: {
    v1: { cloud_name: 'aws', platform: 'ec2', region: 'us-east-1', availability_zone: 'us-east-1a', instance_id: 'i-0a1b2c3d4e5f60718', local_hostname: 'ip-10-0-1-17.ec2.internal' },
    ds: { meta_data: { 'instance-id': 'i-0a1b2c3d4e5f60718', 'local-hostname': 'ip-10-0-1-17.ec2.internal', hostname: 'ip-10-0-1-17.ec2.internal', 'local-ipv4': '10.0.1.17' } },
  },
  // DataSourceAzure: meta_data from IMDS and the OVF environment.
  azure: {
    v1: { cloud_name: 'azure', platform: 'azure', region: 'westeurope', instance_id: '4f1c8a2e-6d3b-4e8a-9c1d-2b7e5f0a9c31', local_hostname: 'prod-node-7xk2p' },
    ds: { meta_data: { 'instance-id': '4f1c8a2e-6d3b-4e8a-9c1d-2b7e5f0a9c31', 'local-hostname': 'prod-node-7xk2p' } },
  },
  // DataSourceGCE: local-hostname is the instance's FQDN.
  gcp: {
    v1: { cloud_name: 'gce', platform: 'gce', region: 'europe-west1', instance_id: '4520031799277581759', local_hostname: 'prod-node-x7k2p' },
    ds: { meta_data: { 'instance-id': '4520031799277581759', 'local-hostname': 'prod-node-x7k2p.c.prod-project.internal' } },
  },
  // DataSourceOpenStack: v1.local_hostname is the server name.
  openstack: {
    v1: { cloud_name: 'openstack', platform: 'openstack', instance_id: '0e1f7e4c-7f8a-4d5e-9a3b-6c2d1e0f9a8b', local_hostname: 'prod-node-abcde' },
    ds: { meta_data: { uuid: '0e1f7e4c-7f8a-4d5e-9a3b-6c2d1e0f9a8b', name: 'prod-node-abcde', hostname: 'prod-node-abcde.novalocal' } },
  },
  // DataSourceVMware (guestinfo metadata written by CAPV: instance-id, local-hostname, hostname).
  vsphere: {
    v1: { cloud_name: 'vmware', platform: 'vmware', instance_id: 'prod-node-6fx9z', local_hostname: 'prod-node-6fx9z' },
    ds: { meta_data: { 'instance-id': 'prod-node-6fx9z', 'local-hostname': 'prod-node-6fx9z', hostname: 'prod-node-6fx9z' } },
  },
  // Metal3: the Metal3DataTemplate's metaData, served as config drive meta_data.
  metal3: {
    v1: { cloud_name: 'openstack', platform: 'openstack', instance_id: '7f3f5c1e-2a4b-4c6d-8e9f-0a1b2c3d4e5f', local_hostname: 'node-0' },
    ds: { meta_data: { uuid: '7f3f5c1e-2a4b-4c6d-8e9f-0a1b2c3d4e5f', name: 'prod-node-k8s8q', 'local-hostname': 'node-0' } },
  },
  // Linode's metadata service (label, id).
  linode: {
    v1: { cloud_name: 'akamai', platform: 'akamai', instance_id: '61234567', local_hostname: 'prod-node-hd6jt' },
    ds: { meta_data: { id: 61234567, label: 'prod-node-hd6jt', region: 'us-ord' } },
  },
  // DataSourceNoCloud, as CAPMOX writes meta-data (instance-id = the VM id).
  proxmox: {
    v1: { cloud_name: 'nocloud', platform: 'nocloud', instance_id: '107', local_hostname: 'prod-node-p2x4v' },
    ds: { meta_data: { 'instance-id': '107', 'local-hostname': 'prod-node-p2x4v' } },
  },
  // Nutanix (config drive: hostname, uuid).
  nutanix: {
    v1: { cloud_name: 'nutanix', platform: 'configdrive', instance_id: 'b2c6b0d8-3c4f-4f1e-8a0b-1e2f3a4b5c6d', local_hostname: 'prod-node-5rk7n' },
    ds: { meta_data: { hostname: 'prod-node-5rk7n', uuid: 'b2c6b0d8-3c4f-4f1e-8a0b-1e2f3a4b5c6d', 'local-hostname': 'prod-node-5rk7n' } },
  },
};

/** A metadata environment file a Flatcar node has before kubeadm runs. */
export interface MetadataFile {
  path: string;
  /** `NAME=value` lines. */
  lines: string[];
}

/** Flatcar metadata by provider. */
export const METADATA: Record<string, MetadataFile> = {
  // coreos-metadata on EC2: COREOS_EC2_HOSTNAME is the private DNS name.
  aws: { path: '/run/metadata/flatcar', lines: ['COREOS_EC2_HOSTNAME=ip-10-0-1-17.ec2.internal', 'COREOS_EC2_INSTANCE_ID=i-0a1b2c3d4e5f60718', 'COREOS_EC2_IPV4_LOCAL=10.0.1.17'] },
  // on GCE: the instance's FQDN, which the template trims to its first label.
  gcp: { path: '/run/metadata/flatcar', lines: ['COREOS_GCE_HOSTNAME=prod-node-x7k2p.c.prod-project.internal', 'COREOS_GCE_IP_LOCAL_0=10.132.0.7'] },
  // on OpenStack: the metadata hostname (server name + .novalocal), trimmed by the template.
  openstack: { path: '/run/metadata/flatcar', lines: ['COREOS_OPENSTACK_HOSTNAME=prod-node-abcde.novalocal', 'COREOS_OPENSTACK_INSTANCE_ID=0e1f7e4c-7f8a-4d5e-9a3b-6c2d1e0f9a8b', 'COREOS_OPENSTACK_IPV4_LOCAL=10.6.0.12'] },
  // the vSphere template's own coreos-metadata.service writes this file from guestinfo.
  vsphere: { path: '/run/metadata/coreos', lines: ['COREOS_CUSTOM_HOSTNAME=prod-node-6fx9z'] },
  // the Proxmox template's own coreos-metadata.service copies /etc/proxmox-env (CAPMOX) here.
  proxmox: { path: '/run/metadata/coreos', lines: ['COREOS_CUSTOM_HOSTNAME=prod-node-p2x4v', 'COREOS_CUSTOM_INSTANCE_ID=107'] },
};

/** A Kubernetes Secret object as a caller passes it in `spec.secrets`. */
export type SecretObject = Record<string, unknown>;

/**
 * The cloud provider config CAPZ writes into each Machine's `<name>-azure-json` Secret
 * (cloud-provider-azure's `azure.json`), with made-up ids and a made-up client secret.
 */
export function azureJson(resourceGroup: string): string {
  return `${JSON.stringify(
    {
      cloud: 'AzurePublicCloud',
      tenantId: '11111111-2222-3333-4444-555555555555',
      subscriptionId: '66666666-7777-8888-9999-000000000000',
      aadClientId: 'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee',
      aadClientSecret: 'not-a-real-client-secret~0123456789',
      resourceGroup,
      securityGroupName: 'prod-node-nsg',
      securityGroupResourceGroup: resourceGroup,
      location: 'westeurope',
      vmType: 'vmss',
      vnetName: 'prod-vnet',
      vnetResourceGroup: resourceGroup,
      subnetName: 'node-subnet',
      routeTableName: 'prod-node-routetable',
      loadBalancerSku: 'Standard',
      loadBalancerName: '',
      maximumLoadBalancerRuleCount: 250,
      useManagedIdentityExtension: false,
      useInstanceMetadata: true,
    },
    null,
    4,
  )}\n`;
}

/** CAPZ's per-Machine Secret holding `azure.json` under `key` (`data`, base64, as the API server returns it). */
export function azureJsonSecret(name: string, key: string): SecretObject {
  return { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: 'default' }, type: 'Opaque', data: { [key]: Buffer.from(azureJson('prod'), 'utf8').toString('base64') } };
}

/** Linode's published `common-init-files` Secret (stringData), from the corpus. */
export function linodeSecret(): SecretObject {
  return load(readFileSync(new URL('linode-common-init-files.secret.yaml', CORPUS_DIR), 'utf8')) as SecretObject;
}

/** The capability a case needs that another issue-12 branch brings (see test/capi/corpus.test.ts). */
export type Needs = 'ident' | 'reg';

/** What one template must give. */
export interface CorpusCase {
  file: string;
  role: 'init' | 'control-plane' | 'worker';
  /** The format it is rendered in: its own (`ignition` when the template says so; `windows` for a Windows node, which is cloud-config for cloudbase-init). */
  format: 'cloud-config' | 'ignition' | 'windows';
  /** The node's OS given by the request (`spec.output.os`), for a Windows template with no `npipe://` CRI socket to tell. */
  os?: 'windows';
  /** Secrets passed beside it (`spec.secrets`). */
  secrets?: () => SecretObject[];
  /** cloud-config with instance-data Jinja: the provider whose instance data `cloud-init devel render` uses. */
  instanceData?: keyof typeof INSTANCE_DATA;
  /** Ignition with metadata variables: the provider whose metadata file the node has. */
  metadata?: keyof typeof METADATA;
  /** What the provider's instance metadata service answers the template's commands (`curl`), when they ask it. */
  imds?: unknown;
  /** The node name kubeadm registers (`nodeRegistration.name` after boot-time values are filled in). */
  nodeName?: string;
  /**
   * Values the kubeadm configuration must hold after boot-time values are filled in, by
   * path (see {@link kubeadmValue}): `Node.nodeRegistration.kubeletExtraArgs.provider-id`.
   */
  kubeadm?: Record<string, unknown>;
  /** Text one of the document's values must hold (a command, a file's content: any string, after YAML or JSON parsing). */
  documentHas?: string[];
  /** Paths of the template's files[] whose content must reach the node byte for byte, literal braces and all. */
  literalFiles?: string[];
  /** What this branch lacks to serve it (the case is a `todo` until that branch is merged). */
  needs?: Needs[];
  /** Not served, and why: no correct output exists, or bootwright refuses on purpose. The problem's path must match `refusedAt`. */
  refused?: { at: RegExp; why: string };
}

/** The corpus and the expectations, one entry per fixture. */
export const CORPUS: CorpusCase[] = [
  { file: 'aws-kcp.yaml', role: 'init', format: 'cloud-config', instanceData: 'aws', nodeName: 'ip-10-0-1-17.ec2.internal', needs: ['ident'] },
  { file: 'aws-md-0.yaml', role: 'worker', format: 'cloud-config', instanceData: 'aws', nodeName: 'ip-10-0-1-17.ec2.internal', needs: ['ident'] },
  { file: 'aws-flatcar-kcp.yaml', role: 'init', format: 'ignition', metadata: 'aws', nodeName: 'ip-10-0-1-17.ec2.internal', needs: ['ident'] },
  { file: 'aws-flatcar-md-0.yaml', role: 'worker', format: 'ignition', metadata: 'aws', nodeName: 'ip-10-0-1-17.ec2.internal', needs: ['ident'] },
  // The node name is the placeholder '@@HOSTNAME@@', which a command replaces in /etc/kubeadm.yml with the VM name from Azure's IMDS.
  {
    file: 'azure-flatcar-kcp.yaml',
    role: 'init',
    format: 'ignition',
    secrets: () => [azureJsonSecret('prod-control-plane-azure-json', 'control-plane-azure.json')],
    imds: { compute: { name: 'prod-node-7xk2p' } },
    nodeName: 'prod-node-7xk2p',
    needs: ['ident'],
  },
  { file: 'azure-flatcar-md-0.yaml', role: 'worker', format: 'ignition', secrets: () => [azureJsonSecret('prod-md-0-azure-json', 'worker-node-azure.json')], imds: { compute: { name: 'prod-node-7xk2p' } }, nodeName: 'prod-node-7xk2p', needs: ['ident'] },
  {
    file: 'azure-windows-kcp.yaml',
    role: 'init',
    format: 'cloud-config',
    secrets: () => [azureJsonSecret('prod-control-plane-azure-json', 'control-plane-azure.json')],
    instanceData: 'azure',
    nodeName: 'prod-node-7xk2p',
    documentHas: ['"aadClientSecret": "not-a-real-client-secret~0123456789"'],
    needs: ['ident'],
  },
  {
    file: 'azure-windows-md-0.yaml',
    role: 'worker',
    format: 'cloud-config',
    secrets: () => [azureJsonSecret('prod-md-0-azure-json', 'worker-node-azure.json')],
    instanceData: 'azure',
    nodeName: 'prod-node-7xk2p',
    needs: ['ident'],
  },
  {
    file: 'azure-windows-md-win.yaml',
    role: 'worker',
    format: 'windows',
    secrets: () => [azureJsonSecret('prod-md-win-azure-json', 'worker-node-azure.json')],
    instanceData: 'azure',
    nodeName: 'prod-node-7xk2p',
    documentHas: ['c:/k/azure.json', 'C:/defender-exclude-calico.ps1', 'nssm set kubelet start SERVICE_AUTO_START'],
    needs: ['ident', 'reg'],
  },
  {
    file: 'azure-ecp-md-0.yaml',
    role: 'worker',
    format: 'cloud-config',
    secrets: () => [azureJsonSecret('prod-md-0-azure-json', 'worker-node-azure.json')],
    instanceData: 'azure',
    nodeName: 'prod-node-7xk2p',
    literalFiles: ['/etc/netplan/60-eth0.yaml'],
    documentHas: ["mac=$(ip -o link | grep eth0 | grep ether | awk '{ print $17 }')", 'sed -i -e "s/MACADDRESS/${mac}/g" /etc/netplan/60-eth0.yaml'],
    needs: ['ident'],
  },
  {
    file: 'azure-ecp-windows-md-win.yaml',
    role: 'worker',
    format: 'windows',
    os: 'windows',
    secrets: () => [azureJsonSecret('prod-md-win-azure-json', 'worker-node-azure.json')],
    instanceData: 'azure',
    nodeName: 'prod-node-7xk2p',
    documentHas: ['"aadClientSecret": "not-a-real-client-secret~0123456789"', '-SubnetPolicies @(@{Type = "VSID"; VSID = 9999; })', 'ipmo C:\\k\\debug\\hns.psm1;'],
    needs: ['ident', 'reg'],
  },
  { file: 'docker-dev-quick-start-kcpt-v1beta2.yaml', role: 'init', format: 'cloud-config', kubeadm: { 'Node.nodeRegistration.kubeletExtraArgs.eviction-hard': 'nodefs.available<0%,nodefs.inodesFree<0%,imagefs.available<0%' } },
  { file: 'docker-dev-quick-start-kct-v1beta2.yaml', role: 'worker', format: 'cloud-config', kubeadm: { 'Node.nodeRegistration.kubeletExtraArgs.eviction-hard': 'nodefs.available<0%,nodefs.inodesFree<0%,imagefs.available<0%' } },
  { file: 'docker-quick-start-kcpt-v1beta1.yaml', role: 'init', format: 'cloud-config', kubeadm: { 'Node.nodeRegistration.kubeletExtraArgs.cgroup-driver': 'cgroupfs', 'Node.nodeRegistration.criSocket': 'unix:///var/run/containerd/containerd.sock' } },
  { file: 'gcp-kcp.yaml', role: 'init', format: 'cloud-config', instanceData: 'gcp', nodeName: 'prod-node-x7k2p', needs: ['ident'] },
  { file: 'gcp-md-0.yaml', role: 'worker', format: 'cloud-config', instanceData: 'gcp', nodeName: 'prod-node-x7k2p', needs: ['ident'] },
  { file: 'gcp-flatcar-kcp.yaml', role: 'init', format: 'ignition', metadata: 'gcp', nodeName: 'prod-node-x7k2p', needs: ['ident'] },
  { file: 'gcp-flatcar-md-0.yaml', role: 'worker', format: 'ignition', metadata: 'gcp', nodeName: 'prod-node-x7k2p', needs: ['ident'] },
  { file: 'hetzner-baremetal-kcp-v1beta2.yaml', role: 'init', format: 'cloud-config', literalFiles: ['/etc/systemd/system/containerd.service', '/etc/kubernetes/resolv.conf'], documentHas: ['awk -F . \'{print $1 "." $2}\''] },
  { file: 'hetzner-kct-md-0.yaml', role: 'worker', format: 'cloud-config', literalFiles: ['/etc/containerd/config.toml'] },
  { file: 'kubevirt-kcp.yaml', role: 'init', format: 'cloud-config', kubeadm: { 'ClusterConfiguration.imageRepository': 'registry.k8s.io' } },
  { file: 'kubevirt-md-0.yaml', role: 'worker', format: 'cloud-config' },
  { file: 'kubevirt-lb-flatcar-kcp.yaml', role: 'init', format: 'ignition', kubeadm: { 'ClusterConfiguration.networking.dnsDomain': 'prod.default.local' }, needs: ['ident'] },
  { file: 'kubevirt-lb-flatcar-md-0.yaml', role: 'worker', format: 'ignition', needs: ['ident'] },
  {
    file: 'linode-kcp.yaml',
    role: 'init',
    format: 'cloud-config',
    secrets: () => [linodeSecret()],
    instanceData: 'linode',
    nodeName: 'prod-node-hd6jt',
    kubeadm: { 'Node.nodeRegistration.kubeletExtraArgs.provider-id': 'linode://61234567' },
    documentHas: ["/kubeadm-pre-init.sh 'prod-node-hd6jt' \"v1.33.2\"", 'PATCH_VERSION=${2#[v]}'],
    needs: ['ident'],
  },
  { file: 'linode-md-0.yaml', role: 'worker', format: 'cloud-config', instanceData: 'linode', nodeName: 'prod-node-hd6jt', literalFiles: ['/kubeadm-pre-init.sh', '/etc/containerd/config.toml'], needs: ['ident'] },
  // {{ CLUSTER_APIENDPOINT_HOST }} is not instance data: it reaches the node as written (CABPK would write CI_MISSING_JINJA_VAR/CLUSTER_APIENDPOINT_HOST).
  { file: 'metal3-kcp.yaml', role: 'init', format: 'cloud-config', instanceData: 'metal3', nodeName: 'prod-node-k8s8q', kubeadm: { 'Node.nodeRegistration.kubeletExtraArgs.node-labels': 'metal3.io/uuid=7f3f5c1e-2a4b-4c6d-8e9f-0a1b2c3d4e5f' }, literalFiles: ['/etc/keepalived/keepalived.conf'], needs: ['ident'] },
  { file: 'metal3-workers.yaml', role: 'worker', format: 'cloud-config', instanceData: 'metal3', nodeName: 'prod-node-k8s8q', kubeadm: { 'Node.nodeRegistration.kubeletExtraArgs.node-labels': 'metal3.io/uuid=7f3f5c1e-2a4b-4c6d-8e9f-0a1b2c3d4e5f' }, needs: ['ident'] },
  { file: 'nutanix-kcp.yaml', role: 'init', format: 'cloud-config', instanceData: 'nutanix', documentHas: ['hostnamectl set-hostname "prod-node-5rk7n"', '127.0.0.1   prod-node-5rk7n'], needs: ['ident'] },
  {
    file: 'nutanix-kcfg-0.yaml',
    role: 'worker',
    format: 'cloud-config',
    refused: {
      at: /joinConfiguration\.nodeRegistration\.kubeletExtraArgs$/,
      why: 'published as bootstrap.cluster.x-k8s.io/v1beta2 with kubeletExtraArgs as a v1beta1 map; the v1beta2 CRD takes a list of {name, value}, so the API server refuses this object too: no correct output exists',
    },
  },
  { file: 'openstack-kcp.yaml', role: 'init', format: 'cloud-config', instanceData: 'openstack', nodeName: 'prod-node-abcde', needs: ['ident'] },
  { file: 'openstack-md-0.yaml', role: 'worker', format: 'cloud-config', instanceData: 'openstack', nodeName: 'prod-node-abcde', needs: ['ident'] },
  { file: 'openstack-flatcar-kcp.yaml', role: 'init', format: 'ignition', metadata: 'openstack', nodeName: 'prod-node-abcde', needs: ['ident'] },
  { file: 'openstack-flatcar-md-0.yaml', role: 'worker', format: 'ignition', metadata: 'openstack', nodeName: 'prod-node-abcde', needs: ['ident'] },
  { file: 'proxmox-kcp.yaml', role: 'init', format: 'cloud-config', instanceData: 'proxmox', kubeadm: { 'Node.nodeRegistration.kubeletExtraArgs.provider-id': "proxmox://'107'" }, needs: ['ident'] },
  { file: 'proxmox-worker.yaml', role: 'worker', format: 'cloud-config', instanceData: 'proxmox', kubeadm: { 'Node.nodeRegistration.kubeletExtraArgs.provider-id': "proxmox://'107'" }, needs: ['ident'] },
  { file: 'proxmox-flatcar-worker.yaml', role: 'worker', format: 'ignition', metadata: 'proxmox', kubeadm: { 'Node.nodeRegistration.kubeletExtraArgs.provider-id': "proxmox://'107'" }, needs: ['ident'] },
  { file: 'vsphere-kcp.yaml', role: 'init', format: 'cloud-config', instanceData: 'vsphere', nodeName: 'prod-node-6fx9z', documentHas: ['hostnamectl set-hostname "prod-node-6fx9z"'], literalFiles: ['/etc/pre-kubeadm-commands/50-kube-vip-prepare.sh', '/etc/kubernetes/manifests/kube-vip.yaml'], needs: ['ident'] },
  { file: 'vsphere-md-0.yaml', role: 'worker', format: 'cloud-config', instanceData: 'vsphere', nodeName: 'prod-node-6fx9z', needs: ['ident'] },
  { file: 'vsphere-ignition-kcp.yaml', role: 'init', format: 'ignition', metadata: 'vsphere', nodeName: 'prod-node-6fx9z', needs: ['ident'] },
  { file: 'vsphere-ignition-md-0.yaml', role: 'worker', format: 'ignition', metadata: 'vsphere', nodeName: 'prod-node-6fx9z', needs: ['ident'] },
];

/** The fixture as an object (its header comment dropped by the YAML parser). */
export function fixture(file: string): Record<string, unknown> {
  return load(readFileSync(new URL(file, CORPUS_DIR), 'utf8')) as Record<string, unknown>;
}

/** The fixture's files[] (whichever object carries the KubeadmConfigSpec). */
export function fixtureFiles(file: string): { path: string; content?: string }[] {
  const obj = fixture(file) as { spec: Record<string, unknown> };
  const spec = (obj.spec.kubeadmConfigSpec ?? (obj.spec.template as { spec: Record<string, unknown> } | undefined)?.spec ?? obj.spec) as Record<string, unknown>;
  const nested = (spec.kubeadmConfigSpec ?? spec) as { files?: { path: string; content?: string }[] };
  return nested.files ?? [];
}

/**
 * The NodeBootstrap a case is served from: the committed example's cluster context for
 * the role (endpoint, token, CA), the template as `spec.kubeadmConfig`, its Secrets as
 * `spec.secrets`, the node's OS as `spec.output.os` when the case gives one.
 */
export function corpusRequest(c: CorpusCase): Record<string, unknown> & { spec: Record<string, unknown> } {
  const req = example(c.role);
  delete req.spec.kubeadm;
  delete req.spec.provisioning;
  req.spec.kubeadmConfig = fixture(c.file);
  if (c.secrets) req.spec.secrets = c.secrets();
  if (c.os) req.spec.output = { os: c.os };
  return req;
}

/** Whether `cloud-init` is installed (`cloud-init devel render` is the Jinja check). */
export function haveCloudInit(): boolean {
  try {
    accessSync('/usr/bin/cloud-init', constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Render a `## template: jinja` cloud-config with cloud-init's own renderer, as the node
 * does before parsing it: `cloud-init devel render FILE -i INSTANCE_DATA` (cloud-init 22.4).
 *
 * @returns the rendered document and what cloud-init printed on stderr (a variable it
 *   could not render is a warning there, and `CI_MISSING_JINJA_VAR/<name>` in the output)
 */
export async function cloudInitRender(document: string, instanceData: InstanceData): Promise<{ rendered: string; stderr: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `bootwright-corpus-${process.pid}-`));
  try {
    await writeFile(path.join(dir, 'user-data'), document);
    await writeFile(path.join(dir, 'instance-data.json'), JSON.stringify(instanceData));
    return await new Promise((resolve, reject) => {
      execFile(
        '/usr/bin/cloud-init',
        ['devel', 'render', path.join(dir, 'user-data'), '-i', path.join(dir, 'instance-data.json')],
        { encoding: 'utf8', timeout: 60_000, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' } },
        (error, stdout, stderr) => (error ? reject(new Error(`cloud-init devel render failed: ${stderr || error.message}`)) : resolve({ rendered: stdout, stderr })),
      );
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * What the template's own commands make of the kubeadm configuration on the node, run as
 * CABPK's Ignition layout runs them: `kubeadm.service` with the metadata file as its
 * `EnvironmentFile=`, then `/etc/kubeadm.sh`, one shell running the preKubeadmCommands in
 * order, so an `export` changes what a later `envsubst` sees. Only the commands that
 * `export` a variable or edit `/etc/kubeadm.yml` run (real bash, envsubst, sed, jq), with
 * `/etc/kubeadm.yml` in a temporary directory and `curl` answering with `imds` (a
 * provider's instance metadata service, e.g. Azure's `compute.name`).
 *
 * @returns the kubeadm configuration after those commands
 */
export async function runTemplateCommands(kubeadm: string, commands: string[], metadata?: MetadataFile, imds?: unknown): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `bootwright-corpus-${process.pid}-`));
  try {
    await writeFile(path.join(dir, 'kubeadm.yml'), kubeadm);
    await mkdir(path.join(dir, 'bin'));
    await writeFile(path.join(dir, 'imds.json'), JSON.stringify(imds ?? {}));
    await writeFile(path.join(dir, 'bin', 'curl'), `#!/bin/sh\ncat '${dir}/imds.json'\n`, { mode: 0o755 });
    const run = commands.filter((c) => /^export [A-Za-z_][A-Za-z0-9_]*=/.test(c) || c.includes('/etc/kubeadm.yml')).map((c) => c.replaceAll('/etc/kubeadm.yml', `${dir}/kubeadm.yml`));
    const env = (metadata?.lines ?? []).map((l) => l.replace(/^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/, "$1='$2'"));
    const script = ['set -e', 'set -a', ...env, 'set +a', ...run].join('\n');
    await new Promise<void>((resolve, reject) => {
      execFile('/usr/bin/bash', ['--noprofile', '--norc', '-c', script], { encoding: 'utf8', env: { PATH: `${dir}/bin:/usr/bin:/bin` } }, (error, _stdout, stderr) =>
        error ? reject(new Error(`the template's commands failed: ${stderr || error.message}`)) : resolve(),
      );
    });
    return await readFile(path.join(dir, 'kubeadm.yml'), 'utf8');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The kubeadm documents of a kubeadm configuration file (a multi-document YAML stream). */
export function kubeadmDocuments(text: string): Record<string, unknown>[] {
  return loadAll(text).filter((d): d is Record<string, unknown> => typeof d === 'object' && d !== null);
}

/**
 * Check each document against kubeadm's strict types for its apiVersion and kind
 * (src/bootstrap/kubeadm/types.ts, fields as kubeadm's strict decoder takes them).
 *
 * @returns problems as `<kind>: <path> <message>`; [] when every document is valid
 */
export function strictKubeadmProblems(docs: Record<string, unknown>[]): string[] {
  const problems: string[] = [];
  for (const doc of docs) {
    const { apiVersion, kind, ...rest } = doc;
    if (!['ClusterConfiguration', 'InitConfiguration', 'JoinConfiguration'].includes(kind as string)) {
      problems.push(`unexpected kubeadm document kind ${String(kind)}`);
      continue;
    }
    const result = kubeadmSchema(apiVersion as KubeadmApiVersion, kind as KubeadmKind).safeParse(rest);
    if (!result.success) problems.push(...result.error.issues.map((i) => `${String(kind)}: ${i.path.join('.')} ${i.message}`));
  }
  return problems;
}

/** The node name kubeadm registers: `nodeRegistration.name` of the Init or Join configuration. */
export function registeredName(docs: Record<string, unknown>[]): string | undefined {
  const reg = docs.find((d) => d.kind === 'InitConfiguration' || d.kind === 'JoinConfiguration')?.nodeRegistration as { name?: string } | undefined;
  return reg?.name;
}

/**
 * A value of the kubeadm configuration by path: the kind first (`Node` for whichever of
 * InitConfiguration and JoinConfiguration the node runs), then field names; in a
 * `{name, value}` argument list (kubeadm v1beta4), a name selects the argument's value.
 */
export function kubeadmValue(docs: Record<string, unknown>[], path: string): unknown {
  const [kind, ...fields] = path.split('.');
  let value: unknown = docs.find((d) => (kind === 'Node' ? d.kind === 'InitConfiguration' || d.kind === 'JoinConfiguration' : d.kind === kind));
  for (const field of fields) {
    if (Array.isArray(value)) value = (value as { name?: unknown; value?: unknown }[]).find((a) => a.name === field)?.value;
    else value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[field] : undefined;
  }
  return value;
}
