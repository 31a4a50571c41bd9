/**
 * Windows nodes (issue 12): cloud-config for cloudbase-init, as Cluster API's kubeadm
 * bootstrap provider serves Cluster API Provider Azure's Windows templates. There is no
 * cloudbase-init binary here, so the output is held to what cloudbase-init's source reads:
 * its cloud-config plugins and their keys (CLOUDBASE_INIT_KEYS), its write_files
 * decoding (test/support/windows.ts), and the plugin order its executor keeps (the
 * document's key order).
 */
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { load } from 'js-yaml';
import { CLOUDBASE_INIT_ENCODINGS, CLOUDBASE_INIT_KEYS } from '../../../src/provision/cloudbase-init/render.js';
import { WINDOWS_ABSOLUTE } from '../../../src/request/schema.js';
import { renderNodeBootstrap } from '../../../src/render.js';
import { validateNodeBootstrap } from '../../../src/request/parse.js';
import { problemsOf, requestError } from '../../support/errors.js';
import { example, worker } from '../../support/requests.js';
import { validateCloudConfigSchema } from '../../support/validators.js';
import { AZURE_JSON, capzWindowsRequest, cloudbaseInitDocument, cloudbaseInitFiles } from '../../support/windows.js';

type Doc = Record<string, unknown>;
const render = (req: unknown, options: Parameters<typeof renderNodeBootstrap>[1] = {}) => renderNodeBootstrap(validateNodeBootstrap(req), options);
const windows = (spec: Doc = {}) => worker({ output: { os: 'windows' }, ...spec });
const SENTINEL = 'C:\\run\\cluster-api\\bootstrap-success.complete';

/** Every key of the document is one cloudbase-init reads, every sub-key one its plugin reads. */
function assertCloudbaseInitKeys(doc: Doc): void {
  for (const [key, value] of Object.entries(doc)) {
    assert.ok(Object.hasOwn(CLOUDBASE_INIT_KEYS, key), `${key} is no cloudbase-init cloud-config plugin`);
    const allowed = CLOUDBASE_INIT_KEYS[key];
    if (!allowed) continue;
    const items = Array.isArray(value) ? (value as Doc[]) : [value as Doc];
    for (const item of items) for (const sub of Object.keys(item)) assert.ok(allowed.includes(sub), `${key}.${sub} is not read by cloudbase-init`);
  }
  for (const f of (doc.write_files ?? []) as { path: string; encoding?: string }[]) {
    assert.match(f.path, WINDOWS_ABSOLUTE);
    if (f.encoding !== undefined) assert.ok((CLOUDBASE_INIT_ENCODINGS as readonly string[]).includes(f.encoding), f.encoding);
  }
  const keys = Object.keys(doc);
  assert.equal(keys.at(-1), 'runcmd', 'runcmd runs last: cloudbase-init runs plugins in key order');
}

describe('cloudbase-init: the CAPZ Windows worker template', () => {
  it('renders as cloud-config cloudbase-init reads: users, the files at their Windows paths, the kubeadm config and sentinel where CABPK puts them on Windows', () => {
    const result = render(capzWindowsRequest());
    assert.equal(result.format, 'cloud-config');
    assert.equal(result.mediaType, 'text/cloud-config');
    assert.deepEqual(result.warnings, []);
    const doc = cloudbaseInitDocument(result.body);
    assert.deepEqual(Object.keys(doc), ['users', 'write_files', 'runcmd']);
    assert.deepEqual(doc.users, [{ name: 'capi', groups: 'Administrators', ssh_authorized_keys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG5vdC1hLXJlYWwta2V5LWp1c3QtYS10ZXN0 capi@example'] }]);
    assert.deepEqual(
      (doc.write_files as Doc[]).map((f) => `${String(f.path)} ${String(f.permissions)}`),
      ['c:/k/azure.json 0644', 'C:/defender-exclude-calico.ps1 0744', 'C:/run/kubeadm/kubeadm-join-config.yaml 0640', 'C:/run/cluster-api/placeholder 0640'],
    );
    const files = cloudbaseInitFiles(result.body);
    assert.equal(files.get('c:/k/azure.json')!.toString(), AZURE_JSON);
    assert.equal(files.get('C:/defender-exclude-calico.ps1')!.toString(), 'Add-MpPreference -ExclusionProcess C:/opt/cni/bin/calico.exe\nAdd-MpPreference -ExclusionProcess C:/opt/cni/bin/calico-ipam.exe');
    const kubeadm = load(files.get('C:/run/kubeadm/kubeadm-join-config.yaml')!.toString()) as { kind: string; nodeRegistration: { criSocket: string; kubeletExtraArgs: { name: string; value: string }[] } };
    assert.equal(kubeadm.kind, 'JoinConfiguration');
    assert.equal(kubeadm.nodeRegistration.criSocket, 'npipe:////./pipe/containerd-containerd');
    assert.deepEqual(kubeadm.nodeRegistration.kubeletExtraArgs.find((a) => a.name === 'cloud-config'), { name: 'cloud-config', value: 'c:/k/azure.json' });
    assert.deepEqual(doc.runcmd, [
      `kubeadm join --config C:/run/kubeadm/kubeadm-join-config.yaml && echo success > ${SENTINEL}`,
      'nssm set kubelet start SERVICE_AUTO_START',
      'powershell C:/defender-exclude-calico.ps1',
    ]);
    assertCloudbaseInitKeys(doc);
    // The same document is valid cloud-config by cloud-init's schema too (the keys mean the same).
    assert.deepEqual(validateCloudConfigSchema(result.body), []);
  });

  it('refuses Ignition with a 422 at the field that made the node Windows', () => {
    const e = requestError(() => render(capzWindowsRequest(), { format: 'ignition' }));
    assert.equal(e.status, 422);
    assert.deepEqual(e.problems, [
      { path: 'spec.kubeadmConfig.spec.template.spec.joinConfiguration.nodeRegistration.criSocket', message: 'Ignition is not served for windows nodes; windows nodes get cloud-config' },
    ]);
    assert.deepEqual(problemsOf(() => render(windows({ output: { os: 'windows', format: 'ignition' } }))), [
      { path: 'spec.output.os', message: 'Ignition is not served for windows nodes; windows nodes get cloud-config' },
    ]);
  });
});

describe('cloudbase-init: choosing Windows', () => {
  it('spec.output.os: windows, or an npipe:// criSocket; otherwise linux, unchanged', () => {
    const native = cloudbaseInitDocument(render(windows()).body);
    assert.deepEqual(native.runcmd, [`kubeadm join --config C:/run/kubeadm/kubeadm-join-config.yaml && echo success > ${SENTINEL}`]);
    const piped = worker({ kubeadm: { joinConfiguration: { nodeRegistration: { criSocket: 'npipe:////./pipe/containerd-containerd' } } } });
    assert.deepEqual(cloudbaseInitDocument(render(piped).body).runcmd, native.runcmd);
    const linux = load(render(worker({ kubeadm: { joinConfiguration: { nodeRegistration: { criSocket: 'unix:///run/containerd/containerd.sock' } } } })).body) as Doc;
    assert.deepEqual(linux.runcmd, ['kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml && echo success > /run/cluster-api/bootstrap-success.complete']);
  });

  it('a Windows path on a Linux node, or an npipe:// socket with spec.output.os: linux, is refused naming the field', () => {
    assert.deepEqual(problemsOf(() => render(worker({ provisioning: { files: [{ path: 'c:/k/azure.json', content: '{}' }] } }))), [
      { path: 'spec.provisioning.files[0].path', message: 'is a Windows path; this node is linux (for a Windows node set spec.output.os: windows)' },
    ]);
    assert.deepEqual(problemsOf(() => render(worker({ output: { os: 'linux' }, kubeadm: { joinConfiguration: { nodeRegistration: { criSocket: 'npipe:////./pipe/containerd-containerd' } } } }))), [
      { path: 'spec.kubeadm.joinConfiguration.nodeRegistration.criSocket', message: 'is a Windows named pipe (npipe://), but spec.output.os is linux' },
    ]);
  });
});

describe('cloudbase-init: what a Windows plan can hold', () => {
  it('refuses, naming each field, what cloudbase-init cannot do or has no module for', () => {
    const spec = {
      provisioning: {
        files: [
          { path: '/etc/linux-only', content: 'x' },
          { path: 'C:/k/a.txt', content: 'a' },
          { path: 'c:\\K\\A.TXT', content: 'b' },
          { path: 'C:/run/kubeadm/kubeadm-join-config.yaml', content: 'c' },
          { path: 'C:/k/owned', content: 'd', owner: 'capi:capi' },
        ],
        users: [{ name: 'capi', passwd: '$6$salt$hash', homeDir: '/home/capi', shell: '/bin/bash', sudo: 'ALL=(ALL) NOPASSWD:ALL', lockPassword: true }, { name: 'gone', inactive: true, sshAuthorizedKeys: ['ssh-ed25519 AAAA gone'] }],
        bootCommands: ['echo boot'],
        diskSetup: { filesystems: [{ device: '/dev/sdb', filesystem: 'ntfs' }] },
        mounts: [['LABEL=data', 'D:/data']],
      },
      kubeadm: { useExperimentalRetryJoin: true },
    };
    assert.deepEqual(
      problemsOf(() => render(windows(spec))).map((p) => p.path),
      [
        'spec.provisioning.files[0].path',
        'spec.provisioning.files[2].path',
        'spec.provisioning.files[3].path',
        'spec.provisioning.files[4].owner',
        'spec.provisioning.users[0].passwd',
        'spec.provisioning.users[0].homeDir',
        'spec.provisioning.users[0].shell',
        'spec.provisioning.users[0].sudo',
        'spec.provisioning.users[0].lockPassword',
        'spec.provisioning.users[1].inactive',
        'spec.provisioning.bootCommands',
        'spec.provisioning.diskSetup',
        'spec.provisioning.mounts',
        'spec.kubeadm.useExperimentalRetryJoin',
      ],
    );
    const init = example('init');
    init.spec.output = { os: 'windows' };
    assert.deepEqual(problemsOf(() => render(init)), [{
      path: 'spec.role',
      message: 'must be worker on a Windows node (spec.output.os): kubeadm has no Windows control plane',
    }]);
  });

  it('users: groups, gecos, primary group and keys in cloudbase-init names; an inactive user disabled without a profile', () => {
    const doc = cloudbaseInitDocument(render(windows({ provisioning: { users: [{ name: 'ops', gecos: 'Ops: on-call', groups: 'Administrators, Remote_Users', primaryGroup: 'Users', sshAuthorizedKeys: ['ssh-ed25519 AAAA ops'] }, { name: 'old', inactive: true }] } })).body);
    assert.deepEqual(doc.users, [
      { name: 'ops', gecos: 'Ops: on-call', groups: 'Administrators, Remote_Users', primary_group: 'Users', ssh_authorized_keys: ['ssh-ed25519 AAAA ops'] },
      { name: 'old', inactive: true, no_create_home: true },
    ]);
    assertCloudbaseInitKeys(doc);
  });

  it('ntp as given; over a platform limit, gzip-compressed whole (cloudbase-init decompresses user data)', () => {
    const doc = cloudbaseInitDocument(render(windows({ provisioning: { ntp: { enabled: true, servers: ['time.windows.com'] } } })).body);
    assert.deepEqual(doc.ntp, { enabled: true, servers: ['time.windows.com'] });
    assert.deepEqual(Object.keys(doc), ['write_files', 'ntp', 'runcmd']);
    const big = windows({ provisioning: { files: [{ path: 'C:/k/big.txt', content: 'line of text\n'.repeat(2000) }] } });
    const r = render(big, { platform: 'aws', platformField: '--platform' });
    assert.equal(r.mediaType, 'application/gzip');
    assert.match(r.warnings.at(-1)!, /delivered gzip-compressed whole \(\d+ bytes\), which cloudbase-init recognises by its magic bytes$/);
  });

  it('every file reaches the node byte for byte through the encodings cloudbase-init decodes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.constantFrom('plain', 'base64', 'gzip+base64'), fc.boolean(), (bytes, encoding, append) => {
        const content = encoding === 'plain' ? Buffer.from(bytes).toString('latin1') : encoding === 'base64' ? Buffer.from(bytes).toString('base64') : gzipSync(bytes).toString('base64');
        const expected = encoding === 'plain' ? Buffer.from(content, 'utf8') : Buffer.from(bytes);
        const body = render(windows({ provisioning: { files: [{ path: 'C:/k/blob.bin', content, ...(encoding === 'plain' ? {} : { encoding }), append }] } })).body;
        assert.deepEqual(cloudbaseInitFiles(body).get('C:/k/blob.bin'), expected);
        assertCloudbaseInitKeys(cloudbaseInitDocument(body));
      }),
      { numRuns: 60 },
    );
  });
});
