import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import type { IgnitionFile, IgnitionUnit } from '../../../src/provision/ignition/config.js';
import { renderIgnition } from '../../../src/provision/ignition/render.js';
import { IGNITION_SPEC_VERSIONS } from '../../../src/provision/ignition/versions.js';
import { decodeDataUrl, ignitionFiles } from '../../support/decode.js';
import { HARD_TEXTS, KUBEADM_YAML, bulkText, fullPlan, makePlan, planFile, seededBytes } from './plan.js';
import { assertValid } from './tools.js';
import { requestError } from '../../support/errors.js';

type Config = { storage: { files: IgnitionFile[]; directories?: unknown[] }; systemd: { units: IgnitionUnit[] }; passwd?: unknown };

const files = (out: { config: Record<string, unknown> }) => (out.config as Config).storage.files;
const file = (out: { config: Record<string, unknown> }, path: string) => {
  const f = files(out).find((x) => x.path === path);
  assert.ok(f, `no file ${path}`);
  return f;
};
const unit = (out: { config: Record<string, unknown> }, name: string) => {
  const u = (out.config as Config).systemd.units.find((x) => x.name === name);
  assert.ok(u, `no unit ${name}`);
  return u;
};
const text = (out: { config: Record<string, unknown> }, path: string) => ignitionFiles(out.config).get(path)!.toString('utf8');

describe('renderIgnition: a minimal plan', () => {
  const out = renderIgnition(makePlan());

  it('is spec 3.0.0 with the kubeadm file, script and unit', async () => {
    assert.equal(out.version, '3.0.0');
    assert.deepEqual(Object.keys(out.config), ['ignition', 'storage', 'systemd']);
    assert.deepEqual(out.config.ignition, { version: '3.0.0' });
    assert.deepEqual(
      files(out).map((f) => f.path),
      ['/etc/kubeadm/kubeadm-join-config.yaml', '/etc/kubeadm/bootstrap.sh'],
    );
    assert.deepEqual(
      (out.config as Config).systemd.units.map((u) => u.name),
      ['kubeadm-bootstrap.service'],
    );
    assert.ok(out.body.endsWith('}\n'));
    await assertValid(out);
  });

  it('writes the kubeadm configuration to /etc/kubeadm, 0600, root', () => {
    assert.deepEqual(file(out, '/etc/kubeadm/kubeadm-join-config.yaml'), {
      path: '/etc/kubeadm/kubeadm-join-config.yaml',
      overwrite: true,
      contents: { source: `data:,${encodeURIComponent(KUBEADM_YAML)}` },
      mode: 384,
      user: { name: 'root' },
      group: { name: 'root' },
    });
  });

  it('writes nothing under /run or /tmp', () => {
    for (const f of files(out)) assert.ok(!/^\/(run|tmp|var\/run)\//.test(f.path), f.path);
  });

  it('is deterministic: the same plan gives the same bytes', () => {
    assert.equal(renderIgnition(makePlan()).body, out.body);
    assert.equal(renderIgnition(structuredClone(makePlan())).body, out.body);
  });
});

describe('renderIgnition: files', () => {
  it('writes decimal modes, owners by name, overwrite, in plan order', async () => {
    const out = renderIgnition(
      makePlan({
        files: [
          planFile(0, '/etc/b.conf', 'b\n', { mode: 0o600, owner: { user: 'alice', group: 'wheel' } }),
          planFile(1, '/etc/a.conf', 'a\n', { mode: 0o755 }),
          planFile(2, '/etc/c.conf', 'c\n', { mode: 0o640, owner: { user: 'root', group: 'adm' } }),
        ],
      }),
    );
    assert.deepEqual(files(out).slice(0, 3), [
      { path: '/etc/b.conf', overwrite: true, contents: { source: 'data:,b%0A' }, mode: 384, user: { name: 'alice' }, group: { name: 'wheel' } },
      { path: '/etc/a.conf', overwrite: true, contents: { source: 'data:,a%0A' }, mode: 493, user: { name: 'root' }, group: { name: 'root' } },
      { path: '/etc/c.conf', overwrite: true, contents: { source: 'data:,c%0A' }, mode: 416, user: { name: 'root' }, group: { name: 'adm' } },
    ]);
    assert.match(out.body, /"mode":384,/);
    await assertValid(out);
  });

  it('appends with a list of resources and merges entries for one path', async () => {
    const out = renderIgnition(
      makePlan({
        files: [
          planFile(0, '/etc/motd', 'first\n', { append: true }),
          planFile(1, '/etc/motd', 'second\n', { append: true, mode: 0o600 }),
          planFile(2, '/etc/hosts.extra', 'base\n'),
          planFile(3, '/etc/hosts.extra', 'more\n', { append: true }),
        ],
      }),
    );
    assert.deepEqual(file(out, '/etc/motd'), {
      path: '/etc/motd',
      append: [{ source: 'data:,first%0A' }, { source: 'data:,second%0A' }],
      mode: 384,
      user: { name: 'root' },
      group: { name: 'root' },
    });
    assert.deepEqual(file(out, '/etc/hosts.extra').contents, { source: 'data:,base%0A' });
    assert.deepEqual(file(out, '/etc/hosts.extra').append, [{ source: 'data:,more%0A' }]);
    assert.equal(text(out, '/etc/hosts.extra'), 'base\nmore\n');
    await assertValid(out);
  });

  it('a later replacing file of the same path starts over', () => {
    const out = renderIgnition(makePlan({ files: [planFile(0, '/etc/x', 'old\n'), planFile(1, '/etc/x', 'extra\n', { append: true }), planFile(2, '/etc/x', 'new\n')] }));
    assert.deepEqual(file(out, '/etc/x'), { path: '/etc/x', overwrite: true, contents: { source: 'data:,new%0A' }, mode: 420, user: { name: 'root' }, group: { name: 'root' } });
  });

  for (const version of ['3.0.0', '3.1.0', '3.4.0'] as const) {
    it(`hard contents decode to the exact bytes at ${version}`, async () => {
      const inputs = [
        ...Object.values(HARD_TEXTS).map((t) => Buffer.from(t, 'utf8')),
        Buffer.from(bulkText(1 << 20), 'utf8'),
        seededBytes(64 * 1024),
        Buffer.from([0xff, 0xfe, 0x00, 0x80]),
      ];
      const out = renderIgnition(makePlan({ files: inputs.map((b, i) => planFile(i, `/etc/hard/${i}`, b)) }), { version });
      const decoded = ignitionFiles(out.config);
      for (const [i, b] of inputs.entries()) assert.deepEqual(decoded.get(`/etc/hard/${i}`), b, `file ${i}`);
      const gzipped = files(out).filter((f) => f.contents?.compression === 'gzip').map((f) => f.path);
      if (version === '3.0.0') assert.deepEqual(gzipped, []);
      else assert.ok(gzipped.includes(`/etc/hard/${Object.keys(HARD_TEXTS).length}`), 'the 1 MiB text is gzipped');
      await assertValid(out);
    });
  }

  it('reuses a supplied gzip stream at >= 3.1.0 and writes the plain bytes at 3.0.0', () => {
    const contents = Buffer.from('supplied and compressible\n'.repeat(64));
    const gz = gzipSync(contents, { level: 6 });
    const plan = makePlan({ files: [planFile(0, '/etc/gz', contents, { gzip: gz, sourceEncoding: 'gzip+base64' })] });
    const at31 = renderIgnition(plan, { version: '3.1.0' });
    assert.equal(file(at31, '/etc/gz').contents?.compression, 'gzip');
    assert.deepEqual(decodeDataUrl(file(at31, '/etc/gz').contents!.source), gz);
    const at30 = renderIgnition(plan, { version: '3.0.0' });
    assert.equal(file(at30, '/etc/gz').contents?.compression, undefined);
    assert.deepEqual(decodeDataUrl(file(at30, '/etc/gz').contents!.source), contents);
  });

  it('refuses files under /run, /var/run and /tmp, naming each', () => {
    const e = requestError(() =>
      renderIgnition(makePlan({ files: [planFile(0, '/run/kubeadm/x.yaml', 'x'), planFile(1, '/etc/ok', 'ok'), planFile(2, '/tmp/y', 'y'), planFile(3, '/var/run/z', 'z')] })),
    );
    assert.deepEqual(
      e.problems.map((p) => p.path),
      ['spec.provisioning.files[0].path', 'spec.provisioning.files[2].path', 'spec.provisioning.files[3].path'],
    );
    assert.match(e.problems[0]!.message, /tmpfs/);
    assert.equal(e.status, 422);
  });

  it('refuses a file at a path bootwright writes, naming the request file', () => {
    const e = requestError(() => renderIgnition(makePlan({ files: [planFile(0, '/etc/kubeadm/bootstrap.sh', 'mine')] })));
    assert.deepEqual(e.problems.map((p) => p.path), ['spec.provisioning.files[0].path']);
    assert.match(e.problems[0]!.message, /\/etc\/kubeadm\/bootstrap\.sh/);
    const unitClash = requestError(() => renderIgnition(makePlan({ files: [planFile(4, '/etc/systemd/system/kubeadm-bootstrap.service', '[Unit]\n')] })));
    assert.deepEqual(unitClash.problems.map((p) => p.path), ['spec.provisioning.files[4].path']);
  });

  it('writes plan directories with decimal modes', async () => {
    const out = renderIgnition(makePlan({ directories: [{ path: '/var/lib/app', mode: 0o750, owner: { user: 'root', group: 'adm' } }] }));
    assert.deepEqual((out.config as Config).storage.directories, [{ path: '/var/lib/app', mode: 488, user: { name: 'root' }, group: { name: 'adm' } }]);
    await assertValid(out);
  });
});

describe('renderIgnition: commands', () => {
  const HARD_COMMANDS = [
    'echo "key: value" > /etc/a',
    '# a comment line',
    "printf '%s %d 100%%\\n' a 1",
    'echo $(hostname) ${HOME} `date` $$',
    `echo 'single' "double" "it's"`,
    'cat <<EOF > /etc/heredoc\nline one $HOME\n  line two: yes\nEOF',
    '  indented: command',
    'echo {{ .Values.x }} {% raw %}',
    'false; echo still running',
    'echo 日本語 🚀',
    'x="a\tb"',
  ];
  const plan = makePlan({
    commands: {
      boot: ['echo boot: 1', 'modprobe br_netfilter'],
      pre: HARD_COMMANDS,
      main: { argv: ['kubeadm', 'join', '--v=5', '--ignore-preflight-errors=a b'], configFile: { name: 'kubeadm-join-config.yaml', contents: KUBEADM_YAML } },
      post: ['echo post: done', 'rm -f /tmp/x'],
    },
  });
  const out = renderIgnition(plan);

  it('runs pre commands, kubeadm with the sentinel, post commands in one sh script, byte for byte', async () => {
    const script = text(out, '/etc/kubeadm/bootstrap.sh');
    assert.equal(
      script,
      [
        '#!/bin/sh',
        ...HARD_COMMANDS,
        'mkdir -p /run/cluster-api',
        "kubeadm join --v=5 '--ignore-preflight-errors=a b' --config /etc/kubeadm/kubeadm-join-config.yaml && echo success > /run/cluster-api/bootstrap-success.complete",
        'echo post: done',
        'rm -f /tmp/x',
        '',
      ].join('\n'),
    );
    assert.ok(!script.includes('set -e'));
    assert.deepEqual(
      { mode: file(out, '/etc/kubeadm/bootstrap.sh').mode, user: file(out, '/etc/kubeadm/bootstrap.sh').user },
      { mode: 448, user: { name: 'root' } },
    );
    await assertValid(out);
  });

  it('runs kubeadm once from a oneshot unit after the network is online', () => {
    const u = unit(out, 'kubeadm-bootstrap.service');
    assert.equal(u.enabled, true);
    const lines = u.contents!.split('\n');
    for (const line of [
      'Wants=network-online.target',
      'After=network-online.target',
      'After=kubeadm-bootcmd.service',
      'ConditionPathExists=!/var/lib/bootwright/kubeadm-bootstrap.done',
      'Type=oneshot',
      'RemainAfterExit=yes',
      'ExecStart=/bin/sh /etc/kubeadm/bootstrap.sh',
      'ExecStartPost=touch /var/lib/bootwright/kubeadm-bootstrap.done',
      'ExecStopPost=touch /var/lib/bootwright/kubeadm-bootstrap.done',
      'WantedBy=multi-user.target',
    ]) {
      assert.ok(lines.includes(line), `missing ${line}`);
    }
    // No command text reaches a unit (systemd would expand % and $ in it).
    for (const u2 of (out.config as Config).systemd.units) for (const c of HARD_COMMANDS) assert.ok(!u2.contents?.includes(c));
  });

  it('runs boot commands on every boot from their own script and unit, before kubeadm', () => {
    assert.equal(text(out, '/etc/kubeadm/bootcmd.sh'), '#!/bin/sh\necho boot: 1\nmodprobe br_netfilter\n');
    const u = unit(out, 'kubeadm-bootcmd.service');
    assert.equal(u.enabled, true);
    assert.ok(u.contents!.includes('\nBefore=kubeadm-bootstrap.service\n'));
    assert.ok(u.contents!.includes('\nExecStart=/bin/sh /etc/kubeadm/bootcmd.sh\n'));
    assert.ok(!u.contents!.includes('Condition'), 'no run-once condition');
  });

  it('run by sh: the sentinel appears only when kubeadm succeeds, and post commands run either way', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bootwright-script-'));
    try {
      for (const [argv, ok] of [[['true'], true], [['sh', '-c', 'exit 3'], false]] as const) {
        const log = path.join(dir, 'log');
        const sentinel = path.join(dir, 'run', 'done marker');
        rmSync(log, { force: true });
        rmSync(path.join(dir, 'run'), { recursive: true, force: true });
        const p = makePlan({
          successSentinel: sentinel,
          commands: {
            boot: [],
            pre: [`echo "pre: $((1+1))" >> ${log}`, `cat <<'EOF' >> ${log}\nheredoc $HOME\nEOF`, 'false'],
            main: { argv: [...argv], configFile: { name: 'kubeadm-join-config.yaml', contents: KUBEADM_YAML } },
            post: [`echo post >> ${log}`],
          },
        });
        const script = text(renderIgnition(p), '/etc/kubeadm/bootstrap.sh');
        execFileSync('/bin/sh', ['-c', script]);
        assert.equal(readFileSync(log, 'utf8'), 'pre: 2\nheredoc $HOME\npost\n');
        assert.equal(existsSync(sentinel), ok);
        if (ok) assert.equal(readFileSync(sentinel, 'utf8'), 'success\n');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('quotes the sentinel and config paths only when needed', () => {
    const odd = renderIgnition(makePlan({ successSentinel: "/var/lib/it's done" }));
    assert.ok(text(odd, '/etc/kubeadm/bootstrap.sh').includes(`mkdir -p /var/lib\nkubeadm join --config /etc/kubeadm/kubeadm-join-config.yaml && echo success > '/var/lib/it'\\''s done'\n`));
  });

  it('escapes % in the node name in the unit description', () => {
    const u = unit(renderIgnition(makePlan({ nodeName: 'n%i' })), 'kubeadm-bootstrap.service');
    assert.ok(u.contents!.includes('Description=Bootstrap Kubernetes node n%%i with kubeadm (once)\n'));
  });
});

describe('renderIgnition: spec versions', () => {
  const compressible = makePlan({ files: [planFile(0, '/etc/big', 'repeat after me\n'.repeat(500))] });

  it('picks the lowest spec that can express the config', () => {
    const out = renderIgnition(compressible);
    assert.equal(out.version, '3.0.0');
    assert.equal(file(out, '/etc/big').contents?.compression, undefined, 'gzip never raises the version');
  });

  it('requested 3.0.0 with compressible contents is not an error: it just does not compress', async () => {
    const out = renderIgnition(compressible, { version: '3.0.0' });
    assert.equal(out.version, '3.0.0');
    assert.equal(file(out, '/etc/big').contents?.compression, undefined);
    await assertValid(out);
  });

  it('compresses at a requested spec >= 3.1.0', async () => {
    for (const version of ['3.1.0', '3.4.0', '3.6.0'] as const) {
      const out = renderIgnition(compressible, { version });
      assert.equal(out.version, version);
      assert.deepEqual(out.config.ignition, { version });
      assert.equal(file(out, '/etc/big').contents?.compression, 'gzip');
      await assertValid(out);
    }
  });

  it('raises the version for a feature only a later spec has, and compresses there', () => {
    const plan = makePlan({ files: [planFile(0, '/usr/local/bin/tool', 'suid tool\n'.repeat(100), { mode: 0o4755 })] });
    const out = renderIgnition(plan);
    assert.equal(out.version, '3.6.0');
    assert.equal(file(out, '/usr/local/bin/tool').mode, 2541);
    assert.equal(file(out, '/usr/local/bin/tool').contents?.compression, 'gzip');
  });

  it('refuses a requested spec that cannot express the config, naming the feature and the spec that has it', () => {
    const plan = makePlan({ files: [planFile(0, '/usr/local/bin/tool', 'x', { mode: 0o2755 })] });
    const e = requestError(() => renderIgnition(plan, { version: '3.4.0' }));
    assert.deepEqual(e.problems, [
      {
        path: 'spec.output.ignitionVersion',
        message: 'Ignition spec 3.4.0 cannot express storage.files[].mode with setuid/setgid/sticky bits (at storage.files[0].mode); the lowest spec that has it is 3.6.0',
      },
    ]);
  });

  it('refuses an unknown version', () => {
    const e = requestError(() => renderIgnition(makePlan(), { version: '2.3.0' as never }));
    assert.equal(e.problems[0]!.path, 'spec.output.ignitionVersion');
  });

  for (const version of IGNITION_SPEC_VERSIONS) {
    it(`a full plan is valid at ${version}`, async () => {
      const out = renderIgnition(fullPlan(), { version });
      assert.equal(out.version, version);
      await assertValid(out);
    });
  }
});
