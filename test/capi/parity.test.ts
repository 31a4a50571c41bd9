/**
 * Parity with Cluster API's kubeadm bootstrap provider (CABPK): for the same
 * KubeadmConfigSpec, the same node. Where CABPK's output is wrong, bootwright's right
 * value is asserted, and the fault named:
 *
 * - CABPK writes values into its cloud-config template unquoted, so a `: ` or ` #` in
 *   a value breaks or changes the YAML;
 * - `if .Field` on a `*bool` is true for an explicit `false` (`inactive: false` became
 *   `inactive: true`, `ntp.enabled: false` became `enabled: true`);
 * - Ignition: `layout: true` became an empty partition entry, `append` was dropped,
 *   `encoding: base64` content was written as its base64 text, and bootCommands,
 *   gzip-encoded files were refused outright;
 * - cloud-config starts with `## template: jinja` whatever the data, so every literal
 *   `{{`, `{%` or `{#` (a Go template in a `sed`, a Helm file) is read by cloud-init's
 *   Jinja: the node gets other bytes, or cloud-init drops the whole user data. bootwright
 *   writes the header only when instance data is read, and escapes every other brace.
 * - Windows (cloudbase-init): CABPK's template is the Linux one (`cloudinit.go`), so it
 *   writes keys cloudbase-init ignores (`owner`, `bootcmd`, `disk_setup`, `mounts`,
 *   `sudo`, `lock_passwd`), hands a crypt(3) `passwd` hash to cloudbase-init as the
 *   password itself, writes the retry join as a bash script cmd.exe cannot run, and
 *   puts `users` after `runcmd`, which cloudbase-init (running plugins in key order)
 *   then runs after kubeadm.
 *
 * Boot-time identity is CABPK's: the same Jinja header and kubeadm file for cloud-config;
 * for Ignition, CABPK's layout (`/etc/kubeadm.yml` 0600, `/etc/kubeadm.sh` 0700 run by
 * `kubeadm.service`; `bootstrap/kubeadm/internal/ignition/clc/clc.go`), so Flatcar
 * templates' drop-ins and `envsubst` commands work unchanged.
 */
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import { load } from 'js-yaml';
import { RequestError } from '../../src/errors.js';
import { renderNodeBootstrap } from '../../src/render.js';
import { validateNodeBootstrap } from '../../src/request/parse.js';
import { capiRequest } from '../support/capi.js';
import { capzWindowsRequest, cloudbaseInitDocument } from '../support/windows.js';
import { cloudConfigFiles, ignitionFiles } from '../support/decode.js';
import { worker } from '../support/requests.js';
import { cloudInitSchema, validateCloudConfigSchema, validateIgnitionSchema } from '../support/validators.js';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { missingDependency } from '../support/missing.js';

type Doc = Record<string, unknown>;

const cloudConfig = (req: unknown) => renderNodeBootstrap(validateNodeBootstrap(req), { format: 'cloud-config' }).body;
const ignition = (req: unknown) => JSON.parse(renderNodeBootstrap(validateNodeBootstrap(req), { format: 'ignition' }).body) as Doc & { storage: Doc; systemd: { units: Doc[] } };

describe('CABPK parity: cloud-config', () => {
  it('write_files: PKI (certificates 0640, keys 0600), the files, /run/kubeadm/kubeadm.yaml 0640, the /run/cluster-api placeholder; in that order', () => {
    const req = capiRequest('init', 'v1beta2');
    const doc = load(cloudConfig(req)) as { write_files: { path: string; owner: string; permissions: string }[] };
    assert.deepEqual(
      doc.write_files.map((f) => `${f.path} ${f.owner} ${f.permissions}`),
      [
        '/etc/kubernetes/pki/ca.crt root:root 0640',
        '/etc/kubernetes/pki/ca.key root:root 0600',
        '/etc/kubernetes/pki/etcd/ca.crt root:root 0640',
        '/etc/kubernetes/pki/etcd/ca.key root:root 0600',
        '/etc/kubernetes/pki/front-proxy-ca.crt root:root 0640',
        '/etc/kubernetes/pki/front-proxy-ca.key root:root 0600',
        '/etc/kubernetes/pki/sa.pub root:root 0640',
        '/etc/kubernetes/pki/sa.key root:root 0600',
        '/etc/sysctl.d/99-kubernetes.conf root:root 0644',
        '/run/kubeadm/kubeadm.yaml root:root 0640',
        '/run/cluster-api/placeholder root:root 0640',
      ],
    );
  });

  it('runcmd: pre commands, kubeadm chained to the sentinel, post commands; joins use kubeadm-join-config.yaml', () => {
    const init = load(cloudConfig(capiRequest('init', 'v1beta1'))) as { runcmd: string[] };
    assert.deepEqual(init.runcmd, [
      'modprobe br_netfilter && sysctl --system',
      'kubeadm init --config /run/kubeadm/kubeadm.yaml --upload-certs && echo success > /run/cluster-api/bootstrap-success.complete',
      'echo "node joined: $(hostname)" | systemd-cat -t capi',
    ]);
    const req = capiRequest('worker', 'v1beta1');
    (req.spec.kubeadmConfig as { spec: { template: { spec: Doc } } }).spec.template.spec.verbosity = 5;
    const join = load(cloudConfig(req)) as { runcmd: string[] };
    assert.equal(join.runcmd[1], 'kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml --v=5 && echo success > /run/cluster-api/bootstrap-success.complete');
  });

  it('users, ntp, disk_setup (layout and diskLayout with type codes), fs_setup and mounts mean what CABPK means', () => {
    const spec = {
      users: [{ name: 'ops', gecos: 'Ops team', groups: 'wheel, docker', homeDir: '/home/ops', shell: '/bin/bash', passwd: '$6$salt$hash', primaryGroup: 'ops', lockPassword: true, sudo: 'ALL=(ALL) NOPASSWD:ALL', sshAuthorizedKeys: ['ssh-ed25519 AAAA ops'] }],
      ntp: { enabled: true, servers: ['time.example.com'] },
      diskSetup: {
        partitions: [
          { device: '/dev/sdb', layout: true, overwrite: false, tableType: 'gpt' },
          { device: '/dev/sdc', tableType: 'mbr', diskLayout: [{ percentage: 20, partitionType: '83' }, { percentage: 10, partitionType: '82' }, { percentage: 10, partitionType: 'fd' }, { percentage: 10, partitionType: '8e' }, { percentage: 10, partitionType: '0c' }, { percentage: 10, partitionType: '07' }, { percentage: 30, partitionType: '85' }] },
          { device: '/dev/sdd', tableType: 'gpt', diskLayout: [{ percentage: 50, partitionType: '83' }, { percentage: 50, partitionType: '0FC63DAF-8483-4772-8E79-3D69D8477DE4' }] },
        ],
        filesystems: [{ device: '/dev/sdb', filesystem: 'ext4', label: 'data', partition: 'auto', overwrite: false, extraOpts: ['-E', 'lazy_itable_init=1'] }],
      },
      mounts: [['LABEL=data', '/var/lib/data', 'ext4', 'defaults,nofail', '0', '2']],
    };
    const doc = load(cloudConfig(worker({ kubeadmConfigSpec: spec }))) as Doc;
    assert.deepEqual(doc.users, [{ name: 'ops', gecos: 'Ops team', groups: 'wheel, docker', homedir: '/home/ops', shell: '/bin/bash', passwd: '$6$salt$hash', primary_group: 'ops', lock_passwd: true, sudo: 'ALL=(ALL) NOPASSWD:ALL', ssh_authorized_keys: ['ssh-ed25519 AAAA ops'] }]);
    assert.deepEqual(doc.ntp, { enabled: true, servers: ['time.example.com'] });
    assert.deepEqual(doc.disk_setup, {
      '/dev/sdb': { table_type: 'gpt', layout: true, overwrite: false },
      '/dev/sdc': { table_type: 'mbr', layout: [[20, 83], [10, 82], [10, 'fd'], [10, '8e'], [10, '0c'], [10, '07'], [30, 85]] },
      '/dev/sdd': { table_type: 'gpt', layout: [[50, 8300], [50, '0fc63daf-8483-4772-8e79-3d69d8477de4']] },
    });
    assert.deepEqual(doc.fs_setup, [{ label: 'data', filesystem: 'ext4', device: '/dev/sdb', partition: 'auto', overwrite: false, extra_opts: ['-E', 'lazy_itable_init=1'] }]);
    assert.deepEqual(doc.mounts, [['LABEL=data', '/var/lib/data', 'ext4', 'defaults,nofail', '0', '2']]);
  });

  it('CABPK fault: unquoted values break the YAML; here every value survives exactly and validates', async () => {
    const tricky = ['Ops: on-call #1', 'yes', '0644', '@home', '- not a list', "it's \"quoted\"", '{{ not a template }}'];
    const spec = {
      users: tricky.map((gecos, i) => ({ name: `u${i}`, gecos })),
      preKubeadmCommands: ['echo "phase: pre" # comment', "sed -i 's/a: b/c/' /etc/x"],
      files: [{ path: '/etc/motd', content: 'key: value\n# not a comment\n' }],
    };
    const body = cloudConfig(worker({ kubeadmConfigSpec: spec }));
    const doc = load(body) as { users: { gecos: string }[]; runcmd: string[] };
    assert.deepEqual(doc.users.map((u) => u.gecos), tricky);
    assert.deepEqual(doc.runcmd.slice(0, 2), spec.preKubeadmCommands);
    assert.equal(cloudConfigFiles(body).get('/etc/motd')!.toString(), 'key: value\n# not a comment\n');
    assert.deepEqual(validateCloudConfigSchema(body), []);
    assert.deepEqual(await cloudInitSchema(body), []);
  });

  it('CABPK fault: an explicit false rendered as true; here false stays false', () => {
    const doc = load(cloudConfig(worker({ kubeadmConfigSpec: { users: [{ name: 'ops', inactive: false, lockPassword: false }], ntp: { enabled: false } } }))) as { users: Doc[]; ntp: Doc };
    assert.deepEqual(doc.users, [{ name: 'ops', lock_passwd: false }], 'inactive: false must not expire the account');
    assert.deepEqual(doc.ntp, { enabled: false });
  });
});

describe('CABPK parity: Ignition (v3, which CABPK never shipped)', () => {
  it('CABPK fault: layout: true became an empty partition; here partition 1 spans the disk and the config validates', () => {
    const config = ignition(worker({ kubeadmConfigSpec: { diskSetup: { partitions: [{ device: '/dev/sdb', layout: true, tableType: 'gpt' }], filesystems: [{ device: '/dev/sdb1', filesystem: 'xfs', label: 'data' }] } } }));
    assert.deepEqual(config.storage.disks, [{ device: '/dev/sdb', partitions: [{ number: 1 }] }]);
    assert.deepEqual(validateIgnitionSchema(JSON.stringify(config), String((config.ignition as Doc).version)), []);
  });

  it('CABPK fault: append was dropped; here the file is appended to', () => {
    const config = ignition(worker({ kubeadmConfigSpec: { files: [{ path: '/etc/hosts', content: '10.0.0.1 registry\n', append: true }] } }));
    const file = (config.storage.files as Doc[]).find((f) => f.path === '/etc/hosts')!;
    assert.equal(file.contents, undefined);
    assert.deepEqual(ignitionFiles(config).get('/etc/hosts')?.toString(), '10.0.0.1 registry\n');
    assert.equal((file.append as unknown[]).length, 1);
  });

  it('CABPK fault: base64 content was written as its base64 text; here the node gets the decoded bytes', () => {
    const bytes = Buffer.from([0, 1, 2, 255, 10]);
    const files = ignitionFiles(ignition(worker({ kubeadmConfigSpec: { files: [{ path: '/etc/blob', encoding: 'base64', content: bytes.toString('base64') }] } })));
    assert.deepEqual(files.get('/etc/blob'), bytes);
  });

  it('does what CABPK refuses where Ignition can: bootCommands (a unit on every boot) and gzip-encoded files', () => {
    const gz = gzipSync(Buffer.from('compressed\n')).toString('base64');
    const config = ignition(worker({ kubeadmConfigSpec: { bootCommands: ['echo boot'], files: [{ path: '/etc/gz', encoding: 'gzip+base64', content: gz }] } }));
    assert.ok(config.systemd.units.some((u) => u.name === 'kubeadm-bootcmd.service' && u.enabled === true));
    assert.equal(ignitionFiles(config).get('/etc/kubeadm/bootcmd.sh')!.toString().trimEnd().split('\n').at(-1), 'echo boot');
    assert.equal(ignitionFiles(config).get('/etc/gz')!.toString(), 'compressed\n');
  });

  it('and says clearly where it cannot: MBR tables and inactive users, at the Cluster API field', () => {
    const problems = (spec: Doc) => {
      try {
        ignition(worker({ kubeadmConfigSpec: spec }));
      } catch (e) {
        if (e instanceof RequestError) return e.problems.map((p) => p.path);
        throw e;
      }
      return [];
    };
    assert.deepEqual(problems({ diskSetup: { partitions: [{ device: '/dev/sdb', layout: true, tableType: 'mbr' }] } }), ['spec.kubeadmConfigSpec.diskSetup.partitions[0].tableType']);
    assert.deepEqual(problems({ users: [{ name: 'ops', inactive: true }] }), ['spec.kubeadmConfigSpec.users[0].inactive']);
  });
});

const run = promisify(execFile);
const INSTANCE_DATA = path.join(import.meta.dirname, '../fixtures/instance-data/aws.json');

/** `cloud-init devel render` of a user-data document over the AWS instance data: stdout, or the error text. */
async function cloudInitRender(userData: string): Promise<{ ok: boolean; out: string }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bw-parity-'));
  try {
    await writeFile(path.join(dir, 'user-data'), userData);
    const { stdout } = await run('/usr/bin/cloud-init', ['devel', 'render', path.join(dir, 'user-data'), '-i', INSTANCE_DATA]);
    return { ok: true, out: stdout };
  } catch (e) {
    return { ok: false, out: String((e as { stderr?: string }).stderr ?? e) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const noCloudInit = await run('/usr/bin/cloud-init', ['--version']).then(
  () => false,
  () => missingDependency('cloud-init (cloud-init devel render): CABPK Jinja parity is not checked'),
);

describe('CABPK parity: boot-time identity', () => {
  // test/fixtures/cases/001-command-with-template-braces.yaml's command.
  const SED = "sed -i 's/{{ .PodSubnet }}/192.168.0.0\\/16/' /etc/cni/calico.yaml";

  it('CABPK fault: its unconditional Jinja header breaks literal braces; here they reach the node as written', { skip: noCloudInit }, async () => {
    const literal = cloudConfig(worker({ kubeadmConfigSpec: { postKubeadmCommands: [SED] } }));
    assert.ok(literal.startsWith('#cloud-config\n'), 'no instance data, no header');
    // CABPK's document: the same YAML under "## template: jinja". cloud-init cannot render it.
    const cabpk = await cloudInitRender(`## template: jinja\n${literal}`);
    assert.equal(cabpk.ok, false, cabpk.out);
    // With instance data read, bootwright's header and escapes: the node name is filled in, the sed survives.
    const jinja = cloudConfig(worker({ kubeadmConfigSpec: { joinConfiguration: { nodeRegistration: { name: '{{ ds.meta_data.local_hostname }}' } }, postKubeadmCommands: [SED] } }));
    assert.ok(jinja.startsWith('## template: jinja\n#cloud-config\n'), 'CABPK\'s header, as CABPK writes it');
    const rendered = await cloudInitRender(jinja);
    assert.ok(rendered.ok, rendered.out);
    const doc = load(rendered.out) as { runcmd: string[]; write_files: { path: string; content: string }[] };
    assert.equal(doc.runcmd.at(-1), SED);
    const kubeadm = doc.write_files.find((f) => f.path === '/run/kubeadm/kubeadm-join-config.yaml')!.content;
    assert.match(kubeadm, /^ {2}name: "ip-172-31-81-43\.ec2\.internal"$/m);
    assert.deepEqual(await cloudInitSchema(rendered.out), []);
  });

  it("Ignition: CABPK's layout for Cluster API input, so Flatcar templates' drop-ins and envsubst commands apply", () => {
    const config = ignition(
      worker({
        kubeadmConfigSpec: {
          joinConfiguration: { nodeRegistration: { name: '${COREOS_EC2_HOSTNAME}' } },
          preKubeadmCommands: ['envsubst < /etc/kubeadm.yml > /etc/kubeadm.yml.tmp', 'mv /etc/kubeadm.yml.tmp /etc/kubeadm.yml'],
          ignition: { containerLinuxConfig: { additionalConfig: 'systemd:\n  units:\n  - name: kubeadm.service\n    enabled: true\n    dropins:\n    - name: 10-flatcar.conf\n      contents: |\n        [Unit]\n        Requires=coreos-metadata.service\n        After=coreos-metadata.service\n        [Service]\n        EnvironmentFile=/run/metadata/flatcar\n' } },
        },
      }),
    );
    const files = config.storage.files as { path: string; mode: number }[];
    assert.equal(files.find((f) => f.path === '/etc/kubeadm.yml')!.mode, 0o600);
    assert.equal(files.find((f) => f.path === '/etc/kubeadm.sh')!.mode, 0o700);
    const unit = config.systemd.units.find((u) => u.name === 'kubeadm.service')!;
    assert.equal(unit.enabled, true);
    assert.match(String(unit.contents), /^ExecStart=\/bin\/sh \/etc\/kubeadm\.sh$/m);
    assert.deepEqual((unit.dropins as Doc[]).map((d) => d.name), ['10-flatcar.conf']);
    const script = ignitionFiles(config).get('/etc/kubeadm.sh')!.toString().split('\n');
    assert.deepEqual(script.slice(1, 3), ['envsubst < /etc/kubeadm.yml > /etc/kubeadm.yml.tmp', 'mv /etc/kubeadm.yml.tmp /etc/kubeadm.yml']);
    assert.ok(script.some((l) => l.includes('kubeadm join --config /etc/kubeadm.yml && echo success > /run/cluster-api/bootstrap-success.complete')));
    assert.deepEqual(validateIgnitionSchema(JSON.stringify(config), String((config.ignition as Doc).version)), []);
  });
});

/** Where a CABPK path lands on Windows: cloudbase-init (`os.path.abspath`) and cmd.exe resolve `/x` on the system drive. */
const onWindows = (path: string) => (path.startsWith('/') ? `c:${path}` : path).replaceAll('\\', '/').toLowerCase();

describe('CABPK parity: Windows (cloudbase-init), CAPZ Windows template', () => {
  it('the kubeadm configuration and the sentinel land where CABPK\'s /run/kubeadm and /run/cluster-api paths land on Windows', () => {
    const doc = cloudbaseInitDocument(cloudConfig(capzWindowsRequest())) as { write_files: { path: string }[]; runcmd: string[] };
    // CABPK: /run/kubeadm/kubeadm-join-config.yaml, /run/cluster-api/placeholder, and the sentinel the contract names for Windows.
    assert.deepEqual(doc.write_files.slice(-2).map((f) => onWindows(f.path)), [onWindows('/run/kubeadm/kubeadm-join-config.yaml'), onWindows('/run/cluster-api/placeholder')]);
    const [kubeadm, ...post] = doc.runcmd;
    const sentinel = / && echo success > (\S+)$/.exec(kubeadm!)![1]!;
    assert.equal(onWindows(sentinel), onWindows('C:\\run\\cluster-api\\bootstrap-success.complete'));
    assert.equal(onWindows(sentinel), onWindows('/run/cluster-api/bootstrap-success.complete'));
    assert.match(kubeadm!, /^kubeadm join --config C:\/run\/kubeadm\/kubeadm-join-config\.yaml && /);
    // The template's own commands, as CABPK runs them: pre (none), kubeadm, then post in order.
    assert.deepEqual(post, ['nssm set kubelet start SERVICE_AUTO_START', 'powershell C:/defender-exclude-calico.ps1']);
  });

  it('CABPK fault: users after runcmd run after kubeadm on cloudbase-init; here users come first and runcmd last', () => {
    assert.deepEqual(Object.keys(cloudbaseInitDocument(cloudConfig(capzWindowsRequest()))), ['users', 'write_files', 'runcmd']);
  });

  it('CABPK fault: keys cloudbase-init ignores or misreads; here no owner is written and the rest is refused at the Cluster API field', () => {
    const doc = cloudbaseInitDocument(cloudConfig(capzWindowsRequest())) as { write_files: Doc[] };
    assert.ok(doc.write_files.every((f) => !('owner' in f)), 'cloudbase-init sets no owner');
    const win = (spec: Doc) => {
      const req = capzWindowsRequest();
      Object.assign((req.spec.kubeadmConfig as { spec: { template: { spec: Doc } } }).spec.template.spec, spec);
      try {
        cloudConfig(req);
      } catch (e) {
        if (e instanceof RequestError) return e.problems.map((p) => p.path);
        throw e;
      }
      return [];
    };
    const at = 'spec.kubeadmConfig.spec.template.spec';
    assert.deepEqual(win({ users: [{ name: 'capi', groups: 'Administrators', passwd: '$6$salt$hash' }] }), [`${at}.users[0].passwd`]);
    assert.deepEqual(win({ users: [{ name: 'capi', sudo: 'ALL=(ALL) NOPASSWD:ALL', lockPassword: true }] }), [`${at}.users[0].sudo`, `${at}.users[0].lockPassword`]);
    assert.deepEqual(win({ bootCommands: ['echo boot'] }), [`${at}.bootCommands`]);
    assert.deepEqual(win({ mounts: [['LABEL=data', 'D:/data']] }), [`${at}.mounts`]);
    assert.deepEqual(win({ useExperimentalRetryJoin: true }), [`${at}.useExperimentalRetryJoin`]);
  });
});
