/**
 * Every request the suite renders its outputs from, by name, for the checks that run
 * each output past a real tool (kubeadm, ignition-validate): the committed examples at
 * each kubeadm API version (test/golden), the golden provisioning request, the field
 * cases (test/fixtures/cases), the Cluster API quick start (test/support/capi.ts), the
 * published Cluster API templates of the corpus (test/support/corpus.ts) in their own
 * format, and a sample of generated requests (fast-check, fixed seed).
 */
import { readdirSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { RequestError } from '../../src/errors.js';
import { parseNodeBootstrap, validateNodeBootstrap } from '../../src/request/parse.js';
import type { NodeBootstrap } from '../../src/request/schema.js';
import { capiRequest } from './capi.js';
import { CORPUS, corpusRequest } from './corpus.js';
import { example, worker } from './requests.js';

/** One request and the format it is rendered in when it has one of its own (a Cluster API template's). */
export interface SuiteRequest {
  name: string;
  req: NodeBootstrap;
  format?: 'cloud-config' | 'ignition';
}

const ROOT = new URL('../../', import.meta.url);

/** The provisioning of test/golden's provisioning-v1beta4 goldens. */
export const GOLDEN_PROVISIONING = {
  users: [{ name: 'ops', groups: 'sudo, operators', sshAuthorizedKeys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG5vdC1hLXJlYWwta2V5LWp1c3QtYS10ZXN0 ops@example'] }],
  files: [{ path: '/home/ops/.kube/config.d/readme', owner: 'ops:ops', permissions: '0600', content: 'managed by bootwright\n' }],
  diskSetup: { partitions: [{ device: '/dev/nvme1n1', layout: true }], filesystems: [{ device: '/dev/nvme1n1', partition: '1', filesystem: 'ext4', label: 'etcd-data' }] },
  mounts: [['LABEL=etcd-data', '/var/lib/etcd data', 'ext4', 'defaults']],
  ntp: { enabled: false },
};

const segment = fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,10}$/).filter((s) => s !== '.' && s !== '..');
const generated = fc.record(
  {
    kubernetesVersion: fc.constantFrom('v1.29.15', 'v1.30.14', 'v1.31.7', 'v1.32.9', 'v1.33.2', 'v1.34.5', 'v1.35.8', 'v1.36.5'),
    role: fc.constantFrom('worker', 'control-plane'),
    files: fc.uniqueArray(fc.record({ path: fc.tuple(fc.constantFrom('/etc/sysctl.d', '/opt/site', '/etc/bootwright', '/home/ops'), segment).map(([d, s]) => `${d}/${s}`), content: fc.string({ maxLength: 30 }) }), { maxLength: 3, selector: (f) => f.path }),
    preKubeadmCommands: fc.array(fc.stringMatching(/^[a-z][a-z0-9 ./=-]{0,30}$/), { maxLength: 3 }),
    users: fc.uniqueArray(fc.record({ name: fc.constantFrom('ops', 'deploy'), groups: fc.constantFrom('wheel', 'docker, wheel') }), { maxLength: 2, selector: (u) => u.name }),
    taints: fc.array(fc.record({ key: fc.constantFrom('dedicated', 'example.com/gpu'), value: fc.constantFrom('infra', 'true'), effect: fc.constantFrom('NoSchedule', 'NoExecute') }), { maxLength: 2 }),
    labels: fc.constantFrom('', 'rack=r1', 'rack=r1,zone=z-2'),
  },
  { requiredKeys: ['kubernetesVersion', 'role'] },
);

/**
 * The requests (validated), named by where they came from.
 *
 * @param sample how many generated requests
 */
export function suiteRequests(sample = 30): SuiteRequest[] {
  const out: SuiteRequest[] = [];
  for (const role of ['init', 'control-plane', 'worker'] as const) {
    for (const version of ['v1.30.14', 'v1.33.2']) {
      const req = example(role);
      req.spec.kubernetesVersion = version;
      out.push({ name: `examples/${role}.yaml at ${version}`, req: validateNodeBootstrap(req) });
    }
  }
  const golden = example('worker');
  golden.spec.provisioning = GOLDEN_PROVISIONING;
  out.push({ name: 'golden provisioning-v1beta4', req: validateNodeBootstrap(golden) });
  const cases = new URL('test/fixtures/cases/', ROOT);
  for (const f of readdirSync(cases).filter((n) => n.endsWith('.yaml')).sort()) {
    try {
      out.push({ name: `test/fixtures/cases/${f}`, req: parseNodeBootstrap(readFileSync(new URL(f, cases), 'utf8'), 'yaml') });
    } catch (e) {
      if (!(e instanceof RequestError)) throw e;
    }
  }
  for (const role of ['init', 'control-plane', 'worker'] as const) {
    for (const version of ['v1beta1', 'v1beta2'] as const) out.push({ name: `Cluster API quick start ${role} ${version}`, req: validateNodeBootstrap(capiRequest(role, version)) });
  }
  for (const c of CORPUS) {
    if (c.format === 'windows' || c.refused) continue;
    out.push({ name: `test/fixtures/capi-templates/${c.file}`, req: validateNodeBootstrap(corpusRequest(c)), format: c.format });
  }
  fc.sample(generated, { seed: 28, numRuns: sample }).forEach((g, i) => {
    const registration = { ...(g.taints?.length ? { taints: g.taints } : {}), ...(g.labels ? { kubeletExtraArgs: { 'node-labels': g.labels } } : {}) };
    const spec: Record<string, unknown> = {
      role: g.role,
      kubernetesVersion: g.kubernetesVersion,
      provisioning: { ...(g.files ? { files: g.files } : {}), ...(g.preKubeadmCommands ? { preKubeadmCommands: g.preKubeadmCommands } : {}), ...(g.users ? { users: g.users } : {}) },
      ...(Object.keys(registration).length ? { kubeadm: { joinConfiguration: { nodeRegistration: registration } } } : {}),
    };
    const req = worker(spec, `gen-${i}`) as { spec: Record<string, unknown> };
    if (g.role === 'control-plane') (req.spec.cluster as Record<string, unknown>).certificateKey = 'f'.repeat(64);
    out.push({ name: `generated (seed 28, run ${i})`, req: validateNodeBootstrap(req) });
  });
  return out;
}
