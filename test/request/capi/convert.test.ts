/**
 * Cluster API input (`spec.kubeadmConfigSpec`, `spec.kubeadmConfig`): v1beta1 and
 * v1beta2 shapes map onto the same node, CABPK's additions (the uninitialized taint,
 * retry join, templates) are made, and what cannot be honoured is an error naming the
 * caller's own field.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { load } from 'js-yaml';
import { renderNodeBootstrap } from '../../../src/render.js';
import { validateNodeBootstrap } from '../../../src/request/parse.js';
import { cloudConfigFiles, ignitionFiles } from '../../support/decode.js';
import { capiRequest, controlPlaneObject, controlPlaneSpec, workerTemplate } from '../../support/capi.js';
import { worker } from '../../support/requests.js';
import { problemsOf } from '../../support/errors.js';

type Doc = Record<string, unknown>;

/** The kubeadm documents a cloud-config render writes. */
function kubeadmDocs(body: string): Doc[] {
  const files = cloudConfigFiles(body);
  const text = [...files].find(([path]) => path.startsWith('/run/kubeadm/'))![1].toString('utf8');
  return text.split(/^---\n/m).filter((d) => d.trim()).map((d) => load(d) as Doc);
}

function docOf(body: string, kind: string): Doc {
  return kubeadmDocs(body).find((d) => d.kind === kind)!;
}

const render = (req: unknown, format: 'cloud-config' | 'ignition' = 'cloud-config') => renderNodeBootstrap(validateNodeBootstrap(req), { format });

describe('Cluster API input', () => {
  it('v1beta1 and v1beta2 shapes of the quick start give byte-identical nodes for every role', () => {
    for (const role of ['init', 'control-plane', 'worker'] as const) {
      for (const format of ['cloud-config', 'ignition'] as const) {
        assert.equal(render(capiRequest(role, 'v1beta1'), format).body, render(capiRequest(role, 'v1beta2'), format).body, `${role} ${format}`);
      }
    }
  });

  it('is the same node as the NodeBootstrap written natively (plus the worker taint)', () => {
    const native = worker({
      kubeadm: { joinConfiguration: { nodeRegistration: { kubeletExtraArgs: { 'eviction-hard': 'x' }, taints: [{ key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' }] } } },
      provisioning: { preKubeadmCommands: ['true'], files: [{ path: '/etc/a', content: 'a\n' }] },
    });
    const capi = worker({ kubeadmConfigSpec: { joinConfiguration: { nodeRegistration: { kubeletExtraArgs: [{ name: 'eviction-hard', value: 'x' }] } }, preKubeadmCommands: ['true'], files: [{ path: '/etc/a', content: 'a\n' }] } });
    assert.equal(render(capi).body, render(native).body);
    // Ignition: the same files and commands, at CABPK's names for Cluster API input.
    const files = (req: unknown) => ignitionFiles(JSON.parse(render(req, 'ignition').body));
    const [c, n] = [files(capi), files(native)];
    assert.deepEqual(c.get('/etc/kubeadm.yml'), n.get('/etc/kubeadm/kubeadm-join-config.yaml'));
    assert.equal(c.get('/etc/kubeadm.sh')!.toString(), n.get('/etc/kubeadm/bootstrap.sh')!.toString().replace('/etc/kubeadm/kubeadm-join-config.yaml', '/etc/kubeadm.yml'));
    assert.deepEqual(c.get('/etc/a'), n.get('/etc/a'));
  });

  it('adds node.cluster.x-k8s.io/uninitialized:NoSchedule to workers only, once, after the given taints', () => {
    const taints = (req: unknown) => ((docOf(render(req).body, 'JoinConfiguration').nodeRegistration as Doc | undefined)?.taints);
    assert.deepEqual(taints(capiRequest('worker', 'v1beta2')), [{ key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' }]);
    const given = worker({ kubeadmConfigSpec: { joinConfiguration: { nodeRegistration: { taints: [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }, { key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' }] } } } });
    assert.deepEqual(taints(given), [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }, { key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' }]);
    // Control-plane joins keep kubeadm's default (control-plane) taint: no taints field at all.
    assert.equal(taints(capiRequest('control-plane', 'v1beta2')), undefined);
    // A NodeBootstrap written natively does not come from Cluster API: no taint.
    assert.equal(taints(worker()), undefined);
  });

  it('maps v1beta2 timeouts, token TTLs and validity periods to kubeadm v1beta4, and v1beta1 durations too', () => {
    const init = capiRequest('init', 'v1beta2');
    Object.assign(init.spec.kubeadmConfigSpec as Doc, {
      clusterConfiguration: { certificateValidityPeriodDays: 365, caCertificateValidityPeriodDays: 3650 },
      initConfiguration: { timeouts: { controlPlaneComponentHealthCheckSeconds: 300, kubeletHealthCheckSeconds: 60 }, bootstrapTokens: [{ token: 'wofy6e.c8kcvmvpmii021pm', ttlSeconds: 3600 }] },
    });
    const body = render(init).body;
    assert.equal(docOf(body, 'ClusterConfiguration').certificateValidityPeriod, '8760h0m0s');
    assert.equal(docOf(body, 'ClusterConfiguration').caCertificateValidityPeriod, '87600h0m0s');
    assert.deepEqual(docOf(body, 'InitConfiguration').timeouts, { controlPlaneComponentHealthCheck: '300s', kubeletHealthCheck: '60s' });
    assert.deepEqual(docOf(body, 'InitConfiguration').bootstrapTokens, [{ token: 'wofy6e.c8kcvmvpmii021pm', ttl: '3600s' }]);

    const v1 = capiRequest('control-plane', 'v1beta1');
    Object.assign(v1.spec.kubeadmConfigSpec as Doc, { clusterConfiguration: { apiServer: { timeoutForControlPlane: '20m0s' } }, joinConfiguration: { discovery: { timeout: '10m0s' } } });
    assert.deepEqual(docOf(render(v1).body, 'JoinConfiguration').timeouts, { controlPlaneComponentHealthCheck: '20m0s', discovery: '10m0s' });
  });

  it('maps timeouts to kubeadm v1beta3 where it has them, and names the ones it has not', () => {
    const init = capiRequest('init', 'v1beta2');
    init.spec.kubernetesVersion = 'v1.30.14';
    (init.spec.kubeadmConfigSpec as Doc).initConfiguration = { timeouts: { controlPlaneComponentHealthCheckSeconds: 300 } };
    assert.deepEqual(docOf(render(init).body, 'ClusterConfiguration').apiServer, { certSANs: ['localhost', '127.0.0.1', '0.0.0.0', 'host.docker.internal'], timeoutForControlPlane: '300s' });

    const join = worker({ kubernetesVersion: 'v1.30.14', kubeadmConfigSpec: { joinConfiguration: { timeouts: { discoverySeconds: 600, tlsBootstrapSeconds: 30 } } } });
    assert.deepEqual(problemsOf(() => validateNodeBootstrap(join)), [
      { path: 'spec.kubeadmConfigSpec.joinConfiguration.timeouts.tlsBootstrapSeconds', message: 'kubeadm.k8s.io/v1beta3 (Kubernetes before 1.31) has no tlsBootstrap timeout; it needs Kubernetes 1.31 or later (kubeadm.k8s.io/v1beta4)' },
    ]);
    const ok = worker({ kubernetesVersion: 'v1.30.14', kubeadmConfigSpec: { joinConfiguration: { timeouts: { discoverySeconds: 600 } } } });
    assert.deepEqual(docOf(render(ok).body, 'JoinConfiguration').discovery, {
      bootstrapToken: { token: 'abcdef.0123456789abcdef', apiServerEndpoint: 'api.prod.example.com:6443', caCertHashes: [`sha256:${'a'.repeat(64)}`] },
      timeout: '600s',
    });
  });

  it('honours v1beta1 useExperimentalRetryJoin: 5 attempts with a reset between, and the sentinel only on success', () => {
    const req = worker({ kubeadmConfigSpec: { useExperimentalRetryJoin: true } });
    const runcmd = (load(render(req).body) as { runcmd: string[] }).runcmd;
    assert.deepEqual(runcmd, [
      '(n=0; until kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml; do n=$((n+1)); [ "$n" -ge 5 ] && exit 1; kubeadm reset --force; sleep 15; done) && echo success > /run/cluster-api/bootstrap-success.complete',
    ]);
    const script = ignitionFiles(JSON.parse(render(req, 'ignition').body)).get('/etc/kubeadm.sh')!.toString('utf8');
    assert.match(script, /^\(n=0; until kubeadm join --config \/etc\/kubeadm.yml; do .*; done\) && echo success > \/run\/cluster-api\/bootstrap-success.complete$/m);
    // init ignores it, as CABPK does (there is nothing to join).
    const init = capiRequest('init', 'v1beta1');
    (init.spec.kubeadmConfigSpec as Doc).useExperimentalRetryJoin = true;
    assert.match((load(render(init).body) as { runcmd: string[] }).runcmd.find((c) => c.includes('kubeadm'))!, /^kubeadm init --config/);
  });

  it('executes contentFormat: Template with the control plane version and leaves raw {{ }} untouched', () => {
    const files = [
      { path: '/usr/local/bin/fetch-kubeadm.sh', permissions: '0755', contentFormat: 'Template', content: 'curl -fLo /usr/bin/kubeadm https://dl.k8s.io/release/{{ .controlPlane.version }}/bin/linux/amd64/kubeadm\n' },
      { path: '/etc/raw.tmpl', content: 'kept: {{ .controlPlane.version }}\n' },
    ];
    const req = worker({ kubernetesVersion: 'v1.32.4', cluster: { ...(worker().spec as Doc).cluster as Doc, controlPlaneVersion: '1.33.2' }, kubeadmConfigSpec: { files } });
    for (const format of ['cloud-config', 'ignition'] as const) {
      const body = render(req, format).body;
      const got = format === 'cloud-config' ? cloudConfigFiles(body) : ignitionFiles(JSON.parse(body));
      assert.equal(got.get('/usr/local/bin/fetch-kubeadm.sh')!.toString(), 'curl -fLo /usr/bin/kubeadm https://dl.k8s.io/release/v1.33.2/bin/linux/amd64/kubeadm\n');
      assert.equal(got.get('/etc/raw.tmpl')!.toString(), 'kept: {{ .controlPlane.version }}\n');
    }
    // Without controlPlaneVersion the node's own version is used.
    const own = worker({ kubeadmConfigSpec: { files: [files[0]] } });
    assert.match(cloudConfigFiles(render(own).body).get('/usr/local/bin/fetch-kubeadm.sh')!.toString(), /release\/v1\.33\.2\//);
  });

  it('reads Secret references (contentFrom, passwdFrom) from spec.secrets, and names the reference when the Secret is not there', () => {
    const spec = {
      files: [{ path: '/etc/x', contentFrom: { secret: { name: 's', key: 'k' } } }],
      users: [{ name: 'ops', passwdFrom: { secret: { name: 's', key: 'p' } } }],
    };
    assert.deepEqual(problemsOf(() => validateNodeBootstrap(worker({ kubeadmConfigSpec: spec }))), [
      { path: 'spec.kubeadmConfigSpec.files[0].contentFrom.secret.name', message: 'names Secret "s", which is not in spec.secrets: pass the Secret beside the Cluster API input' },
      { path: 'spec.kubeadmConfigSpec.users[0].passwdFrom.secret.name', message: 'names Secret "s", which is not in spec.secrets: pass the Secret beside the Cluster API input' },
    ]);
    const req = validateNodeBootstrap(worker({ kubeadmConfigSpec: spec, secrets: [{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, stringData: { k: 'value\n', p: '$6$salt$hash' } }] }));
    assert.deepEqual(req.spec.provisioning?.files, [{ path: '/etc/x', content: Buffer.from('value\n').toString('base64'), encoding: 'base64' }]);
    assert.equal(req.spec.provisioning.users?.[0]?.passwd, '$6$salt$hash');
    assert.equal(cloudConfigFiles(render(req).body).get('/etc/x')!.toString(), 'value\n');
  });

  it('names the Cluster API field in errors found after the rewrite, at validation and at render', () => {
    // A schema error (file path), a cross-field check (duplicate path), a kubeadm field unknown to v1beta4.
    const bad = worker({ kubeadmConfigSpec: { files: [{ path: 'relative', content: 'x' }] } });
    assert.deepEqual(problemsOf(() => validateNodeBootstrap(bad)), [{ path: 'spec.kubeadmConfigSpec.files[0].path', message: 'must be absolute (start with /)' }]);
    const dup = worker({ kubeadmConfigSpec: { files: [{ path: '/etc/a', content: 'x' }, { path: '/etc/a', content: 'y' }] } });
    assert.deepEqual(problemsOf(() => validateNodeBootstrap(dup)), [{ path: 'spec.kubeadmConfigSpec.files[1].path', message: 'duplicates spec.kubeadmConfigSpec.files[0].path' }]);
    const unknown = worker({ kubeadmConfig: { ...workerTemplate('v1beta2'), spec: { template: { spec: { joinConfiguration: { nodeRegistration: { kubeletExtraArgz: [] } } } } } } });
    assert.deepEqual(problemsOf(() => render(unknown)), [
      { path: 'spec.kubeadmConfig.spec.template.spec.joinConfiguration.nodeRegistration.kubeletExtraArgz', message: 'unknown field in kubeadm.k8s.io/v1beta4 JoinConfiguration' },
    ]);
    const cluster = worker({ kubeadmConfigSpec: { unknownTopLevel: true } });
    assert.deepEqual(problemsOf(() => validateNodeBootstrap(cluster)), [{ path: 'spec.kubeadmConfigSpec.unknownTopLevel', message: 'unknown field' }]);
  });

  it('takes a whole KubeadmControlPlane (its kubeadmConfigSpec; replicas and machineTemplate are not bootstrap data)', () => {
    for (const role of ['init', 'control-plane'] as const) {
      const kcp = capiRequest(role, 'v1beta2');
      delete kcp.spec.kubeadmConfigSpec;
      kcp.spec.kubeadmConfig = controlPlaneObject('v1beta2');
      assert.equal(render(kcp).body, render(capiRequest(role, 'v1beta2')).body, role);
    }
    const skewed = capiRequest('control-plane', 'v1beta1');
    delete skewed.spec.kubeadmConfigSpec;
    skewed.spec.kubeadmConfig = { ...controlPlaneObject('v1beta1'), spec: { ...(controlPlaneObject('v1beta1').spec as Doc), version: 'v1.32.0' } };
    assert.deepEqual(problemsOf(() => validateNodeBootstrap(skewed)), [
      { path: 'spec.kubeadmConfig.spec.version', message: "is v1.32.0, but spec.kubernetesVersion is v1.33.2: a control plane node runs the KubeadmControlPlane's version" },
    ]);
    assert.deepEqual(problemsOf(() => validateNodeBootstrap(worker({ kubeadmConfig: controlPlaneObject('v1beta2') }))).map((p) => p.path), ['spec.kubeadmConfig.kind']);
    // A misspelt kubeadmConfigSpec is an unknown field, not an empty spec rendered as a bare
    // kubeadm init (an operator pass sent `kubeadmConfigspec` and got exit 0); the machine
    // fields of either API version are accepted, and read for nothing.
    for (const [kind, spec, at] of [
      ['KubeadmControlPlane', { version: 'v1.33.2', replicas: 3, kubeadmConfigspec: { preKubeadmCommands: ['echo hi'] } }, 'spec.kubeadmConfig.spec.kubeadmConfigspec'],
      ['KubeadmControlPlaneTemplate', { template: { spec: { kubeadmConfigSpecs: {}, rolloutStrategy: { type: 'RollingUpdate' } } } }, 'spec.kubeadmConfig.spec.template.spec.kubeadmConfigSpecs'],
    ] as const) {
      const typo = capiRequest('init', 'v1beta1');
      delete typo.spec.kubeadmConfigSpec;
      typo.spec.kubeadmConfig = { apiVersion: 'controlplane.cluster.x-k8s.io/v1beta1', kind, metadata: { name: 'cp' }, spec };
      assert.deepEqual(problemsOf(() => validateNodeBootstrap(typo)), [{ path: at, message: 'unknown field' }], kind);
    }
    const machineFields = capiRequest('init', 'v1beta2');
    delete machineFields.spec.kubeadmConfigSpec;
    machineFields.spec.kubeadmConfig = {
      ...controlPlaneObject('v1beta2'),
      spec: { ...(controlPlaneObject('v1beta2').spec as Doc), rollout: { strategy: { type: 'RollingUpdate' } }, remediation: { maxRetry: 3 }, machineNaming: { template: '{{ .random }}' } },
    };
    assert.equal(render(machineFields).body, render(capiRequest('init', 'v1beta2')).body);
  });

  it('checks a KubeadmConfig against its apiVersion', () => {
    const v1 = workerTemplate('v1beta1');
    const spec = (v1.spec as { template: { spec: Doc } }).template.spec;
    spec.joinConfiguration = { nodeRegistration: { kubeletExtraArgs: [{ name: 'a', value: 'b' }] }, timeouts: { discoverySeconds: 5 } };
    assert.deepEqual(problemsOf(() => validateNodeBootstrap(worker({ kubeadmConfig: v1 }))), [
      { path: 'spec.kubeadmConfig.spec.template.spec.joinConfiguration.nodeRegistration.kubeletExtraArgs', message: 'is a map of flag name to value in v1beta1, not a list (bootstrap.cluster.x-k8s.io/v1beta1)' },
      { path: 'spec.kubeadmConfig.spec.template.spec.joinConfiguration.timeouts', message: 'is v1beta2; v1beta1 has joinConfiguration.discovery.timeout (bootstrap.cluster.x-k8s.io/v1beta1)' },
    ]);
    const v2 = { apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta2', kind: 'KubeadmConfig', metadata: { name: 'm' }, spec: { useExperimentalRetryJoin: true }, status: { dataSecretName: 'x' } };
    assert.deepEqual(problemsOf(() => validateNodeBootstrap(worker({ kubeadmConfig: v2 }))), [
      { path: 'spec.kubeadmConfig.spec.useExperimentalRetryJoin', message: 'was removed in v1beta2 (bootstrap.cluster.x-k8s.io/v1beta2)' },
    ]);
    assert.deepEqual(problemsOf(() => validateNodeBootstrap(worker({ kubeadmConfig: { ...v2, apiVersion: 'bootstrap.cluster.x-k8s.io/v1alpha4' } }))).map((p) => p.path), ['spec.kubeadmConfig.apiVersion']);
  });

  it('refuses what it cannot honour, each at its own field', () => {
    const cases: [Doc, string, RegExp][] = [
      [{ kubeadmConfigSpec: {}, provisioning: {} }, 'spec.provisioning', /not both/],
      [{ kubeadmConfigSpec: {}, kubeadmConfig: workerTemplate('v1beta2') }, 'spec.kubeadmConfig', /not both/],
      [{ kubeadmConfigSpec: { joinConfiguration: { controlPlane: {} } } }, 'spec.kubeadmConfigSpec.joinConfiguration.controlPlane', /spec.role is worker/],
      [{ kubeadmConfigSpec: { joinConfiguration: { nodeRegistration: { kubeletExtraArgs: [{ name: 'node-ip', value: '{% if v1.cloud_name %}a{% endif %}' }] } } } }, 'spec.kubeadmConfigSpec.joinConfiguration.nodeRegistration.kubeletExtraArgs[0].value', /line 1, column 1: is a Jinja statement/],
      [{ kubeadmConfigSpec: { joinConfiguration: { discovery: { file: { kubeConfig: { cluster: {} } } } } } }, 'spec.kubeadmConfigSpec.joinConfiguration.discovery.file.kubeConfig', /bootstrap token/],
      [{ kubeadmConfigSpec: { format: 'ignition' }, output: { format: 'cloud-config' } }, 'spec.kubeadmConfigSpec.format', /give one/],
      [{ kubeadmConfigSpec: { files: [{ path: '/etc/t', encoding: 'base64', content: 'eA==', contentFormat: 'Template' }] } }, 'spec.kubeadmConfigSpec.files[0].contentFormat', /plain-text/],
    ];
    for (const [spec, path, message] of cases) {
      const [first, ...rest] = problemsOf(() => validateNodeBootstrap(worker(spec)));
      assert.ok(first, path);
      assert.equal(first.path, path, JSON.stringify([first, ...rest]));
      assert.match(first.message, message);
    }
  });

  it('merges ignition.containerLinuxConfig.additionalConfig (CLC) into Ignition output, and names its field in errors', () => {
    const additionalConfig = 'storage:\n  files:\n    - path: /etc/motd\n      filesystem: root\n      mode: 0644\n      contents:\n        inline: hello from CLC\n';
    const req = worker({ kubeadmConfigSpec: { format: 'ignition', ignition: { containerLinuxConfig: { additionalConfig } } } });
    assert.equal(ignitionFiles(JSON.parse(renderNodeBootstrap(validateNodeBootstrap(req)).body)).get('/etc/motd')!.toString(), 'hello from CLC');
    const bad = worker({ kubeadmConfigSpec: { format: 'ignition', ignition: { containerLinuxConfig: { additionalConfig: 'storage:\n  files:\n    - path: /etc/kubeadm/bootstrap.sh\n      filesystem: root\n      contents: {inline: x}\n' } } } });
    const problems = problemsOf(() => renderNodeBootstrap(validateNodeBootstrap(bad)));
    assert.ok(problems.length > 0);
    assert.ok(problems.every((p) => p.path === 'spec.kubeadmConfigSpec.ignition.containerLinuxConfig.additionalConfig'), JSON.stringify(problems));
  });

  it('reads cloud-init Jinja and metadata variables at boot, each where its format can, and refuses the rest at the field', () => {
    const cases: [Doc, string, RegExp, ('cloud-config' | 'ignition')?][] = [
      [{ preKubeadmCommands: ['{% for k in ds.meta_data %}echo {{ k }}{% endfor %}'] }, 'spec.kubeadmConfigSpec.preKubeadmCommands[0]', /line 1, column 1: is a Jinja statement \(\{% for %\}\)/],
      [{ files: [{ path: '/etc/x', content: 'a\n  {{- v1.instance_id }}\n' }] }, 'spec.kubeadmConfigSpec.files[0].content', /line 2, column 3: uses Jinja whitespace control/],
      [{ joinConfiguration: { nodeRegistration: { name: 'Not_A_Name' } } }, 'spec.kubeadmConfigSpec.joinConfiguration.nodeRegistration.name', /DNS-1123 subdomain/],
      [{ joinConfiguration: { nodeRegistration: { name: '${COREOS_EC2_HOSTNAME}' } } }, 'spec.kubeadmConfigSpec.joinConfiguration.nodeRegistration.name', /only the Ignition output fills in/, 'cloud-config'],
      [{ joinConfiguration: { nodeRegistration: { name: '{{ ds.meta_data.local_hostname }}' } } }, 'spec.kubeadmConfigSpec.joinConfiguration.nodeRegistration.name', /only cloud-config fills in/, 'ignition'],
      [{ preKubeadmCommands: ['true', 'envsubst < /etc/kubeadm.yml > /etc/kubeadm.yml.tmp'] }, 'spec.kubeadmConfigSpec.preKubeadmCommands[1]', /files of the Ignition output.*\/run\/kubeadm\/kubeadm-join-config\.yaml/, 'cloud-config'],
    ];
    for (const [spec, path, message, format] of cases) {
      const [first] = problemsOf(() => (format ? render(worker({ kubeadmConfigSpec: spec }), format) : validateNodeBootstrap(worker({ kubeadmConfigSpec: spec }))));
      assert.ok(first, path);
      assert.equal(first.path, path);
      assert.match(first.message, message);
    }
    // Go templates and other braces are not Jinja: kept as written (case 001's kind), and without Jinja no header.
    const kept = worker({ kubeadmConfigSpec: { postKubeadmCommands: ["sed -i 's/{{ .PodSubnet }}/10.0.0.0\\/16/' /etc/cni.yaml"] } });
    assert.ok(render(kept).body.startsWith('#cloud-config\n'));
    assert.deepEqual((load(render(kept).body) as { runcmd: string[] }).runcmd.at(-1), "sed -i 's/{{ .PodSubnet }}/10.0.0.0\\/16/' /etc/cni.yaml");
  });

  it('keeps Cluster API numbers within their bounds (int32 seconds, validity days) and checks v1beta1 durations where written', () => {
    const init = capiRequest('init', 'v1beta2');
    Object.assign(init.spec.kubeadmConfigSpec as Doc, {
      clusterConfiguration: { caCertificateValidityPeriodDays: 200000 },
      initConfiguration: { bootstrapTokens: [{ token: 'wofy6e.c8kcvmvpmii021pm', ttlSeconds: 99999999999 }], timeouts: { controlPlaneComponentHealthCheckSeconds: 1e20 } },
    });
    assert.deepEqual(problemsOf(() => validateNodeBootstrap(init)), [
      { path: 'spec.kubeadmConfigSpec.initConfiguration.timeouts.controlPlaneComponentHealthCheckSeconds', message: 'must be a whole number of seconds from 0 to 2147483647' },
      { path: 'spec.kubeadmConfigSpec.clusterConfiguration.caCertificateValidityPeriodDays', message: 'must be a whole number of days from 1 to 36500' },
      { path: 'spec.kubeadmConfigSpec.initConfiguration.bootstrapTokens[0].ttlSeconds', message: 'must be a whole number of seconds from 0 to 2147483647' },
    ]);
    const v1 = capiRequest('control-plane', 'v1beta1');
    Object.assign(v1.spec.kubeadmConfigSpec as Doc, { clusterConfiguration: { apiServer: { timeoutForControlPlane: '20 minutes' } }, joinConfiguration: { discovery: { timeout: '5x' } } });
    assert.deepEqual(problemsOf(() => validateNodeBootstrap(v1)).map((p) => p.path), ['spec.kubeadmConfigSpec.clusterConfiguration.apiServer.timeoutForControlPlane', 'spec.kubeadmConfigSpec.joinConfiguration.discovery.timeout']);
  });

  it('checks token, CA pins and certificate key given in kubeadm fields as spec.cluster\'s are checked', () => {
    const req = capiRequest('control-plane', 'v1beta2');
    (req.spec.kubeadmConfigSpec as Doc).joinConfiguration = { controlPlane: { certificateKey: 'XYZ' }, discovery: { bootstrapToken: { token: 'BADTOKEN', caCertHashes: ['nothash'] } } };
    const problems = problemsOf(() => render(req));
    assert.deepEqual(problems.map((p) => p.path).sort(), [
      'spec.kubeadmConfigSpec.joinConfiguration.controlPlane.certificateKey',
      'spec.kubeadmConfigSpec.joinConfiguration.discovery.bootstrapToken.caCertHashes[0]',
      'spec.kubeadmConfigSpec.joinConfiguration.discovery.bootstrapToken.token',
    ]);
    assert.ok(problems.every((p) => !p.message.includes('BADTOKEN') && !p.message.includes('XYZ')));
  });

  it('joins by discovery.file without a bootstrap token (and without the generated token discovery)', () => {
    const { bootstrapToken: _t, caCertHashes: _h, ...cluster } = (worker().spec as { cluster: Doc }).cluster;
    const req = worker({
      cluster,
      kubeadmConfigSpec: { files: [{ path: '/etc/kubernetes/discovery.conf', permissions: '0600', content: 'apiVersion: v1\nkind: Config\n' }], joinConfiguration: { discovery: { file: { kubeConfigPath: '/etc/kubernetes/discovery.conf' }, tlsBootstrapToken: 'abcdef.0123456789abcdef' } } },
    });
    assert.deepEqual(docOf(render(req).body, 'JoinConfiguration').discovery, { file: { kubeConfigPath: '/etc/kubernetes/discovery.conf' }, tlsBootstrapToken: 'abcdef.0123456789abcdef' });
  });

  it('accepts v1beta2 objects with their empty specs left out (omitzero)', () => {
    const bare = { apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta2', kind: 'KubeadmConfigTemplate' };
    assert.equal(render(worker({ kubeadmConfig: bare })).body, render(worker({ kubeadmConfigSpec: {} })).body);
    assert.equal(render(worker({ kubeadmConfig: { ...bare, kind: 'KubeadmConfig' } })).body, render(worker({ kubeadmConfigSpec: {} })).body);
    const kcp = capiRequest('control-plane', 'v1beta2');
    delete kcp.spec.kubeadmConfigSpec;
    kcp.spec.kubeadmConfig = { apiVersion: 'controlplane.cluster.x-k8s.io/v1beta2', kind: 'KubeadmControlPlane', spec: { version: 'v1.33.2' } };
    assert.ok(render(kcp).body.includes('kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml'));
  });

  it('names the Cluster API field in warnings too', () => {
    const out = renderNodeBootstrap(validateNodeBootstrap(worker({ kubeadmConfigSpec: { ignition: { containerLinuxConfig: { additionalConfig: 'storage: {}\n' } } } })), { format: 'cloud-config' });
    assert.deepEqual(out.warnings, ['spec.kubeadmConfigSpec.ignition.containerLinuxConfig.additionalConfig is ignored: it applies to Ignition output only']);
  });

  it('takes format as spec.output.format (negotiation still wins)', () => {
    const req = worker({ kubeadmConfigSpec: { format: 'ignition' } });
    assert.equal(renderNodeBootstrap(validateNodeBootstrap(req)).format, 'ignition');
    assert.equal(renderNodeBootstrap(validateNodeBootstrap(req), { format: 'cloud-config' }).format, 'cloud-config');
  });

  it('keeps explicit false and pointer fields as given (v1beta1 *bool)', () => {
    const spec = controlPlaneSpec('v1beta1');
    Object.assign(spec, {
      users: [{ name: 'ops', lockPassword: false, inactive: false }],
      ntp: { enabled: false },
      diskSetup: { partitions: [{ device: '/dev/sdb', layout: true, overwrite: false, tableType: 'gpt' }], filesystems: [{ device: '/dev/sdb', filesystem: 'ext4', label: 'data', partition: '1', overwrite: false }] },
    });
    const req = capiRequest('init', 'v1beta1');
    req.spec.kubeadmConfigSpec = spec;
    const doc = load(render(req).body) as Doc;
    assert.deepEqual(doc.users, [{ name: 'ops', lock_passwd: false }]);
    assert.deepEqual(doc.ntp, { enabled: false });
    assert.deepEqual(doc.disk_setup, { '/dev/sdb': { table_type: 'gpt', layout: true, overwrite: false } });
    assert.deepEqual(doc.fs_setup, [{ label: 'data', filesystem: 'ext4', device: '/dev/sdb1', partition: 'auto', overwrite: false }]);
  });
});
