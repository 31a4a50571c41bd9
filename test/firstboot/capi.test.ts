/**
 * A real first boot of what `bootwright controller` wrote: a MachineDeployment worker's
 * KubeadmConfig (the Cluster API quick start's KubeadmConfigTemplate, cloned as a
 * MachineSet clones it) reconciled on a real management API server, its token created in
 * a real workload API server; the data Secret's `value` is then the user data of a Debian
 * guest under qemu (guest.ts), through a NoCloud seed, as an infrastructure provider
 * hands a Secret's `value` to its machine. After the guest powers off, its disk is read
 * back: the template's file with its bytes and mode, its user and key, ntp, the commands
 * in order around kubeadm, `kubeadm join` with the very token the workload cluster holds
 * (a stand-in kubeadm records its arguments and configuration), no node name (kubeadm
 * takes the hostname, as under CABPK), and the sentinel.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { load, loadAll } from 'js-yaml';
import { Kube } from '../../src/kube/client.js';
import { type RunningController, startController } from '../../src/controller/run.js';
import { tokenSecretName } from '../../src/kube/token.js';
import type { ControlPlane } from '../support/controlplane.js';
import { capturedLog } from '../support/logs.js';
import { CapiFixtures, get, managementSkip, startManagement } from '../support/management.js';
import { bootGuest, firstBootSkip, GuestDisk, guestImage, type GuestImage } from './guest.js';

const BOOT_TIMEOUT_MS = 6 * 60_000;

const skip = firstBootSkip() || managementSkip('the first boot of a controller-written Secret');

describe('first boot of a data Secret bootwright controller wrote', { skip, timeout: 15 * 60_000 }, () => {
  let mgmt: ControlPlane;
  let workload: ControlPlane;
  let stop: (() => Promise<void>) | undefined;
  let controller: RunningController | undefined;
  let image: GuestImage;
  let seed: Server;
  /** The NoCloud seed's files, by name. */
  const files = new Map<string, string>();

  before(async () => {
    image = await guestImage();
    ({ mgmt, workload, stop } = await startManagement());
    controller = await startController(Kube.fromKubeconfig(mgmt.kubeconfig), { tokenTtlMs: 15 * 60_000, ignitionVersion: '2.3', concurrency: 2, identity: 'firstboot', health: { host: '127.0.0.1', port: 0 } }, capturedLog('warn').log);
    seed = createServer((req, res) => {
      const body = files.get((req.url ?? '').replace(/^\/seed\//, ''));
      res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'text/plain' }).end(body ?? '');
    });
    await new Promise<void>((resolve) => seed.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    await controller?.stop();
    seed.close();
    await stop?.();
  });

  it('a MachineDeployment worker boots from the Secret: files, user, ntp, commands, kubeadm join with the workload cluster token, sentinel', async () => {
    const fixtures = new CapiFixtures(mgmt, workload);
    await fixtures.cluster('boot');
    await fixtures.clusterStatus('boot', { initialization: { infrastructureProvisioned: true, controlPlaneInitialized: true } });
    await fixtures.machine('boot', 'boot-md-0-a', 'worker');
    let secret: { data: Record<string, string> } | undefined;
    const deadline = Date.now() + 60_000;
    while (!(secret = (await get(mgmt, 'v1', 'secrets', 'default', 'boot-md-0-a')) as { data: Record<string, string> } | undefined)) {
      if (Date.now() > deadline) assert.fail('no data Secret within 60 s');
      await sleep(200);
    }
    const value = Buffer.from(secret.data.value!, 'base64').toString('utf8');
    assert.equal(Buffer.from(secret.data.format!, 'base64').toString('utf8'), 'cloud-config');
    const joinFile = (load(value) as { write_files: { path: string; content: string }[] }).write_files.find((f) => f.path === '/run/kubeadm/kubeadm-join-config.yaml')!;
    const token = ((loadAll(joinFile.content) as { kind: string; discovery?: { bootstrapToken: { token: string } } }[]).find((d) => d.kind === 'JoinConfiguration')!).discovery!.bootstrapToken.token;
    const tokenSecret = await workload.request('GET', `/api/v1/namespaces/kube-system/secrets/${tokenSecretName(token)}`);
    assert.equal(tokenSecret.status, 200, 'the token is in the workload cluster');

    files.set('user-data', value);
    files.set('meta-data', 'instance-id: boot-md-0-a\nlocal-hostname: boot-md-0-a\n');
    files.set('vendor-data', '');
    const disk = await GuestDisk.create(image);
    try {
      // The network NoCloud datasource, as /ipxe hands it to cloud-config machines (the
      // guest's cloud-init 22.4 reads http seeds only as nocloud-net).
      const result = await bootGuest(image, disk, ['ds=nocloud-net;s=http://10.0.2.100:8080/seed/'], (seed.address() as AddressInfo).port, BOOT_TIMEOUT_MS);
      const tail = result.console.slice(-6000);
      assert.equal(result.code, 0, `qemu exited ${String(result.code)}; console:\n${tail}`);
      assert.ok(disk.stat('/var/lib/bootwright-test/journal'), `the guest powered off without its capture unit; console:\n${tail}`);
      const journal = () => (disk.read('/var/lib/bootwright-test/journal')?.toString('utf8') ?? '').split('\n').filter((l) => /warn|error|fail|traceback|cloud-init|kubeadm/i.test(l)).join('\n').slice(-8000);
      assert.ok(disk.stat('/etc/sysctl.d/99-kubernetes.conf'), `the template's file is on the disk; journal:\n${journal()}`);
      // The template's file, as written, with its mode and owner.
      assert.equal(disk.text('/etc/sysctl.d/99-kubernetes.conf'), 'net.ipv4.ip_forward = 1\n');
      const stat = disk.stat('/etc/sysctl.d/99-kubernetes.conf')!;
      assert.deepEqual([stat.mode & 0o7777, stat.uid, stat.gid], [0o644, 0, 0]);
      // Its user, with sudo and the key.
      assert.match(disk.text('/etc/passwd'), /^capi:/m);
      assert.ok(disk.text('/home/capi/.ssh/authorized_keys').includes('capi@example'));
      const ntp = ['/etc/systemd/timesyncd.conf.d/cloud-init.conf', '/etc/systemd/timesyncd.conf.d/90-bootwright.conf'].map((p) => disk.read(p)?.toString()).find(Boolean);
      assert.ok(ntp?.includes('0.pool.ntp.org'), `timesyncd configuration: ${ntp ?? 'none'}`);
      // kubeadm joined with the configuration and token the controller wrote, naming no node.
      const argv = disk.text('/var/lib/kubeadm-standin/argv').trim().split('\n');
      assert.deepEqual(argv.slice(0, 3), ['join', '--config', '/run/kubeadm/kubeadm-join-config.yaml']);
      const config = disk.text('/var/lib/kubeadm-standin/config.yaml');
      assert.equal(config, joinFile.content);
      const join = (loadAll(config) as { kind: string; discovery: { bootstrapToken: { token: string; apiServerEndpoint: string } }; nodeRegistration: { name?: string } }[]).find((d) => d.kind === 'JoinConfiguration')!;
      assert.equal(join.discovery.bootstrapToken.token, token);
      assert.equal(join.discovery.bootstrapToken.apiServerEndpoint, '192.0.2.10:6443');
      assert.equal(join.nodeRegistration.name, undefined);
      assert.equal(disk.text('/var/lib/bootwright-test/cluster-api/bootstrap-success.complete'), 'success\n');
    } finally {
      disk.remove();
    }
  });
});
