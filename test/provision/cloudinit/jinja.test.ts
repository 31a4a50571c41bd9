/**
 * cloud-init instance-data Jinja (issue 12): Cluster API templates name nodes from
 * instance data; bootwright writes `## template: jinja` only then, and escapes every
 * other brace. Checked with cloud-init's own renderer, `cloud-init devel render FILE -i
 * instance-data.json` (Debian's 22.4), over AWS-, OpenStack- and vSphere-shaped instance
 * data (test/fixtures/instance-data/, each with its source).
 *
 * The template values are the providers' own: CAPA's `name: '{{ ds.meta_data.local_hostname }}'`
 * (cluster-api-provider-aws templates/cluster-template.yaml), CAPO's
 * `name: '{{ local_hostname }}'` and `provider-id: openstack:///'{{ instance_id }}'`
 * (cluster-api-provider-openstack templates/cluster-template.yaml), CAPV's
 * `hostnamectl set-hostname "{{ ds.meta_data.hostname }}"` and /etc/hosts lines
 * (cluster-api-provider-vsphere templates/cluster-template.yaml).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { load, YAML11_SCHEMA } from 'js-yaml';
import { renderNodeBootstrap } from '../../../src/render.js';
import { validateNodeBootstrap } from '../../../src/request/parse.js';
import { escapeForJinja, scanJinja } from '../../../src/provision/cloudinit/jinja.js';
import { missingDependency } from '../../support/missing.js';
import { worker } from '../../support/requests.js';

const run = promisify(execFile);
const FIXTURES = path.join(import.meta.dirname, '../../fixtures/instance-data');
const CLOUD_INIT = '/usr/bin/cloud-init';

type Doc = Record<string, unknown>;

const skip = await (async () => {
  try {
    await run(CLOUD_INIT, ['--version']);
    return false;
  } catch {
    return missingDependency('cloud-init (cloud-init devel render): instance-data Jinja is not rendered by cloud-init');
  }
})();

/** `cloud-init devel render` of a user-data document over an instance-data fixture. */
async function cloudInitRender(userData: string, instanceData: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bw-jinja-'));
  try {
    await writeFile(path.join(dir, 'user-data'), userData);
    const { stdout } = await run(CLOUD_INIT, ['devel', 'render', path.join(dir, 'user-data'), '-i', path.join(FIXTURES, instanceData)], { maxBuffer: 16 << 20 });
    return stdout;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const cloudConfig = (req: unknown) => renderNodeBootstrap(validateNodeBootstrap(req), { format: 'cloud-config' }).body;

/** The rendered document's files (plain text) and runcmd. */
function readRendered(text: string): { files: Map<string, string>; runcmd: string[]; kubeadm: Doc[] } {
  assert.ok(text.startsWith('#cloud-config\n'), text.slice(0, 80));
  const doc = load(text, { schema: YAML11_SCHEMA }) as { write_files: { path: string; content: string }[]; runcmd: string[] };
  const files = new Map(doc.write_files.map((f) => [f.path, f.content]));
  const kubeadmText = files.get('/run/kubeadm/kubeadm-join-config.yaml')!;
  const kubeadm = kubeadmText.split(/^---\n/m).filter(Boolean).map((d) => load(d) as Doc);
  return { files, runcmd: doc.runcmd, kubeadm };
}

const LITERAL_COMMAND = "sed -i 's/{{ .PodSubnet }}/192.168.0.0\\/16/' /etc/cni/calico.yaml";
const LITERAL_FILE = '{{ .Values.image }} {% capture x %} {# not a comment #} {{{ }}}\n';

/** A worker in Cluster API shape naming itself from instance data, with literal braces beside. */
function template(registration: Doc, commands: string[]): unknown {
  return worker({
    kubeadmConfigSpec: {
      joinConfiguration: { nodeRegistration: registration },
      preKubeadmCommands: commands,
      postKubeadmCommands: [LITERAL_COMMAND],
      files: [{ path: '/etc/literal.tmpl', content: LITERAL_FILE }],
    },
  });
}

const PLATFORMS: { name: string; data: string; req: unknown; node: string; providerId?: string; commands: string[] }[] = [
  {
    name: 'AWS (CAPA)',
    data: 'aws.json',
    req: template({ name: '{{ ds.meta_data.local_hostname }}', kubeletExtraArgs: { 'cloud-provider': 'external' } }, []),
    node: 'ip-172-31-81-43.ec2.internal',
    commands: [],
  },
  {
    name: 'OpenStack (CAPO)',
    data: 'openstack.json',
    req: template({ name: '{{ local_hostname }}', kubeletExtraArgs: { 'cloud-provider': 'external', 'provider-id': "openstack:///'{{ instance_id }}'" } }, []),
    node: 'capo-md-0-x7k2p',
    providerId: "openstack:///'b0fa911b-69d4-4476-bbe2-1c92bff6535c'",
    commands: [],
  },
  {
    name: 'vSphere (CAPV)',
    data: 'vsphere.json',
    req: template({ name: '{{ ds.meta_data["local_hostname"].split(".")[0] }}', criSocket: '/var/run/containerd/containerd.sock' }, [
      'hostnamectl set-hostname "{{ ds.meta_data.local_hostname }}"',
      'echo "127.0.0.1   {{ ds.meta_data.local_hostname }} {{ local_hostname }} localhost localhost.localdomain" >>/etc/hosts',
    ]),
    node: 'capv-md-0-8fz9q',
    commands: ['hostnamectl set-hostname "capv-md-0-8fz9q"', 'echo "127.0.0.1   capv-md-0-8fz9q capv-md-0-8fz9q localhost localhost.localdomain" >>/etc/hosts'],
  },
];

describe('cloud-init instance-data Jinja (cloud-init devel render)', { skip }, () => {
  for (const p of PLATFORMS) {
    it(`${p.name}: the node name and kubelet flags are cloud-init's, every literal brace survives`, async () => {
      const body = cloudConfig(p.req);
      assert.ok(body.startsWith('## template: jinja\n#cloud-config\n'));
      const { files, runcmd, kubeadm } = readRendered(await cloudInitRender(body, p.data));
      const registration = kubeadm.find((d) => d.kind === 'JoinConfiguration')!.nodeRegistration as { name: string; kubeletExtraArgs?: { name: string; value: string }[] };
      assert.equal(registration.name, p.node);
      if (p.providerId) assert.equal(registration.kubeletExtraArgs!.find((a) => a.name === 'provider-id')!.value, p.providerId);
      assert.deepEqual(runcmd.slice(0, p.commands.length), p.commands);
      assert.equal(runcmd.at(-1), LITERAL_COMMAND);
      assert.equal(files.get('/etc/literal.tmpl'), LITERAL_FILE);
    });
  }

  it('a request without instance data gets no header: braces need no escape (case 001)', () => {
    const body = cloudConfig(worker({ kubeadmConfigSpec: { postKubeadmCommands: [LITERAL_COMMAND] } }));
    assert.ok(body.startsWith('#cloud-config\n'));
    assert.ok(!body.includes("{{ '{{' }}"));
  });

  it('a native request names the node with spec.nodeName.fromMetadata; its files and commands stay literal', async () => {
    const req = worker({ nodeName: { fromMetadata: {} }, provisioning: { preKubeadmCommands: ['echo "{{ v1.instance_id }}"'], files: [{ path: '/etc/t', content: '{{ v1.instance_id }}\n' }] } });
    const { files, runcmd, kubeadm } = readRendered(await cloudInitRender(cloudConfig(req), 'aws.json'));
    assert.equal((kubeadm[0]!.nodeRegistration as Doc).name, 'ip-172-31-81-43');
    assert.equal(files.get('/etc/t'), '{{ v1.instance_id }}\n');
    assert.equal(runcmd[0], 'echo "{{ v1.instance_id }}"');
  });

  it('property: random text with braces in file contents and commands reaches the node byte for byte', async () => {
    const fragment = fc.constantFrom('{', '}', '{{', '}}', '{%', '%}', '{#', '#}', '{{-', '-}}', ' ', 'x', "'", '"', '\\', '.', '|', '(', ')', '[0]', '$', '\n', '\t', 'é');
    const text = fc.array(fragment, { minLength: 1, maxLength: 30 }).map((a) => a.join('')).filter((s) => {
      const scan = scanJinja(s, true);
      return scan.expressions.length === 0 && scan.problems.length === 0;
    });
    await fc.assert(
      fc.asyncProperty(fc.array(text, { minLength: 8, maxLength: 8 }), async (texts) => {
        const commands = texts.slice(0, 4).map((t) => t.replace(/\n/g, ' '));
        const contents = texts.slice(4);
        const req = worker({
          kubeadmConfigSpec: {
            joinConfiguration: { nodeRegistration: { name: '{{ ds.meta_data.local_hostname }}' } },
            preKubeadmCommands: commands,
            files: contents.map((content, i) => ({ path: `/etc/random/${i}`, content })),
          },
        });
        const { files, runcmd } = readRendered(await cloudInitRender(cloudConfig(req), 'aws.json'));
        assert.deepEqual(runcmd.slice(0, 4), commands);
        contents.forEach((c, i) => assert.equal(files.get(`/etc/random/${i}`), c));
      }),
      { numRuns: 4, seed: 20261201 },
    );
  });
});

describe('the accepted Jinja subset', () => {
  it('finds the expressions templates use, and nothing else', () => {
    const sources = (t: string) => scanJinja(t).expressions.map((e) => e.source);
    assert.deepEqual(sources('{{ ds.meta_data.local_hostname }}'), ['{{ ds.meta_data.local_hostname }}']);
    assert.deepEqual(sources('a{{v1.instance_id}}b {{ ds.meta_data["local_hostname"].split(".")[0] }}'), ['{{v1.instance_id}}', '{{ ds.meta_data["local_hostname"].split(".")[0] }}']);
    assert.deepEqual(sources("{{ local_hostname | lower | replace('.', '-') }}"), ["{{ local_hostname | lower | replace('.', '-') }}"]);
    for (const literal of ['{{ .PodSubnet }}', '{{ not a template }}', '{{ hostname }}', '{{ ds.x.__class__() }}', '{{ ds.meta_data | attr("x") }}', '{{ v1.x(1) }}', '{{ ds }', '{# v1.instance_id #}']) {
      assert.deepEqual(sources(literal), [], literal);
    }
  });

  it('refuses statements that read instance data, and all statements in a Jinja document, with line and column', () => {
    assert.deepEqual(scanJinja('a\n  {% if v1.cloud_name == "aws" %}x{% endif %}').problems.map((p) => [p.line, p.column]), [[2, 3]]);
    assert.deepEqual(scanJinja('{% macro m() %}{% endmacro %}').problems, []);
    assert.equal(scanJinja('{% macro m() %}{% endmacro %}', true).problems.length, 2);
  });

  it('is linear: a long run of braces is scanned quickly', () => {
    const text = '{{'.repeat(200_000) + 'ds.meta_data.x }}';
    const start = process.hrtime.bigint();
    scanJinja(text, true);
    assert.ok(Number(process.hrtime.bigint() - start) / 1e6 < 2000);
  });

  it('escapes every delimiter, and a lone { before an expression', () => {
    assert.equal(escapeForJinja('{{ a }} {% b %} {# c #}'), "{{ '{{' }} a }} {{ '{%' }} b %} {{ '{#' }} c #}");
    assert.equal(escapeForJinja('x{', true), "x{{ '{' }}");
  });
});
