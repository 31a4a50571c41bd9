import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { load, loadAll } from 'js-yaml';
import { buildKubeadm } from '../../../src/bootstrap/kubeadm/build.js';
import { RequestError } from '../../../src/errors.js';
import { validateNodeBootstrap } from '../../../src/request/parse.js';
import { example, HASH, TOKEN, worker } from '../../support/requests.js';

const build = (value: unknown) => buildKubeadm(validateNodeBootstrap(value));

function refused(value: unknown): string[] {
  try {
    build(value);
  } catch (e) {
    assert.ok(e instanceof RequestError);
    return e.problems.map((p) => `${p.path}: ${p.message}`);
  }
  assert.fail('accepted');
}

describe('kubeadm API version', () => {
  const cases: [string, string | undefined, string][] = [
    ['v1.22.0', undefined, 'kubeadm.k8s.io/v1beta3'],
    ['v1.30.14', undefined, 'kubeadm.k8s.io/v1beta3'],
    ['v1.31.0', undefined, 'kubeadm.k8s.io/v1beta4'],
    ['1.35.1', undefined, 'kubeadm.k8s.io/v1beta4'],
    ['v1.36.0', undefined, 'kubeadm.k8s.io/v1beta4'],
    ['v1.33.2', 'kubeadm.k8s.io/v1beta3', 'kubeadm.k8s.io/v1beta3'],
  ];
  for (const [version, pin, want] of cases) {
    it(`${version}${pin ? ` pinned to ${pin}` : ''} → ${want}`, () => {
      const out = build(worker({ kubernetesVersion: version, ...(pin ? { kubeadm: { apiVersion: pin } } : {}) }));
      assert.equal(out.apiVersion, want);
      assert.equal((out.documents[0] as { apiVersion: string }).apiVersion, want);
    });
  }

  it('refuses Kubernetes below 1.22 and impossible pins', () => {
    assert.deepEqual(refused(worker({ kubernetesVersion: 'v1.21.14' })), [
      'spec.kubernetesVersion: v1.21.14 is not supported: bootwright needs Kubernetes 1.22 or later (kubeadm.k8s.io/v1beta3)',
    ]);
    assert.deepEqual(refused(worker({ kubernetesVersion: 'v1.36.1', kubeadm: { apiVersion: 'kubeadm.k8s.io/v1beta3' } })), [
      'spec.kubeadm.apiVersion: kubeadm.k8s.io/v1beta3 is not written for kubeadm v1.36.1: kubeadm deprecated it in 1.36 and removed it in 1.37; use kubeadm.k8s.io/v1beta4',
    ]);
    assert.deepEqual(refused(worker({ kubernetesVersion: 'v1.30.2', kubeadm: { apiVersion: 'kubeadm.k8s.io/v1beta4' } })), [
      'spec.kubeadm.apiVersion: kubeadm v1.30.2 does not read kubeadm.k8s.io/v1beta4 (added in 1.31); use kubeadm.k8s.io/v1beta3',
    ]);
  });
});

describe('kubeadm documents', () => {
  it('worker: a JoinConfiguration with bootstrap-token discovery and the node name', () => {
    const out = build(worker({ cluster: { name: 'prod', controlPlaneEndpoint: '10.0.0.10', bootstrapToken: TOKEN, caCertHashes: [HASH] } }));
    assert.equal(out.action, 'join');
    assert.equal(out.fileName, 'kubeadm-join-config.yaml');
    assert.deepEqual(out.argv, ['kubeadm', 'join']);
    assert.deepEqual(out.pki, []);
    assert.deepEqual(loadAll(out.yaml), [
      {
        apiVersion: 'kubeadm.k8s.io/v1beta4',
        kind: 'JoinConfiguration',
        discovery: { bootstrapToken: { token: TOKEN, apiServerEndpoint: '10.0.0.10:6443', caCertHashes: [HASH] } },
        nodeRegistration: { name: 'worker-a' },
      },
    ]);
  });

  it('init: ClusterConfiguration + InitConfiguration, PKI files, --upload-certs with a certificate key', () => {
    const out = build(example('init'));
    const [cluster, init] = loadAll(out.yaml) as Record<string, unknown>[];
    const req = example('init').spec as { cluster: Record<string, unknown>; kubernetesVersion: string };
    assert.equal(cluster!.kind, 'ClusterConfiguration');
    assert.equal(cluster!.clusterName, req.cluster.name);
    assert.equal(cluster!.kubernetesVersion, req.kubernetesVersion);
    assert.equal(cluster!.controlPlaneEndpoint, req.cluster.controlPlaneEndpoint);
    assert.deepEqual(cluster!.networking, req.cluster.network);
    assert.equal(init!.kind, 'InitConfiguration');
    assert.deepEqual(init!.bootstrapTokens, [{ token: req.cluster.bootstrapToken }]);
    assert.equal(init!.certificateKey, req.cluster.certificateKey);
    assert.deepEqual(out.argv, ['kubeadm', 'init', '--upload-certs']);
    assert.deepEqual(
      out.pki.map((f) => [f.path, f.mode.toString(8), f.secret]),
      [
        ['/etc/kubernetes/pki/ca.crt', '640', false],
        ['/etc/kubernetes/pki/ca.key', '600', true],
        ['/etc/kubernetes/pki/etcd/ca.crt', '640', false],
        ['/etc/kubernetes/pki/etcd/ca.key', '600', true],
        ['/etc/kubernetes/pki/front-proxy-ca.crt', '640', false],
        ['/etc/kubernetes/pki/front-proxy-ca.key', '600', true],
        ['/etc/kubernetes/pki/sa.pub', '640', false],
        ['/etc/kubernetes/pki/sa.key', '600', true],
      ],
    );
    const certs = req.cluster.certificates as { ca: { cert: string } };
    assert.equal(out.pki[0]!.contents, `${certs.ca.cert.trim()}\n`);
    assert.deepEqual(out.warnings, []);
  });

  it('control-plane: controlPlane.certificateKey, no PKI files when the key is given', () => {
    const out = build(example('control-plane'));
    const [join] = loadAll(out.yaml) as { controlPlane: unknown }[];
    const req = example('control-plane').spec as { cluster: { certificateKey: string } };
    assert.deepEqual(join!.controlPlane, { certificateKey: req.cluster.certificateKey });
    assert.deepEqual(out.pki, []);
  });

  it('emits extraArgs given as a map or a list in the target version’s form', () => {
    const overrides = {
      clusterConfiguration: { apiServer: { extraArgs: [{ name: 'audit-log-maxage', value: '30' }] } },
      initConfiguration: { nodeRegistration: { kubeletExtraArgs: { 'max-pods': 110, 'node-labels': 'a=b' } } },
    };
    const v3 = build(worker({ role: 'init', kubernetesVersion: 'v1.29.4', cluster: { name: 'c' }, kubeadm: overrides }));
    const [c3, i3] = loadAll(v3.yaml) as Record<string, Record<string, Record<string, unknown>>>[];
    assert.deepEqual(c3!.apiServer!.extraArgs, { 'audit-log-maxage': '30' });
    assert.deepEqual(i3!.nodeRegistration!.kubeletExtraArgs, { 'max-pods': '110', 'node-labels': 'a=b' });
    const v4 = build(worker({ role: 'init', kubernetesVersion: 'v1.33.0', cluster: { name: 'c' }, kubeadm: overrides }));
    const [c4, i4] = loadAll(v4.yaml) as Record<string, Record<string, Record<string, unknown>>>[];
    assert.deepEqual(c4!.apiServer!.extraArgs, [{ name: 'audit-log-maxage', value: '30' }]);
    assert.deepEqual(i4!.nodeRegistration!.kubeletExtraArgs, [
      { name: 'max-pods', value: '110' },
      { name: 'node-labels', value: 'a=b' },
    ]);
    // quoted so that no YAML reader takes 110 or 30 for a number
    assert.match(v4.yaml, /value: '110'/);
  });

  it('refuses a repeated argument that v1beta3 cannot hold, keeps it in v1beta4', () => {
    const repeated = { clusterConfiguration: { apiServer: { extraArgs: [{ name: 'tls-cipher-suites', value: 'A' }, { name: 'tls-cipher-suites', value: 'B' }] } } };
    assert.deepEqual(refused(worker({ role: 'init', kubernetesVersion: 'v1.30.0', cluster: { name: 'c' }, kubeadm: repeated })), [
      'spec.kubeadm.clusterConfiguration.apiServer.extraArgs: repeats the argument "tls-cipher-suites", which kubeadm.k8s.io/v1beta3 (a map) cannot hold; use Kubernetes 1.31+ (v1beta4) or give it once',
    ]);
    const v4 = build(worker({ role: 'init', kubernetesVersion: 'v1.31.0', cluster: { name: 'c' }, kubeadm: repeated }));
    assert.equal((v4.yaml.match(/name: tls-cipher-suites/g) ?? []).length, 2);
  });

  it('merges overrides over the generated documents, the user winning', () => {
    const out = build(
      worker({
        kubeadm: {
          joinConfiguration: {
            nodeRegistration: { name: 'custom-name', taints: [], kubeletExtraArgs: { 'cloud-provider': 'external' } },
            discovery: { bootstrapToken: { apiServerEndpoint: '10.1.1.1:443' } },
          },
          verbosity: 5,
        },
      }),
    );
    const join = load(out.yaml.replace(/^---\n/, '')) as { nodeRegistration: unknown; discovery: { bootstrapToken: unknown } };
    assert.deepEqual(join.nodeRegistration, { name: 'custom-name', taints: [], kubeletExtraArgs: [{ name: 'cloud-provider', value: 'external' }] });
    assert.deepEqual(join.discovery.bootstrapToken, { token: TOKEN, apiServerEndpoint: '10.1.1.1:443', caCertHashes: [HASH] });
    assert.deepEqual(out.argv, ['kubeadm', 'join', '--v=5']);
  });

  it('refuses override fields kubeadm’s strict decoder would refuse, naming the version', () => {
    assert.deepEqual(
      refused(worker({ role: 'init', kubernetesVersion: 'v1.33.0', cluster: { name: 'c' }, kubeadm: { clusterConfiguration: { apiServer: { timeoutForControlPlane: '4m0s' } } } })),
      ['spec.kubeadm.clusterConfiguration.apiServer.timeoutForControlPlane: unknown field in kubeadm.k8s.io/v1beta4 ClusterConfiguration'],
    );
    // the same field is fine in v1beta3
    build(worker({ role: 'init', kubernetesVersion: 'v1.30.0', cluster: { name: 'c' }, kubeadm: { clusterConfiguration: { apiServer: { timeoutForControlPlane: '4m0s' } } } }));
    assert.deepEqual(refused(worker({ kubeadm: { joinConfiguration: { nodeRegistration: { taints: [{ key: 'a', effect: 'Sometimes' }] }, discovery: { timeout: 5 } } } })).sort(), [
      'spec.kubeadm.joinConfiguration.discovery.timeout: unknown field in kubeadm.k8s.io/v1beta4 JoinConfiguration',
      'spec.kubeadm.joinConfiguration.nodeRegistration.taints[0].effect: Invalid option: expected one of "NoSchedule"|"PreferNoSchedule"|"NoExecute"',
    ]);
  });

  it('warns when an init node generates its own CA and token', () => {
    const out = build(worker({ role: 'init', cluster: { name: 'c' } }));
    assert.equal(out.warnings.length, 2);
    assert.match(out.warnings[0]!, /kubeadm generates a new cluster CA/);
    assert.match(out.warnings[1]!, /kubeadm creates a random token/);
  });
});
