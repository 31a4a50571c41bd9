/**
 * The example inventory (examples/inventory/) makes nodes on stock images: both profiles
 * carry what their image lacks (Flatcar: the Kubernetes system extension; Ubuntu: a
 * container runtime, kubelet and kubeadm from pkgs.k8s.io) pinned to the profile's own
 * kubernetesVersion, and every machine's bootstrap data passes the real validators
 * (ignition-validate, `cloud-init schema`, kubeadm's `config validate`, Butane's own
 * translation of the additional config). The install commands cannot run here (the test
 * machine reaches no package repository); `sh -n` checks each one parses.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { load } from 'js-yaml';
import { cloudConfigFiles, ignitionFiles } from '../support/decode.js';
import { inventory, type Inventory } from '../support/inventory.js';
import { referenceTool, referenceToolMissing } from '../support/tools.js';
import { inCI } from '../support/missing.js';
import { cloudInitSchema, ignitionValidate, ignitionValidateKnows, kubeadmValidate, validateIgnitionSchema } from '../support/validators.js';

const EXAMPLES = resolve(import.meta.dirname, '../../examples/inventory');
const read = (file: string) => load(readFileSync(join(EXAMPLES, file), 'utf8')) as { kind: string; metadata: { name: string }; spec: Record<string, unknown> };
const flatcar = read('flatcar/profile.yaml');
const ubuntu = read('ubuntu/profile.yaml');

let inv: Inventory;
before(async () => {
  inv = await inventory();
  for (const [path, file] of [
    ['/v1/clusters', 'cluster.yaml'],
    ['/v1/profiles', 'flatcar/profile.yaml'],
    ['/v1/profiles', 'ubuntu/profile.yaml'],
    ['/v1/machines', 'flatcar/machine.yaml'],
    ['/v1/machines', 'ubuntu/machine.yaml'],
  ] as const) {
    const res = await inv.send('post', path, read(file));
    assert.equal(res.status, 201, `${file}: ${res.text}`);
  }
});
after(() => inv.close());

/** The kubeadm configuration among a node's files (the one holding a JoinConfiguration). */
function kubeadmConfig(files: Map<string, Buffer>): string {
  const found = [...files.values()].map((b) => b.toString('utf8')).filter((t) => /^kind: JoinConfiguration$/m.test(t));
  assert.equal(found.length, 1, 'one kubeadm configuration');
  return found[0]!;
}

async function assertKubeadmValid(yaml: string, version: string): Promise<void> {
  const verdict = await kubeadmValidate(yaml, version);
  // Under CI the pinned kubeadm minors must cover the examples' versions.
  if (verdict === undefined) {
    assert.ok(!inCI, `no kubeadm of the reference tools covers Kubernetes ${version}: pin its minor in tools/reference/`);
    return;
  }
  assert.deepEqual(verdict.problems, [], `${verdict.kubeadm}: ${verdict.problems.join('\n')}`);
}

describe('the example machines', () => {
  it('a machine with maxFetches says beside it that every diskless boot uses one fetch', () => {
    for (const file of ['flatcar/machine.yaml', 'ubuntu/machine.yaml']) {
      const text = readFileSync(join(EXAMPLES, file), 'utf8');
      if (!/^\s*maxFetches:/m.test(text)) continue;
      const comment = /((?:^ *#.*\n)+) *maxFetches:/m.exec(text)?.[1] ?? '';
      assert.match(comment, /every boot/, `${file}: the comment above maxFetches`);
      assert.match(comment, /reset-fetches/, `${file}: the comment names the way to reset it`);
    }
  });
});

describe('the Flatcar example', () => {
  const version = flatcar.spec.kubernetesVersion as string;

  it('downloads the Kubernetes sysext of its own kubernetesVersion and links it into /etc/extensions; ignition-validate and kubeadm accept the config', async () => {
    const res = await inv.get('/v1/machines/rack1-n1/bootstrap');
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers['content-type']!, /^application\/vnd\.coreos\.ignition\+json; version=3\.4\.0/);
    const config = JSON.parse(res.text) as { storage: { files: { path: string; contents?: { source?: string } }[]; links: { path: string; target: string; hard?: boolean }[] }; systemd: { units: { name: string; mask?: boolean }[] } };
    const raw = `/opt/extensions/kubernetes/kubernetes-${version}-x86-64.raw`;
    const sysext = config.storage.files.find((f) => f.path === raw);
    assert.equal(sysext?.contents?.source, `https://extensions.flatcar.org/extensions/kubernetes/kubernetes-${version}-x86-64.raw`);
    assert.deepEqual(config.storage.links.find((l) => l.path === '/etc/extensions/kubernetes.raw'), { path: '/etc/extensions/kubernetes.raw', target: raw, hard: false });
    assert.deepEqual(
      config.systemd.units.filter((u) => u.mask).map((u) => u.name),
      ['update-engine.service', 'locksmithd.service'],
    );
    assert.deepEqual(validateIgnitionSchema(res.text, '3.4.0'), []);
    // Debian's ignition-validate stops at 3.3.0; the reference one (required under CI) reads 3.4.0.
    if (ignitionValidateKnows('3.4.0')) assert.deepEqual(await ignitionValidate(res.text), []);
    const inline = config.storage.files.filter((f) => f.contents?.source?.startsWith('data:'));
    await assertKubeadmValid(kubeadmConfig(ignitionFiles({ storage: { files: inline } })), version);
  });

  it("Butane's own --strict translation of the additional config accepts it", { skip: referenceToolMissing('butane', 'the Flatcar example') }, () => {
    const additional = ((flatcar.spec.provisioning as { ignition: { containerLinuxConfig: { additionalConfig: string } } }).ignition.containerLinuxConfig.additionalConfig);
    const run = spawnSync(referenceTool('butane')!, ['--strict'], { input: additional, encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    const out = JSON.parse(run.stdout) as { ignition: { version: string } };
    assert.equal(out.ignition.version, '3.4.0');
  });
});

describe('the Ubuntu example', () => {
  const version = ubuntu.spec.kubernetesVersion as string;
  const minor = /^v(\d+\.\d+)\./.exec(version)![1]!;
  const patch = version.slice(1);

  it("installs containerd and kubelet and kubeadm pinned to its kubernetesVersion from that minor's pkgs.k8s.io repository; cloud-init and kubeadm accept it", async () => {
    const res = await inv.get('/v1/machines/rack1-n2/bootstrap');
    assert.equal(res.status, 200, res.text);
    assert.ok(res.text.startsWith('#cloud-config\n'));
    const doc = load(res.text) as { runcmd: (string | string[])[] };
    const commands = doc.runcmd.map((c) => (Array.isArray(c) ? c.join(' ') : c));
    const install = commands.find((c) => c.includes('apt-get install'));
    assert.ok(install, 'an apt-get install command');
    for (const pkg of ['kubelet', 'kubeadm']) assert.ok(install.split(' ').includes(`${pkg}=${patch}-1.1`), `${pkg} pinned to ${patch}-1.1`);
    assert.ok(install.split(' ').includes('containerd'));
    const files = cloudConfigFiles(res.text);
    assert.equal(files.get('/etc/apt/sources.list.d/kubernetes.list')?.toString(), `deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.asc] https://pkgs.k8s.io/core:/stable:/v${minor}/deb/ /\n`);
    assert.ok(commands.includes(`curl -fsSL https://pkgs.k8s.io/core:/stable:/v${minor}/deb/Release.key -o /etc/apt/keyrings/kubernetes-apt-keyring.asc`));
    assert.match(files.get('/etc/containerd/config.toml')!.toString(), /^\s*SystemdCgroup = true$/m);
    assert.match(files.get('/etc/sysctl.d/90-kubernetes.conf')!.toString(), /^net\.ipv4\.ip_forward = 1$/m);
    // The install runs before kubeadm: every pre command comes before the kubeadm join.
    const join = commands.findIndex((c) => /\bkubeadm join\b/.test(c));
    assert.ok(join > commands.indexOf(install), 'kubeadm join runs after the install');
    for (const c of commands) {
      const parsed = spawnSync('sh', ['-n', '-c', c], { encoding: 'utf8' });
      assert.equal(parsed.status, 0, `sh -n: ${c}: ${parsed.stderr}`);
    }
    assert.deepEqual(await cloudInitSchema(res.text), []);
    await assertKubeadmValid(kubeadmConfig(files), version);
  });
});
