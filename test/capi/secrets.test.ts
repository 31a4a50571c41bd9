/**
 * Secrets beside Cluster API input (`spec.secrets`, issue 12): published templates that
 * read files and passwords from Secrets (Azure's `azure.json`, Linode's
 * `common-init-files`) get the Secret's bytes on the node in every format; a missing
 * Secret or key is a 422 naming the reference and the missing name; and a Secret's value
 * never reaches a log line, an error body, a warning or a stored resource.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { load } from 'js-yaml';
import request from 'supertest';
import { RequestError } from '../../src/errors.js';
import { renderNodeBootstrap } from '../../src/render.js';
import { validateNodeBootstrap } from '../../src/request/parse.js';
import { azureJson, azureJsonSecret, cloudInitRender, fixture, haveCloudInit, INSTANCE_DATA, linodeSecret } from '../support/corpus.js';
import { missingDependency } from '../support/missing.js';
import { cloudConfigFiles, ignitionFiles } from '../support/decode.js';
import { example, worker } from '../support/requests.js';
import { ADMIN, RENDERER, testService, type TestService } from '../support/server.js';
import { cloudInitSchema, validateCloudConfigSchema } from '../support/validators.js';

type Doc = Record<string, unknown>;

/**
 * A corpus template with its node names and other instance-data Jinja dropped (that is the
 * boot-time identity work of issue 12, tested by test/capi/corpus.test.ts), so that this
 * file tests the Secrets alone; everything else as published.
 */
function withoutJinja(file: string): Doc {
  const obj = fixture(file) as { spec: Doc };
  const spec = (obj.spec.kubeadmConfigSpec ?? (obj.spec.template as { spec: Doc }).spec) as Doc;
  for (const key of ['initConfiguration', 'joinConfiguration']) {
    const reg = (spec[key] as { nodeRegistration?: Doc } | undefined)?.nodeRegistration;
    if (!reg) continue;
    delete reg.name;
    const args = reg.kubeletExtraArgs as Record<string, string> | undefined;
    if (args?.['provider-id']) args['provider-id'] = 'linode://61234567';
  }
  if (Array.isArray(spec.preKubeadmCommands)) spec.preKubeadmCommands = (spec.preKubeadmCommands as string[]).map((c) => c.replace("'{{ ds.meta_data.label }}'", 'prod-cp-1'));
  return obj;
}

/** A Cluster API request for `role` with `kubeadmConfig` and `secrets`. */
function capi(role: 'init' | 'worker', kubeadmConfig: Doc, secrets?: unknown): Doc & { spec: Doc } {
  const req = example(role);
  delete req.spec.kubeadm;
  delete req.spec.provisioning;
  req.spec.kubeadmConfig = kubeadmConfig;
  if (secrets !== undefined) req.spec.secrets = secrets;
  return req;
}

const render = (req: unknown, format: 'cloud-config' | 'ignition') => renderNodeBootstrap(validateNodeBootstrap(req), { format });
const problemsOf = (req: unknown): { path: string; message: string }[] => {
  try {
    render(req, 'cloud-config');
  } catch (e) {
    if (e instanceof RequestError) return e.problems;
    throw e;
  }
  assert.fail('expected the request to be refused');
};

describe('Secrets from published templates', () => {
  it("Azure's azure.json (contentFrom, Secret data in base64, the KubeadmConfig's namespace) is the file on the node, cloud-config and Ignition", async () => {
    const cp = render(capi('init', withoutJinja('azure-windows-kcp.yaml'), [azureJsonSecret('prod-control-plane-azure-json', 'control-plane-azure.json')]), 'cloud-config');
    assert.deepEqual(validateCloudConfigSchema(cp.body), []);
    assert.deepEqual(await cloudInitSchema(cp.body), []);
    assert.equal(cloudConfigFiles(cp.body).get('/etc/kubernetes/azure.json')?.toString('utf8'), azureJson('prod'));
    const entry = (load(cp.body) as { write_files: Doc[] }).write_files.find((f) => f.path === '/etc/kubernetes/azure.json');
    assert.deepEqual([entry?.owner, entry?.permissions], ['root:root', '0644']);
    // The worker of the same flavour (its control plane's diskSetup is cloud-config only).
    const md = capi('worker', withoutJinja('azure-windows-md-0.yaml'), [azureJsonSecret('prod-md-0-azure-json', 'worker-node-azure.json')]);
    assert.equal(cloudConfigFiles(render(md, 'cloud-config').body).get('/etc/kubernetes/azure.json')?.toString('utf8'), azureJson('prod'));
    assert.equal(ignitionFiles(JSON.parse(render(md, 'ignition').body)).get('/etc/kubernetes/azure.json')?.toString('utf8'), azureJson('prod'));
  });

  it("Linode's common-init-files (four contentFrom files, Secret stringData) are the files on the node, the script 0500", () => {
    const secret = linodeSecret() as { stringData: Record<string, string> };
    const req = capi('init', withoutJinja('linode-kcp.yaml'), [secret]);
    const files = cloudConfigFiles(render(req, 'cloud-config').body);
    assert.equal(files.get('/etc/containerd/config.toml')?.toString('utf8'), secret.stringData['containerd-config.toml']);
    assert.equal(files.get('/etc/modules-load.d/k8s.conf')?.toString('utf8'), secret.stringData['k8s-modules.conf']);
    assert.equal(files.get('/etc/sysctl.d/k8s.conf')?.toString('utf8'), secret.stringData['sysctl-k8s.conf']);
    assert.equal(files.get('/kubeadm-pre-init.sh')?.toString('utf8'), secret.stringData['kubeadm-pre-init.sh']);
    const ign = JSON.parse(render(req, 'ignition').body) as { storage: { files: { path: string; mode?: number }[] } };
    assert.equal(ign.storage.files.find((f) => f.path === '/kubeadm-pre-init.sh')?.mode, 0o500);
    assert.equal(ignitionFiles(ign).get('/kubeadm-pre-init.sh')?.toString('utf8'), secret.stringData['kubeadm-pre-init.sh']);
  });

  it('passwdFrom sets the password hash (cloud-config passwd, Ignition passwordHash)', () => {
    const hash = '$6$rounds=4096$saltsalt$Q1kq2XG8Z2jQ0Jc8b8gVw3b0k3Q7cKc2l1n2b3m4n5o6p7q8r9s0t1u2v3w4x5y6z7A8B9C0D1E2F3G4H5I6J7';
    const req = worker({ kubeadmConfigSpec: { users: [{ name: 'capi', passwdFrom: { secret: { name: 'capi-user', key: 'passwd' } } }] }, secrets: [{ metadata: { name: 'capi-user' }, stringData: { passwd: hash } }] });
    const users = (load(render(req, 'cloud-config').body) as { users: Doc[] }).users;
    assert.equal(users.find((u) => u.name === 'capi')?.passwd, hash);
    const ign = JSON.parse(render(req, 'ignition').body) as { passwd: { users: Doc[] } };
    assert.equal(ign.passwd.users.find((u) => u.name === 'capi')?.passwordHash, hash);
  });

  it('bytes that are not UTF-8, and text that looks like a template or a variable, reach the node byte for byte', () => {
    const bytes = Buffer.concat([Buffer.from([0x00, 0xff, 0xfe, 0x80]), Buffer.from('{{ ds.meta_data.local_hostname }} ${COREOS_EC2_HOSTNAME} {% if x %}\n', 'utf8')]);
    const text = 'token: {{ ds.meta_data.instance_id }}\nexport X=${COREOS_EC2_HOSTNAME}\n{#- #}\n';
    const req = worker({
      kubeadmConfigSpec: {
        files: [
          { path: '/etc/bin', contentFrom: { secret: { name: 's', key: 'bin' } } },
          { path: '/etc/text', contentFrom: { secret: { name: 's', key: 'text' } } },
        ],
      },
      secrets: [{ metadata: { name: 's' }, data: { bin: bytes.toString('base64'), text: Buffer.from(text).toString('base64') } }],
    });
    for (const files of [cloudConfigFiles(render(req, 'cloud-config').body), ignitionFiles(JSON.parse(render(req, 'ignition').body))]) {
      assert.deepEqual(files.get('/etc/bin'), bytes);
      assert.equal(files.get('/etc/text')?.toString('utf8'), text);
    }
  });

  it('with encoding, the Secret holds the encoded text (base64 decoded on the node); stringData wins over data for a key', () => {
    const req = worker({
      kubeadmConfigSpec: { files: [{ path: '/etc/x', encoding: 'base64', contentFrom: { secret: { name: 's', key: 'x' } } }] },
      secrets: [{ metadata: { name: 's' }, data: { x: Buffer.from(Buffer.from('old').toString('base64')).toString('base64') }, stringData: { x: Buffer.from('new\n').toString('base64') } }],
    });
    assert.equal(cloudConfigFiles(render(req, 'cloud-config').body).get('/etc/x')?.toString('utf8'), 'new\n');
  });
});

describe('Secrets in a document that uses instance-data Jinja', () => {
  // Instance-data Jinja is the ident branch's (issue 12); until it is merged this is a todo.
  const ident = existsSync(new URL('../../src/provision/plan/bootvalues.ts', import.meta.url));
  const cloudInit = haveCloudInit() ? false : missingDependency('cloud-init not installed; a Secret under a Jinja header is NOT rendered by cloud-init');
  it("a Secret's braces and variables reach the node as written, after cloud-init's own Jinja render (CABPK's header would render them)", { todo: ident ? undefined : 'needs the ident branch (issue 12)', skip: cloudInit }, async () => {
    const text = 'a: {{ ds.meta_data.local_hostname }}\nb: {% raw %}{# c #}\nd: ${COREOS_EC2_HOSTNAME} {{ "{{" }}\n';
    const obj = fixture('aws-md-0.yaml') as { spec: { template: { spec: Doc } } };
    obj.spec.template.spec.files = [{ path: '/etc/secret.conf', contentFrom: { secret: { name: 's', key: 'k' } } }];
    const out = render(capi('worker', obj, [{ metadata: { name: 's' }, stringData: { k: text } }]), 'cloud-config');
    assert.ok(out.body.startsWith('## template: jinja\n'));
    const { rendered } = await cloudInitRender(out.body, INSTANCE_DATA.aws!);
    assert.equal(cloudConfigFiles(rendered).get('/etc/secret.conf')?.toString('utf8'), text);
  });
});

describe('Secret references that cannot be resolved, and bad Secrets', () => {
  const file = (ref: Doc, extra: Doc = {}) => ({ kubeadmConfigSpec: { files: [{ path: '/etc/x', contentFrom: { secret: ref }, ...extra }] } });

  it('a missing Secret names the reference and the Secret', () => {
    assert.deepEqual(problemsOf(worker({ ...file({ name: 'nope', key: 'k' }), secrets: [{ metadata: { name: 'other' }, stringData: { k: 'v' } }] })), [
      { path: 'spec.kubeadmConfigSpec.files[0].contentFrom.secret.name', message: 'names Secret "nope", which is not in spec.secrets: pass the Secret beside the Cluster API input' },
    ]);
  });

  it('a missing key names the reference, the key and the Secret', () => {
    assert.deepEqual(problemsOf(worker({ kubeadmConfigSpec: { users: [{ name: 'capi', passwdFrom: { secret: { name: 's', key: 'passwd' } } }] }, secrets: [{ metadata: { name: 's' }, stringData: { password: 'x' } }] })), [
      { path: 'spec.kubeadmConfigSpec.users[0].passwdFrom.secret.key', message: 'names key "passwd" of Secret "s", which has no such key' },
    ]);
  });

  it("a Secret in another namespace than the KubeadmConfig's is not found, and the message says where it is", () => {
    const req = capi('init', withoutJinja('azure-windows-kcp.yaml'), [{ ...azureJsonSecret('prod-control-plane-azure-json', 'control-plane-azure.json'), metadata: { name: 'prod-control-plane-azure-json', namespace: 'capz-system' } }]);
    assert.deepEqual(problemsOf(req), [
      {
        path: 'spec.kubeadmConfig.spec.kubeadmConfigSpec.files[0].contentFrom.secret.name',
        message: 'names Secret "prod-control-plane-azure-json", which is not in spec.secrets (spec.secrets has "prod-control-plane-azure-json" only in namespace "capz-system", and the KubeadmConfig is in "default"): pass the Secret beside the Cluster API input',
      },
    ]);
  });

  it('content and contentFrom, passwd and passwdFrom, contentFormat with contentFrom: each refused', () => {
    assert.deepEqual(
      problemsOf(
        worker({
          kubeadmConfig: {
            apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta2',
            kind: 'KubeadmConfigTemplate',
            spec: {
              template: {
                spec: {
                  files: [{ path: '/etc/x', content: 'inline', contentFormat: 'Template', contentFrom: { secret: { name: 's', key: 'k' } } }],
                  users: [{ name: 'capi', passwd: '$6$x$y', passwdFrom: { secret: { name: 's', key: 'k' } } }],
                },
              },
            },
          },
          secrets: [{ metadata: { name: 's' }, stringData: { k: 'v' } }],
        }),
      ),
      [
        { path: 'spec.kubeadmConfig.spec.template.spec.files[0].content', message: 'give content or contentFrom, not both' },
        { path: 'spec.kubeadmConfig.spec.template.spec.files[0].contentFormat', message: "applies to content, not to a Secret's value (contentFrom), which is written as it is" },
        { path: 'spec.kubeadmConfig.spec.template.spec.users[0].passwd', message: 'give passwd or passwdFrom, not both' },
      ],
    );
  });

  it('spec.secrets itself: not base64, a bad key, a name given twice; and with a native request, an unknown field', () => {
    assert.deepEqual(
      problemsOf(
        worker({
          ...file({ name: 's', key: 'k' }),
          secrets: [
            { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { k: 'not base64!' } },
            { metadata: { name: 'Bad_Name' }, stringData: { 'a/b': 'v' } },
          ],
        }),
      ).map((p) => p.path),
      ['spec.secrets[0].data.k', 'spec.secrets[1].metadata.name', 'spec.secrets[1].stringData.a/b'],
    );
    assert.deepEqual(problemsOf(worker({ ...file({ name: 's', key: 'k' }), secrets: [{ metadata: { name: 's' }, stringData: { k: 'a' } }, { metadata: { name: 's' }, stringData: { k: 'b' } }] })), [
      { path: 'spec.secrets[1].metadata.name', message: 'Secret "s" is given twice' },
    ]);
    assert.deepEqual(problemsOf(worker({ secrets: [{ metadata: { name: 's' }, stringData: { k: 'v' } }] })), [{ path: 'spec.secrets', message: 'unknown field' }]);
  });

  it('a passwdFrom value that is not text, and an encoding the Secret value does not hold, are refused naming the reference', () => {
    assert.deepEqual(
      problemsOf(
        worker({
          kubeadmConfigSpec: { files: [{ path: '/etc/x', encoding: 'gzip+base64', contentFrom: { secret: { name: 's', key: 'bin' } } }], users: [{ name: 'capi', passwdFrom: { secret: { name: 's', key: 'bin' } } }] },
          secrets: [{ metadata: { name: 's' }, data: { bin: Buffer.from([0xff, 0xfe, 0x00]).toString('base64') } }],
        }),
      ),
      [
        { path: 'spec.kubeadmConfigSpec.files[0].contentFrom', message: 'reads a value that is not text, but encoding gzip+base64 takes the encoded text: store the gzip+base64 text in the Secret, or drop encoding' },
        { path: 'spec.kubeadmConfigSpec.users[0].passwdFrom', message: 'reads a value that is not a password hash: the Secret must hold the hash as non-empty UTF-8 text' },
      ],
    );
  });
});

/** A value that must never be seen again: a unique marker plus arbitrary text (template braces, quotes, newlines, non-ASCII). */
const secretValue = fc
  .tuple(
    fc.stringMatching(/^[A-Za-z0-9]{24}$/),
    fc.array(fc.oneof(fc.constantFrom('{{ ds.meta_data.x }}', '${COREOS_EC2_HOSTNAME}', '"', "'", '\n', ': ', ' #', '%', '\\', '{%', '$6$'), fc.string({ unit: 'grapheme', maxLength: 8 })), { maxLength: 6 }),
  )
  .map(([marker, parts]) => ({ marker: `S3CR3T${marker}`, value: `S3CR3T${marker}${parts.join('')}` }));

/** Requests that fail after the Secret was read, each for another reason. */
const failing = (value: string): unknown[] => {
  const secrets = [{ metadata: { name: 's' }, stringData: { k: value, passwd: value, notBase64: `${value}!` } }];
  const b64 = [{ metadata: { name: 's' }, data: { k: Buffer.from(value).toString('base64') } }];
  return [
    worker({ kubeadmConfigSpec: { files: [{ path: '/etc/x', contentFrom: { secret: { name: 's', key: 'missing' } } }] }, secrets }),
    worker({ kubeadmConfigSpec: { files: [{ path: '/etc/x', content: 'x', contentFrom: { secret: { name: 's', key: 'k' } } }] }, secrets }),
    worker({ kubeadmConfigSpec: { files: [{ path: '/etc/x', encoding: 'base64', contentFrom: { secret: { name: 's', key: 'notBase64' } } }] }, secrets }),
    worker({ kubeadmConfigSpec: { files: [{ path: '/etc/x', encoding: 'gzip', contentFrom: { secret: { name: 's', key: 'k' } } }] }, secrets: b64 }),
    worker({ kubeadmConfigSpec: { files: [{ path: 'relative', contentFrom: { secret: { name: 's', key: 'k' } } }] }, secrets }),
    worker({ kubeadmConfigSpec: { files: [{ path: '/etc/x', contentFrom: { secret: { name: 's', key: 'k' } } }], users: [{ name: 'Bad User', passwdFrom: { secret: { name: 's', key: 'passwd' } } }] }, secrets }),
    worker({ kubeadmConfigSpec: { files: [{ path: '/etc/x', contentFrom: { secret: { name: 's', key: 'k' } } }] }, secrets: [{ metadata: { name: 's' }, data: { k: `${value}!` } }] }),
    worker({ kubeadmConfigSpec: { files: [{ path: '/etc/x', contentFrom: { secret: { name: 's', key: 'k' } } }] }, secrets: [{ metadata: { name: 's' }, stringData: { k: value } }, { metadata: { name: 's' }, stringData: { k: value } }] }),
    worker({ kubeadmConfigSpec: { files: [{ path: '/etc/x', contentFrom: { secret: { name: 's', key: 'k' } } }] }, secrets: [{ metadata: { name: 's' }, stringData: { k: value }, immutable: value }] }),
  ];
};

describe("a Secret's value is never logged, echoed or stored", () => {
  let svc: TestService;
  before(async () => {
    svc = await testService({ logLevel: 'trace' });
  });
  after(async () => {
    await svc.app.close();
  });
  const post = (body: unknown) => request(svc.app.server).post('/v1/render').set('authorization', `Bearer ${RENDERER}`).set('content-type', 'application/json').send(JSON.stringify(body));

  it('in error bodies (HTTP and CLI) and the service log, whatever the value and whichever check refuses the request', async () => {
    await fc.assert(
      fc.asyncProperty(secretValue, async ({ marker, value }) => {
        for (const body of failing(value)) {
          const res = await post(body);
          assert.ok(res.status >= 400 && res.status < 500, `${res.status} ${res.text}`);
          assert.ok(!res.text.includes(marker), res.text);
        }
        assert.ok(!svc.logs().includes(marker));
      }),
      { numRuns: 15 },
    );
    const cli = spawnSync(process.execPath, ['--import', 'tsx', new URL('../../src/cli.ts', import.meta.url).pathname, 'render', '-f', '-'], { input: JSON.stringify(failing('S3CR3Tcli-value')[0]), encoding: 'utf8' });
    assert.equal(cli.status, 2);
    assert.ok(!`${cli.stdout}${cli.stderr}`.includes('S3CR3Tcli-value'));
  });

  it('in the log and the warnings of a render that serves it (the value is only in the bootstrap data)', async () => {
    await fc.assert(
      fc.asyncProperty(secretValue, async ({ marker, value }) => {
        const body = worker({ kubeadmConfigSpec: { files: [{ path: '/etc/x', contentFrom: { secret: { name: 's', key: 'k' } } }], users: [{ name: 'capi', passwdFrom: { secret: { name: 's', key: 'p' } } }] }, secrets: [{ metadata: { name: 's' }, stringData: { k: value, p: value } }] });
        const res = await post(body).set('accept', 'application/json');
        assert.equal(res.status, 200, res.text);
        const envelope = res.body as { data: string; warnings: string[] };
        assert.equal(cloudConfigFiles(envelope.data).get('/etc/x')?.toString('utf8'), value);
        assert.ok(!envelope.warnings.join('\n').includes(marker));
        assert.ok(!svc.logs().includes(marker));
      }),
      { numRuns: 15 },
    );
  });

  it('in stored resources: a Profile cannot carry Cluster API input or Secrets, and the refusal does not echo them', async () => {
    const value = 'S3CR3Tstored-value-0123456789';
    const res = await request(svc.app.server)
      .post('/v1/profiles')
      .set('authorization', `Bearer ${ADMIN}`)
      .set('content-type', 'application/json')
      .send(JSON.stringify({ apiVersion: 'bootwright.dev/v1alpha1', kind: 'Profile', metadata: { name: 'capi' }, spec: { role: 'worker', kubernetesVersion: 'v1.33.2', kubeadmConfigSpec: { files: [{ path: '/etc/x', contentFrom: { secret: { name: 's', key: 'k' } } }] }, secrets: [{ metadata: { name: 's' }, stringData: { k: value } }] } }));
    assert.equal(res.status, 422, res.text);
    assert.ok(!res.text.includes(value));
    const list = await request(svc.app.server).get('/v1/profiles').set('authorization', `Bearer ${ADMIN}`);
    assert.equal(list.status, 200);
    assert.ok(!list.text.includes(value));
    assert.ok(!svc.logs().includes(value));
  });
});
