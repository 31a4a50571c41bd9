/**
 * Metadata variables on Ignition nodes and CABPK's Ignition layout (issue 12): the
 * generated scripts are run for real (sh, awk, envsubst) against a metadata file in a
 * temporary directory standing in for /run/metadata/flatcar, and the kubeadm
 * configuration after them names the node.
 *
 * The template is CAPO's Flatcar flavour as the openstack-cluster Helm chart writes it
 * (azimuth-cloud/capi-helm-charts charts/openstack-cluster/templates/_helpers.tpl,
 * `openstack-cluster.flatcarKubeadmConfigSpec`): `name: ${COREOS_OPENSTACK_HOSTNAME}`, the
 * `export …%.*` / `envsubst` / `mv` preKubeadmCommands, and the `kubeadm.service` drop-in
 * with `EnvironmentFile=/run/metadata/flatcar`.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { load } from 'js-yaml';
import { renderNodeBootstrap } from '../../../src/render.js';
import { validateNodeBootstrap } from '../../../src/request/parse.js';
import { ignitionFiles } from '../../support/decode.js';
import { problemsOf } from '../../support/errors.js';
import { missingDependency } from '../../support/missing.js';
import { worker } from '../../support/requests.js';

const run = promisify(execFile);
type Doc = Record<string, unknown>;

const DROPIN = `systemd:
  units:
  - name: coreos-metadata-sshkeys@.service
    enabled: true
  - name: kubeadm.service
    enabled: true
    dropins:
    - name: 10-flatcar.conf
      contents: |
        [Unit]
        Requires=containerd.service coreos-metadata.service
        After=containerd.service coreos-metadata.service
        [Service]
        EnvironmentFile=/run/metadata/flatcar
`;

/** CAPO's Flatcar KubeadmConfigTemplate spec; `envsubst: false` leaves the template's own substitution out. */
function flatcarSpec(envsubst = true): Doc {
  return {
    joinConfiguration: { nodeRegistration: { name: '${COREOS_OPENSTACK_HOSTNAME}', kubeletExtraArgs: { 'provider-id': 'openstack:///${COREOS_OPENSTACK_INSTANCE_ID}' } } },
    preKubeadmCommands: envsubst
      ? ['export COREOS_OPENSTACK_HOSTNAME=${COREOS_OPENSTACK_HOSTNAME%.*}', 'envsubst < /etc/kubeadm.yml > /etc/kubeadm.yml.tmp', 'mv /etc/kubeadm.yml.tmp /etc/kubeadm.yml']
      : [],
    format: 'ignition',
    ignition: { containerLinuxConfig: { additionalConfig: DROPIN } },
  };
}

const METADATA = 'COREOS_OPENSTACK_HOSTNAME=capo-md-0-x7k2p.novalocal\nCOREOS_OPENSTACK_INSTANCE_ID=b0fa911b-69d4-4476-bbe2-1c92bff6535c\nCOREOS_OPENSTACK_IPV4_LOCAL=10.0.0.12\n';

const ignition = (req: unknown) => JSON.parse(renderNodeBootstrap(validateNodeBootstrap(req)).body) as Doc & { systemd: { units: { name: string; contents?: string; dropins?: { name: string }[] }[] } };

/**
 * Run the node's `/etc/kubeadm.sh` in `dir`: every node path the script names mapped
 * into `dir`, `kubeadm` replaced by a stand-in that records its config, the metadata
 * file loaded into the environment as the template's `EnvironmentFile=` drop-in does
 * (`metadata.env`, the `NAME=value` lines of the drop-in's file; `metadata.file`: those of
 * /run/metadata/flatcar, absent when undefined).
 */
async function runBootstrap(config: Doc, metadata: { file?: string; env?: string }): Promise<{ dir: string; code: number; stderr: string; kubeadmConfig?: Doc; sentinel: boolean }> {
  const files = ignitionFiles(config);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bw-metadata-'));
  const at = (p: string) => path.join(dir, p.replace(/\//g, '_'));
  const nodePaths = ['/etc/kubeadm/metadata.sh', '/etc/kubeadm.yml', '/run/metadata/flatcar', '/run/cluster-api/bootstrap-success.complete', '/run/cluster-api'];
  let script = files.get('/etc/kubeadm.sh')!.toString();
  for (const p of nodePaths) script = script.replaceAll(p, at(p));
  script = script.replace(/\bkubeadm join --config (\S+)/, `cp $1 ${at('kubeadm-ran')}`);
  await writeFile(at('/etc/kubeadm/metadata.sh'), files.get('/etc/kubeadm/metadata.sh')!);
  await writeFile(at('/etc/kubeadm.yml'), files.get('/etc/kubeadm.yml')!, { mode: 0o600 });
  if (metadata.file !== undefined) await writeFile(at('/run/metadata/flatcar'), metadata.file);
  if (metadata.env !== undefined) await writeFile(at('dropin-env'), metadata.env);
  await writeFile(at('script'), script);
  const env = metadata.env === undefined ? '' : `set -a; . ${at('dropin-env')}; set +a; `;
  const { code, stderr } = await run('/bin/sh', ['-c', `${env}sh ${at('script')}`], { cwd: dir }).then(
    (r) => ({ code: 0, stderr: r.stderr }),
    (e: unknown) => e as { code: number; stderr: string },
  );
  const ran = existsSync(at('kubeadm-ran')) ? (load((await readFile(at('kubeadm-ran'), 'utf8')).replace(/^---\n/, '')) as Doc) : undefined;
  return { dir, code, stderr, ...(ran ? { kubeadmConfig: ran } : {}), sentinel: existsSync(at('/run/cluster-api/bootstrap-success.complete')) };
}

const skip = (() => {
  for (const tool of ['/bin/sh', '/usr/bin/awk', '/usr/bin/envsubst']) if (!existsSync(tool)) return missingDependency(`${tool}: the metadata scripts are not run`);
  return false;
})();

describe('CABPK Ignition layout for Cluster API input', () => {
  it('writes /etc/kubeadm.yml, /etc/kubeadm.sh and kubeadm.service, to which the template drop-in applies', () => {
    const config = ignition(worker({ kubeadmConfigSpec: flatcarSpec() }));
    const files = ignitionFiles(config);
    assert.ok(files.has('/etc/kubeadm.yml') && files.has('/etc/kubeadm.sh') && files.has('/etc/kubeadm/metadata.sh'));
    assert.ok(![...files.keys()].some((p) => p.startsWith('/etc/kubeadm/kubeadm')), 'no bootwright-layout config');
    const unit = config.systemd.units.find((u) => u.name === 'kubeadm.service')!;
    assert.match(unit.contents!, /^ExecStart=\/bin\/sh \/etc\/kubeadm\.sh$/m);
    assert.match(unit.contents!, /^Wants=coreos-metadata\.service$/m);
    assert.deepEqual(unit.dropins!.map((d) => d.name), ['10-flatcar.conf']);
    assert.ok(!config.systemd.units.some((u) => u.name === 'kubeadm-bootstrap.service'));
  });

  it('still refuses what would stop kubeadm running: masking, disabling, replacing ExecStart, a condition', () => {
    const refused = (units: string) => problemsOf(() => ignition(worker({ kubeadmConfigSpec: { ...flatcarSpec(), ignition: { containerLinuxConfig: { additionalConfig: `systemd:\n  units:\n${units}` } } } }))).map((p) => p.message);
    assert.match(refused('  - name: kubeadm.service\n    mask: true\n')[0]!, /systemd\.units\[0\]\.mask: may not change kubeadm\.service/);
    assert.match(refused('  - name: kubeadm.service\n    enabled: false\n')[0]!, /systemd\.units\[0\]\.enabled: may not change/);
    assert.match(refused('  - name: kubeadm.service\n    dropins:\n    - name: 20-x.conf\n      contents: "[Service]\\nExecStart=\\nExecStart=/bin/true\\n"\n')[0]!, /dropins\[0\]\.contents: sets ExecStart=/);
    assert.match(refused('  - name: kubeadm.service\n    dropins:\n    - name: 20-x.conf\n      contents: "[Unit]\\nConditionPathExists=/nope\\n"\n')[0]!, /sets ConditionPathExists=/);
    const stamp = problemsOf(() => ignition(worker({ kubeadmConfigSpec: { ...flatcarSpec(), files: [{ path: '/var/lib/bootwright/kubeadm-bootstrap.done', content: '' }] } })));
    assert.equal(stamp[0]!.path, 'spec.kubeadmConfigSpec.files[0].path');
  });

  it('a variable of another platform than the one named is refused at the field: it would never be set', () => {
    const req = validateNodeBootstrap(worker({ kubeadmConfigSpec: flatcarSpec() }));
    const problems = problemsOf(() => renderNodeBootstrap(req, { platform: 'aws', platformField: 'platform' }));
    assert.deepEqual(problems.map((p) => p.path), ['spec.kubeadmConfigSpec.joinConfiguration.nodeRegistration.name', 'spec.kubeadmConfigSpec.joinConfiguration.nodeRegistration.kubeletExtraArgs.provider-id']);
    assert.match(problems[0]!.message, /COREOS_OPENSTACK_HOSTNAME\}, which the metadata agent writes on openstack, but platform is aws/);
    assert.doesNotThrow(() => renderNodeBootstrap(req, { platform: 'openstack', platformField: 'platform' }));
  });

  it('a native request keeps bootwright\'s layout (kubeadm-bootstrap.service, /etc/kubeadm/)', () => {
    const config = ignition(worker({ nodeName: { fromMetadata: { variable: 'COREOS_EC2_HOSTNAME' } }, output: { format: 'ignition' } }));
    const files = ignitionFiles(config);
    assert.ok(files.has('/etc/kubeadm/bootstrap.sh') && files.has('/etc/kubeadm/kubeadm-join-config.yaml'));
    assert.match(files.get('/etc/kubeadm/bootstrap.sh')!.toString(), /^\/bin\/sh \/etc\/kubeadm\/metadata\.sh \/run\/metadata\/flatcar \/etc\/kubeadm\/kubeadm-join-config\.yaml COREOS_EC2_HOSTNAME && kubeadm join/m);
    assert.match(files.get('/etc/kubeadm/kubeadm-join-config.yaml')!.toString(), /^ {2}name: \$\{COREOS_EC2_HOSTNAME\}$/m);
  });
});

describe('metadata variables, filled in on the node (sh, awk, envsubst)', { skip }, () => {
  it('a template\'s own metadata file (EnvironmentFile= in its drop-in, e.g. /run/metadata/coreos) is read through the environment', async () => {
    const r = await runBootstrap(ignition(worker({ kubeadmConfigSpec: { ...flatcarSpec(false), joinConfiguration: { nodeRegistration: { name: '${COREOS_CUSTOM_HOSTNAME}' } } } })), { env: 'COREOS_CUSTOM_HOSTNAME=capv-md-0-8fz9q\n' });
    try {
      assert.equal(r.code, 0, r.stderr);
      assert.equal((r.kubeadmConfig!.nodeRegistration as Doc).name, 'capv-md-0-8fz9q');
    } finally {
      await rm(r.dir, { recursive: true, force: true });
    }
  });

  it("the template's own envsubst goes first (short name), bootwright's fills the rest; kubeadm sees the node's name", async () => {
    const r = await runBootstrap(ignition(worker({ kubeadmConfigSpec: flatcarSpec() })), { file: METADATA, env: METADATA });
    try {
      assert.equal(r.code, 0, r.stderr);
      const registration = r.kubeadmConfig!.nodeRegistration as { name: string; kubeletExtraArgs: { name: string; value: string }[] };
      assert.equal(registration.name, 'capo-md-0-x7k2p');
      assert.equal(registration.kubeletExtraArgs.find((a) => a.name === 'provider-id')!.value, 'openstack:///b0fa911b-69d4-4476-bbe2-1c92bff6535c');
      assert.ok(r.sentinel);
    } finally {
      await rm(r.dir, { recursive: true, force: true });
    }
  });

  it('without the template\'s envsubst or drop-in, bootwright fills the variables in from the file, keeping it 0600', async () => {
    const r = await runBootstrap(ignition(worker({ kubeadmConfigSpec: flatcarSpec(false) })), { file: METADATA });
    try {
      assert.equal(r.code, 0, r.stderr);
      assert.equal((r.kubeadmConfig!.nodeRegistration as Doc).name, 'capo-md-0-x7k2p.novalocal');
      assert.equal((await stat(path.join(r.dir, '_etc_kubeadm.yml'))).mode & 0o777, 0o600);
      assert.ok(r.sentinel);
    } finally {
      await rm(r.dir, { recursive: true, force: true });
    }
  });

  it('an unset variable fails the boot naming it; kubeadm does not run and the sentinel stays absent', async () => {
    const r = await runBootstrap(ignition(worker({ kubeadmConfigSpec: flatcarSpec(false) })), { file: 'COREOS_OPENSTACK_IPV4_LOCAL=10.0.0.12\n', env: 'COREOS_OPENSTACK_IPV4_LOCAL=10.0.0.12\n' });
    try {
      assert.match(r.stderr, /bootwright: COREOS_OPENSTACK_HOSTNAME is not set \(neither in the environment nor in \S+flatcar\)/);
      assert.match(r.stderr, /bootwright: COREOS_OPENSTACK_INSTANCE_ID is not set/);
      assert.equal(r.kubeadmConfig, undefined);
      assert.equal(r.sentinel, false);
      assert.match(await readFile(path.join(r.dir, '_etc_kubeadm.yml'), 'utf8'), /name: \$\{COREOS_OPENSTACK_HOSTNAME\}/);
    } finally {
      await rm(r.dir, { recursive: true, force: true });
    }
  });

  it('a missing metadata file fails the boot naming the variables and the file', async () => {
    const r = await runBootstrap(ignition(worker({ kubeadmConfigSpec: flatcarSpec(false) })), {});
    try {
      assert.match(r.stderr, /bootwright: COREOS_OPENSTACK_HOSTNAME is not set \(neither in the environment nor in \S+flatcar, which cannot be read\)/);
      assert.equal(r.sentinel, false);
    } finally {
      await rm(r.dir, { recursive: true, force: true });
    }
  });
});
