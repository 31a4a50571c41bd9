import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderIgnition } from '../../../src/provision/ignition/render.js';
import type { PlanUser } from '../../../src/provision/plan/types.js';
import { ignitionFiles } from '../../support/decode.js';
import { makePlan } from './plan.js';
import { assertValid } from './tools.js';
import { problemsOf } from '../../support/errors.js';

const user = (i: number, u: Partial<PlanUser> & { name: string }): PlanUser => ({ origin: `spec.provisioning.users[${i}]`, groups: [], sshAuthorizedKeys: [], ...u });
const users = (out: { config: Record<string, unknown> }) => (out.config as { passwd: { users: unknown[] } }).passwd.users;

describe('renderIgnition: users', () => {
  it('maps every field, in a fixed order', async () => {
    const out = renderIgnition(
      makePlan({
        users: [
          user(0, {
            name: 'alice',
            gecos: 'Alice Example',
            groups: ['wheel', 'docker'],
            homeDir: '/home/alice',
            shell: '/bin/bash',
            passwd: '$6$rounds=4096$salt$hash',
            primaryGroup: 'alice',
            sshAuthorizedKeys: ['ssh-ed25519 AAAA one', 'ssh-rsa BBBB two', 'ssh-ed25519 AAAA one'],
          }),
          user(1, { name: 'bob' }),
        ],
      }),
    );
    assert.deepEqual(users(out), [
      {
        name: 'alice',
        passwordHash: '$6$rounds=4096$salt$hash',
        sshAuthorizedKeys: ['ssh-ed25519 AAAA one', 'ssh-rsa BBBB two'],
        gecos: 'Alice Example',
        homeDir: '/home/alice',
        shell: '/bin/bash',
      },
      { name: 'bob' },
    ]);
    await assertValid(out);
  });

  it('adds supplementary groups at first boot, before kubeadm, creating missing ones (never useradd --groups)', async () => {
    const out = renderIgnition(makePlan({ users: [user(0, { name: 'alice', groups: ['sudo', 'ops'] }), user(1, { name: 'bob', groups: ['ops'], primaryGroup: 'staff' }), user(2, { name: 'carol' })] }));
    for (const u of users(out) as { groups?: unknown }[]) assert.equal(u.groups, undefined, 'no group reaches passwd.users[].groups');
    assert.equal(
      ignitionFiles(out.config).get('/etc/kubeadm/groups.sh')!.toString(),
      [
        '#!/bin/sh',
        "grep -q '^sudo:' /etc/group || getent group sudo >> /etc/group || groupadd sudo",
        "grep -q '^ops:' /etc/group || getent group ops >> /etc/group || groupadd ops",
        "grep -q '^staff:' /etc/group || getent group staff >> /etc/group || groupadd staff",
        'usermod -g staff bob',
        'usermod -a -G sudo,ops alice',
        'usermod -a -G ops bob',
        '',
      ].join('\n'),
    );
    // Run once, first thing in the bootstrap script (after the boot commands, before the pre commands, as cloud-init orders them).
    const units = (out.config as { systemd: { units: { name: string }[] } }).systemd.units;
    assert.deepEqual(units.filter((u) => u.name === 'kubeadm-groups.service'), []);
    assert.match(ignitionFiles(out.config).get('/etc/kubeadm/bootstrap.sh')!.toString(), /^#!\/bin\/sh\n\/bin\/sh \/etc\/kubeadm\/groups\.sh\n/);
    await assertValid(out);
  });

  it('a file whose group may not exist yet is written root-group and given its group by the groups script', () => {
    const file = (path: string, group: string, mode: number) => ({ origin: 'spec.provisioning.files[0]', path, contents: Buffer.from('x'), mode, owner: { user: 'alice', group }, append: false, sourceEncoding: 'plain' as const, deferred: true, secret: false });
    const out = renderIgnition(makePlan({ users: [user(0, { name: 'alice', groups: ['ops'] })], files: [file('/srv/a', 'ops', 0o2750), file('/srv/b', 'alice', 0o640)] }));
    const entries = (out.config as { storage: { files: { path: string; group: { name: string } }[] } }).storage.files;
    assert.deepEqual(entries.find((f) => f.path === '/srv/a')!.group, { name: 'root' });
    assert.deepEqual(entries.find((f) => f.path === '/srv/b')!.group, { name: 'alice' }, "the user's own group exists once useradd ran");
    const script = ignitionFiles(out.config).get('/etc/kubeadm/groups.sh')!.toString().split('\n');
    assert.deepEqual(script.slice(-2), ['chgrp -- ops /srv/a && chmod -- 2750 /srv/a', '']);
  });

  it('no supplementary groups: no groups script or unit', () => {
    const out = renderIgnition(makePlan({ users: [user(0, { name: 'alice' })] }));
    assert.ok(!ignitionFiles(out.config).has('/etc/kubeadm/groups.sh'));
    assert.ok(!(out.config as { systemd: { units: { name: string }[] } }).systemd.units.some((u) => u.name === 'kubeadm-groups.service'));
  });

  it('writes a sudoers drop-in per user with sudo, 0440, root', async () => {
    const out = renderIgnition(makePlan({ users: [user(0, { name: 'ops', sudo: 'ALL=(ALL) NOPASSWD:ALL' }), user(1, { name: 'dev' })] }));
    const f = (out.config as { storage: { files: { path: string; mode: number; user: unknown; group: unknown }[] } }).storage.files.find((x) => x.path === '/etc/sudoers.d/ops');
    assert.ok(f);
    assert.deepEqual([f.mode, f.user, f.group], [288, { name: 'root' }, { name: 'root' }]);
    assert.equal(ignitionFiles(out.config).get('/etc/sudoers.d/ops')!.toString(), 'ops ALL=(ALL) NOPASSWD:ALL\n');
    assert.ok(!ignitionFiles(out.config).has('/etc/sudoers.d/dev'));
    await assertValid(out);
  });

  it('names sudoers drop-ins so sudo reads them (no "." in the name)', () => {
    const out = renderIgnition(makePlan({ users: [user(0, { name: 'svc$', sudo: 'ALL=(ALL) ALL' })] }));
    assert.equal(ignitionFiles(out.config).get('/etc/sudoers.d/svc_24')!.toString(), 'svc$ ALL=(ALL) ALL\n');
  });

  it('lockPassword: true keeps the hash but locks it with "!", as passwd -l does', () => {
    const hash = '$6$salt$hash';
    const pick = (u: Partial<PlanUser>) => users(renderIgnition(makePlan({ users: [user(0, { name: 'a', ...u })] })))[0];
    assert.deepEqual(pick({ passwd: hash, lockPassword: true }), { name: 'a', passwordHash: `!${hash}` });
    assert.deepEqual(pick({ passwd: `!${hash}`, lockPassword: true }), { name: 'a', passwordHash: `!${hash}` });
    assert.deepEqual(pick({ passwd: hash, lockPassword: false }), { name: 'a', passwordHash: hash });
    assert.deepEqual(pick({ passwd: hash }), { name: 'a', passwordHash: hash });
    // Without a hash Ignition leaves the account locked; lockPassword changes nothing.
    assert.deepEqual(pick({ lockPassword: true }), { name: 'a' });
    assert.deepEqual(pick({ lockPassword: false }), { name: 'a' });
  });

  it('refuses what Ignition cannot express, naming each field', () => {
    assert.deepEqual(
      problemsOf(() =>
        renderIgnition(
          makePlan({
            users: [user(0, { name: 'a', inactive: true }), user(1, { name: 'b' }), user(2, { name: 'a' })],
          }),
        ),
      ).map((p) => p.path),
      ['spec.provisioning.users[0].inactive', 'spec.provisioning.users[2].name'],
    );
  });

  it('accepts inactive: false', () => {
    assert.deepEqual(users(renderIgnition(makePlan({ users: [user(0, { name: 'a', inactive: false })] }))), [{ name: 'a' }]);
  });

  it('refuses a request file clashing with a generated sudoers file', () => {
    const problems = problemsOf(() =>
      renderIgnition(
        makePlan({
          users: [user(0, { name: 'ops', sudo: 'ALL=(ALL) ALL' })],
          files: [{ origin: 'spec.provisioning.files[0]', path: '/etc/sudoers.d/ops', contents: Buffer.from('x'), mode: 0o440, owner: { user: 'root', group: 'root' }, append: false, sourceEncoding: 'plain', deferred: false, secret: false }],
        }),
      ),
    );
    assert.equal(problems.length, 1);
    assert.equal(problems[0]!.path, 'spec.provisioning.files[0].path');
    assert.match(problems[0]!.message, /spec\.provisioning\.users\[0\]\.sudo/);
  });
});
