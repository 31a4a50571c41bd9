import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { IgnitionFile, IgnitionUnit } from '../../../src/provision/ignition/config.js';
import { renderIgnition } from '../../../src/provision/ignition/render.js';
import type { PlanNtp } from '../../../src/provision/plan/types.js';
import { ignitionFiles } from '../../support/decode.js';
import { makePlan } from './plan.js';
import { assertValid } from './tools.js';

const DROPIN = '/etc/systemd/timesyncd.conf.d/90-bootwright.conf';
const render = (ntp: PlanNtp) => renderIgnition(makePlan({ ntp }));
const config = (out: { config: Record<string, unknown> }) => out.config as { storage: { files: IgnitionFile[] }; systemd: { units: IgnitionUnit[] } };

describe('renderIgnition: ntp', () => {
  it('writes a timesyncd drop-in that replaces the server list', async () => {
    for (const enabled of [true, undefined]) {
      const out = render({ ...(enabled === undefined ? {} : { enabled }), servers: ['0.pool.ntp.org', '192.0.2.1', 'time.example.com'] });
      assert.equal(ignitionFiles(out.config).get(DROPIN)!.toString(), '[Time]\nNTP=\nNTP=0.pool.ntp.org 192.0.2.1 time.example.com\n');
      const f = config(out).storage.files.find((x) => x.path === DROPIN)!;
      assert.deepEqual([f.mode, f.user, f.group], [420, { name: 'root' }, { name: 'root' }]);
      assert.ok(!config(out).systemd.units.some((u) => u.name === 'systemd-timesyncd.service'));
      await assertValid(out);
    }
  });

  it('enabled: false configures nothing: no drop-in, timesyncd neither masked nor disabled (as cloud-init)', async () => {
    const out = render({ enabled: false, servers: ['ignored.example.com'] });
    assert.ok(!ignitionFiles(out.config).has(DROPIN));
    assert.deepEqual(config(out).systemd.units.map((u) => u.name), ['kubeadm-bootstrap.service']);
    await assertValid(out);
  });

  it('no servers: nothing', () => {
    const out = render({ servers: [] });
    assert.ok(!ignitionFiles(out.config).has(DROPIN));
    assert.deepEqual(config(out).systemd.units.map((u) => u.name), ['kubeadm-bootstrap.service']);
  });
});
