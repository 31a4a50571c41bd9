import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderIgnition } from '../../../../src/provision/ignition/render.js';
import { renderIgnitionV2 } from '../../../../src/provision/ignition/v2/render.js';
import { checkIgnitionV2Rules } from '../../../../src/provision/ignition/v2/rules.js';
import type { ProvisioningPlan } from '../../../../src/provision/plan/types.js';
import { renderNodeBootstrap } from '../../../../src/render.js';
import { validateNodeBootstrap } from '../../../../src/request/parse.js';
import { ignitionFiles } from '../../../support/decode.js';
import { requestError } from '../../../support/errors.js';
import { example, worker } from '../../../support/requests.js';
import { validateIgnitionSchema } from '../../../support/validators.js';
import { HARD_TEXTS, fullPlan, makePlan, planFile, seededBytes } from '../plan.js';

type Obj = Record<string, unknown>;

/** A 2.3.0 render: body is the config plus a newline, schema and rules find nothing. */
function assertValidV2(out: { version: string; config: Obj; body: string }): void {
  assert.equal(out.version, '2.3.0');
  assert.equal(out.body, `${JSON.stringify(out.config)}\n`);
  assert.deepEqual(validateIgnitionSchema(out.body, '2.3.0'), []);
  assert.deepEqual(checkIgnitionV2Rules(out.config), []);
}

/** What a node ends up with, by path: bytes, mode and owner of files; directories; units; users. */
function nodeState(config: Obj) {
  const storage = (config.storage ?? {}) as { files?: Obj[]; directories?: Obj[] };
  const files = ignitionFiles(config);
  return {
    files: Object.fromEntries((storage.files ?? []).map((f) => [f.path as string, { bytes: files.get(f.path as string)!.toString('base64'), mode: f.mode, user: f.user, group: f.group }])),
    directories: (storage.directories ?? []).map((d) => ({ path: d.path, mode: d.mode, user: d.user, group: d.group })),
    units: (config.systemd as { units: Obj[] }).units,
    users: (config.passwd as { users?: Obj[] } | undefined)?.users ?? [],
  };
}

/** A plan whose files replace, append to, and replace-then-append one path each. */
function appendingPlan(): ProvisioningPlan {
  const plan = fullPlan();
  plan.files.push(
    planFile(3, '/etc/layered', 'first\n'),
    planFile(4, '/etc/layered', 'second\n', { append: true }),
    planFile(5, '/etc/layered', seededBytes(300), { append: true, mode: 0o600 }),
    planFile(6, '/etc/appended', HARD_TEXTS.percent!, { append: true }),
    planFile(7, '/etc/appended', 'more', { append: true }),
  );
  return plan;
}

describe('renderIgnitionV2', () => {
  it('a full plan is a valid 2.3.0 config', () => {
    assertValidV2(renderIgnitionV2(fullPlan()));
  });

  it('round trip: the node gets the same bytes, modes, owners, directories, units and users as from 3.0.0', () => {
    for (const plan of [fullPlan(), appendingPlan()]) {
      const v2 = renderIgnitionV2(plan);
      assertValidV2(v2);
      const v3 = renderIgnition(plan, { version: '3.0.0' });
      assert.deepEqual(nodeState(v2.config), nodeState(v3.config));
    }
    const bytes = ignitionFiles(renderIgnitionV2(appendingPlan()).config);
    assert.deepEqual(bytes.get('/etc/layered'), Buffer.concat([Buffer.from('first\nsecond\n'), seededBytes(300)]));
    assert.equal(bytes.get('/etc/appended')!.toString(), `${HARD_TEXTS.percent!}more`);
  });

  it('keeps 2.x file semantics: replaced files overwrite, append-only files append, no compression', () => {
    const files = (renderIgnitionV2(appendingPlan()).config.storage as { files: Obj[] }).files;
    const byPath = new Map(files.map((f) => [f.path, f]));
    assert.equal(byPath.get('/etc/layered')!.overwrite, true);
    assert.equal(byPath.get('/etc/layered')!.append, undefined);
    assert.equal(byPath.get('/etc/appended')!.append, true);
    assert.equal(byPath.get('/etc/appended')!.overwrite, undefined);
    assert.ok(files.every((f) => f.filesystem === 'root' && (f.contents as Obj).compression === undefined));
  });

  it('is deterministic', () => {
    assert.equal(renderIgnitionV2(appendingPlan()).body, renderIgnitionV2(appendingPlan()).body);
  });

  it('a feature only later 3.x specs have is a RequestError at the request field', () => {
    const plan = makePlan({ files: [planFile(0, '/usr/local/bin/tool', 'x', { mode: 0o4755 })] });
    const e = requestError(() => renderIgnitionV2(plan));
    assert.deepEqual(e.problems, [
      {
        path: 'spec.provisioning.files[0].permissions',
        message: 'Ignition spec 2.3.0 cannot express storage.files[].mode with setuid/setgid/sticky bits; it needs Ignition spec 3.6.0 or later (a 3.x spec)',
      },
    ]);
  });

  it('blames the version field when no request field is behind the feature', () => {
    const plan = makePlan({ directories: [{ path: '/var/lib/sticky', mode: 0o1777, owner: { user: 'root', group: 'root' } }] });
    const e = requestError(() => renderIgnitionV2(plan, { versionField: 'Accept' }));
    assert.equal(e.problems.length, 1);
    assert.equal(e.problems[0]!.path, 'Accept');
    assert.match(e.problems[0]!.message, /needs Ignition spec 3\.6\.0 .*\(at storage\.directories\[0\]\.mode of the merged config\)$/);
  });

  it('passes on what the 3.x renderer refuses', () => {
    const plan = makePlan({ files: [planFile(0, '/run/x', 'x')] });
    assert.equal(requestError(() => renderIgnitionV2(plan)).problems[0]!.path, 'spec.provisioning.files[0].path');
  });
});

describe('every example request and fixture renders to a valid 2.3.0 config', () => {
  const requests: [string, Obj][] = [
    ['examples/init.yaml', example('init')],
    ['examples/control-plane.yaml', example('control-plane')],
    ['examples/worker.yaml', example('worker')],
    ['worker fixture', worker()],
    ['worker fixture with provisioning', worker({ provisioning: { files: [{ path: '/etc/a', content: 'a: b\n' }, { path: '/etc/hosts', content: '10.0.0.2 x\n', append: true }], users: [{ name: 'ops', sshAuthorizedKeys: ['ssh-ed25519 AAAA ops'], sudo: 'ALL=(ALL) NOPASSWD:ALL' }], ntp: { enabled: true, servers: ['time.example.com'] }, preKubeadmCommands: ['echo pre'] } })],
  ];
  for (const [name, raw] of requests) {
    it(name, () => {
      const req = validateNodeBootstrap(raw);
      const out = renderNodeBootstrap(req, { format: 'ignition', ignitionVersion: '2.3.0' });
      assert.equal(out.ignitionVersion, '2.3.0');
      assert.equal(out.mediaType, 'application/vnd.coreos.ignition+json; version=2.3.0');
      const config = JSON.parse(out.body) as Obj;
      assertValidV2({ version: out.ignitionVersion, config, body: out.body });
      const v3 = renderNodeBootstrap(req, { format: 'ignition', ignitionVersion: '3.0.0' });
      assert.deepEqual(nodeState(config), nodeState(JSON.parse(v3.body) as Obj));
    });
  }
});

describe('renderIgnitionV2: problems from an additional config', () => {
  it('name the additional config, not the version field', () => {
    const plan = makePlan({ ignition: { origin: 'spec.provisioning.ignition.containerLinuxConfig.additionalConfig', additionalConfig: JSON.stringify({ ignition: { version: '3.0.0' }, storage: { files: [{ path: '/etc/touched', mode: 420 }] } }) } });
    const e = requestError(() => renderIgnitionV2(plan, { versionField: 'Accept' }));
    assert.deepEqual(e.problems, [
      {
        path: 'spec.provisioning.ignition.containerLinuxConfig.additionalConfig',
        message: 'Ignition spec 2.3.0: storage.files[2].contents of the merged config is missing: without contents Ignition 3 keeps an existing file, but Ignition v0.x (spec 2.x) would empty it',
      },
    ]);
  });
});
