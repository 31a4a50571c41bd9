/**
 * Ratcheting (issue 27, src/rules.ts): a rule that came in after a stored document was
 * accepted does not refuse it at boot; it is tolerated, reported, and changes no byte.
 * CHANGELOG.md names every rule, the rules version and every renderer version.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { OUTPUT_CHANGES } from '../src/compat/changes.js';
import { RequestError } from '../src/errors.js';
import { renderNodeBootstrap } from '../src/render.js';
import { validateNodeBootstrap } from '../src/request/parse.js';
import { levelAt, Ratchet, type RuleLevels, RULES, RULES_VERSION, ruleSince } from '../src/rules.js';
import { RENDERER_VERSION } from '../src/version.js';
import { worker } from './support/requests.js';

const LEGACY: RuleLevels = { cluster: 0, profile: 0, machine: 0 };
const CURRENT: RuleLevels = { cluster: RULES_VERSION, profile: RULES_VERSION, machine: RULES_VERSION };

function renderProblems(req: Record<string, unknown>, format: 'cloud-config' | 'ignition', levels?: RuleLevels) {
  try {
    return { result: renderNodeBootstrap(validateNodeBootstrap(req, levels ? { levels } : {}), { format, ...(levels ? { levels } : {}) }), problems: [] };
  } catch (e) {
    if (e instanceof RequestError) return { result: undefined, problems: e.problems };
    throw e;
  }
}

describe('Ratchet', () => {
  it('tolerates a rule that came in after the level of the document a problem belongs to, and refuses the rest', () => {
    const problems = [
      { path: 'spec.provisioning.preKubeadmCommands[0]', message: 'cr', rule: 'command-control' },
      { path: 'spec.provisioning.files[0].path', message: 'always refused' },
      { path: 'spec.provisioning.users[0].sudo', message: 'two lines', rule: 'sudo-line' },
    ];
    const cc = new Ratchet(LEGACY, 'cloud-config');
    assert.deepEqual(cc.refuse(problems).map((p) => p.message), ['always refused']);
    assert.deepEqual(cc.tolerated.map((p) => [p.rule, p.since]), [['command-control', 1], ['sudo-line', 1]]);
    // Ignition always refused a multi-line sudo rule: a stored document is not excused.
    const ign = new Ratchet(LEGACY, 'ignition');
    assert.deepEqual(ign.refuse(problems).map((p) => p.message), ['always refused', 'two lines']);
    assert.deepEqual(new Ratchet(CURRENT, 'cloud-config').refuse(problems), problems);
    assert.deepEqual(new Ratchet(undefined, 'cloud-config').refuse(problems), problems);
  });

  it('reads the level of the document a path comes from', () => {
    const levels = { cluster: 0, profile: 1, machine: 2 };
    assert.equal(levelAt(levels, 'spec.cluster.bootstrapToken'), 0);
    assert.equal(levelAt(levels, 'spec.provisioning.files[0].path'), 1);
    assert.equal(levelAt(levels, 'metadata.name'), 2);
  });

  it('records a problem once however often it is refused (validation, then the render)', () => {
    const r = new Ratchet(LEGACY);
    const p = { path: 'spec.kubeadm.joinConfiguration.nodeRegistration.name', message: 'jinja', rule: 'boot-value' };
    r.refuse([p]);
    r.refuse([p]);
    assert.equal(r.tolerated.length, 1);
  });
});

describe('a stored request with what a later rule refuses', () => {
  const cr = worker({ provisioning: { preKubeadmCommands: ['echo ready\r', 'swapoff -a'] } });

  for (const format of ['cloud-config', 'ignition'] as const) {
    it(`${format}: is refused when not stored, served with a warning when stored before the rule`, () => {
      assert.deepEqual(renderProblems(cr, format).problems.map((p) => [p.path, p.rule]), [['spec.provisioning.preKubeadmCommands[0]', 'command-control']]);
      assert.deepEqual(renderProblems(cr, format, CURRENT).problems.map((p) => p.path), ['spec.provisioning.preKubeadmCommands[0]']);
      const { result } = renderProblems(cr, format, LEGACY);
      assert.ok(result);
      assert.deepEqual(result.tolerated?.map((t) => [t.rule, t.path, t.since]), [['command-control', 'spec.provisioning.preKubeadmCommands[0]', 1]]);
      assert.ok(result.warnings.some((w) => w.startsWith('spec.provisioning.preKubeadmCommands[0]: contains the control character U+000D') && w.includes('rule command-control')));
    });
  }

  it('property: toleration changes no byte: what renders unexcused renders the same excused, with nothing tolerated', () => {
    const path = fc.tuple(fc.constantFrom('/etc/bootwright', '/var/lib/bootwright', '/opt', '/etc/systemd/system', '/etc/kubeadm'), fc.stringMatching(/^[a-z0-9][a-z0-9.-]{0,8}$/)).map(([d, f]) => `${d}/${f}`);
    const command = fc.oneof(fc.stringMatching(/^[a-z ]{1,12}$/), fc.constantFrom('echo a\rb', 'printf "\\x1b"', 'echo \x1b[0m'));
    fc.assert(
      fc.property(fc.uniqueArray(path, { maxLength: 3 }), fc.array(command, { maxLength: 3 }), fc.constantFrom('cloud-config' as const, 'ignition' as const), (paths, commands, format) => {
        const req = worker({ provisioning: { files: paths.map((p) => ({ path: p, content: 'x' })), preKubeadmCommands: commands } });
        const strict = renderProblems(req, format);
        const legacy = renderProblems(req, format, LEGACY);
        if (strict.result) {
          assert.equal(legacy.result?.body, strict.result.body);
          assert.equal(legacy.result.tolerated, undefined);
        } else {
          // Excused: exactly the strict problems with a rule of this rules version; the rest still refuse.
          const ruled = strict.problems.filter((p) => p.rule !== undefined && ruleSince(p.rule as keyof typeof RULES, format) > 0);
          const rest = strict.problems.filter((p) => !ruled.includes(p));
          if (rest.length > 0) assert.deepEqual(legacy.problems.map((p) => p.path).sort(), rest.map((p) => p.path).sort());
          else assert.deepEqual(legacy.result?.tolerated?.map((t) => t.path).sort(), ruled.map((p) => p.path).sort());
        }
      }),
      { numRuns: 150 },
    );
  });
});

describe('CHANGELOG.md', () => {
  const changelog = readFileSync(new URL('../CHANGELOG.md', import.meta.url), 'utf8');

  it('names every rule, the rules version and the renderer version of this release', () => {
    for (const rule of Object.keys(RULES)) assert.ok(changelog.includes(`\`${rule}\``), `CHANGELOG.md names the rule ${rule}`);
    assert.ok(changelog.includes(`rules version ${RULES_VERSION}`), `CHANGELOG.md names rules version ${RULES_VERSION}`);
    assert.ok(changelog.includes(`RENDERER_VERSION ${RENDERER_VERSION}`), `CHANGELOG.md names RENDERER_VERSION ${RENDERER_VERSION}`);
  });

  it('names every renderer version the output changes name, which end at this release', () => {
    const versions = [...new Set(OUTPUT_CHANGES.map((c) => c.rendererVersion))];
    for (const v of versions) assert.ok(changelog.includes(`RENDERER_VERSION ${v}`), `CHANGELOG.md names RENDERER_VERSION ${v}`);
    assert.equal(Math.max(...versions), Number(RENDERER_VERSION));
  });
});
