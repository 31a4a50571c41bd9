/**
 * Differential property: one request, one meaning in both formats. For generated
 * provisioning sections (within what both formats can express, with the values the plan
 * rules are about: repeated disks and mount points, labels at and over each mkfs limit,
 * group names groupadd refuses, multi-line sudo rules, NTP servers with spaces), the
 * cloud-config and Ignition renders either both refuse, naming the same fields, or both
 * accept; and then the files (bytes, mode, owner), directories, users (groups, sudo,
 * keys), filesystems, mounts, NTP servers and commands decoded from the two outputs,
 * each as its node reads it, are equal. The network's differential (networkd units and
 * dracut arguments against cloud-init's own reading of the network-config) is in
 * test/provision/network.test.ts.
 */
import { disksByDevice, filesystemTarget } from '../src/provision/plan/devices.js';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { load, YAML11_SCHEMA } from 'js-yaml';
import { RequestError } from '../src/errors.js';
import { renderNodeBootstrap } from '../src/render.js';
import { validateNodeBootstrap } from '../src/request/parse.js';
import { cloudConfigFiles, ignitionFiles } from './support/decode.js';
import { worker } from './support/requests.js';

const NUM_RUNS = 250;

type Obj = Record<string, unknown>;

// ---------------------------------------------------------------------------------
// Generated requests

const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const someOf = <T>(values: readonly T[], max = values.length) => fc.subarray([...values], { maxLength: max });
/** Mostly a value of `good`, sometimes one of `bad` (what the plan rules refuse). */
const mostly = <T>(good: readonly T[], bad: readonly T[]) => fc.oneof({ weight: 12, arbitrary: fc.constantFrom(...good) }, { weight: 1, arbitrary: fc.constantFrom(...bad) });
/** Mostly distinct by `key`, sometimes with repeats. */
const list = <T>(item: fc.Arbitrary<T>, key: (t: T) => string, maxLength: number) =>
  fc.oneof({ weight: 6, arbitrary: fc.uniqueArray(item, { maxLength, selector: key }) }, { weight: 1, arbitrary: fc.array(item, { maxLength }) });
const USERS = ['alice', 'bob', 'svc-1'];
const command = fc.constantFrom('swapoff -a', 'echo "a b" > /tmp/x', "echo '$HOME' %n ${x}", 'modprobe br_netfilter', 'true # done');

const user = fc.record(
  {
    name: fc.constantFrom(...USERS),
    groups: fc.tuple(someOf(['sudo', 'ops', 'docker', 'wheel'], 3), mostly([[] as string[]], [['bad name'], ['-x']])).map(([g, b]) => [...g, ...b].join(', ')),
    sudo: mostly(['ALL=(ALL) NOPASSWD:ALL'], ['ALL=(ALL) ALL\nroot ALL=(ALL) ALL']),
    sshAuthorizedKeys: someOf(['ssh-ed25519 AAAAC3Nza one@x', 'ssh-rsa BBBB two@y']),
    homeDir: fc.constantFrom('/home/alt', '/srv/home/x'),
  },
  { requiredKeys: ['name'] },
);
const file = fc.record(
  {
    path: fc.constantFrom('/etc/motd', '/home/alice/.kube/config', '/home/bob/a/b/c.txt', '/opt/x y/z', '/srv/home/x/.ssh/extra', '/home/svc-1/d/e'),
    owner: fc.constantFrom('root:root', 'alice:alice', 'bob', 'bob:ops', 'svc-1:svc-1'),
    permissions: fc.constantFrom('0644', '0600', '0755'),
    content: fc.string({ maxLength: 40 }),
  },
  { requiredKeys: ['path', 'content'] },
);
const DISKS = ['/dev/sdb', '/dev/nvme0n1', '/dev/mmcblk0', '/dev/loop0'];
const filesystem = fc.record(
  {
    device: fc.constantFrom(...DISKS, '/dev/nvme0n1p1'),
    partition: fc.constantFrom('1', '2', 'none'),
    filesystem: fc.constantFrom('ext4', 'xfs', 'vfat', 'swap', 'btrfs'),
    label: mostly(['data', 'x'.repeat(11), 'é'.repeat(5)], ['x'.repeat(12), 'x'.repeat(13), 'x'.repeat(15), 'x'.repeat(16), 'x'.repeat(17), 'é'.repeat(8), 'ü'.repeat(9)]),
    overwrite: fc.boolean(),
  },
  { requiredKeys: ['device', 'filesystem'] },
);
const mount = fc
  .tuple(
    fc.constantFrom('LABEL=data', '/dev/sdb1', '/dev/nvme0n1p1', 'LABEL=my data'),
    fc.constantFrom('/var/lib/etcd', '/var/lib/etcd/', '/mnt/my data', '/srv', '/data//x'),
    maybe(fc.constantFrom('ext4', 'xfs', 'auto')),
    maybe(fc.constantFrom('defaults', 'nofail,noatime')),
  )
  .map(([d, m, t, o]) => [d, m, ...(t !== undefined ? [t, ...(o !== undefined ? [o] : [])] : [])]);
const provisioning = fc.record(
  {
    users: fc.uniqueArray(user, { maxLength: 3, selector: (u) => u.name }),
    files: fc.uniqueArray(file, { maxLength: 3, selector: (f) => f.path }),
    diskSetup: fc.record(
      {
        partitions: list(fc.record({ device: fc.constantFrom(...DISKS), layout: fc.constant(true) }), (d) => d.device, 2),
        filesystems: list(filesystem, (f) => f.device, 3),
      },
      { requiredKeys: [] },
    ),
    mounts: list(mount, (m) => m[1]!.replace(/\/+/g, '/').replace(/\/$/, ''), 3),
    ntp: fc.record({ enabled: fc.boolean(), servers: fc.tuple(someOf(['0.pool.ntp.org', 'time.example.com']), mostly([[] as string[]], [['a b']])).map(([a, b]) => [...a, ...b]) }, { requiredKeys: [] }),
    preKubeadmCommands: fc.array(command, { maxLength: 3 }),
    postKubeadmCommands: fc.array(command, { maxLength: 2 }),
    bootCommands: fc.array(command, { maxLength: 2 }),
  },
  { requiredKeys: [] },
);

// ---------------------------------------------------------------------------------
// What a node gets, decoded from each format

interface Meaning {
  files: Record<string, { bytes: string; mode: number; owner: string }>;
  directories: Record<string, string>;
  users: Record<string, { groups: string[]; sudo?: string; keys: string[] }>;
  filesystems: { device: string; format: string; label?: string }[];
  mounts: { device: string; where: string; type?: string }[];
  ntp: string[];
  commands: { boot: string[]; pre: string[]; post: string[] };
}

/** fstab(5) octal escapes back to bytes. */
const fstabUnescape = (v: string) => v.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
/** A mount point as the kernel resolves it. */
const cleanPath = (p: string) => `/${p.split('/').filter((s) => s !== '' && s !== '.').join('/')}`;
/** The device name a mount uses, tag form for udev label links. */
const mountDevice = (d: string) => (d.startsWith('/dev/disk/by-label/') ? `LABEL=${d.slice(19).replace(/\\x([0-9a-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)))}` : d);
/** `chown -- owner path...` as sh splits it (single quotes only, as bootwright quotes). */
const shWords = (line: string) => [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);

function cloudMeaning(text: string, requestPaths: Set<string>): Meaning {
  const doc = load(text, { schema: YAML11_SCHEMA }) as Obj;
  const bytes = cloudConfigFiles(text);
  const files: Meaning['files'] = {};
  for (const f of (doc.write_files as { path: string; owner: string; permissions: string }[] | undefined) ?? []) {
    if (!requestPaths.has(f.path)) continue;
    const [u = '', g = 'root'] = f.owner.split(':');
    files[f.path] = { bytes: bytes.get(f.path)!.toString('hex'), mode: parseInt(f.permissions, 8), owner: `${u}:${g}` };
  }
  const runcmd = (doc.runcmd as string[] | undefined) ?? [];
  const directories: Meaning['directories'] = {};
  const chowns = runcmd.filter((l) => l.startsWith('chown -- '));
  for (const l of chowns) {
    const [, , owner, ...paths] = shWords(l);
    for (const p of paths) directories[p] = owner!;
  }
  const rest = runcmd.slice(chowns.length);
  const kubeadm = rest.findIndex((l) => l.startsWith('kubeadm '));
  const users: Meaning['users'] = {};
  for (const u of (doc.users as { name: string; groups?: string; sudo?: string; ssh_authorized_keys?: string[] }[] | undefined) ?? []) {
    users[u.name] = { groups: (u.groups ?? '').split(',').map((g) => g.trim()).filter(Boolean), ...(u.sudo ? { sudo: u.sudo } : {}), keys: [...new Set(u.ssh_authorized_keys ?? [])] };
  }
  const diskSetup = (doc.disk_setup as Record<string, { layout: boolean | unknown[] }> | undefined) ?? {};
  const fsSetup = (doc.fs_setup as { device: string; partition?: string; filesystem: string; label?: string }[] | undefined) ?? [];
  const ntp = doc.ntp as { enabled?: boolean; servers?: string[] } | undefined;
  const bootcmd = (doc.bootcmd as string[] | undefined) ?? [];
  return {
    files,
    directories,
    users,
    filesystems: fsSetup.map((f) => {
      assert.ok(f.partition === undefined || ['auto', 'none'].includes(f.partition), `fs_setup partition ${String(f.partition)} is the device itself or cloud-init's choice`);
      // As cc_disk_setup chooses: no partition is cloud-init's "any", partition 1 of a disk disk_setup partitions.
      const device = f.partition === undefined ? filesystemTarget(f, disksByDevice(Object.entries(diskSetup).map(([d, v]) => ({ device: d, layout: v.layout })))) : f.device;
      return { device: device!, format: f.filesystem, ...(f.label !== undefined ? { label: f.label } : {}) };
    }),
    mounts: ((doc.mounts as string[][] | undefined) ?? []).map(([d, m, t]) => ({ device: fstabUnescape(d!), where: cleanPath(fstabUnescape(m!)), ...(t !== undefined && t !== 'auto' ? { type: t } : {}) })),
    ntp: ntp && ntp.enabled !== false ? (ntp.servers ?? []) : [],
    commands: { boot: bootcmd.filter((l) => !l.startsWith('mkdir -p -- ')), pre: rest.slice(0, kubeadm), post: rest.slice(kubeadm + 1) },
  };
}

type IgnEntry = { path: string; mode?: number; user?: { name?: string }; group?: { name?: string } };

function ignitionMeaning(config: Obj, requestPaths: Set<string>): Meaning {
  const storage = config.storage as { files?: IgnEntry[]; directories?: IgnEntry[]; filesystems?: { device: string; format: string; label?: string }[] };
  const bytes = ignitionFiles(config);
  const files: Meaning['files'] = {};
  for (const f of storage.files ?? []) {
    if (requestPaths.has(f.path)) files[f.path] = { bytes: bytes.get(f.path)!.toString('hex'), mode: f.mode!, owner: `${f.user!.name!}:${f.group!.name!}` };
  }
  const directories: Meaning['directories'] = {};
  for (const d of storage.directories ?? []) directories[d.path] = `${d.user!.name!}:${d.group!.name!}`;
  const script = (path: string) => (bytes.get(path)?.toString('utf8') ?? '#!/bin/sh\n').split('\n').slice(1, -1);
  const users: Meaning['users'] = {};
  for (const u of (config.passwd as { users?: { name: string; groups?: string[]; sshAuthorizedKeys?: string[] }[] } | undefined)?.users ?? []) {
    assert.equal(u.groups, undefined, 'no supplementary group reaches useradd --groups');
    users[u.name] = { groups: [], keys: u.sshAuthorizedKeys ?? [] };
  }
  for (const line of script('/etc/kubeadm/groups.sh').filter((l) => l.startsWith('usermod '))) {
    const [, , , groups, name] = shWords(line);
    users[name!]!.groups = groups!.split(',');
  }
  // Groups that may not exist when Ignition writes files are given by the groups script.
  for (const line of script('/etc/kubeadm/groups.sh').filter((l) => l.startsWith('chgrp '))) {
    const [, , group, path] = shWords(line);
    const entry = files[path!] ?? (directories[path!] !== undefined ? undefined : assert.fail(`chgrp of ${path!}, which is neither a file nor a directory`));
    if (entry) entry.owner = `${entry.owner.split(':')[0]!}:${group!}`;
    else directories[path!] = `${directories[path!]!.split(':')[0]!}:${group!}`;
  }
  for (const [path, b] of bytes) {
    if (!path.startsWith('/etc/sudoers.d/')) continue;
    const text = b.toString('utf8');
    const name = Object.keys(users).find((n) => text.startsWith(`${n} `))!;
    users[name]!.sudo = text.slice(name.length + 1, -1);
  }
  const units = ((config.systemd as { units?: { name: string; contents?: string }[] }).units ?? []).filter((u) => u.name.endsWith('.mount'));
  const setting = (text: string, key: string) => text.split('\n').find((l) => l.startsWith(`${key}=`))?.slice(key.length + 1).replace(/%%/g, '%');
  // The groups script runs first (its memberships are read above), then the pre commands.
  const whole = script('/etc/kubeadm/bootstrap.sh');
  const bootstrap = whole[0] === '/bin/sh /etc/kubeadm/groups.sh' ? whole.slice(1) : whole;
  const kubeadm = bootstrap.findIndex((l) => l.startsWith('kubeadm '));
  const dropin = bytes.get('/etc/systemd/timesyncd.conf.d/90-bootwright.conf')?.toString('utf8');
  return {
    files,
    directories,
    users,
    filesystems: (storage.filesystems ?? []).map((f) => ({ device: f.device, format: f.format, ...(f.label !== undefined ? { label: f.label } : {}) })),
    mounts: units.map((u) => {
      const type = setting(u.contents!, 'Type');
      return { device: mountDevice(setting(u.contents!, 'What')!), where: setting(u.contents!, 'Where')!, ...(type !== undefined ? { type } : {}) };
    }),
    ntp: dropin ? dropin.split('\n')[2]!.slice(4).split(' ') : [],
    commands: { boot: script('/etc/kubeadm/bootcmd.sh'), pre: bootstrap.slice(0, kubeadm - 1), post: bootstrap.slice(kubeadm + 1) },
  };
}

/** Render in one format: the output, or the problems of the RequestError. */
function attempt(req: unknown, format: 'cloud-config' | 'ignition'): { body: string } | { problems: { path: string; message: string }[] } {
  try {
    return { body: renderNodeBootstrap(validateNodeBootstrap(req), { format }).body };
  } catch (e) {
    if (e instanceof RequestError) return { problems: e.problems };
    throw e;
  }
}

/** Runs each outcome was seen in, so the property cannot pass on refusals alone. */
const outcomes = { accepted: 0, refused: 0 };

function sameMeaning(prov: Obj): void {
  const req = worker({ provisioning: prov });
  const cloud = attempt(req, 'cloud-config');
  const ign = attempt(req, 'ignition');
  if ('problems' in cloud || 'problems' in ign) {
    assert.ok('problems' in cloud && 'problems' in ign, `one format refused, the other accepted: ${JSON.stringify('problems' in cloud ? cloud.problems : (ign as { problems: unknown }).problems)}`);
    assert.deepEqual(ign.problems.map((p) => p.path), cloud.problems.map((p) => p.path), 'both refuse, naming the same fields');
    outcomes.refused++;
    return;
  }
  const paths = new Set(((prov.files as { path: string }[] | undefined) ?? []).map((f) => f.path));
  const c = cloudMeaning(cloud.body, paths);
  const i = ignitionMeaning(JSON.parse(ign.body) as Obj, paths);
  // A mount whose type cloud-config leaves to the kernel (auto/unset) may get the plan
  // filesystem's type in Ignition: compare types only where cloud-config names one.
  i.mounts = i.mounts.map((m, k) => (c.mounts[k]?.type === undefined ? { device: m.device, where: m.where } : m));
  assert.deepEqual(i, c);
  outcomes.accepted++;
}

describe('differential: cloud-config and Ignition mean the same', () => {
  it(`refuse together naming the same fields, or decode to the same node (${NUM_RUNS} runs)`, () => {
    fc.assert(fc.property(provisioning, sameMeaning), { numRuns: NUM_RUNS });
    // Both outcomes are exercised in earnest (about 3:1 with these generators; at least a tenth each).
    assert.ok(outcomes.accepted >= NUM_RUNS / 10, `only ${outcomes.accepted} of ${NUM_RUNS} runs were accepted`);
    assert.ok(outcomes.refused >= NUM_RUNS / 10, `only ${outcomes.refused} of ${NUM_RUNS} runs were refused`);
  });

  it('a fixed request exercising every decoded part is accepted and means the same', () => {
    sameMeaning({
      users: [{ name: 'alice', groups: 'sudo, ops', sudo: 'ALL=(ALL) NOPASSWD:ALL', sshAuthorizedKeys: ['ssh-ed25519 AAAAC3Nza one@x'] }],
      files: [{ path: '/home/alice/.kube/config', owner: 'alice:alice', permissions: '0600', content: 'x' }],
      diskSetup: { partitions: [{ device: '/dev/nvme0n1', layout: true }], filesystems: [{ device: '/dev/nvme0n1', partition: '1', filesystem: 'ext4', label: 'data' }] },
      mounts: [['LABEL=data', '/mnt/my data', 'ext4', 'defaults']],
      ntp: { servers: ['0.pool.ntp.org'] },
      preKubeadmCommands: ['swapoff -a'],
      postKubeadmCommands: ['echo done'],
      bootCommands: ['modprobe br_netfilter'],
    });
    const out = renderNodeBootstrap(validateNodeBootstrap(worker({ provisioning: { users: [{ name: 'alice', groups: 'sudo' }], files: [{ path: '/home/alice/.kube/config', owner: 'alice', content: 'x' }] } })), { format: 'ignition' });
    assert.ok(ignitionFiles(JSON.parse(out.body) as Record<string, unknown>).get('/etc/kubeadm/bootstrap.sh')!.toString().startsWith('#!/bin/sh\n/bin/sh /etc/kubeadm/groups.sh\n'));
  });
});
