/**
 * The iPXE chain against an HTTPS service with its plain-HTTP listener (issue 16), with a
 * real iPXE: Debian's ROM in qemu, built without `DOWNLOAD_PROTO_HTTPS`. It fetches
 * `/boot.ipxe` from the plain listener (10.0.2.100:80 in the guest), whose chain tries
 * `https://10.0.2.100/ipxe` (10.0.2.100:443, the TLS listener), fails, falls back to the
 * plain listener's `/ipxe`, and gets the machine's script: kernel and initrd from the
 * plain listener, the OS's signed Ignition URL on https.
 *
 * Needs `qemu-system-x86` and `ipxe-qemu` (Debian); skips loudly without them and fails
 * when CI is set.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { closePlain, listenPlain } from '../../src/api/plain.js';
import { buildServer } from '../../src/api/server.js';
import { loadConfig } from '../../src/config.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { ensureAutoTls } from '../../src/tls/auto.js';
import { readCredentials } from '../../src/tls/credentials.js';
import { missingDependency } from '../support/missing.js';
import { bootUntil, QEMU } from '../support/qemu-console.js';
import { example } from '../support/requests.js';

const ROM = '/usr/lib/ipxe/qemu/efi-e1000.rom';
const skip = existsSync(QEMU) && existsSync(ROM) ? false : missingDependency('qemu-system-x86 / ipxe-qemu not installed (apt-get install -y qemu-system-x86 ipxe-qemu): the iPXE HTTPS-to-HTTP fallback is NOT tested');
const BRIDGE = fileURLToPath(new URL('../support/tcp-bridge.mjs', import.meta.url));
const MAC = '52:54:00:a1:b2:c4';

describe('iPXE in qemu against an HTTPS service with a plain listener', { skip }, () => {
  let app: FastifyInstance;
  let store: Store;
  let plain: Awaited<ReturnType<typeof listenPlain>>;
  let tlsPort: number;
  let plainPort: number;

  before(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'bootwright-qemu-https-'));
    store = await openSqliteStore(join(dataDir, 'bootwright.db'));
    await store.create('Cluster', { name: 'prod', spec: example('worker').spec.cluster as never });
    await store.create('Profile', {
      name: 'worker',
      spec: { role: 'worker', kubernetesVersion: 'v1.33.2', output: { format: 'ignition' }, boot: { kernel: '/assets/vmlinuz-qemu-https', initrd: ['/assets/initrd-qemu-https.img'], args: ['console=ttyS0'] } } as never,
    });
    await store.create('Machine', { name: 'rack3-tls', spec: { selectors: { mac: [MAC], labels: {} }, cluster: 'prod', profile: 'worker', nodeLabels: {}, taints: [] } });
    const auto = await ensureAutoTls(dataDir, ['10.0.2.100']);
    const credentials = readCredentials(auto.certFile, auto.keyFile);
    const config = loadConfig({}, { logLevel: 'silent', rateLimitMax: 0, maxEventLoopDelayMs: 0, dataDir, publicUrl: 'https://10.0.2.100', tokens: [{ name: 't', token: 'qemu-https-token-0123456789', scopes: ['admin'] }] });
    app = await buildServer({ config, store, tls: { cert: credentials.cert, key: credentials.key, ca: auto.caPem } });
    await app.listen({ host: '127.0.0.1', port: 0 });
    tlsPort = (app.server.address() as AddressInfo).port;
    plain = await listenPlain(app, config, 0);
    plainPort = (plain.address() as AddressInfo).port;
  });
  after(async () => {
    closePlain(plain);
    await app.close();
    await store.close();
  });

  it('tries https, falls back to the plain listener, and boots the kernel from it with an https OS URL', async () => {
    const forward = (guestPort: number, hostPort: number) => `guestfwd=tcp:10.0.2.100:${guestPort}-cmd:${process.execPath} ${BRIDGE} ${hostPort}`;
    const kernelUrl = 'http://10.0.2.100/assets/vmlinuz-qemu-https';
    const { reached, console } = await bootUntil(['-device', `e1000,netdev=n0,mac=${MAC},romfile=${ROM},bootindex=1`, '-netdev', `user,id=n0,restrict=on,${forward(80, plainPort)},${forward(443, tlsPort)},bootfile=http://10.0.2.100/boot.ipxe`], kernelUrl);
    assert.ok(reached, `the machine script never asked for the kernel over the plain listener; console:\n${console.slice(-2500)}`);
    // This build has no HTTPS (its banner's feature list), so the https chain fails at
    // once ("Operation not supported", ipxe.org/3c092003) and the plain one follows.
    const features = /Features: ([^\n]*)/.exec(console)?.[1] ?? '';
    assert.ok(features.split(/\s+/).includes('HTTP') && !features.split(/\s+/).includes('HTTPS'), `feature list: ${features}`);
    const script = console.indexOf('http://10.0.2.100/boot.ipxe... ok');
    const failed = console.indexOf('Operation not supported', script);
    const fallback = console.indexOf('http://10.0.2.100/ipxe... ok', failed);
    assert.ok(script >= 0 && failed > script && fallback > failed, `expected boot.ipxe, a failed https chain, then the plain /ipxe; console:\n${console.slice(-2500)}`);
    const rows = await store.audit('rack3-tls');
    assert.deepEqual(rows.filter((r) => r.route === '/ipxe').map((r) => r.status), [200], JSON.stringify(rows));
  });
});
