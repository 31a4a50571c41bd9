/**
 * A real iPXE client: Debian's iPXE ROM in qemu (software emulation, user-mode network)
 * PXE-boots against the service on 127.0.0.1, reached from inside qemu (isolated with
 * `restrict=on`) only as 10.0.2.100:80, forwarded to the service. The
 * chain must go /boot.ipxe → /ipxe with the machine's MAC, UUID and serial (a serial
 * with a space, `/` and `&`, which this 2019 iPXE does not escape in `:uristring`) and
 * answer the registered machine's script, which then asks for the profile's kernel. A
 * two-NIC machine booting from its second NIC must be matched by that NIC's MAC.
 *
 * Needs `qemu-system-x86` and `ipxe-qemu` (Debian); skips loudly without them and fails
 * when CI is set.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../src/api/server.js';
import { loadConfig } from '../../src/config.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { bootUntil, QEMU } from '../support/qemu-console.js';
import { example } from '../support/requests.js';

const ROM = '/usr/lib/ipxe/qemu/efi-e1000.rom';
const available = existsSync(QEMU) && existsSync(ROM);
if (!available) {
  if (process.env.CI) throw new Error(`${QEMU} and ${ROM} are required in CI (apt-get install -y qemu-system-x86 ipxe-qemu)`);
  process.stderr.write('*** SKIPPED: qemu-system-x86 / ipxe-qemu not installed; the real iPXE boot chain is NOT tested ***\n');
}

const MAC = '52:54:00:a1:b2:c3';
/** A two-NIC server: the first NIC (net0) is not the one it PXE-boots from. */
const FIRST_NIC = '52:54:00:d0:00:01';
const BOOT_NIC = '52:54:00:d0:00:02';
const TWO_NIC_UUID = '6f1c0e5a-9d1b-4a8e-b2c4-0d3e5f607182';
const UUID = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';
const SERIAL = 'SN 42/A&B';

/** Where the guest reaches the service: qemu forwards this address, and only it, to 127.0.0.1:<port>. */
const SERVICE = 'http://10.0.2.100';
const BRIDGE = fileURLToPath(new URL('../support/tcp-bridge.mjs', import.meta.url));

let app: FastifyInstance;
let store: Store;
let port: number;

describe('iPXE in qemu', { skip: !available }, () => {
  before(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'bootwright-qemu-'));
    store = await openSqliteStore(join(dataDir, 'bootwright.db'));
    const worker = example('worker');
    await store.create('Cluster', { name: 'prod', spec: worker.spec.cluster as never });
    await store.create('Profile', {
      name: 'worker',
      spec: { role: 'worker', kubernetesVersion: 'v1.33.2', output: { format: 'ignition' }, boot: { kernel: '/assets/vmlinuz-qemu-test', initrd: ['/assets/initrd-qemu-test.img'], args: ['console=ttyS0'] } } as never,
    });
    // Selected by the second NIC's MAC alone: matched only if iPXE reports the boot NIC.
    await store.create('Machine', { name: 'rack2-dual', spec: { selectors: { mac: [BOOT_NIC], labels: {} }, cluster: 'prod', profile: 'worker', nodeLabels: {}, taints: [] } });
    await store.create('Machine', { name: 'rack1-node7', spec: { selectors: { mac: [MAC], uuid: UUID, serial: SERIAL, labels: {} }, cluster: 'prod', profile: 'worker', nodeLabels: {}, taints: [] } });
    const config = loadConfig({}, { logLevel: 'silent', rateLimitMax: 0, maxEventLoopDelayMs: 0, dataDir, tokens: [{ name: 't', token: 'qemu-test-token-0123456789', scopes: ['admin'] }] });
    app = await buildServer({ config, store });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as { port: number }).port;
  });
  after(async () => {
    await app.close();
    await store.close();
  });

  it('chains boot.ipxe → ipxe with MAC, UUID and serial and reaches the registered machine', async () => {
    const { reached, console } = await bootUntilKernel([
      '-device', `e1000,netdev=n0,mac=${MAC},romfile=${ROM},bootindex=1`,
      '-netdev', `user,id=n0,${serviceOnly()},bootfile=${SERVICE}/boot.ipxe`,
      '-smbios', `type=1,serial=${SERIAL},uuid=${UUID}`,
    ]);
    assert.ok(reached, `the machine script never asked for the profile's kernel; console:\n${console}`);
    const rows = await store.audit('rack1-node7');
    const ipxe = rows.find((r) => r.route === '/ipxe');
    assert.ok(ipxe, `no /ipxe audit row: ${JSON.stringify(rows)}`);
    assert.equal(ipxe.status, 200);
    assert.equal(ipxe.client, '127.0.0.1');
    // The machine defines MAC, UUID and serial, and a selector that disagrees excludes a
    // machine: matched means iPXE's report of all three (the serial via ${serial:hex}) was read right.
    assert.deepEqual(await store.listDiscovered(), [], 'the machine was matched, not discovered');
  });

  it('reports the NIC a two-NIC server PXE-boots from (the second), so its registration matches', async () => {
    // Both NICs get a DHCP lease from qemu's user network; only the second boots. A
    // script that ran a bare `dhcp` would configure net0 and report FIRST_NIC.
    const { reached, console } = await bootUntilKernel([
      '-device', `e1000,netdev=n0,mac=${FIRST_NIC},romfile=${ROM}`,
      '-netdev', `user,id=n0,${serviceOnly()}`,
      '-device', `e1000,netdev=n1,mac=${BOOT_NIC},romfile=${ROM},bootindex=1`,
      '-netdev', `user,id=n1,${serviceOnly()},bootfile=${SERVICE}/boot.ipxe`,
      '-smbios', `type=1,uuid=${TWO_NIC_UUID}`,
    ]);
    assert.ok(reached, `the two-NIC machine never asked for the profile's kernel; console:\n${console}`);
    const rows = await store.audit('rack2-dual');
    const ipxe = rows.find((r) => r.route === '/ipxe');
    assert.ok(ipxe, `no /ipxe audit row for rack2-dual: ${JSON.stringify(rows)}`);
    assert.equal(ipxe.status, 200);
    assert.deepEqual(await store.listDiscovered(), [], 'the two-NIC machine was matched by its boot NIC, not discovered');
  });
});

/**
 * The user network options that isolate the guest (`restrict=on`: no packet leaves for
 * the host or beyond; qemu's DHCP still answers) except for {@link SERVICE} port 80,
 * forwarded through {@link BRIDGE} to the service on loopback.
 */
function serviceOnly(): string {
  return `restrict=on,guestfwd=tcp:10.0.2.100:80-cmd:${process.execPath} ${BRIDGE} ${port}`;
}

/**
 * Boot qemu with `devices` (NICs, netdevs, SMBIOS) until the console shows the profile's
 * kernel URL (the matched machine's script fetching it) or 90 s pass; qemu is killed
 * either way.
 *
 * @returns whether the kernel was asked for, and the console's last 2000 characters
 */
async function bootUntilKernel(devices: string[]): Promise<{ reached: boolean; console: string }> {
  const { reached, console } = await bootUntil(devices, `${SERVICE}/assets/vmlinuz-qemu-test`);
  return { reached, console: console.slice(-2000) };
}
