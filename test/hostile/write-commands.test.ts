/**
 * Commands are what they look like (issue 11 C): a command with a control character
 * other than TAB and line feed (CR, NUL, ESC, DEL...) is refused at the field, in
 * NodeBootstrap and Cluster API input, for both output formats, and when a profile is
 * written.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { renderNodeBootstrap } from '../../src/render.js';
import { validateNodeBootstrap } from '../../src/request/parse.js';
import { commandControlProblem } from '../../src/provision/plan/check.js';
import { problemsOf } from '../support/errors.js';
import { assertProblem, doc, inventory, type Inventory, workerProfileSpec } from '../support/inventory.js';
import { worker } from '../support/requests.js';

const PHASES = ['bootCommands', 'preKubeadmCommands', 'postKubeadmCommands'] as const;
const CONTROLS = ['\r', '\0', '\x1b', '\x07', '\x0b', '\x0c', '\x7f', '\x1f'];

describe('commands with control characters', () => {
  for (const phase of PHASES) {
    for (const c of CONTROLS) {
      it(`${phase}: U+${c.charCodeAt(0).toString(16).padStart(4, '0')} is refused at the item`, () => {
        const req = worker({ provisioning: { [phase]: ['true', `echo safe${c}rm -rf /tmp/x`] } });
        assert.deepEqual(
          problemsOf(() => renderNodeBootstrap(validateNodeBootstrap(req))).map((p) => p.path),
          [`spec.provisioning.${phase}[1]`],
        );
      });
    }
  }

  it('Cluster API input: the problem names the KubeadmConfigSpec field', () => {
    const req = worker({ kubeadmConfigSpec: { postKubeadmCommands: ['echo ok', 'echo a\rb'] } });
    delete (req.spec as Record<string, unknown>).provisioning;
    const paths = problemsOf(() => renderNodeBootstrap(validateNodeBootstrap(req))).map((p) => p.path);
    assert.deepEqual(paths, ['spec.kubeadmConfigSpec.postKubeadmCommands[1]']);
  });

  it('TAB and line feed stay allowed and render in both formats', () => {
    const req = validateNodeBootstrap(worker({ provisioning: { preKubeadmCommands: ['printf "a\\tb"\t# tab', "cat <<'EOF' > /etc/x\nline\nEOF"] } }));
    for (const format of ['cloud-config', 'ignition'] as const) assert.ok(renderNodeBootstrap(req, { format }).body.length > 0);
  });

  it('property: a command is refused exactly when it holds a C0 control other than TAB/LF, or DEL', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (s) => {
        const bad = Array.from(s, (ch) => ch.charCodeAt(0)).some((n) => (n < 0x20 && n !== 0x09 && n !== 0x0a) || n === 0x7f);
        assert.equal(commandControlProblem(s) !== undefined, bad);
        const problems = bad ? problemsOf(() => renderNodeBootstrap(validateNodeBootstrap(worker({ provisioning: { preKubeadmCommands: [s] } })))) : [];
        assert.deepEqual(problems.map((p) => p.path), bad ? ['spec.provisioning.preKubeadmCommands[0]'] : []);
      }),
      { numRuns: 300 },
    );
  });
});

describe('written profiles', () => {
  let inv: Inventory;
  before(async () => {
    inv = await inventory();
  });
  after(() => inv.close());

  it('POST and PUT /v1/profiles with a CR in a command are 422 naming the item', async () => {
    const bad = workerProfileSpec({ provisioning: { preKubeadmCommands: ['echo a\rrm -rf /'] } });
    assertProblem(await inv.send('post', '/v1/profiles', doc('Profile', 'worker', bad)), 422, ['spec.provisioning.preKubeadmCommands[0]'], {
      'spec.provisioning.preKubeadmCommands[0]': /U\+000D at offset 6/,
    });
    assert.equal((await inv.send('post', '/v1/profiles', doc('Profile', 'worker', workerProfileSpec()))).status, 201);
    const put = workerProfileSpec({ provisioning: { bootCommands: ['ok', 'x\0y'] } });
    assertProblem(await inv.send('put', '/v1/profiles/worker', doc('Profile', 'worker', put)), 422, ['spec.provisioning.bootCommands[1]']);
  });
});
