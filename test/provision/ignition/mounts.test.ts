import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RequestError } from '../../../src/errors.js';
import type { IgnitionUnit } from '../../../src/provision/ignition/config.js';
import { mountSource, udevEncode } from '../../../src/provision/ignition/mounts.js';
import { renderIgnition } from '../../../src/provision/ignition/render.js';
import { escapeUnitPath } from '../../../src/provision/ignition/systemd.js';
import type { PlanMount, ProvisioningPlan } from '../../../src/provision/plan/types.js';
import { problemsOf } from '../../support/errors.js';
import { makePlan } from './plan.js';
import { assertValid, haveSystemd, systemdEscapePath, systemdVerify } from './tools.js';

const mount = (i: number, m: Partial<PlanMount> & { device: string; mountPoint: string }): PlanMount => ({ origin: `spec.provisioning.mounts[${i}]`, ...m });
const units = (p: Partial<ProvisioningPlan>) => (renderIgnition(makePlan(p)).config as { systemd: { units: IgnitionUnit[] } }).systemd.units.filter((u) => !u.name.startsWith('kubeadm-'));

describe('escapeUnitPath', () => {
  const cases: [string, string][] = [
    ['/', '-'],
    ['/var/lib/data', 'var-lib-data'],
    ['/var/lib/my-data', 'var-lib-my\\x2ddata'],
    ['/var//lib/./data/', 'var-lib-data'],
    ['/.hidden/x', '\\x2ehidden-x'],
    ['/mnt/a.b/c_d:e', 'mnt-a.b-c_d:e'],
    ['/mnt/with space', 'mnt-with\\x20space'],
    ['/mnt/100%', 'mnt-100\\x25'],
    ['/mnt/back\\slash', 'mnt-back\\x5cslash'],
    ['/mnt/日本', 'mnt-\\xe6\\x97\\xa5\\xe6\\x9c\\xac'],
    ['/mnt/$HOME@x+y', 'mnt-\\x24HOME\\x40x\\x2by'],
  ];
  for (const [p, expected] of cases) {
    it(`${p} → ${expected}`, () => {
      assert.equal(escapeUnitPath(p), expected);
      if (haveSystemd) assert.equal(escapeUnitPath(p), systemdEscapePath(p), 'agrees with systemd-escape --path');
    });
  }
});

describe('mount sources', () => {
  it('turns fstab tags into /dev/disk links, udev-encoded', () => {
    assert.equal(mountSource('LABEL=data'), '/dev/disk/by-label/data');
    assert.equal(mountSource('UUID=1234-ABCD'), '/dev/disk/by-uuid/1234-ABCD');
    assert.equal(mountSource('PARTLABEL=root'), '/dev/disk/by-partlabel/root');
    assert.equal(mountSource('PARTUUID=0fc63daf'), '/dev/disk/by-partuuid/0fc63daf');
    assert.equal(mountSource('LABEL=my disk/2'), '/dev/disk/by-label/my\\x20disk\\x2f2');
    assert.equal(mountSource('/dev/sdb1'), '/dev/sdb1');
    assert.equal(mountSource('nfs.example.com:/export'), 'nfs.example.com:/export');
    assert.equal(udevEncode('données#1'), 'données#1');
  });
});

describe('renderIgnition: mounts', () => {
  it('writes a .mount unit per mount, with options and fsck for a pass number', async () => {
    const out = renderIgnition(
      makePlan({
        mounts: [
          mount(0, { device: '/dev/sdc1', mountPoint: '/var/lib/my-data', fsType: 'xfs', options: 'defaults,nofail,x-systemd.device-timeout=10', dump: '0', pass: '2' }),
          mount(1, { device: 'UUID=abcd', mountPoint: '/srv/x', fsType: 'auto' }),
        ],
      }),
    );
    const [a, b] = (out.config as { systemd: { units: IgnitionUnit[] } }).systemd.units;
    assert.deepEqual(a, {
      name: 'var-lib-my\\x2ddata.mount',
      enabled: true,
      contents: [
        '[Unit]',
        'Requires=systemd-fsck@dev-sdc1.service',
        'After=systemd-fsck@dev-sdc1.service',
        '',
        '[Mount]',
        'What=/dev/sdc1',
        'Where=/var/lib/my-data',
        'Type=xfs',
        'Options=defaults,nofail,x-systemd.device-timeout=10',
        '',
        '[Install]',
        'WantedBy=local-fs.target',
        '',
      ].join('\n'),
    });
    assert.deepEqual(b, { name: 'srv-x.mount', enabled: true, contents: '[Mount]\nWhat=/dev/disk/by-uuid/abcd\nWhere=/srv/x\n\n[Install]\nWantedBy=local-fs.target\n' });
    await assertValid(out);
  });

  it('takes Type= from the filesystem the plan makes on that device or label', () => {
    const plan = {
      filesystems: [
        { origin: 'f0', device: '/dev/sdd', filesystem: 'xfs', partition: '1', extraOpts: [] },
        { origin: 'f1', device: '/dev/sde', filesystem: 'btrfs', label: 'pool', extraOpts: [] },
      ],
      mounts: [mount(0, { device: '/dev/sdd1', mountPoint: '/a' }), mount(1, { device: 'LABEL=pool', mountPoint: '/b' })],
    };
    const [a, b] = units(plan);
    assert.match(a!.contents!, /\nType=xfs\n/);
    assert.match(b!.contents!, /\nType=btrfs\n/);
  });

  it('escapes % in settings and keeps the unit name matching Where=', () => {
    const [u] = units({ mounts: [mount(0, { device: 'LABEL=50%', mountPoint: '/mnt/100% sure', options: 'context=%x' })] });
    assert.equal(u!.name, 'mnt-100\\x25\\x20sure.mount');
    assert.match(u!.contents!, /\nWhat=\/dev\/disk\/by-label\/50\\x25\nWhere=\/mnt\/100%% sure\nOptions=context=%%x\n/);
  });

  it('writes swap entries as .swap units', async () => {
    const plan = { mounts: [mount(0, { device: '/dev/sdc2', mountPoint: 'none', fsType: 'swap', options: 'sw' }), mount(1, { device: 'LABEL=swap1', mountPoint: 'swap' })] };
    assert.deepEqual(units(plan), [
      { name: 'dev-sdc2.swap', enabled: true, contents: '[Swap]\nWhat=/dev/sdc2\nOptions=sw\n\n[Install]\nWantedBy=swap.target\n' },
      { name: 'dev-disk-by\\x2dlabel-swap1.swap', enabled: true, contents: '[Swap]\nWhat=/dev/disk/by-label/swap1\n\n[Install]\nWantedBy=swap.target\n' },
    ]);
    await assertValid(renderIgnition(makePlan(plan)));
  });

  it('gives units systemd accepts (systemd-analyze verify)', { skip: !haveSystemd && 'systemd-analyze not installed' }, () => {
    const out = renderIgnition(
      makePlan({
        commands: { ...makePlan().commands, boot: ['echo boot'] },
        mounts: [
          mount(0, { device: 'LABEL=my data', mountPoint: '/var/lib/my-data%x', options: 'defaults,nofail', pass: '2' }),
          mount(1, { device: '/dev/sdc2', mountPoint: 'none', fsType: 'swap', options: 'sw' }),
          mount(2, { device: '/dev/sdd', mountPoint: '/srv/.cache/日本', fsType: 'ext4' }),
        ],
      }),
    );
    const all = Object.fromEntries((out.config as { systemd: { units: IgnitionUnit[] } }).systemd.units.map((u) => [u.name, u.contents!]));
    assert.equal(Object.keys(all).length, 5);
    assert.deepEqual(systemdVerify(all), []);
  });

  it('refuses what a unit cannot express, naming the mount', () => {
    let problems: { path: string; message: string }[] = [];
    try {
      renderIgnition(
        makePlan({
          mounts: [
            mount(0, { device: '/dev/sdb1', mountPoint: 'relative/dir' }),
            mount(1, { device: '/dev/sdb2', mountPoint: '/ok', options: 'a\nExecStart=/bin/evil' }),
            mount(2, { device: '/dev/sdb3', mountPoint: '/' }),
            mount(3, { device: 'ephemeral0', mountPoint: 'none', fsType: 'swap' }),
            mount(4, { device: '/dev/sdb4', mountPoint: 'none', fsType: 'ext4' }),
            mount(5, { device: '/dev/sdb5', mountPoint: '/x', fsType: 'ext4 ro' }),
            mount(6, { device: '/dev/sdb6', mountPoint: '/a/../b' }),
            mount(7, { device: '/dev/sdb7', mountPoint: '/same' }),
            mount(8, { device: '/dev/sdb8', mountPoint: '/same/' }),
          ],
        }),
      );
    } catch (e) {
      assert.ok(e instanceof RequestError);
      problems = e.problems;
    }
    assert.deepEqual(
      problems.map((p) => p.path),
      [0, 1, 2, 3, 4, 5, 6, 8].map((i) => `spec.provisioning.mounts[${i}]`),
    );
  });

  it("refuses cloud-init's ephemeral disk aliases, which systemd cannot mount", () => {
    const problems = problemsOf(() => renderIgnition(makePlan({ mounts: [mount(0, { device: 'ephemeral0', mountPoint: '/mnt/eph' })] })));
    assert.deepEqual(problems, [
      { path: 'spec.provisioning.mounts[0]', message: "ephemeral0 is cloud-init's name for the datasource's ephemeral disk, which Ignition cannot resolve: give a device path (e.g. /dev/nvme1n1) or LABEL=" },
    ]);
  });
});
