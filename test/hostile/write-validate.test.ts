/**
 * What can never boot is refused when written (issue 11 C): POST and PUT on
 * /v1/clusters|profiles|machines answer 422 naming the field for boot arguments and
 * URLs iPXE cannot use, kubeadm overrides of the wrong shape, label and taint values
 * that would smuggle another label, advertise addresses that are no IP address, boot
 * paths taken by a file, and for cluster and profile changes that break a machine using
 * them (naming the machine), capped by BOOTWRIGHT_WRITE_CHECK_MAX_MACHINES.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN } from '../support/server.js';
import { assertProblem, clusterSpec, doc, inventory, type Inventory, machineSpec, workerProfileSpec } from '../support/inventory.js';

const BOOT = { kernel: 'http://images.example.com/vmlinuz', initrd: ['http://images.example.com/initrd.img'], args: ['console=ttyS0'] };
const CP_KEY = 'a'.repeat(64);

let inv: Inventory;
before(async () => {
  inv = await inventory();
  assert.equal((await inv.send('post', '/v1/clusters', doc('Cluster', 'prod', clusterSpec({ certificateKey: CP_KEY })))).status, 201);
  assert.equal((await inv.send('post', '/v1/profiles', doc('Profile', 'worker', workerProfileSpec({ boot: BOOT })))).status, 201);
  assert.equal((await inv.send('post', '/v1/profiles', doc('Profile', 'cp', workerProfileSpec({ role: 'control-plane', boot: BOOT })))).status, 201);
});
after(() => inv.close());

describe('profiles: boot section', () => {
  for (const [what, boot, path, message] of [
    ['an argument with white space', { ...BOOT, args: ['console=ttyS0', 'quiet splash'] }, 'spec.boot.args[1]', /white space/],
    ['an argument starting with #', { ...BOOT, args: ['#x'] }, 'spec.boot.args[0]', /comment/],
    ['an argument with a CR', { ...BOOT, args: ['a\rb'] }, 'spec.boot.args[0]', /white space/],
    ['an argument setting initrd=', { ...BOOT, args: ['initrd=x'] }, 'spec.boot.args[0]', /initrd=/],
    ["an argument bootwright sets (ds=)", { ...BOOT, args: ['ds=nocloud'] }, 'spec.boot.args[0]', /set by bootwright/],
    ['a kernel URL iPXE cannot fetch (ftp)', { ...BOOT, kernel: 'ftp://images.example.com/vmlinuz' }, 'spec.boot.kernel', /scheme ftp/],
    ['an initrd URL iPXE cannot fetch (file)', { ...BOOT, initrd: ['file:///boot/initrd.img'] }, 'spec.boot.initrd[0]', /scheme file/],
    ['a kernel reference that is no URL', { ...BOOT, kernel: 'http://[::1' }, 'spec.boot.kernel', /not a URL/],
    ['a kernel command line over 2047 bytes', { ...BOOT, args: Array.from({ length: 200 }, (_, i) => `opt${i}=xxxxxx`) }, 'spec.boot', /kernel command line/],
  ] as const) {
    it(`${what}: POST and PUT are 422 at ${path}`, async () => {
      const spec = workerProfileSpec({ boot });
      assertProblem(await inv.send('post', '/v1/profiles', doc('Profile', 'bad-boot', spec)), 422, [path], { [path]: message });
      assertProblem(await inv.send('put', '/v1/profiles/worker', doc('Profile', 'worker', spec)), 422, [path], { [path]: message });
    });
  }
});

describe('profiles: kubeadm overrides, files, commands', () => {
  for (const [what, extra, path] of [
    ['nodeRegistration a string', { kubeadm: { joinConfiguration: { nodeRegistration: 'x' } } }, 'spec.kubeadm.joinConfiguration.nodeRegistration'],
    ['an unknown JoinConfiguration field', { kubeadm: { joinConfiguration: { bogus: 1 } } }, 'spec.kubeadm.joinConfiguration.bogus'],
    ['taints not a list', { kubeadm: { joinConfiguration: { nodeRegistration: { taints: 'x' } } } }, 'spec.kubeadm.joinConfiguration.nodeRegistration.taints'],
    ['a nodeRegistration taint key with a space', { kubeadm: { joinConfiguration: { nodeRegistration: { taints: [{ key: 'a b', effect: 'NoSchedule' }] } } } }, 'spec.kubeadm.joinConfiguration.nodeRegistration.taints[0].key'],
    ['node-labels with a term that is no label', { kubeadm: { joinConfiguration: { nodeRegistration: { kubeletExtraArgs: { 'node-labels': 'a=b,c' } } } } }, 'spec.kubeadm.joinConfiguration.nodeRegistration.kubeletExtraArgs.node-labels'],
    ['node-labels (v1beta4 list) with a bad value', { kubeadm: { joinConfiguration: { nodeRegistration: { kubeletExtraArgs: [{ name: 'node-labels', value: 'a=b c' }] } } } }, 'spec.kubeadm.joinConfiguration.nodeRegistration.kubeletExtraArgs[0].value'],
    ['a join advertise address that is no IP address', { role: 'control-plane', kubeadm: { joinConfiguration: { controlPlane: { localAPIEndpoint: { advertiseAddress: 'cp.example.com' } } } } }, 'spec.kubeadm.joinConfiguration.controlPlane.localAPIEndpoint.advertiseAddress'],
    ['a file at the boot stamp', { provisioning: { files: [{ path: '/var/lib/bootwright/kubeadm-bootstrap.done', content: '' }] } }, 'spec.provisioning.files[0].path'],
    ['a file at /var/lib, above the stamp', { provisioning: { files: [{ path: '/var/lib', content: '' }] } }, 'spec.provisioning.files[0].path'],
    ['an additional Ignition config at the stamp', { output: { format: 'ignition' }, provisioning: { ignition: { containerLinuxConfig: { additionalConfig: 'variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /var/lib/bootwright/kubeadm-bootstrap.done\n' } } } }, 'spec.provisioning.ignition.containerLinuxConfig.additionalConfig'],
  ] as const) {
    it(`${what}: 422 at ${path}`, async () => {
      assertProblem(await inv.send('post', '/v1/profiles', doc('Profile', 'bad', workerProfileSpec(extra))), 422, [path]);
      assertProblem(await inv.send('put', '/v1/profiles/worker', doc('Profile', 'worker', workerProfileSpec({ boot: BOOT, ...extra }))), 422, [path]);
    });
  }
});

describe('machines: labels, taints, addresses', () => {
  for (const [what, extra, path] of [
    ['a label value smuggling a second label', { nodeLabels: { role: 'web,node-role.kubernetes.io/control-plane=' } }, 'spec.nodeLabels.role'],
    ['a label value with =', { nodeLabels: { role: 'a=b' } }, 'spec.nodeLabels.role'],
    ['a label key with a comma', { nodeLabels: { 'a,b': 'c' } }, 'spec.nodeLabels.a,b'],
    ['a taint key with a space', { taints: [{ key: 'dedicated gpu', effect: 'NoSchedule' }] }, 'spec.taints[0].key'],
    ['a taint value with a comma', { taints: [{ key: 'dedicated', value: 'gpu,x=y', effect: 'NoSchedule' }] }, 'spec.taints[0].value'],
    ['an advertise address that is no IP address', { profile: 'cp', advertiseAddress: 'api.example.com' }, 'spec.advertiseAddress'],
    ['an advertise address on a worker', { advertiseAddress: '10.0.0.5' }, 'spec.advertiseAddress'],
  ] as const) {
    it(`${what}: POST and PUT are 422 at ${path}`, async () => {
      assertProblem(await inv.send('post', '/v1/machines', doc('Machine', 'bad-m', machineSpec('52:54:00:00:01:01', extra))), 422, [path]);
      assert.equal((await inv.send('post', '/v1/machines', doc('Machine', 'ok-m', machineSpec('52:54:00:00:01:02')))).status, 201);
      assertProblem(await inv.send('put', '/v1/machines/ok-m', doc('Machine', 'ok-m', machineSpec('52:54:00:00:01:02', extra))), 422, [path]);
      assert.equal((await inv.get('/v1/machines/ok-m')).status, 200);
      assert.equal((await inv.svc.app.inject({ method: 'DELETE', url: '/v1/machines/ok-m', headers: { authorization: `Bearer ${ADMIN}` } })).statusCode, 204);
    });
  }

  it('valid labels, taints and an IPv6 advertise address are stored', async () => {
    const res = await inv.send('post', '/v1/machines', doc('Machine', 'good-cp', machineSpec('52:54:00:00:01:03', { profile: 'cp', advertiseAddress: 'fd00::5', nodeLabels: { 'topology.kubernetes.io/zone': 'eu-1a', empty: '' }, taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] })));
    assert.equal(res.status, 201, res.text);
  });

  it('a missing cluster or profile is still a 422 naming spec.cluster and spec.profile', async () => {
    assertProblem(await inv.send('post', '/v1/machines', doc('Machine', 'lost', machineSpec('52:54:00:00:01:04', { cluster: 'nope', profile: 'nada' }))), 422, ['spec.cluster', 'spec.profile']);
  });
});

describe('cluster and profile changes render-check the machines that use them', () => {
  it('a profile PUT turning a control-plane profile into a worker one breaks machine good-cp: 422 naming it', async () => {
    const res = await inv.send('put', '/v1/profiles/cp', doc('Profile', 'cp', workerProfileSpec({ boot: BOOT })));
    assertProblem(res, 422, ['spec.advertiseAddress'], { 'spec.advertiseAddress': /^with machine "good-cp": / });
    assert.equal((await inv.get('/v1/profiles/cp')).body.metadata.revision, 1);
  });

  it('a cluster PUT dropping the certificate key a control-plane machine joins with: 422 at spec.certificateKey naming the machine', async () => {
    const res = await inv.send('put', '/v1/clusters/prod', doc('Cluster', 'prod', clusterSpec()));
    assertProblem(res, 422, ['spec.certificateKey'], { 'spec.certificateKey': /^with machine "good-cp": / });
    assert.equal((await inv.get('/v1/clusters/prod')).body.metadata.revision, 1);
  });

  it('a cluster PUT with a bad endpoint is a 422 at spec.controlPlaneEndpoint', async () => {
    assertProblem(await inv.send('put', '/v1/clusters/prod', doc('Cluster', 'prod', clusterSpec({ certificateKey: CP_KEY, controlPlaneEndpoint: 'api prod:6443' }))), 422, ['spec.controlPlaneEndpoint']);
  });

  it('changes every machine can take are stored', async () => {
    assert.equal((await inv.send('put', '/v1/clusters/prod', doc('Cluster', 'prod', clusterSpec({ certificateKey: CP_KEY, controlPlaneEndpoint: 'api2.prod.example.com:6443' })))).status, 200);
    assert.equal((await inv.send('put', '/v1/profiles/cp', doc('Profile', 'cp', workerProfileSpec({ role: 'control-plane', boot: { ...BOOT, args: ['console=ttyS0', 'quiet'] } })))).status, 200);
    // A profile's own node-labels may list several labels.
    const labels = { kubeadm: { joinConfiguration: { nodeRegistration: { kubeletExtraArgs: { 'node-labels': 'a=b,example.com/c=d,e=' } } } } };
    assert.equal((await inv.send('put', '/v1/profiles/worker', doc('Profile', 'worker', workerProfileSpec({ boot: BOOT, ...labels })))).status, 200);
  });
});

describe('the render-check is capped', () => {
  it('a profile used by more machines than BOOTWRIGHT_WRITE_CHECK_MAX_MACHINES is a 422 at metadata.name naming the limit', async () => {
    const small = await inventory({ writeCheckMaxMachines: 2 });
    try {
      assert.equal((await small.send('post', '/v1/clusters', doc('Cluster', 'prod', clusterSpec()))).status, 201);
      assert.equal((await small.send('post', '/v1/profiles', doc('Profile', 'worker', workerProfileSpec()))).status, 201);
      for (let i = 0; i < 2; i++) assert.equal((await small.send('post', '/v1/machines', doc('Machine', `m${i}`, machineSpec(`52:54:00:00:02:0${i}`)))).status, 201);
      assert.equal((await small.send('put', '/v1/profiles/worker', doc('Profile', 'worker', workerProfileSpec({ kubernetesVersion: 'v1.33.3' })))).status, 200, 'at the cap');
      assert.equal((await small.send('post', '/v1/machines', doc('Machine', 'm2', machineSpec('52:54:00:00:02:02')))).status, 201);
      const res = await small.send('put', '/v1/profiles/worker', doc('Profile', 'worker', workerProfileSpec({ kubernetesVersion: 'v1.33.4' })));
      assertProblem(res, 422, ['metadata.name'], { 'metadata.name': /3 machines, more than the 2 .*BOOTWRIGHT_WRITE_CHECK_MAX_MACHINES/ });
    } finally {
      await small.close();
    }
  });
});
