import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RequestError } from '../../src/errors.js';
import { parseDocument, parseNodeBootstrap, validateNodeBootstrap } from '../../src/request/parse.js';
import { example, HASH, TOKEN, worker } from '../support/requests.js';

/** The problems of a request that must be refused, as `path: message` lines. */
function problems(value: unknown): string[] {
  try {
    validateNodeBootstrap(value);
  } catch (e) {
    assert.ok(e instanceof RequestError, `expected RequestError, got ${String(e)}`);
    return e.problems.map((p) => `${p.path}: ${p.message}`);
  }
  assert.fail('request was accepted');
}

function cluster(extra: Record<string, unknown>) {
  return { name: 'prod', controlPlaneEndpoint: 'api.prod.example.com:6443', bootstrapToken: TOKEN, caCertHashes: [HASH], ...extra };
}

describe('request parsing', () => {
  it('accepts the committed examples', () => {
    for (const name of ['init', 'control-plane', 'worker'] as const) {
      const req = validateNodeBootstrap(example(name));
      assert.equal(req.spec.role, name);
    }
  });

  it('reads YAML and JSON to the same request', () => {
    const value = worker({ provisioning: { files: [{ path: '/etc/motd', content: 'hi: there\n', permissions: '0644' }] } });
    const fromJson = parseNodeBootstrap(JSON.stringify(value), 'json');
    const fromYaml = parseNodeBootstrap(`apiVersion: bootwright.dev/v1alpha1
kind: NodeBootstrap
metadata: {name: worker-a}
spec:
  role: worker
  kubernetesVersion: v1.33.2
  cluster: {name: prod, controlPlaneEndpoint: "api.prod.example.com:6443", bootstrapToken: ${TOKEN}, caCertHashes: ["${HASH}"]}
  provisioning:
    files: [{path: /etc/motd, content: "hi: there\\n", permissions: "0644"}]
`, 'yaml');
    assert.deepEqual(fromYaml, fromJson);
  });

  it('refuses duplicate keys in YAML and in JSON', () => {
    assert.throws(() => parseDocument('a: 1\na: 2\n', 'yaml'), (e: RequestError) => e.status === 400 && e.problems[0]!.message.includes('duplicated mapping key'));
    assert.throws(() => parseDocument('{"a": 1, "a": 2}', 'json'), (e: RequestError) => e.status === 400 && e.problems[0]!.message.includes('duplicated mapping key'));
  });

  it('reports malformed input by position without quoting it', () => {
    const secret = 'zzzzzz.zzzzzzzzzzzzzzzz';
    assert.throws(
      () => parseDocument(`{"token": "${secret}", }`, 'json'),
      (e: RequestError) => e.status === 400 && /^malformed JSON at line 1 column \d+: PropertyNameExpected$/.test(e.problems[0]!.message) && !e.message.includes(secret),
    );
    assert.throws(
      () => parseDocument(`token: ${secret}\n  bad: [\n`, 'yaml'),
      (e: RequestError) => e.status === 400 && /^malformed YAML at line \d+ column \d+/.test(e.problems[0]!.message) && !e.message.includes(secret),
    );
  });

  it('names every unknown field by path', () => {
    const value = worker({ provisioning: { files: [{ path: '/etc/x', contents: 'typo' }] }, colour: 'blue' });
    assert.deepEqual(problems(value).sort(), ['spec.colour: unknown field', 'spec.provisioning.files[0].contents: unknown field']);
  });

  it('checks formats: token, hashes, certificate key, version, endpoint, subnets', () => {
    const value = worker({
      kubernetesVersion: '1.33',
      cluster: cluster({
        bootstrapToken: 'ABCDEF.0123456789abcdef',
        caCertHashes: ['sha256:1234'],
        certificateKey: 'xyz',
        controlPlaneEndpoint: 'https://api:6443',
        network: { podSubnet: '192.168.0.0/33' },
      }),
    });
    assert.deepEqual(problems(value).sort(), [
      'spec.cluster.bootstrapToken: must match [a-z0-9]{6}.[a-z0-9]{16}',
      'spec.cluster.caCertHashes[0]: must be sha256: followed by 64 hex digits',
      'spec.cluster.certificateKey: must be 64 hex digits',
      'spec.cluster.controlPlaneEndpoint: must be host or host:port (IPv6 addresses in brackets)',
      'spec.cluster.network.podSubnet: must be a CIDR such as 10.96.0.0/12, or two comma-separated (dual-stack)',
      'spec.kubernetesVersion: must be a semantic version such as v1.33.2',
    ]);
  });

  it('never echoes a secret value in an error', () => {
    const token = 'SECRET.TOKENVALUE123456';
    const key = 'k'.repeat(64);
    const msgs = problems(worker({ cluster: cluster({ bootstrapToken: token, certificateKey: key }) })).join('\n');
    assert.ok(!msgs.includes(token) && !msgs.includes(key), msgs);
  });

  it('checks file paths, permissions, owners and uniqueness', () => {
    const value = worker({
      provisioning: {
        files: [
          { path: 'etc/relative' },
          { path: '/etc/../shadow' },
          { path: '/etc//double' },
          { path: '/etc/ok', permissions: '0999' },
          { path: '/etc/ok', owner: 'bad owner' },
          { path: '/etc/kubernetes/pki/ca.key' },
          { path: '/etc/bin', content: 'x', permissions: 644 },
        ],
      },
    });
    assert.deepEqual(problems(value), [
      'spec.provisioning.files[0].path: must be absolute (start with /)',
      'spec.provisioning.files[1].path: must not contain ".."',
      'spec.provisioning.files[1].path: must be normalised (no "//", "/./" or trailing "/")',
      'spec.provisioning.files[2].path: must be normalised (no "//", "/./" or trailing "/")',
      'spec.provisioning.files[3].permissions: must be an octal string such as "0640"',
      'spec.provisioning.files[4].owner: must be user or user:group',
      'spec.provisioning.files[6].permissions: Invalid input: expected string, received number',
    ]);
    const dup = worker({ provisioning: { files: [{ path: '/etc/a' }, { path: '/etc/a' }] } });
    assert.deepEqual(problems(dup), ['spec.provisioning.files[1].path: duplicates spec.provisioning.files[0].path']);
    // What bootwright writes is the plan's to protect, in both formats (test/provision/plan/protected.test.ts).
  });

  it('refuses a file where another file of the request needs a directory', () => {
    const value = worker({ provisioning: { files: [{ path: '/etc/app' }, { path: '/etc/app/conf' }] } });
    assert.deepEqual(problems(value), ['spec.provisioning.files[0].path: must be a directory on the node, since /etc/app/conf is written under it']);
  });

  it('malformed JSON always names line and column', () => {
    for (const [text, where] of [['{"a":x}', 'line 1 column 6: InvalidSymbol'], ['{\n "a":', 'line 2 column 6: ValueExpected'], ['', 'line 1 column 1: ValueExpected']]) {
      assert.throws(() => parseDocument(text!, 'json'), (e: RequestError) => e.problems[0]!.message === `malformed JSON at ${where!}`);
    }
  });

  it('says what a join is missing, per role', () => {
    const bare = { name: 'prod' };
    assert.deepEqual(problems(worker({ cluster: bare })), [
      'spec.cluster.controlPlaneEndpoint: required: a worker joins through the control-plane endpoint',
      'spec.cluster.bootstrapToken: required: a worker joins with a bootstrap token (or give spec.kubeadm.joinConfiguration.discovery.file)',
      'spec.cluster.caCertHashes: required: a worker pins the cluster CA with caCertHashes',
    ]);
    assert.deepEqual(problems(worker({ role: 'control-plane' })), [
      'spec.cluster.certificateKey: required for a control-plane join unless spec.cluster.certificates carries ca, etcdCA, frontProxyCA and serviceAccount (missing: ca, etcdCA, frontProxyCA, serviceAccount)',
    ]);
    // init needs nothing beyond the cluster name
    assert.equal(validateNodeBootstrap(worker({ role: 'init', cluster: bare })).spec.role, 'init');
  });

  it('checks certificates: parse, CA, key match, and the CA pin', () => {
    const init = example('init');
    const certs = (init.spec.cluster as { certificates: Record<string, { cert: string; key: string }> }).certificates;
    const swapped = structuredClone(init);
    const sc = (swapped.spec.cluster as { certificates: Record<string, { cert: string; key: string }> }).certificates;
    sc.ca!.key = certs.etcdCA!.key;
    (swapped.spec.cluster as Record<string, unknown>).caCertHashes = [HASH];
    assert.deepEqual(problems(swapped), [
      'spec.cluster.certificates.ca.key: does not match spec.cluster.certificates.ca.cert',
      'spec.cluster.caCertHashes: none matches the public key of spec.cluster.certificates.ca.cert',
    ]);
    const broken = structuredClone(init);
    (broken.spec.cluster as { certificates: Record<string, { cert: string }> }).certificates.frontProxyCA!.cert = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
    assert.deepEqual(problems(broken), ['spec.cluster.certificates.frontProxyCA.cert: is not a valid X.509 certificate']);
    const notPem = structuredClone(init);
    (notPem.spec.cluster as { certificates: Record<string, { key: string }> }).certificates.serviceAccount!.key = 'not a key';
    assert.deepEqual(problems(notPem), ['spec.cluster.certificates.serviceAccount.key: must be one PEM PRIVATE KEY block']);
  });

  it('remembers a checked pair by its PEM texts: the same verdict each time, under whichever field it sits', () => {
    const init = example('init');
    const certs = (init.spec.cluster as { certificates: Record<string, { cert: string; key: string }> }).certificates;
    const mismatched = { cert: certs.ca!.cert, key: certs.etcdCA!.key };
    const twice = structuredClone(init);
    const tc = (twice.spec.cluster as { certificates: Record<string, { cert: string; key: string }> }).certificates;
    tc.ca = { ...mismatched };
    tc.etcdCA = { ...mismatched };
    const expected = [
      'spec.cluster.certificates.ca.key: does not match spec.cluster.certificates.ca.cert',
      'spec.cluster.certificates.etcdCA.key: does not match spec.cluster.certificates.etcdCA.cert',
    ];
    // The first call checks the pair, the second and third answer from the memo.
    for (let i = 0; i < 3; i++) assert.deepEqual(problems(twice), expected);
    // The valid request stays valid after its pairs were remembered, and a changed key is checked afresh.
    for (let i = 0; i < 2; i++) assert.equal(validateNodeBootstrap(init).spec.role, 'init');
    const changed = structuredClone(init);
    (changed.spec.cluster as { certificates: Record<string, { key: string }> }).certificates.frontProxyCA!.key = certs.ca!.key;
    assert.deepEqual(problems(changed), ['spec.cluster.certificates.frontProxyCA.key: does not match spec.cluster.certificates.frontProxyCA.cert']);
  });

  it('explains a command that YAML read as a mapping', () => {
    const text = `apiVersion: bootwright.dev/v1alpha1
kind: NodeBootstrap
metadata: {name: w}
spec:
  role: init
  kubernetesVersion: v1.33.2
  cluster: {name: c}
  provisioning:
    postKubeadmCommands:
      - echo "done: $(date)" >> /var/log/bootstrap.log
`;
    assert.throws(
      () => parseNodeBootstrap(text, 'yaml'),
      (e: RequestError) =>
        e.problems.length === 1 &&
        e.problems[0]!.path === 'spec.provisioning.postKubeadmCommands[0]' &&
        /YAML read this item as a mapping.*quote the whole command/.test(e.problems[0]!.message),
    );
  });

  it('checks disk layouts', () => {
    const value = worker({
      provisioning: { diskSetup: { partitions: [{ device: '/dev/sdb', layout: true, diskLayout: [{ percentage: 60 }, { percentage: 50 }] }] } },
    });
    assert.deepEqual(problems(value), [
      'spec.provisioning.diskSetup.partitions[0].diskLayout: give either layout or diskLayout, not both',
      'spec.provisioning.diskSetup.partitions[0].diskLayout: percentages add up to 110, more than 100',
    ]);
  });
});
