/**
 * Users listed in a group of their own name: found on a real first boot (test/firstboot),
 * where cloud-init 22.4 created group `ops` for `groups: sudo, ops` and then useradd
 * refused to make user `ops` ("group ops exists"). The plan makes that group the user's
 * primary group, so both formats create the user with it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { load } from 'js-yaml';
import { renderNodeBootstrap } from '../../../src/render.js';
import { validateNodeBootstrap } from '../../../src/request/parse.js';
import { ignitionFiles } from '../../support/decode.js';
import { worker } from '../../support/requests.js';

function render(users: Record<string, unknown>[]) {
  const req = validateNodeBootstrap(worker({ provisioning: { users } }));
  const cc = load(renderNodeBootstrap(req, { format: 'cloud-config' }).body) as { users: Record<string, unknown>[] };
  const ign = JSON.parse(renderNodeBootstrap(req, { format: 'ignition' }).body) as { passwd: { users: Record<string, unknown>[] } };
  const script = ignitionFiles(ign).get('/etc/kubeadm/groups.sh')?.toString('utf8') ?? '';
  return { cc: cc.users, ign: ign.passwd.users, script };
}

describe('a user in a group of its own name', () => {
  it('gets that group as its primary group, in both formats', () => {
    const { cc, ign, script } = render([{ name: 'ops', groups: 'sudo, ops' }]);
    assert.deepEqual(cc, [{ name: 'ops', groups: 'sudo, ops', primary_group: 'ops' }]);
    assert.deepEqual(ign, [{ name: 'ops' }]);
    assert.match(script, /^usermod -g ops ops$/m);
    assert.match(script, /^usermod -a -G sudo,ops ops$/m);
  });

  it('keeps a primary group the request names, and adds none when the own name is not listed', () => {
    assert.equal(render([{ name: 'ops', groups: 'sudo, ops', primaryGroup: 'wheel' }]).cc[0]!.primary_group, 'wheel');
    const plain = render([{ name: 'ops', groups: 'sudo, operators' }]);
    assert.equal(plain.cc[0]!.primary_group, undefined);
    assert.doesNotMatch(plain.script, /usermod -g/);
  });
});
