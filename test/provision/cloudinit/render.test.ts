import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { gunzipSync as gunzip, gzipSync } from 'node:zlib';
import { load, YAML11_SCHEMA } from 'js-yaml';
import { renderNodeBootstrap } from '../../../src/render.js';
import { parseNodeBootstrap, validateNodeBootstrap } from '../../../src/request/parse.js';
import { cloudInitSchema, validateCloudConfigSchema } from '../../support/validators.js';
import { example, worker } from '../../support/requests.js';

type WriteFile = { path: string; content: string; encoding?: string; owner: string; permissions: string; append?: boolean; defer?: boolean };
type CloudConfig = Record<string, unknown> & { write_files: WriteFile[]; runcmd: string[] };

/** Render a request as cloud-config, check it with both validators, and parse it as cloud-init does (YAML 1.1). */
async function render(value: unknown): Promise<{ text: string; doc: CloudConfig }> {
  const text = renderNodeBootstrap(validateNodeBootstrap(value), { format: 'cloud-config' }).body;
  assert.ok(text.startsWith('#cloud-config\n') && text.endsWith('\n'));
  assert.deepEqual(validateCloudConfigSchema(text), []);
  assert.deepEqual(await cloudInitSchema(text), []);
  return { text, doc: load(text, { schema: YAML11_SCHEMA }) as CloudConfig };
}

/** The bytes cloud-init writes for a write_files entry (cloud-init `write_files.decode_perms`/`extract_contents`). */
function decoded(f: WriteFile): Buffer {
  const raw = f.content;
  switch (f.encoding) {
    case undefined:
      return Buffer.from(raw, 'utf8');
    case 'b64':
      return Buffer.from(raw, 'base64');
    case 'gz+b64':
      return Buffer.from(gunzip(Buffer.from(raw, 'base64')));
    default:
      assert.fail(`unexpected encoding ${f.encoding}`);
  }
}
const caseFile = (name: string) => readFileSync(new URL(`../../fixtures/cases/${name}`, import.meta.url), 'utf8');

describe('cloud-config renderer', () => {
  it('worker: the join config under /run/kubeadm, kubeadm chained to the sentinel, commands in order', async () => {
    const { doc } = await render(
      worker({ provisioning: { preKubeadmCommands: ['swapoff -a'], postKubeadmCommands: ['echo post'], bootCommands: ['echo boot'] } }),
    );
    assert.deepEqual(doc.bootcmd, ['echo boot']);
    assert.deepEqual(doc.runcmd, [
      'swapoff -a',
      'kubeadm join --config /run/kubeadm/kubeadm-join-config.yaml && echo success > /run/cluster-api/bootstrap-success.complete',
      'echo post',
    ]);
    assert.deepEqual(
      doc.write_files.map((f) => [f.path, f.owner, f.permissions]),
      [
        ['/run/kubeadm/kubeadm-join-config.yaml', 'root:root', '0640'],
        ['/run/cluster-api/placeholder', 'root:root', '0640'],
      ],
    );
  });

  it('init: certificates under /etc/kubernetes/pki (certs 0640, keys 0600), --upload-certs and verbosity after --config', async () => {
    const init = example('init');
    init.spec.kubeadm = { verbosity: 5 };
    const { doc } = await render(init);
    assert.deepEqual(
      doc.write_files.map((f) => [f.path, f.permissions]).slice(0, 8),
      [
        ['/etc/kubernetes/pki/ca.crt', '0640'],
        ['/etc/kubernetes/pki/ca.key', '0600'],
        ['/etc/kubernetes/pki/etcd/ca.crt', '0640'],
        ['/etc/kubernetes/pki/etcd/ca.key', '0600'],
        ['/etc/kubernetes/pki/front-proxy-ca.crt', '0640'],
        ['/etc/kubernetes/pki/front-proxy-ca.key', '0600'],
        ['/etc/kubernetes/pki/sa.pub', '0640'],
        ['/etc/kubernetes/pki/sa.key', '0600'],
      ],
    );
    const ca = (init.spec.cluster as { certificates: { ca: { key: string } } }).certificates.ca.key;
    assert.equal(doc.write_files[1]!.content, `${ca.trim()}\n`);
    assert.ok(doc.runcmd.includes('kubeadm init --config /run/kubeadm/kubeadm.yaml --upload-certs --v=5 && echo success > /run/cluster-api/bootstrap-success.complete'));
  });

  it('write_files: permissions quoted, owner, append, defer for non-root owners, each encoding decoded to the input bytes', async () => {
    const binary = Buffer.from([0, 1, 2, 255, 254, 10, 13]);
    const text = 'line one\nline two';
    const { doc } = await render(
      worker({
        provisioning: {
          files: [
            { path: '/etc/plain', content: 'yes', permissions: '0644', append: false },
            { path: '/etc/b64', content: binary.toString('base64'), encoding: 'base64', permissions: '0600' },
            { path: '/etc/gz', content: gzipSync(text).toString('base64'), encoding: 'gzip+base64', owner: 'nobody', append: true },
            { path: '/etc/crlf', content: 'a\r\nb\r\n', owner: 'daemon:daemon' },
          ],
        },
      }),
    );
    const [plain, b64, gz, crlf] = doc.write_files;
    assert.deepEqual(plain, { path: '/etc/plain', owner: 'root:root', permissions: '0644', content: 'yes' });
    assert.equal(b64!.encoding, 'b64');
    assert.deepEqual(decoded(b64!), binary);
    assert.deepEqual({ ...gz, content: undefined }, { path: '/etc/gz', owner: 'nobody:root', permissions: '0644', encoding: 'gz+b64', content: undefined, append: true, defer: true });
    assert.equal(decoded(gz!).toString(), text);
    assert.equal(crlf!.defer, true);
    assert.equal(decoded(crlf!).toString(), 'a\r\nb\r\n');
  });

  it('users, ntp, explicit false kept and absent fields omitted', async () => {
    const { doc } = await render(
      worker({
        provisioning: {
          users: [
            { name: 'ops', groups: 'wheel, docker', sudo: 'ALL=(ALL) NOPASSWD:ALL', lockPassword: false, sshAuthorizedKeys: ['ssh-ed25519 AAAA ops'] },
            { name: 'old', inactive: true },
          ],
          ntp: { enabled: false, servers: ['0.pool.ntp.org'] },
        },
      }),
    );
    assert.deepEqual(doc.users, [
      { name: 'ops', groups: 'wheel, docker', lock_passwd: false, sudo: 'ALL=(ALL) NOPASSWD:ALL', ssh_authorized_keys: ['ssh-ed25519 AAAA ops'] },
      { name: 'old', expiredate: '1970-01-02' },
    ]);
    assert.deepEqual(doc.ntp, { enabled: false, servers: ['0.pool.ntp.org'] });
  });

  it('case 002: layout true, overwrite false and table_type gpt kept explicitly', async () => {
    const { doc } = await render(parseNodeBootstrap(caseFile('002-disk-layout-true.yaml'), 'yaml'));
    assert.deepEqual(doc.disk_setup, { '/dev/sdb': { table_type: 'gpt', layout: true, overwrite: false } });
    assert.deepEqual(doc.fs_setup, [{ label: 'data', filesystem: 'ext4', device: '/dev/sdb1', extra_opts: ['-E', 'lazy_itable_init=1,lazy_journal_init=1'] }]);
    assert.deepEqual(doc.mounts, [['LABEL=data', '/var/lib/data']]);
  });

  it('case 003: a file owned by a user the request creates is deferred', async () => {
    const { doc } = await render(parseNodeBootstrap(caseFile('003-file-owned-by-new-user.yaml'), 'yaml'));
    const motd = doc.write_files.find((f) => f.path === '/home/ops/.config/motd.txt');
    assert.deepEqual(motd, { path: '/home/ops/.config/motd.txt', owner: 'ops:ops', permissions: '0640', content: 'Managed by bootwright. Do not edit.\n', defer: true });
    assert.equal((doc.users as { name: string }[])[0]!.name, 'ops');
  });

  it('a numbered filesystem partition is the partition\'s own device (p before the number on NVMe, MMC, loop)', async () => {
    const { doc } = await render(
      worker({
        provisioning: {
          diskSetup: {
            filesystems: [
              { device: '/dev/sdb', filesystem: 'xfs', partition: '2' },
              { device: '/dev/sdc', filesystem: 'ext4', partition: 'auto' },
              { device: '/dev/nvme0n1', filesystem: 'ext4', partition: '1', label: 'data' },
              { device: '/dev/mmcblk0', filesystem: 'vfat', partition: '1', overwrite: true },
              { device: '/dev/loop0', filesystem: 'ext4', partition: '3' },
            ],
          },
        },
      }),
    );
    assert.deepEqual(doc.fs_setup, [
      { filesystem: 'xfs', device: '/dev/sdb2', partition: 'auto' },
      { filesystem: 'ext4', device: '/dev/sdc', partition: 'auto' },
      { label: 'data', filesystem: 'ext4', device: '/dev/nvme0n1p1', partition: 'auto' },
      { filesystem: 'vfat', device: '/dev/mmcblk0p1', partition: 'none', overwrite: true },
      { filesystem: 'ext4', device: '/dev/loop0p3', partition: 'auto' },
    ]);
  });

  it('writes mount points and devices fstab-escaped, and creates escaped mount points in bootcmd first', async () => {
    const { doc } = await render(worker({ provisioning: { bootCommands: ['echo hi'], mounts: [['LABEL=my data', '/mnt/my data', 'ext4', 'defaults'], ['/dev/sdb1', '/var/lib/etcd']] } }));
    assert.deepEqual(doc.mounts, [['LABEL=my\\040data', '/mnt/my\\040data', 'ext4', 'defaults'], ['/dev/sdb1', '/var/lib/etcd']]);
    assert.deepEqual(doc.bootcmd, ["mkdir -p -- '/mnt/my data'", 'echo hi']);
  });

  it('chowns the directories above a created user\'s files before the pre commands', async () => {
    const { doc } = await render(
      worker({
        provisioning: {
          users: [{ name: 'bob' }],
          files: [{ path: '/home/bob/.kube/cache/x', owner: 'bob:bob', content: 'x' }, { path: '/home/bob/.config/a', owner: 'bob', content: 'a' }],
          preKubeadmCommands: ['echo pre'],
        },
      }),
    );
    const runcmd = doc.runcmd;
    assert.deepEqual(runcmd.slice(0, 3), ['chown -- bob:bob /home/bob/.kube /home/bob/.kube/cache', 'chown -- bob:root /home/bob/.config', 'echo pre']);
  });

  it('partition layouts with percentages and types', async () => {
    const { doc } = await render(
      worker({ provisioning: { diskSetup: { partitions: [{ device: '/dev/sdc', tableType: 'mbr', diskLayout: [{ percentage: 33, partitionType: '82' }, { percentage: 67 }] }] } } }),
    );
    assert.deepEqual(doc.disk_setup, { '/dev/sdc': { table_type: 'mbr', layout: [[33, 82], 67] } });
    const gpt = await render(
      worker({ provisioning: { diskSetup: { partitions: [{ device: '/dev/sdc', tableType: 'gpt', diskLayout: [{ percentage: 10, partitionType: '82' }, { percentage: 90, partitionType: '83' }] }] } } }),
    );
    assert.deepEqual(gpt.doc.disk_setup, { '/dev/sdc': { table_type: 'gpt', layout: [[10, 8200], [90, 8300]] } });
  });
});
