/**
 * One test per input in test/fixtures/cases/: small requests that break bootstrap-data
 * generators in the field, each asserting the right value in both formats.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { load, YAML11_SCHEMA } from 'js-yaml';
import { RequestError } from '../src/errors.js';
import { checkIgnitionRules } from '../src/provision/ignition/rules.js';
import { renderNodeBootstrap } from '../src/render.js';
import { parseNodeBootstrap, validateNodeBootstrap } from '../src/request/parse.js';
import type { NodeBootstrap } from '../src/request/schema.js';
import { ignitionFiles } from './support/decode.js';
import { cloudInitSchema, ignitionValidate, validateCloudConfigSchema, validateIgnitionSchema } from './support/validators.js';

const CASES = new URL('./fixtures/cases/', import.meta.url);
const text = (name: string) => readFileSync(new URL(name, CASES), 'utf8');

type Ignition = {
  ignition: { version: string };
  storage: {
    disks?: { device: string; wipeTable?: boolean; partitions: { number?: number; label?: string }[] }[];
    filesystems?: { device: string; format: string; label?: string; options?: string[]; wipeFilesystem?: boolean }[];
    files: { path: string; mode: number; user?: { name: string }; group?: { name: string } }[];
  };
  systemd: { units: { name: string; enabled?: boolean; contents?: string }[] };
  passwd?: { users: { name: string; sshAuthorizedKeys?: string[] }[] };
};

/** Render both formats and check each with every validator. */
async function renderBoth(req: NodeBootstrap) {
  const cc = renderNodeBootstrap(req, { format: 'cloud-config' }).body;
  assert.deepEqual(validateCloudConfigSchema(cc), []);
  assert.deepEqual(await cloudInitSchema(cc), []);
  const ign = renderNodeBootstrap(req, { format: 'ignition' });
  const config = JSON.parse(ign.body) as Ignition;
  assert.deepEqual(validateIgnitionSchema(ign.body, ign.ignitionVersion!), []);
  assert.deepEqual(checkIgnitionRules(config), []);
  assert.deepEqual(await ignitionValidate(ign.body), []);
  return { cc: load(cc, { schema: YAML11_SCHEMA }) as Record<string, unknown>, config };
}

describe('field cases', () => {
  it('every case file has a test here', () => {
    const files = readdirSync(CASES).filter((f) => f.endsWith('.yaml')).sort();
    assert.deepEqual(files, ['001-command-with-template-braces.yaml', '002-disk-layout-true.yaml', '003-file-owned-by-new-user.yaml']);
  });

  it('001: a command YAML reads as a mapping is refused by field; the intended commands survive exactly', async () => {
    // As written, `- echo "done: $(date)" >> …` is a YAML mapping (": " outside quotes), in
    // every YAML reader: say so, naming the field, instead of emitting broken user data.
    assert.throws(
      () => parseNodeBootstrap(text('001-command-with-template-braces.yaml'), 'yaml'),
      (e: RequestError) =>
        e.problems.length === 1 && e.problems[0]!.path === 'spec.provisioning.postKubeadmCommands[1]' && e.problems[0]!.message.includes('quote the whole command'),
    );
    // The commands the author meant, as strings.
    const value = load(text('001-command-with-template-braces.yaml')) as { spec: { provisioning: { postKubeadmCommands: unknown[] } } };
    const intended = ["sed -i 's/{{ .PodSubnet }}/192.168.0.0\\/16/' /etc/cni/calico.yaml", 'echo "done: $(date)" >> /var/log/bootstrap.log'];
    assert.equal(value.spec.provisioning.postKubeadmCommands[0], intended[0]);
    value.spec.provisioning.postKubeadmCommands = intended;
    const { cc, config } = await renderBoth(validateNodeBootstrap(value));
    assert.deepEqual((cc.runcmd as string[]).slice(1), intended);
    const script = ignitionFiles(config).get('/etc/kubeadm/bootstrap.sh')!.toString('utf8');
    for (const line of intended) assert.ok(script.split('\n').includes(line), `script lacks ${line}`);
  });

  it('002: layout true gives Ignition partition 1 with filesystem and mount unit; cloud-config keeps explicit values', async () => {
    const { cc, config } = await renderBoth(parseNodeBootstrap(text('002-disk-layout-true.yaml'), 'yaml'));
    assert.deepEqual(cc.disk_setup, { '/dev/sdb': { table_type: 'gpt', layout: true, overwrite: false } });
    assert.deepEqual(cc.fs_setup, [{ label: 'data', filesystem: 'ext4', device: '/dev/sdb1', extra_opts: ['-E', 'lazy_itable_init=1,lazy_journal_init=1'] }]);
    assert.deepEqual(cc.mounts, [['LABEL=data', '/var/lib/data']]);
    const disk = config.storage.disks!.find((d) => d.device === '/dev/sdb')!;
    assert.equal(disk.partitions.length, 1);
    assert.equal(disk.partitions[0]!.number, 1);
    assert.notEqual(disk.wipeTable, true, 'overwrite: false must not wipe the table');
    const fs = config.storage.filesystems!.find((f) => f.device === '/dev/sdb1')!;
    assert.equal(fs.format, 'ext4');
    assert.equal(fs.label, 'data');
    assert.deepEqual(fs.options, ['-E', 'lazy_itable_init=1,lazy_journal_init=1']);
    assert.notEqual(fs.wipeFilesystem, true);
    const unit = config.systemd.units.find((u) => u.name === 'var-lib-data.mount')!;
    assert.equal(unit.enabled, true);
    assert.match(unit.contents!, /^What=\/dev\/disk\/by-label\/data$/m);
    assert.match(unit.contents!, /^Where=\/var\/lib\/data$/m);
    assert.match(unit.contents!, /^Type=ext4$/m);
  });

  it('003: a file owned by a user the request creates is deferred (cloud-config) and owned by name (Ignition)', async () => {
    const { cc, config } = await renderBoth(parseNodeBootstrap(text('003-file-owned-by-new-user.yaml'), 'yaml'));
    const motd = (cc.write_files as Record<string, unknown>[]).find((f) => f.path === '/home/ops/.config/motd.txt');
    assert.deepEqual(motd, { path: '/home/ops/.config/motd.txt', owner: 'ops:ops', permissions: '0640', content: 'Managed by bootwright. Do not edit.\n', defer: true });
    const file = config.storage.files.find((f) => f.path === '/home/ops/.config/motd.txt')!;
    assert.equal(file.mode, 416);
    assert.deepEqual(file.user, { name: 'ops' });
    assert.deepEqual(file.group, { name: 'ops' });
    const ops = config.passwd!.users.find((u) => u.name === 'ops')!;
    assert.deepEqual(ops.sshAuthorizedKeys, ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExampleExampleExampleExampleExampleExa ops@example']);
  });
});
