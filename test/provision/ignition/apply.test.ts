/**
 * End to end with Ignition itself: render, let Ignition's `ignition-apply` write the
 * files and units into a temp root, and compare what it wrote with the plan byte for
 * byte (contents, modes, owners, units, presets, masks).
 */
import assert from 'node:assert/strict';
import { existsSync, lstatSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { IgnitionUnit } from '../../../src/provision/ignition/config.js';
import { renderIgnition } from '../../../src/provision/ignition/render.js';
import { HARD_TEXTS, bulkText, fullPlan, makePlan, planFile, seededBytes } from './plan.js';
import { haveIgnitionApply, withAppliedRoot } from './tools.js';

const skip = !haveIgnitionApply && 'Ignition (Debian package ignition) not installed, or not root';

describe('ignition-apply writes what the plan says', { skip }, () => {
  for (const version of ['3.0.0', '3.3.0'] as const) {
    it(`files: exact bytes, modes and owners at ${version}`, () => {
      const inputs = [
        ...Object.values(HARD_TEXTS).map((t) => Buffer.from(t, 'utf8')),
        Buffer.from(bulkText(256 * 1024), 'utf8'),
        seededBytes(8192),
      ];
      const plan = makePlan({
        files: [
          ...inputs.map((b, i) => planFile(i, `/etc/hard/f${i}`, b, { mode: i % 2 ? 0o600 : 0o644, owner: i % 3 ? { user: 'root', group: 'root' } : { user: 'alice', group: 'alice' } })),
          planFile(inputs.length, '/etc/motd', 'one\n', { append: true }),
          planFile(inputs.length + 1, '/etc/motd', 'two\n', { append: true, mode: 0o640 }),
        ],
      });
      const out = renderIgnition(plan, { version });
      if (version === '3.3.0') assert.ok(out.body.includes('"compression":"gzip"'), 'exercises gzip data URLs');
      withAppliedRoot(out.body, ['alice'], (root) => {
        for (const f of plan.files) {
          if (f.append) continue;
          const at = path.join(root, f.path);
          assert.deepEqual(readFileSync(at), Buffer.from(f.contents), f.path);
          const st = lstatSync(at);
          assert.equal(st.mode & 0o7777, f.mode, `${f.path} mode`);
          assert.equal(st.uid, f.owner.user === 'alice' ? 1000 : 0, `${f.path} owner`);
        }
        assert.equal(readFileSync(path.join(root, 'etc/motd'), 'utf8'), 'one\ntwo\n');
        assert.equal(lstatSync(path.join(root, 'etc/motd')).mode & 0o7777, 0o640);
      });
    });
  }

  it('the full plan: kubeadm files, scripts, sudoers, NTP, units and presets', () => {
    const plan = fullPlan();
    const out = renderIgnition(plan, { version: '3.3.0' });
    const units = (out.config as { systemd: { units: IgnitionUnit[] } }).systemd.units;
    withAppliedRoot(out.body, ['alice'], (root) => {
      const read = (p: string) => readFileSync(path.join(root, p), 'utf8');
      assert.equal(read('etc/kubeadm/kubeadm-join-config.yaml'), plan.commands.main.configFile.contents);
      assert.equal(lstatSync(path.join(root, 'etc/kubeadm/kubeadm-join-config.yaml')).mode & 0o777, 0o600);
      assert.match(read('etc/kubeadm/bootstrap.sh'), /^#!\/bin\/sh\n\/bin\/sh \/etc\/kubeadm\/groups\.sh\necho pre\nmkdir -p \/run\/cluster-api\nkubeadm join --config /);
      assert.equal(lstatSync(path.join(root, 'etc/kubeadm/bootstrap.sh')).mode & 0o777, 0o700);
      assert.equal(read('etc/kubeadm/bootcmd.sh'), '#!/bin/sh\necho boot\n');
      assert.equal(read('etc/sudoers.d/alice'), 'alice ALL=(ALL) NOPASSWD:ALL\n');
      assert.equal(lstatSync(path.join(root, 'etc/sudoers.d/alice')).mode & 0o777, 0o440);
      assert.equal(read('etc/systemd/timesyncd.conf.d/90-bootwright.conf'), '[Time]\nNTP=\nNTP=0.pool.ntp.org time.example.com\n');
      assert.deepEqual(readFileSync(path.join(root, 'opt/blob')), plan.files[2]!.contents);
      for (const u of units) if (u.contents !== undefined) assert.equal(read(`etc/systemd/system/${u.name}`), u.contents, u.name);
      const preset = read('etc/systemd/system-preset/20-ignition.preset');
      for (const u of units.filter((x) => x.enabled)) assert.ok(preset.includes(`enable ${u.name}\n`), `preset enables ${u.name}`);
    });
  });

  it('leaves the image\'s time sync alone for ntp.enabled: false (no mask, no drop-in)', () => {
    const out = renderIgnition(makePlan({ ntp: { enabled: false, servers: ['ignored.example.com'] } }));
    withAppliedRoot(out.body, [], (root) => {
      assert.ok(!existsSync(path.join(root, 'etc/systemd/system/systemd-timesyncd.service')));
      assert.ok(!existsSync(path.join(root, 'etc/systemd/timesyncd.conf.d/90-bootwright.conf')));
    });
  });
});
