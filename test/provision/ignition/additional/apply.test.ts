import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { dump } from 'js-yaml';
import type { PlanIgnitionAdditional, ProvisioningPlan } from '../../../../src/provision/plan/types.js';
import { type IgnitionRender, renderIgnition } from '../../../../src/provision/ignition/render.js';
import type { IgnitionSpecVersion } from '../../../../src/provision/ignition/versions.js';
import { renderNodeBootstrap } from '../../../../src/render.js';
import { validateNodeBootstrap } from '../../../../src/request/parse.js';
import { ignitionFiles } from '../../../support/decode.js';
import { worker } from '../../../support/requests.js';
import { fullPlan, HARD_TEXTS, makePlan, planFile } from '../plan.js';
import { assertValid, haveIgnitionApply, withAppliedRoot } from '../tools.js';
import { requestError } from '../../../support/errors.js';
import { BOOTSTRAP_UNIT } from '../../../../src/provision/ignition/bootstrap.js';
import { BOOTSTRAP_STAMP, BOOTSTRAP_STATE_DIR } from '../../../../src/provision/plan/protected.js';

const ORIGIN = 'spec.provisioning.ignition.containerLinuxConfig.additionalConfig';

const additional = (additionalConfig: string, strict?: boolean): PlanIgnitionAdditional => ({ origin: ORIGIN, additionalConfig, ...(strict !== undefined ? { strict } : {}) });
const withConfig = (text: string, strict?: boolean, base: ProvisioningPlan = makePlan()): ProvisioningPlan => ({ ...base, ignition: additional(text, strict) });

type Config = {
  storage: { files: { path: string }[]; links?: unknown[] };
  systemd: { units: { name: string; enabled?: boolean; contents?: string; dropins?: { name: string; contents: string }[] }[] };
  passwd?: { users: { name: string; shell?: string; sshAuthorizedKeys?: string[]; groups?: string[] }[]; groups?: unknown[] };
};
const cfg = (out: IgnitionRender) => out.config as unknown as Config;

const APP = HARD_TEXTS.colon!;
const PERCENT = HARD_TEXTS.percent!;
const UNIT = '[Unit]\nDescription=App\n\n[Service]\nExecStart=/usr/bin/true\n\n[Install]\nWantedBy=multi-user.target\n';

const BUTANE_FCOS = `variant: fcos
version: 1.4.0
storage:
  files:
    - path: /etc/app/config.yaml
      mode: 0640
      overwrite: true
      contents:
        inline: ${JSON.stringify(APP)}
    - path: /etc/percent
      contents:
        inline: ${JSON.stringify(PERCENT)}
  directories:
    - path: /var/lib/app
      mode: 0750
  links:
    - path: /etc/app/current
      target: /etc/app/config.yaml
systemd:
  units:
    - name: app.service
      enabled: true
      contents: ${JSON.stringify(UNIT)}
      dropins:
        - name: 10-env.conf
          contents: "[Service]\\nEnvironment=A=1\\n"
passwd:
  users:
    - name: core
      ssh_authorized_keys: [ssh-ed25519 AAAAC3Nza core@x]
      groups: [wheel]
  groups:
    - name: ops
      gid: 2000
`;

const BUTANE_FLATCAR = `variant: flatcar
version: 1.1.0
storage:
  files:
    - path: /etc/flatcar/update.conf
      overwrite: true
      mode: 0644
      contents:
        inline: "REBOOT_STRATEGY=off\\n"
systemd:
  units:
    - name: locksmithd.service
      mask: true
`;

const CLC = `storage:
  files:
    - filesystem: root
      path: /etc/app/config.yaml
      mode: 0640
      contents:
        inline: ${JSON.stringify(APP)}
  directories:
    - path: /var/lib/app
      mode: 0750
systemd:
  units:
    - name: app.service
      enable: true
      contents: ${JSON.stringify(UNIT)}
networkd:
  units:
    - name: 10-eth0.network
      contents: "[Match]\\nName=eth0\\n\\n[Network]\\nDHCP=yes\\n"
passwd:
  users:
    - name: core
      ssh_authorized_keys: [ssh-ed25519 AAAAC3Nza core@x]
`;

const rawIgnition = (version: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    ignition: { version },
    storage: { files: [{ path: '/etc/app/config.yaml', overwrite: true, mode: 416, contents: { source: `data:,${encodeURIComponent(APP)}` } }] },
    systemd: { units: [{ name: 'app.service', enabled: true, contents: UNIT }] },
    ...extra,
  });

describe('additional config merged into a worker render', () => {
  const cases: [string, string, IgnitionSpecVersion][] = [
    ['Container Linux Config', CLC, '3.0.0'],
    ['Butane fcos 1.4.0', BUTANE_FCOS, '3.3.0'],
    ['Butane flatcar 1.1.0', BUTANE_FLATCAR, '3.4.0'],
    ['raw Ignition 3.0.0', rawIgnition('3.0.0'), '3.0.0'],
    ['raw Ignition 3.4.0', rawIgnition('3.4.0', { kernelArguments: { shouldExist: ['quiet'] } }), '3.4.0'],
  ];
  for (const [name, text, version] of cases) {
    it(`${name}: valid ${version} config (schema, rules, ignition-validate) keeping the kubeadm bootstrap`, async () => {
      const out = renderIgnition(withConfig(text));
      assert.equal(out.version, version);
      await assertValid(out);
      const units = cfg(out).systemd.units.map((u) => u.name);
      assert.ok(units.includes('kubeadm-bootstrap.service'));
      const files = ignitionFiles(out.config);
      assert.ok(files.has('/etc/kubeadm/bootstrap.sh'));
      assert.equal(out.warnings, undefined);
      // Deterministic: the same plan gives the same bytes.
      assert.equal(renderIgnition(withConfig(text)).body, out.body);
    });
  }

  it('decoded file contents equal the inputs', () => {
    for (const text of [CLC, BUTANE_FCOS, rawIgnition('3.4.0')]) {
      const files = ignitionFiles(renderIgnition(withConfig(text)).config);
      assert.equal(files.get('/etc/app/config.yaml')!.toString('utf8'), APP);
    }
    assert.equal(ignitionFiles(renderIgnition(withConfig(BUTANE_FCOS)).config).get('/etc/percent')!.toString('utf8'), PERCENT);
    const clc = ignitionFiles(renderIgnition(withConfig(CLC)).config);
    assert.equal(clc.get('/etc/systemd/network/10-eth0.network')!.toString('utf8'), '[Match]\nName=eth0\n\n[Network]\nDHCP=yes\n');
  });

  it('every hard text survives Butane and CLC inline contents (YAML written by js-yaml)', async () => {
    const entries = Object.entries(HARD_TEXTS);
    const files = entries.map(([name, text], i) => ({ path: `/etc/hard/${i}-${name}`, overwrite: true, contents: { inline: text } }));
    const butane = dump({ variant: 'fcos', version: '1.5.0', storage: { files } });
    const clc = dump({ storage: { files: files.map((f) => ({ filesystem: 'root', ...f })) } });
    for (const text of [butane, clc]) {
      const out = renderIgnition(withConfig(text));
      await assertValid(out);
      const decoded = ignitionFiles(out.config);
      entries.forEach(([name, content], i) => assert.equal(decoded.get(`/etc/hard/${i}-${name}`)!.toString('utf8'), content, name));
    }
  });

  it('Ignition itself applies the merged CLC config: files land with their bytes and modes', { skip: !haveIgnitionApply && 'ignition-apply needs root and Debian ignition' }, () => {
    const out = renderIgnition(withConfig(CLC));
    withAppliedRoot(out.body, [], (root) => {
      assert.equal(readFileSync(path.join(root, 'etc/app/config.yaml'), 'utf8'), APP);
      assert.equal(readFileSync(path.join(root, 'etc/systemd/system/app.service'), 'utf8'), UNIT);
      assert.ok(readFileSync(path.join(root, 'etc/kubeadm/bootstrap.sh'), 'utf8').includes('kubeadm join'));
    });
  });
});

describe('merge semantics against the plan', () => {
  const base = fullPlan();

  it('a child user overrides a plan user field; keys and groups are appended without repeats', async () => {
    const out = renderIgnition(
      withConfig(`variant: fcos\nversion: 1.0.0\npasswd:\n  users:\n    - name: alice\n      shell: /bin/zsh\n      groups: [docker, adm]\n      ssh_authorized_keys: [ssh-ed25519 AAAAC3Nza alice@x, ssh-ed25519 BBBB alice@y]\n`, undefined, base),
    );
    const alice = cfg(out).passwd!.users.find((u) => u.name === 'alice')!;
    assert.equal(alice.shell, '/bin/zsh');
    // The plan's own groups go to kubeadm-groups.service, never passwd: only the child's stay.
    assert.deepEqual(alice.groups, ['docker', 'adm']);
    assert.deepEqual(alice.sshAuthorizedKeys, ['ssh-ed25519 AAAAC3Nza alice@x', 'ssh-ed25519 BBBB alice@y']);
    await assertValid(out);
  });

  it('units merge by name (plan order kept, new units after) and dropins are added', async () => {
    const before = cfg(renderIgnition(base)).systemd.units.map((u) => u.name);
    const out = renderIgnition(
      withConfig(
        JSON.stringify({
          ignition: { version: '3.0.0' },
          systemd: {
            units: [
              { name: 'zz.service', enabled: true, contents: UNIT },
              { name: 'containerd.service', dropins: [{ name: '10-limits.conf', contents: '[Service]\nLimitNOFILE=1048576\n' }] },
              { name: 'kubeadm-bootstrap.service', dropins: [{ name: '10-env.conf', contents: '[Service]\nEnvironment=HTTP_PROXY=http://proxy:3128\n' }] },
            ],
          },
        }),
        undefined,
        base,
      ),
    );
    const units = cfg(out).systemd.units;
    assert.deepEqual(units.map((u) => u.name), [...before, 'zz.service']);
    assert.deepEqual(units.find((u) => u.name === 'containerd.service'), { name: 'containerd.service', enabled: true, dropins: [{ name: '10-limits.conf', contents: '[Service]\nLimitNOFILE=1048576\n' }] });
    const kubeadm = units.find((u) => u.name === 'kubeadm-bootstrap.service')!;
    assert.ok(kubeadm.contents!.includes('ExecStart=/bin/sh /etc/kubeadm/bootstrap.sh'));
    assert.equal(kubeadm.dropins!.length, 1);
    await assertValid(out);
  });

  it('a child file replaces a plan file of the same path, whole contents included', async () => {
    const out = renderIgnition(withConfig(`variant: fcos\nversion: 1.1.0\nstorage:\n  files:\n    - path: /opt/blob\n      overwrite: true\n      contents:\n        inline: small\n`, undefined, base));
    assert.equal(ignitionFiles(out.config).get('/opt/blob')!.toString('utf8'), 'small');
    await assertValid(out);
  });
});

describe('additional config errors', () => {
  const message = (text: string, strict?: boolean) => requestError(() => renderIgnition(withConfig(text, strict))).message;

  it('unknown Butane key: an error naming field and key; a warning with strict: false', () => {
    const text = 'variant: fcos\nversion: 1.4.0\nstorage:\n  files:\n    - path: /etc/x\n      contnts:\n        inline: x\n';
    assert.equal(message(text), `${ORIGIN}: storage.files[0].contnts: unknown key`);
    const out = renderIgnition(withConfig(text, false));
    assert.deepEqual(out.warnings, [`${ORIGIN}: storage.files[0].contnts: unknown key, ignored`]);
  });

  it('contents.local, Ignition 2.x JSON and malformed text are refused without echoing secrets', () => {
    assert.match(message('variant: fcos\nversion: 1.4.0\nstorage:\n  files:\n    - path: /etc/x\n      contents:\n        local: x.txt\n'), /storage\.files\[0\]\.contents\.local: needs a Butane files-dir/);
    assert.match(message('{"ignition": {"version": "2.3.0"}, "storage": {}}'), /ignition\.version: Ignition spec 2\.3\.0 is not accepted/);
    const secret = '$6$rounds=5000$verysecret';
    const bad = message(`{"ignition": {"version": "3.0.0"}, "passwd": {"users": [{"name": "a", "passwordHash": "${secret}",]}}`);
    assert.match(bad, new RegExp(`^${ORIGIN.replaceAll('.', '\\.')}: malformed JSON at line 1 column \\d+`));
    assert.ok(!bad.includes(secret));
    const badYaml = message(`variant: fcos\nversion: 1.4.0\npasswd:\n  users:\n    - name: a\n      password_hash: "${secret}\n`);
    assert.match(badYaml, /malformed YAML at line \d+ column \d+/);
    assert.ok(!badYaml.includes('verysecret'));
  });

  it('missing required fields are named', () => {
    assert.equal(message('{"ignition": {"version": "3.0.0"}, "storage": {"files": [{"mode": 420}]}}'), `${ORIGIN}: storage.files[0].path: required`);
  });

  it('may not take over what bootwright generates for kubeadm', () => {
    assert.match(message('storage:\n  files:\n    - path: /etc/kubeadm/bootstrap.sh\n      contents: {inline: "echo hi"}\n'), /storage\.files\[0\]\.path: may not replace or write under a path bootwright generates for the bootstrap \(\/etc\/kubeadm\)/);
    assert.match(message('{"ignition": {"version": "3.0.0"}, "storage": {"links": [{"path": "/etc/kubernetes/pki/ca.crt", "target": "/x"}]}}'), /storage\.links\[0\]\.path: may not replace/);
    assert.match(message('systemd:\n  units:\n    - name: kubeadm-bootstrap.service\n      mask: true\n'), /systemd\.units\[0\]\.mask: may not change kubeadm-bootstrap\.service/);
    assert.match(message('{"ignition": {"version": "3.0.0", "config": {"replace": {"source": "https://x/y.ign"}}}}'), /ignition\.config\.replace: would discard the generated config/);
    // A file where bootwright needs a directory.
    assert.match(message('{"ignition": {"version": "3.0.0"}, "storage": {"files": [{"path": "/etc/kubeadm", "contents": {"source": "data:,x"}}]}}'), /may not replace/);
  });

  it("may not write the bootstrap unit's state directory (/var/lib/bootwright) or anything under it", () => {
    const prot = `may not replace or write under a path bootwright generates for the bootstrap (${BOOTSTRAP_STATE_DIR}): the node would not join`;
    assert.equal(message(`storage:\n  files:\n    - path: ${BOOTSTRAP_STAMP}\n      contents: {inline: "success"}\n`), `${ORIGIN}: storage.files[0].path: ${prot}`);
    assert.equal(message(`{"ignition": {"version": "3.0.0"}, "storage": {"directories": [{"path": "${BOOTSTRAP_STATE_DIR}"}]}}`), `${ORIGIN}: storage.directories[0].path: ${prot}`);
    assert.equal(message(`variant: fcos\nversion: 1.4.0\nstorage:\n  links:\n    - path: ${BOOTSTRAP_STATE_DIR}/x\n      target: /tmp\n`), `${ORIGIN}: storage.links[0].path: ${prot}`);
  });

  it('may not make a file or link of a directory holding what bootwright generates; directories there are fine', () => {
    assert.equal(
      message('{"ignition": {"version": "3.0.0"}, "storage": {"files": [{"path": "/var/lib", "contents": {"source": "data:,x"}}], "links": [{"path": "/etc", "target": "/tmp"}]}}'),
      [
        `${ORIGIN}: storage.files[0].path: may not be a file: bootwright needs it to be a directory for what it generates for the bootstrap (${BOOTSTRAP_STATE_DIR}): the node would not join`,
        `${ORIGIN}: storage.links[0].path: may not be a link: bootwright needs it to be a directory for what it generates for the bootstrap (/etc/kubernetes/pki): the node would not join`,
      ].join('; '),
    );
    assert.equal(message('storage:\n  files:\n    - path: /run/cluster-api\n'), `${ORIGIN}: storage.files[0].path: may not replace or write under a path bootwright generates for the bootstrap (/run/cluster-api): the node would not join`);
    assert.match(message('storage:\n  files:\n    - path: /etc/systemd/system\n'), /storage\.files\[0\]\.path: may not be a file: bootwright needs it to be a directory for what it generates for the bootstrap \(\/etc\/systemd\/system\/kubeadm-bootstrap\.service\)/);
    const out = renderIgnition(withConfig('{"ignition": {"version": "3.0.0"}, "storage": {"directories": [{"path": "/var/lib", "mode": 493}, {"path": "/var/lib/app"}]}}'));
    assert.deepEqual(
      (out.config as { storage: { directories: { path: string }[] } }).storage.directories.map((d) => d.path),
      ['/var/lib', '/var/lib/app'],
    );
  });

  it("a drop-in for Cluster API's kubeadm.service is refused in bootwright's layout, pointing at kubeadm-bootstrap.service", () => {
    const capi = `kubeadm.service is Cluster API's unit name, which bootwright uses for Cluster API input only; this request runs kubeadm from ${BOOTSTRAP_UNIT}: add the drop-in there`;
    // CAPA/CAPO Flatcar templates: Butane, and the CLC CABPK transpiles.
    const dropin = '"[Unit]\\nRequires=coreos-metadata.service\\nAfter=coreos-metadata.service\\n[Service]\\nEnvironmentFile=/run/metadata/flatcar\\n"';
    assert.equal(message(`variant: flatcar\nversion: 1.0.0\nsystemd:\n  units:\n    - name: kubeadm.service\n      enabled: true\n      dropins:\n        - name: 10-flatcar.conf\n          contents: ${dropin}\n`), `${ORIGIN}: systemd.units[0]: ${capi}`);
    assert.equal(message(`systemd:\n  units:\n    - name: app.service\n      enable: true\n    - name: kubeadm.service\n      dropins:\n        - name: 10-flatcar.conf\n          contents: ${dropin}\n`), `${ORIGIN}: systemd.units[1]: ${capi}`);
    assert.equal(message(`{"ignition": {"version": "3.0.0"}, "systemd": {"units": [{"name": "kubeadm.service", "dropins": [{"name": "10-x.conf", "contents": "[Service]\\n"}]}]}}`), `${ORIGIN}: systemd.units[0]: ${capi}`);
    // A unit of that name the config defines itself is its own business; drop-ins on kubeadm-bootstrap.service are allowed.
    const own = renderIgnition(withConfig(`systemd:\n  units:\n    - name: kubeadm.service\n      contents: ${JSON.stringify(UNIT)}\n      dropins: [{name: 10-x.conf, contents: "[Service]\\n"}]\n    - name: ${BOOTSTRAP_UNIT}\n      dropins: [{name: 10-x.conf, contents: "[Service]\\n"}]\n`));
    assert.deepEqual(cfg(own).systemd.units.map((u) => [u.name, u.dropins?.map((d) => d.name)]), [[BOOTSTRAP_UNIT, ['10-x.conf']], ['kubeadm.service', ['10-x.conf']]]);
  });

  it('the merged config is checked with Ignition rules', async () => {
    const e = message('{"ignition": {"version": "3.0.0"}, "systemd": {"units": [{"name": "app"}]}}');
    assert.match(e, /merged into the generated config, systemd\.units\[1\]\.name: invalid systemd unit extension/);
    assert.match(message('{"ignition": {"version": "3.0.0"}, "storage": {"files": [{"path": "/etc/a"}, {"path": "/etc/a/b"}]}}'), /is under \/etc\/a, which is a file/);
    // Owners merge field by field: an id over a generated entry's name is both (Ignition refuses that).
    const plan = makePlan({ files: [planFile(0, '/etc/app.conf', 'x')] });
    const owner = requestError(() => renderIgnition(withConfig('{"ignition": {"version": "3.0.0"}, "storage": {"files": [{"path": "/etc/app.conf", "user": {"id": 1000}}]}}', undefined, plan))).message;
    assert.match(owner, /storage\.files\[0\]\.user: cannot set both id and name/);
    const cleared = renderIgnition(withConfig('{"ignition": {"version": "3.0.0"}, "storage": {"files": [{"path": "/etc/app.conf", "user": {"id": 1000, "name": ""}}]}}', undefined, plan));
    assert.deepEqual((cleared.config as { storage: { files: { user: unknown }[] } }).storage.files[0]!.user, { name: '', id: 1000 });
    await assertValid(cleared);
  });
});

describe('output version with an additional config', () => {
  const raw34 = rawIgnition('3.4.0');

  it('is at least the additional config version, and more when the generated config needs it', () => {
    assert.equal(renderIgnition(withConfig(rawIgnition('3.2.0'))).version, '3.2.0');
    assert.equal(renderIgnition(withConfig(raw34, undefined, makePlan())).version, '3.4.0');
    // A setuid file needs 3.6.0, above the additional config's 3.2.0.
    const setuid = makePlan({ files: [planFile(0, '/usr/local/bin/tool', 'x', { mode: 0o4755 })] });
    assert.equal(renderIgnition(withConfig(rawIgnition('3.2.0'), undefined, setuid)).version, '3.6.0');
    assert.equal(renderIgnition(withConfig(rawIgnition('3.0.0')), { version: '3.5.0' }).version, '3.5.0');
  });

  it('a requested spec below the additional config version is a 422 naming the version field', () => {
    const e = requestError(() => renderIgnition(withConfig(raw34), { version: '3.3.0' }));
    assert.equal(e.status, 422);
    assert.deepEqual(e.problems, [{ path: 'spec.output.ignitionVersion', message: `Ignition spec 3.3.0 is lower than the spec of ${ORIGIN} (3.4.0); ask for 3.4.0 or higher` }]);
    const accept = requestError(() => renderIgnition(withConfig(raw34), { version: '3.3.0', versionField: 'Accept' }));
    assert.equal(accept.problems[0]!.path, 'Accept');
  });

  it('through the pipeline: an Accept-style version names the negotiation field', () => {
    const req = validateNodeBootstrap(worker({ provisioning: { ignition: { containerLinuxConfig: { additionalConfig: raw34 } } } }));
    const out = renderNodeBootstrap(req, { format: 'ignition' });
    assert.equal(out.ignitionVersion, '3.4.0');
    const e = requestError(() => renderNodeBootstrap(req, { format: 'ignition', ignitionVersion: '3.2.0', ignitionVersionField: 'Accept' }));
    assert.equal(e.problems[0]!.path, 'Accept');
  });
});

describe('cloud-config ignores the additional config', () => {
  it('renders byte-identical cloud-config and says so in a warning', () => {
    const plain = renderNodeBootstrap(validateNodeBootstrap(worker()));
    const req = validateNodeBootstrap(worker({ provisioning: { ignition: { containerLinuxConfig: { additionalConfig: BUTANE_FCOS, strict: true } } } }));
    const withIgn = renderNodeBootstrap(req);
    assert.equal(withIgn.body, plain.body);
    assert.equal(withIgn.sha256, plain.sha256);
    assert.deepEqual(withIgn.warnings, [...plain.warnings, `${ORIGIN} is ignored: it applies to Ignition output only`]);
  });

  it('the request schema takes Cluster API field names and refuses unknown ones', () => {
    assert.throws(() => validateNodeBootstrap(worker({ provisioning: { ignition: { containerLinuxConfig: { additionalConfig: 'a: b', strcit: true } } } })), /spec\.provisioning\.ignition\.containerLinuxConfig\.strcit: unknown field/);
  });
});

describe('Butane scalars as Butane reads them, through to the output', () => {
  it('mode: 0o644 and overwrite: yes', async () => {
    const out = renderIgnition(withConfig('variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/app.conf\n      mode: 0o644\n      overwrite: yes\n      contents: {inline: "a=1\\n"}\n'));
    const file = (out.config as { storage: { files: { path: string; mode?: number; overwrite?: boolean }[] } }).storage.files.find((f) => f.path === '/etc/app.conf');
    assert.ok(file);
    assert.equal(file.mode, 420);
    assert.equal(file.overwrite, true);
    await assertValid(out);
  });
});

describe('illegal modes in an additional config', () => {
  const message = (text: string) => requestError(() => renderIgnition(withConfig(text))).message;
  const all = (...messages: string[]) => messages.map((m) => `${ORIGIN}: ${m}`).join('; ');

  it('a negative mode is an illegal file mode at any spec, not a setuid/setgid/sticky feature', () => {
    assert.equal(message('{"ignition": {"version": "3.3.0"}, "storage": {"files": [{"path": "/etc/a", "mode": -1}]}}'), all('storage.files[0].mode: illegal file mode'));
    assert.equal(message('{"ignition": {"version": "3.6.0"}, "storage": {"files": [{"path": "/etc/a", "mode": -1}]}}'), all('storage.files[0].mode: illegal file mode'));
    assert.equal(message('storage:\n  files:\n    - path: /etc/a\n      mode: -1\n'), all('storage.files[0].mode: illegal file mode'));
    assert.equal(message('variant: fcos\nversion: 1.4.0\nstorage:\n  directories: [{path: /etc/d, mode: -0o1}]\n'), all('storage.directories[0].mode: illegal file mode'));
  });

  it('every bad mode is reported: above 07777, negative, and special bits the spec lacks', () => {
    assert.equal(
      message('{"ignition": {"version": "3.3.0"}, "storage": {"files": [{"path": "/etc/a", "mode": -1}], "directories": [{"path": "/etc/d", "mode": 4096}, {"path": "/etc/e", "mode": 99999}]}}'),
      all('storage.files[0].mode: illegal file mode', 'storage.directories[0].mode: illegal file mode', 'storage.directories[1].mode: illegal file mode'),
    );
    assert.equal(
      message('{"ignition": {"version": "3.3.0"}, "storage": {"files": [{"path": "/etc/a", "mode": 2541}], "directories": [{"path": "/etc/d", "mode": -1}]}}'),
      all('storage.files[0].mode: storage.files[].mode with setuid/setgid/sticky bits needs Ignition spec 3.6.0, but the config is Ignition spec 3.3.0', 'storage.directories[0].mode: illegal file mode'),
    );
  });
});
