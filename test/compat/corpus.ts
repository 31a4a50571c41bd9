/**
 * What an earlier release stores (issue 27): clusters, profiles and machines made from
 * every input the suite knows, each in both formats, for the upgrade test to write with
 * an earlier release and boot with this one.
 *
 * - **golden**: the committed examples (init, control-plane, worker) at each kubeadm API
 *   version, as test/golden.test.ts renders them;
 * - **cases**: test/fixtures/cases/ (inputs that broke generators in the field);
 * - **capi**: the published Cluster API templates of test/fixtures/capi-templates/,
 *   converted by the earlier release itself into the NodeBootstrap sections a profile
 *   holds (its `spec.kubeadm` and `spec.provisioning`): what an operator of that release
 *   would have stored;
 * - **since**: inputs the earlier release accepted and a later rule refuses on write,
 *   one per rule (the first is issue 27's own report: a profile writing
 *   `/etc/bootwright/site.conf`);
 * - **generated**: requests drawn from a fixed seed (fast-check), broad in files,
 *   commands, users, NTP, disks and mounts.
 *
 * The earlier release decides what is storable: a write it refuses is left out, and the
 * test counts what it kept.
 */
import { readdirSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { load } from 'js-yaml';
import { CORPUS, corpusRequest } from '../support/corpus.js';
import { example, HASH, TOKEN } from '../support/requests.js';

/** One stored machine with its own cluster and profile. */
export interface StoredCase {
  /** DNS label: the machine is `m-<id>`, its cluster `c-<id>`, its profile `p-<id>`. */
  id: string;
  /** Where the input came from. */
  source: string;
  format: 'cloud-config' | 'ignition';
  cluster: Record<string, unknown>;
  profile: Record<string, unknown>;
  machine: Record<string, unknown>;
  /** The machine's MAC address (its selector; `/ipxe?mac=`). */
  mac: string;
}

type Doc = Record<string, unknown> & { metadata?: { name?: string }; spec: Record<string, unknown> };

/** What the earlier release's `validateNodeBootstrap` is: a request document in, the validated NodeBootstrap out (throws when invalid). */
export type Converter = (doc: unknown) => Doc;

/** The boot section every stored profile has (the kernel is never fetched: the test stops at the config URL). */
const BOOT = { kernel: 'http://boot.example.invalid/flatcar_production_pxe.vmlinuz', initrd: ['http://boot.example.invalid/flatcar_production_pxe_image.cpio.gz'], args: ['console=ttyS0'] };

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** JSON for what a request held as bytes (`!!binary`, gzip): a gzip+base64 string, which every release reads. */
function jsonSafeFiles(prov: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!prov || !Array.isArray(prov.files)) return prov;
  return {
    ...prov,
    files: (prov.files as Record<string, unknown>[]).map((f) =>
      f.content instanceof Uint8Array ? { ...f, content: Buffer.from(f.content).toString('base64'), encoding: f.encoding === 'gzip' ? 'gzip+base64' : 'base64' } : f,
    ),
  };
}

/** A NodeBootstrap split the way the inventory stores it (docs/design.md §2: cluster, profile, machine). */
function split(id: string, source: string, req: Doc, format: StoredCase['format'], n: number): StoredCase {
  const spec = req.spec;
  const mac = `52:54:00:${((n >> 16) & 0xff).toString(16).padStart(2, '0')}:${((n >> 8) & 0xff).toString(16).padStart(2, '0')}:${(n & 0xff).toString(16).padStart(2, '0')}`;
  const name = req.metadata?.name;
  const prov = jsonSafeFiles(spec.provisioning as Record<string, unknown> | undefined);
  const output = { ...((spec.output as Record<string, unknown> | undefined) ?? {}), format };
  return {
    id,
    source,
    format,
    cluster: spec.cluster as Record<string, unknown>,
    profile: {
      role: spec.role,
      kubernetesVersion: spec.kubernetesVersion,
      ...(spec.kubeadm !== undefined ? { kubeadm: spec.kubeadm } : {}),
      ...(prov !== undefined ? { provisioning: prov } : {}),
      output,
      boot: BOOT,
    },
    machine: { selectors: { mac: [mac] }, cluster: `c-${id}`, profile: `p-${id}`, ...(name !== undefined && DNS_LABEL.test(name) ? { nodeName: name } : {}) },
    mac,
  };
}

/** A worker request of the given sections (what `since` and `generated` inputs vary). */
function workerWith(spec: Record<string, unknown>, name = 'worker-a'): Doc {
  return {
    apiVersion: 'bootwright.dev/v1alpha1',
    kind: 'NodeBootstrap',
    metadata: { name },
    spec: { role: 'worker', kubernetesVersion: 'v1.33.2', cluster: { name: 'prod', controlPlaneEndpoint: 'api.prod.example.com:6443', bootstrapToken: TOKEN, caCertHashes: [HASH] }, ...spec },
  };
}

/**
 * Inputs 7f544b7 stored and served that a later rule refuses on write, each with the
 * change that brought the rule. A stored machine like each must keep booting.
 */
export const SINCE_INPUTS: { id: string; source: string; spec: Record<string, unknown> }[] = [
  { id: 'etc-bootwright', source: 'issue 27: a profile writing /etc/bootwright/site.conf (the boot report reserved the whole directory)', spec: { provisioning: { files: [{ path: '/etc/bootwright/site.conf', content: 'site=rack-7\n' }] } } },
  { id: 'var-lib-bootwright', source: 'boot reports (12369e5) reserved /var/lib/bootwright for kubeadm.log and kubeadm.rc', spec: { provisioning: { files: [{ path: '/var/lib/bootwright/inventory.json', content: '{"rack":7}\n' }] } } },
  { id: 'bootcmd-unit-file', source: 'ac17c34 reserved the Ignition units in both formats: a cloud-config node never has kubeadm-bootcmd.service', spec: { provisioning: { files: [{ path: '/etc/systemd/system/kubeadm-bootcmd.service', content: '[Unit]\nDescription=site unit of the same name\n' }] } } },
  { id: 'command-cr', source: 'c7afcd9: a command with a carriage return (a script saved with CRLF line ends)', spec: { provisioning: { preKubeadmCommands: ['echo ready\r', 'swapoff -a'] } } },
  { id: 'mount-etc-kubeadm', source: 'ac17c34: a mount point under a tree bootwright writes', spec: { provisioning: { mounts: [['/dev/vdb', '/etc/kubeadm/extra']] } } },
  { id: 'group-name', source: '30c7cc7: a group name groupadd refuses (cloud-config only before)', spec: { provisioning: { users: [{ name: 'ops', groups: 'wheel, Domain Users' }] } } },
  { id: 'kubeadm-jinja', source: 'a7b9963: cloud-init Jinja in a native kubeadm value (reaches the node as written)', spec: { kubeadm: { joinConfiguration: { nodeRegistration: { kubeletExtraArgs: { 'node-labels': 'rack={{ ds.meta_data.rack }}' } } } } } },
];

/** Paths the generated requests write files under: ordinary ones and ones near what bootwright writes. */
const FILE_DIRS = ['/etc/sysctl.d', '/etc/modules-load.d', '/opt/site', '/etc/bootwright', '/var/lib/bootwright', '/etc/systemd/system/kubeadm-bootstrap.service.d', '/etc/systemd/system', '/usr/local/bin', '/home/ops'];

const text = fc.string({ unit: 'grapheme', maxLength: 40 });
const segment = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,10}$/).filter((s) => s !== '.' && s !== '..');
const file = fc.record({
  path: fc.tuple(fc.constantFrom(...FILE_DIRS), segment).map(([d, s]) => `${d}/${s}`),
  content: text,
  permissions: fc.option(fc.constantFrom('0600', '0644', '0755', '0700'), { nil: undefined }),
  owner: fc.option(fc.constantFrom('root:root', 'ops:ops', 'root'), { nil: undefined }),
});
const command = fc.oneof({ weight: 4, arbitrary: fc.stringMatching(/^[a-z][a-z0-9 ./=-]{0,30}$/) }, { weight: 1, arbitrary: fc.tuple(fc.stringMatching(/^[a-z]{1,8}$/), fc.constantFrom('\r', '\x1b[0m', '\t')).map(([a, b]) => `echo ${a}${b}`) });
const user = fc.record({
  name: fc.constantFrom('ops', 'deploy', 'core'),
  groups: fc.option(fc.constantFrom('wheel', 'docker, wheel', 'sudo', 'adm,systemd-journal'), { nil: undefined }),
  shell: fc.option(fc.constantFrom('/bin/bash', '/bin/sh'), { nil: undefined }),
  sshAuthorizedKeys: fc.option(fc.constant(['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGk6wYz2jQ0pL1x0Zr7n6m4Yb8Ck3g1hUuJtQ2e5s9aZ ops@example']), { nil: undefined }),
  sudo: fc.option(fc.constant('ALL=(ALL) NOPASSWD:ALL'), { nil: undefined }),
});
const provisioning = fc.record(
  {
    files: fc.uniqueArray(file, { maxLength: 4, selector: (f) => f.path }),
    bootCommands: fc.array(command, { maxLength: 2 }),
    preKubeadmCommands: fc.array(command, { maxLength: 3 }),
    postKubeadmCommands: fc.array(command, { maxLength: 2 }),
    users: fc.uniqueArray(user, { maxLength: 2, selector: (u) => u.name }),
    ntp: fc.record({ enabled: fc.constant(true), servers: fc.array(fc.constantFrom('0.pool.ntp.org', 'time.example.com', '10.0.0.1'), { minLength: 1, maxLength: 2 }) }),
    mounts: fc.constantFrom([['/dev/vdb1', '/var/lib/etcd']], [['LABEL=data', '/mnt/data', 'ext4', 'defaults', '0', '2']]),
  },
  { requiredKeys: [] },
);
const generatedSpec = fc.record({ kubernetesVersion: fc.constantFrom('v1.29.15', 'v1.31.7', 'v1.33.2'), provisioning });

/**
 * Every stored case, in both formats.
 *
 * @param convert the earlier release's own `validateNodeBootstrap`, which turns Cluster
 *   API input into the sections a profile holds; an input it refuses is left out
 * @param generated how many generated requests (each in both formats)
 */
export function storedCases(convert: Converter, generated = 40): StoredCase[] {
  const inputs: { id: string; source: string; req: Doc }[] = [];
  for (const role of ['init', 'control-plane', 'worker'] as const) {
    for (const [api, version] of [['v1beta3', 'v1.30.14'], ['v1beta4', 'v1.33.2']] as const) {
      const req = example(role) as Doc;
      req.spec.kubernetesVersion = version;
      inputs.push({ id: `golden-${role}-${api}`, source: `examples/${role}.yaml at ${version} (test/golden)`, req });
    }
  }
  const cases = new URL('../fixtures/cases/', import.meta.url);
  for (const name of readdirSync(cases).filter((f) => f.endsWith('.yaml')).sort()) {
    inputs.push({ id: `case-${name.slice(0, 3)}`, source: `test/fixtures/cases/${name}`, req: load(readFileSync(new URL(name, cases), 'utf8')) as Doc });
  }
  for (const c of CORPUS) {
    if (c.format === 'windows' || c.os) continue;
    let native: Doc;
    try {
      native = convert(corpusRequest(c));
    } catch {
      continue; // the earlier release could not read it, so no operator of it stored it
    }
    inputs.push({ id: `capi-${c.file.replace(/\.yaml$/, '').replace(/[^a-z0-9-]/g, '-')}`.slice(0, 50), source: `test/fixtures/capi-templates/${c.file}, converted by the earlier release`, req: native });
  }
  for (const s of SINCE_INPUTS) inputs.push({ id: `since-${s.id}`, source: s.source, req: workerWith(s.spec) });
  fc.sample(generatedSpec, { seed: 27, numRuns: generated }).forEach((spec, i) => {
    inputs.push({ id: `gen-${i}`, source: `generated (fast-check seed 27, run ${i})`, req: workerWith(spec, `gen-${i}`) });
  });
  const out: StoredCase[] = [];
  let n = 0;
  for (const input of inputs) {
    for (const format of ['cloud-config', 'ignition'] as const) {
      n++;
      out.push(split(`${input.id}-${format === 'ignition' ? 'ign' : 'cc'}`, input.source, structuredClone(input.req), format, n));
    }
  }
  return out;
}
