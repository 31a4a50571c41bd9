/**
 * Real first boots: a Debian bookworm guest (guest.ts) under qemu, fed by a `bootwright
 * serve` process started as users start it, through the firmware routes with the
 * kernel arguments `/ipxe` returns. The machine is registered through `/v1`; after the
 * guest powers off, its disk is read back with debugfs and every file's bytes, mode and
 * owner, the users, groups, sudoers and keys, ntp, the order of the commands, kubeadm's
 * arguments and configuration, and the sentinel are asserted.
 *
 * Boots: cloud-config that joins; cloud-config with a static address (`spec.network`,
 * applied by cloud-init from the kernel command line, no DHCP lease); cloud-config whose kubeadm fails (no sentinel);
 * Ignition (Debian's Ignition on the live root) that joins, over HTTPS (issue 16): a
 * second service with `BOOTWRIGHT_TLS=auto` for https://10.0.2.100:8080 hands out a
 * pointer config (as user data would carry it; here a `data:` URL on the kernel command
 * line) that pins the generated CA, and Ignition fetches the full config from the signed
 * https URL trusting only that CA (the guest's image does not); and the current
 * Ignition (v2.26, the pinned reference tool, issue 28), which asks for spec 3.6.0, on
 * a plain signed URL. Needs qemu-system-x86,
 * mmdebstrap and e2fsprogs: skips loudly without them, fails under CI. The guest's root
 * is built once (a few minutes) and cached outside the repository.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { load } from 'js-yaml';
import { readFileSync } from 'node:fs';
import { Agent, fetch as undiciFetch } from 'undici';
import { cloudConfigFiles, ignitionFiles } from '../support/decode.js';
import { COMMANDS, expectedBytes, files } from '../support/hard-contents.js';
import { startProcess, type ServeProcess } from '../support/process.js';
import { example } from '../support/requests.js';
import { referenceTool, referenceToolMissing } from '../support/tools.js';
import { ignitionValidate } from '../support/validators.js';
import { bootGuest, firstBootSkip, GuestDisk, guestImage, type GuestImage } from './guest.js';

const TOKEN = 'firstboot-admin-token-0123456789';
/** Per boot: TCG on a shared 2-core machine, cloud-init's Python and all. */
const BOOT_TIMEOUT_MS = 6 * 60_000;
const ORDER = '/var/log/bootwright-test-order';
const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBootwrightFirstBootTestKeyNotARealOne0 ops@firstboot';

/** What the machine's profile provisions (the same in both formats). */
function provisioning() {
  // The hard contents of the round-trip tests, but the 1 MiB plain text: a profile holding
  // it is over the service's default body limit (1 MiB), so it could not be registered
  // (its gzip+base64 twin, small in the request and 1 MiB on the node, goes in).
  const hard = files().filter((f) => !f.path.endsWith('one-mib.txt'));
  // Hard commands that succeed on a bare guest, each also logged in order.
  const commands = COMMANDS.filter((c) => !c.includes('/etc/cni/') && !c.startsWith('* '));
  return {
    files: [...hard, { path: '/home/ops/.config/app/settings.conf', content: 'owned: by ops\n', owner: 'ops:ops', permissions: '0640' }],
    users: [{ name: 'ops', gecos: 'Operations', groups: 'sudo, ops', sudo: 'ALL=(ALL) NOPASSWD:ALL', sshAuthorizedKeys: [KEY], shell: '/bin/bash' }],
    ntp: { enabled: true, servers: ['10.0.2.100'] },
    preKubeadmCommands: [`echo pre-1 >> ${ORDER}`, ...commands, `echo pre-2 >> ${ORDER}`],
    postKubeadmCommands: [`echo post-1 >> ${ORDER}`],
  };
}

let service: ServeProcess;
let port: number;
let image: GuestImage;
/** The HTTPS service (BOOTWRIGHT_TLS=auto) the Ignition boot uses, and a client trusting its CA. */
let tlsService: ServeProcess;
let tlsPort: number;
let tlsAgent: Agent;
let caPem: string;

/** Which service a call goes to. */
type Target = 'http' | 'https';

/** Call a service's API with the admin token. */
async function api(method: string, path: string, body?: unknown, target: Target = 'http'): Promise<Response> {
  const init = {
    method,
    headers: { authorization: `Bearer ${TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  };
  if (target === 'http') return fetch(`http://127.0.0.1:${port}${path}`, init);
  // The certificate names 127.0.0.1 too (the listen address), and only the service's CA is trusted.
  return undiciFetch(`https://127.0.0.1:${tlsPort}${path}`, { ...init, dispatcher: tlsAgent });
}

/**
 * A static address on the guest's one NIC (qemu's user network is 10.0.2.0/24; its DHCP
 * would hand out 10.0.2.15, so .50 shows the static address was used).
 */
const STATIC_NETWORK = { version: 2, ethernets: { eth0: { addresses: ['10.0.2.50/24'], routes: [{ to: 'default', via: '10.0.2.2' }], nameservers: { addresses: ['10.0.2.3'] } } } };

/** Register a machine booting `format` with its MAC (and `extra` machine values), and get the kernel arguments its /ipxe script gives. */
async function register(name: string, format: 'cloud-config' | 'ignition', mac: string, target: Target = 'http', extra: Record<string, unknown> = {}): Promise<string[]> {
  const profile = {
    apiVersion: 'bootwright.dev/v1alpha1',
    kind: 'Profile',
    metadata: { name },
    spec: {
      role: 'worker',
      kubernetesVersion: 'v1.33.2',
      provisioning: provisioning(),
      output: { format },
      // Never fetched: the test boots the guest's own kernel directly.
      boot: { kernel: 'http://10.0.2.100:8080/assets/vmlinuz', initrd: ['http://10.0.2.100:8080/assets/initrd.img'], args: ['console=ttyS0'] },
    },
  };
  assert.equal((await api('POST', '/v1/profiles', profile, target)).status, 201);
  const machine = { apiVersion: 'bootwright.dev/v1alpha1', kind: 'Machine', metadata: { name }, spec: { cluster: 'fb', profile: name, selectors: { mac: [mac] }, nodeName: name, ...extra } };
  const created = await api('POST', '/v1/machines', machine, target);
  assert.equal(created.status, 201, await created.text());
  const script = await (await api('GET', `/ipxe?mac=${mac.replaceAll(':', '-')}`, undefined, target)).text();
  const kernel = script.split('\n').find((l) => l.startsWith('kernel '));
  assert.ok(kernel, script);
  // kernel <url> initrd=initrd0 <args...> || goto bootwright_failed
  return kernel
    .replace(/ \|\| goto \S+$/, '')
    .split(' ')
    .slice(2)
    .filter((a) => !a.startsWith('initrd=') && a !== 'console=ttyS0');
}

/** Boot once and read the disk back; the disk is removed after `check`. `extra`: host files written to the disk first. */
async function boot(args: string[], check: (disk: GuestDisk, console: string) => void, servicePort: number = port, extra: { from: string; to: string }[] = []): Promise<number> {
  const disk = await GuestDisk.create(image, extra);
  try {
    const result = await bootGuest(image, disk, args, servicePort, BOOT_TIMEOUT_MS);
    const tail = result.console.slice(-6000);
    assert.equal(result.code, 0, `qemu exited ${String(result.code)} after ${result.ms} ms; console:\n${tail}`);
    assert.ok(disk.stat('/var/lib/bootwright-test/journal'), `the guest powered off without its capture unit; console:\n${tail}`);
    try {
      check(disk, result.console);
    } catch (e) {
      const journal = disk.read('/var/lib/bootwright-test/journal')?.toString('utf8') ?? '';
      const notable = journal.split('\n').filter((l) => /warn|error|fail|traceback|ignition\[|kubeadm|bootstrap\.sh/i.test(l));
      (e as Error).message += `\n--- failed units: ${disk.read('/var/lib/bootwright-test/failed-units')?.toString() ?? '?'}\n--- journal (warnings, errors, Ignition, kubeadm):\n${notable.join('\n').slice(-12000)}`;
      throw e;
    }
    return result.ms;
  } catch (e) {
    if (process.env.BOOTWRIGHT_TEST_KEEP_DISK === '1') (e as Error).message += `\n--- disk kept at ${disk.path}`;
    throw e;
  } finally {
    if (process.env.BOOTWRIGHT_TEST_KEEP_DISK !== '1') disk.remove();
  }
}

/** Ids of a user and group by name, from the guest's /etc/passwd and /etc/group. */
function ids(disk: GuestDisk) {
  const passwd = new Map(disk.text('/etc/passwd').trim().split('\n').map((l) => l.split(':')).map((f) => [f[0]!, f]));
  const group = new Map(disk.text('/etc/group').trim().split('\n').map((l) => l.split(':')).map((f) => [f[0]!, f]));
  return { passwd, group };
}

/** The assertions every joined boot shares: files, users, ntp, commands, kubeadm. */
function assertProvisioned(disk: GuestDisk, format: 'cloud-config' | 'ignition', name: string, kubeadmConfig: string): void {
  for (const f of provisioning().files.filter((x) => x.path.startsWith('/etc/roundtrip/'))) {
    assert.deepEqual(disk.read(f.path), expectedBytes(f.path), `${f.path}: bytes`);
    const st = disk.stat(f.path)!;
    assert.equal(st.mode & 0o7777, 0o644, `${f.path}: mode`);
    assert.deepEqual([st.uid, st.gid], [0, 0], `${f.path}: owner`);
  }
  assert.equal(disk.text('/etc/heredoc.txt'), 'line one: with colon\n  indented # hash\n', 'a heredoc command ran exactly');
  const { passwd, group } = ids(disk);
  const ops = passwd.get('ops');
  assert.ok(ops, 'user ops exists');
  assert.equal(ops[6], '/bin/bash');
  assert.equal(ops[4], 'Operations');
  assert.ok(group.get('sudo')?.[3]?.split(',').includes('ops'), `ops is in sudo: ${group.get('sudo')?.join(':') ?? 'no group sudo'}`);
  assert.ok(group.has('ops'), 'group ops exists');
  const settings = disk.stat('/home/ops/.config/app/settings.conf');
  assert.ok(settings, 'the file owned by ops was written');
  assert.equal(disk.text('/home/ops/.config/app/settings.conf'), 'owned: by ops\n');
  assert.equal(settings.mode & 0o7777, 0o640);
  const opsIds = [Number(ops[2]), Number(group.get('ops')![2])];
  assert.deepEqual([settings.uid, settings.gid], opsIds);
  // The directories bootwright's file needed under the user's home belong to the user too.
  for (const dir of ['/home/ops/.config', '/home/ops/.config/app']) {
    const st = disk.stat(dir);
    assert.equal(st?.type, 'directory', dir);
    assert.deepEqual([st.uid, st.gid], opsIds, `${dir} is owned by ops`);
  }
  // cloud-init writes ~/.ssh/authorized_keys; Ignition its own fragment, which Flatcar's
  // update-ssh-keys and Fedora CoreOS's ssh-key-dir give sshd.
  const keys = format === 'cloud-config' ? '/home/ops/.ssh/authorized_keys' : '/home/ops/.ssh/authorized_keys.d/ignition';
  assert.ok(disk.text(keys).split('\n').includes(KEY), `ssh key in ${keys}`);
  const keysStat = disk.stat(keys)!;
  assert.deepEqual([keysStat.uid, keysStat.mode & 0o777], [Number(ops[2]), 0o600], `${keys}: owner and mode`);
  // cloud-init writes 90-cloud-init-users, Ignition's output /etc/sudoers.d/ops: either way, one rule for ops.
  const rules = disk.list('/etc/sudoers.d').filter((f) => f !== 'README').flatMap((f) => disk.text(`/etc/sudoers.d/${f}`).split('\n')).filter((l) => /^ops\s/.test(l));
  assert.deepEqual(rules, ['ops ALL=(ALL) NOPASSWD:ALL']);
  // ntp: the image's timesyncd is pointed at the server.
  const ntp = ['/etc/systemd/timesyncd.conf.d/90-bootwright.conf', '/etc/systemd/timesyncd.conf.d/cloud-init.conf'].map((p) => disk.read(p)?.toString()).find(Boolean);
  assert.ok(ntp && /^NTP=10\.0\.2\.100\s*$/m.test(ntp), `timesyncd configuration: ${ntp ?? 'none'}`);
  // kubeadm ran once, between the pre and post commands, with the rendered configuration.
  assert.equal(disk.text(ORDER), 'pre-1\npre-2\nkubeadm\npost-1\n');
  const argv = disk.text('/var/lib/kubeadm-standin/argv').trim().split('\n');
  assert.equal(argv[0], 'join');
  assert.equal(argv[1], '--config');
  const config = disk.text('/var/lib/kubeadm-standin/config.yaml');
  assert.equal(config, kubeadmConfig, 'kubeadm read the configuration the service rendered');
  const join = load(config) as { kind: string; nodeRegistration: { name: string } };
  assert.equal(join.kind, 'JoinConfiguration');
  assert.equal(join.nodeRegistration.name, name);
}

describe('first boot in qemu', { skip: firstBootSkip() }, () => {
  before(async () => {
    image = await guestImage();
    const dataDir = mkdtempSync(join(tmpdir(), 'bootwright-firstboot-data-'));
    service = startProcess({
      BOOTWRIGHT_DATA_DIR: dataDir,
      BOOTWRIGHT_TOKENS: JSON.stringify([{ name: 'admin', token: TOKEN, scopes: ['admin'] }]),
      BOOTWRIGHT_PUBLIC_URL: 'http://10.0.2.100:8080',
      BOOTWRIGHT_MAX_EVENT_LOOP_DELAY_MS: '0',
    });
    const tlsDataDir = mkdtempSync(join(tmpdir(), 'bootwright-firstboot-tls-'));
    tlsService = startProcess({
      BOOTWRIGHT_DATA_DIR: tlsDataDir,
      BOOTWRIGHT_TOKENS: JSON.stringify([{ name: 'admin', token: TOKEN, scopes: ['admin'] }]),
      BOOTWRIGHT_PUBLIC_URL: 'https://10.0.2.100:8080',
      BOOTWRIGHT_TLS: 'auto',
      BOOTWRIGHT_MAX_EVENT_LOOP_DELAY_MS: '0',
    });
    port = await service.port;
    tlsPort = await tlsService.port;
    caPem = readFileSync(join(tlsDataDir, 'tls', 'ca.crt'), 'utf8');
    tlsAgent = new Agent({ connect: { ca: caPem } });
    const cluster = { apiVersion: 'bootwright.dev/v1alpha1', kind: 'Cluster', metadata: { name: 'fb' }, spec: example('worker').spec.cluster };
    assert.equal((await api('POST', '/v1/clusters', cluster)).status, 201);
    assert.equal((await api('POST', '/v1/clusters', cluster, 'https')).status, 201);
  });
  after(async () => {
    service.child.kill('SIGTERM');
    tlsService.child.kill('SIGTERM');
    await tlsAgent.close();
  });

  /** The kubeadm configuration the service serves this machine, decoded as the node decodes it. */
  async function kubeadmConfigOf(name: string, format: 'cloud-config' | 'ignition', target: Target = 'http'): Promise<string> {
    const r = await api('GET', `/v1/machines/${name}/bootstrap`, undefined, target);
    assert.equal(r.status, 200);
    const text = await r.text();
    const files = format === 'cloud-config' ? cloudConfigFiles(text) : ignitionFiles(JSON.parse(text));
    const file = files.get(format === 'cloud-config' ? '/run/kubeadm/kubeadm-join-config.yaml' : '/etc/kubeadm/kubeadm-join-config.yaml');
    assert.ok(file, `${name}: no kubeadm configuration in ${[...files.keys()].join(', ')}`);
    return file.toString('utf8');
  }

  it('cloud-config: every file, user, key, ntp setting and command lands; kubeadm joins; the sentinel is written', async () => {
    const args = await register('fb-cc-ok', 'cloud-config', '52:54:00:fb:00:01');
    assert.ok(args.some((a) => a.startsWith('ds=nocloud-net;s=http://10.0.2.100:8080/nocloud/')), args.join(' '));
    const config = await kubeadmConfigOf('fb-cc-ok', 'cloud-config');
    const ms = await boot(args, (disk) => {
      assertProvisioned(disk, 'cloud-config', 'fb-cc-ok', config);
      assert.equal(disk.text('/var/lib/bootwright-test/cluster-api/bootstrap-success.complete'), 'success\n');
    });
    process.stderr.write(`first boot, cloud-config, joined: ${ms} ms\n`);
    const audit = (await (await api('GET', '/v1/machines/fb-cc-ok/audit')).json()) as { items: { route: string; status: number }[] };
    assert.ok(audit.items.some((r) => r.route.startsWith('/nocloud') && r.status === 200), JSON.stringify(audit));
  });

  it('cloud-config with a static address: cloud-init applies network-config= from the kernel line before the seed is fetched, no DHCP lease; kubeadm joins', async () => {
    const args = await register('fb-cc-static', 'cloud-config', '52:54:00:fb:00:05', 'http', { network: STATIC_NETWORK });
    assert.ok(args.some((a) => a.startsWith('network-config=')), args.join(' '));
    const config = await kubeadmConfigOf('fb-cc-static', 'cloud-config');
    const ms = await boot(args, (disk) => {
      assertProvisioned(disk, 'cloud-config', 'fb-cc-static', config);
      assert.equal(disk.text('/var/lib/bootwright-test/cluster-api/bootstrap-success.complete'), 'success\n');
      // cloud-init's networkd renderer wrote the unit that sorts before the image's DHCP one.
      const unit = disk.text('/etc/systemd/network/10-cloud-init-eth0.network');
      assert.match(unit, /^Address=10\.0\.2\.50\/24$/m, unit);
      assert.match(unit, /^DHCP=no$/m, unit);
      assert.match(disk.text('/var/log/cloud-init.log'), /Applying network configuration from cmdline/);
      const journal = disk.text('/var/lib/bootwright-test/journal');
      assert.doesNotMatch(journal, /eth0: DHCPv4 address/, 'the guest took a DHCP lease');
    });
    process.stderr.write(`first boot, cloud-config, static address, joined: ${ms} ms\n`);
  });

  it('cloud-config: when kubeadm fails, the post commands still run and the sentinel is absent', async () => {
    const args = await register('fb-cc-fail', 'cloud-config', '52:54:00:fb:00:02');
    const ms = await boot([...args, 'bootwright.test.kubeadm_exit=3'], (disk) => {
      assert.equal(disk.text(ORDER), 'pre-1\npre-2\nkubeadm\npost-1\n');
      assert.equal(disk.stat('/var/lib/bootwright-test/cluster-api/bootstrap-success.complete'), undefined, 'no sentinel after a failed kubeadm');
      assert.ok(disk.stat('/var/lib/bootwright-test/cluster-api/placeholder'), '/run/cluster-api was created');
    });
    process.stderr.write(`first boot, cloud-config, kubeadm failed: ${ms} ms\n`);
  });

  it('the current Ignition (v2.26) fetches the signed URL as it is, gets spec 3.6.0, and kubeadm joins', { skip: referenceToolMissing('ignition', 'no first boot with the current Ignition (3.4.0 and later specs)') }, async () => {
    const args = await register('fb-ign-new', 'ignition', '52:54:00:fb:00:04', 'http', { network: STATIC_NETWORK });
    assert.ok(args.includes('ip=10.0.2.50::10.0.2.2:255.255.255.0::eth0:none'), args.join(' '));
    const url = args.find((a) => a.startsWith('ignition.config.url='));
    assert.ok(url?.startsWith('ignition.config.url=http://10.0.2.100:8080/ignition?'), args.join(' '));
    const config = await kubeadmConfigOf('fb-ign-new', 'ignition');
    const ms = await boot(
      args,
      (disk) => {
        assertProvisioned(disk, 'ignition', 'fb-ign-new', config);
        assert.equal(disk.text('/var/lib/bootwright-test/cluster-api/bootstrap-success.complete'), 'success\n');
        // The networkd unit, as Ignition wrote it (this guest's network came up before
        // Ignition ran, from its own DHCP unit: the unit takes effect from the next boot).
        const unit = '/etc/systemd/network/10-bootwright-eth0.network';
        assert.equal(disk.text(unit), '[Match]\nName=eth0\n\n[Network]\nDHCP=no\nDNS=10.0.2.3\n\n[Address]\nAddress=10.0.2.50/24\n\n[Route]\nDestination=0.0.0.0/0\nGateway=10.0.2.2\n');
        assert.equal(disk.stat(unit)!.mode & 0o7777, 0o644);
      },
      port,
      [{ from: referenceTool('ignition')!, to: '/usr/local/lib/bootwright-test/ignition' }],
    );
    process.stderr.write(`first boot, the current Ignition, joined: ${ms} ms\n`);
    // What the guest's Ignition asked for and got: the newest spec it reads.
    const audit = (await (await api('GET', '/v1/machines/fb-ign-new/audit')).json()) as { items: { route: string; status: number; ignitionVersion?: string; userAgent?: string }[] };
    const fetched = audit.items.find((row) => row.route === '/ignition' && row.status === 200);
    assert.equal(fetched?.ignitionVersion, '3.6.0', JSON.stringify(audit));
    assert.match(fetched.userAgent ?? '', /^Ignition\/v?2\.26\./);
  });

  it('Ignition over HTTPS: a pointer pinning the CA; the full config fetched over verified TLS; kubeadm joins; the audit shows the guest fetch', async () => {
    const args = await register('fb-ign-ok', 'ignition', '52:54:00:fb:00:03', 'https');
    const url = args.find((a) => a.startsWith('ignition.config.url='));
    assert.ok(url?.startsWith('ignition.config.url=https://10.0.2.100:8080/ignition?'), args.join(' '));
    // The pointer, pinned to spec 3.3.0 (Debian's Ignition 2.14 knows 3.0.0-3.3.0): it
    // carries the signed https URL, the hash of what it serves, and the CA inline.
    const r = await api('GET', '/v1/machines/fb-ign-ok/bootstrap?pointer=true&ignitionVersion=3.3.0', undefined, 'https');
    assert.equal(r.status, 200);
    const pointer = await r.text();
    assert.deepEqual(await ignitionValidate(pointer), []);
    const parsed = JSON.parse(pointer) as { ignition: { config: { replace: { source: string } }; security: { tls: { certificateAuthorities: { source: string }[] } } } };
    assert.ok(parsed.ignition.config.replace.source.startsWith('https://10.0.2.100:8080/ignition?'), pointer);
    assert.equal(Buffer.from(parsed.ignition.security.tls.certificateAuthorities[0]!.source.replace('data:;base64,', ''), 'base64').toString('utf8'), caPem);
    const config = await kubeadmConfigOf('fb-ign-ok', 'ignition', 'https');
    // User data on a platform; on this test's metal guest, an inline data: URL on the kernel command line.
    const pointerArg = `ignition.config.url=data:;base64,${Buffer.from(pointer, 'utf8').toString('base64')}`;
    const ms = await boot(
      ['ignition.firstboot', 'ignition.platform.id=metal', pointerArg],
      (disk) => {
        assertProvisioned(disk, 'ignition', 'fb-ign-ok', config);
        assert.equal(disk.text('/var/lib/bootwright-test/cluster-api/bootstrap-success.complete'), 'success\n');
        assert.ok(disk.stat('/var/lib/bootwright/kubeadm-bootstrap.done'), 'the unit left its stamp');
      },
      tlsPort,
    );
    process.stderr.write(`first boot, Ignition over HTTPS via a CA-pinning pointer, joined: ${ms} ms\n`);
    const audit = (await (await api('GET', '/v1/machines/fb-ign-ok/audit', undefined, 'https')).json()) as { items: { route: string; status: number }[] };
    assert.ok(audit.items.some((row) => row.route === '/ignition' && row.status === 200), JSON.stringify(audit));
  });
});
