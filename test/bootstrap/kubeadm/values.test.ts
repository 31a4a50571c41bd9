/**
 * The values kubeadm refuses on loading a configuration, refused when a request is
 * written (src/bootstrap/kubeadm/values.ts, rule kubeadm-value). The inputs that must
 * pass are values published Cluster API templates and kubeadm's own documentation use;
 * test/bootstrap/kubeadm/reference.test.ts holds the checks against the real kubeadm.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildKubeadm } from '../../../src/bootstrap/kubeadm/build.js';
import { kubeadmValueProblems } from '../../../src/bootstrap/kubeadm/values.js';
import { RequestError } from '../../../src/errors.js';
import { renderNodeBootstrap } from '../../../src/render.js';
import { validateNodeBootstrap } from '../../../src/request/parse.js';
import { example } from '../../support/requests.js';

const F = 'spec.kubeadm.clusterConfiguration';

describe('kubeadm values', () => {
  it('passes what published templates and kubeadm docs write', () => {
    // cluster-api-provider-aws templates/cluster-template.yaml and kubeadm's "Customizing components" page.
    assert.deepEqual(
      kubeadmValueProblems(
        'ClusterConfiguration',
        {
          controlPlaneEndpoint: '[2001:db8::1]:6443',
          networking: { podSubnet: '10.244.0.0/16,2001:db8:42:0::/56', serviceSubnet: '10.96.0.0/16', dnsDomain: 'cluster.local' },
          apiServer: { certSANs: ['api.example.com', '*.apps.example.com', '192.0.2.10', '2001:db8::10'] },
          imageRepository: 'registry.example.com:5000/k8s',
          etcd: { local: { dataDir: '/var/lib/etcd' } },
          kubernetesVersion: 'v1.33.2',
        },
        F,
      ),
      [],
    );
    assert.deepEqual(kubeadmValueProblems('JoinConfiguration', { nodeRegistration: { name: '{{ ds.meta_data.local_hostname }}', criSocket: 'npipe:////./pipe/containerd-containerd' }, discovery: { bootstrapToken: { apiServerEndpoint: '${COREOS_EC2_IPV4_LOCAL}:6443' } } }, 'spec.kubeadm.joinConfiguration'), []);
    assert.deepEqual(kubeadmValueProblems('InitConfiguration', { nodeRegistration: { criSocket: '/run/containerd/containerd.sock' }, bootstrapTokens: [{ usages: ['signing', 'authentication'], groups: ['system:bootstrappers:kubeadm:default-node-token'] }] }, 'spec.kubeadm.initConfiguration'), []);
  });

  it('names each value kubeadm would refuse, with the rule', () => {
    const problems = kubeadmValueProblems(
      'ClusterConfiguration',
      { controlPlaneEndpoint: 'API.example.com:6443', networking: { podSubnet: '10.244.0.0/16,10.245.0.0/16', serviceSubnet: '10.96.0.0/33' }, apiServer: { certSANs: ['ok.example.com', 'not a name'] }, imageRepository: 'Registry/K8s', etcd: { local: { dataDir: 'var/lib/etcd' } } },
      F,
    );
    assert.deepEqual(
      problems.map((p) => [p.path, p.rule]),
      [
        [`${F}.controlPlaneEndpoint`, 'kubeadm-value'],
        [`${F}.networking.podSubnet`, 'kubeadm-value'],
        [`${F}.networking.serviceSubnet`, 'kubeadm-value'],
        [`${F}.apiServer.certSANs.1`, 'kubeadm-value'],
        [`${F}.imageRepository`, 'kubeadm-value'],
        [`${F}.etcd.local.dataDir`, 'kubeadm-value'],
      ],
    );
    assert.match(problems[1]!.message, /two CIDRs from each family/);
    const join = kubeadmValueProblems('JoinConfiguration', { discovery: { bootstrapToken: { apiServerEndpoint: 'api.example.com' } }, caCertPath: '/etc/kubernetes/pki/ca.pem', nodeRegistration: { criSocket: 'tcp://127.0.0.1:1234' } }, 'J');
    assert.deepEqual(join.map((p) => p.path), ['J.nodeRegistration.criSocket', 'J.discovery.bootstrapToken.apiServerEndpoint', 'J.caCertPath']);
    assert.deepEqual(kubeadmValueProblems('InitConfiguration', { bootstrapTokens: [{ usages: ['signing'], groups: ['system:bootstrappers:x'] }] }, 'I').map((p) => p.path), ['I.bootstrapTokens.0.groups']);
  });

  it('refuses a written request, and a stored one keeps rendering with a warning', () => {
    const req = example('init') as { spec: Record<string, unknown> };
    req.spec.kubeadm = { clusterConfiguration: { networking: { podSubnet: '10.244.0.0' } } };
    try {
      buildKubeadm(validateNodeBootstrap(req));
      assert.fail('accepted');
    } catch (e) {
      assert.ok(e instanceof RequestError);
      assert.deepEqual(e.problems, [{ path: `${F}.networking.podSubnet`, message: "couldn't parse subnet", rule: 'kubeadm-value' }]);
    }
    const levels = { cluster: 0, profile: 0, machine: 0 };
    const out = renderNodeBootstrap(validateNodeBootstrap(req, { levels }), { format: 'cloud-config', levels });
    assert.deepEqual(out.tolerated?.map((p) => [p.path, p.rule]), [[`${F}.networking.podSubnet`, 'kubeadm-value']]);
    assert.match(out.body, /podSubnet: 10\.244\.0\.0\n/);
  });

});
