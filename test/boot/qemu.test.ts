/**
 * A real iPXE client: Debian's iPXE ROM in qemu (software emulation, user-mode network)
 * PXE-boots against the service on 127.0.0.1, reached from inside qemu as 10.0.2.2. The
 * chain must go /boot.ipxe → /ipxe with the machine's MAC, UUID and serial (a serial
 * with a space, `/` and `&`, which this 2019 iPXE does not escape in `:uristring`) and
 * answer the registered machine's script, which then asks for the profile's kernel.
 *
 * Needs `qemu-system-x86` and `ipxe-qemu` (Debian); skips loudly without them and fails
 * when CI is set.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../src/api/server.js';
import { loadConfig } from '../../src/config.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { example } from '../support/requests.js';

const QEMU = '/usr/bin/qemu-system-x86_64';
const ROM = '/usr/lib/ipxe/qemu/efi-e1000.rom';
const available = existsSync(QEMU) && existsSync(ROM);
if (!available) {
  if (process.env.CI) throw new Error(`${QEMU} and ${ROM} are required in CI (apt-get install -y qemu-system-x86 ipxe-qemu)`);
  process.stderr.write('*** SKIPPED: qemu-system-x86 / ipxe-qemu not installed; the real iPXE boot chain is NOT tested ***\n');
}

const MAC = '52:54:00:a1:b2:c3';
const UUID = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';
const SERIAL = 'SN 42/A&B';

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
    const args = [
      '-nographic', '-m', '256', '-no-reboot',
      '-device', `e1000,netdev=n0,mac=${MAC},romfile=${ROM},bootindex=1`,
      '-netdev', `user,id=n0,bootfile=http://10.0.2.2:${port}/boot.ipxe`,
      '-smbios', `type=1,serial=${SERIAL},uuid=${UUID}`,
    ];
    const qemu = spawn(QEMU, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let console = '';
    const kernelUrl = `http://10.0.2.2:${port}/assets/vmlinuz-qemu-test`;
    const reached = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 90_000);
      const onData = (d: Buffer) => {
        console += d.toString('latin1');
        if (console.includes(kernelUrl)) {
          clearTimeout(timer);
          resolve(true);
        }
      };
      qemu.stdout.on('data', onData);
      qemu.stderr.on('data', onData);
      qemu.on('exit', () => resolve(console.includes(kernelUrl)));
    });
    qemu.kill('SIGKILL');
    assert.ok(reached, `the machine script never asked for the profile's kernel; console:\n${console.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').slice(-2000)}`);
    const rows = await store.audit('rack1-node7');
    const ipxe = rows.find((r) => r.route === '/ipxe');
    assert.ok(ipxe, `no /ipxe audit row: ${JSON.stringify(rows)}`);
    assert.equal(ipxe.status, 200);
    assert.equal(ipxe.client, '127.0.0.1');
    // The machine defines MAC, UUID and serial, and a selector that disagrees excludes a
    // machine: matched means iPXE's report of all three (the serial via ${serial:hex}) was read right.
    assert.deepEqual(await store.listDiscovered(), [], 'the machine was matched, not discovered');
  });
});
