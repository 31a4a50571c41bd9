/**
 * The benchmark inventory: one cluster, one Ignition profile with a boot section, and N
 * machines, each with its own MAC, UUID and serial (the serial has a space, `/` and `&`,
 * so it goes through `${serial:hex}` the way iPXE sends it). Registered straight through
 * the Store API, so any store (SQLite, PostgreSQL) gets the same rows.
 */
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import type { Store } from '../src/store/store.js';

/** Machine i's MAC address (colon form). */
export const macOf = (i: number): string => `52:54:${[(i >> 24) & 255, (i >> 16) & 255, (i >> 8) & 255, i & 255].map((b) => b.toString(16).padStart(2, '0')).join(':')}`;
/** Machine i's SMBIOS UUID. */
export const uuidOf = (i: number): string => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
/** Machine i's serial number. */
export const serialOf = (i: number): string => `SN ${i}/A&B`;
/** Machine i's name. */
export const nameOf = (i: number): string => `node-${i}`;

/** The query iPXE's /boot.ipxe chain sends to /ipxe for machine i. */
export function ipxeQuery(i: number): string {
  const hex = [...Buffer.from(serialOf(i))].map((b) => b.toString(16).padStart(2, '0')).join(':');
  return `mac=${macOf(i).replaceAll(':', '-')}&uuid=${uuidOf(i)}&serial_hex=${hex}&buildarch=x86_64&platform=pcbios`;
}

/**
 * Register the cluster `prod`, the profile `worker` (Ignition, with a boot section) and
 * machines `node-0` … `node-(n-1)`.
 *
 * @param concurrency creates in flight at once (1 suits SQLite, whose writes are
 *   serial anyway; a networked store fills faster with more).
 * @param progress called with the count registered so far, every 10,000.
 */
export async function registerMachines(store: Store, n: number, concurrency = 1, progress?: (done: number) => void): Promise<void> {
  const worker = load(readFileSync(new URL('../examples/worker.yaml', import.meta.url), 'utf8')) as { spec: { cluster: unknown } };
  await store.create('Cluster', { name: 'prod', spec: worker.spec.cluster as never });
  await store.create('Profile', {
    name: 'worker',
    spec: { role: 'worker', kubernetesVersion: 'v1.33.2', output: { format: 'ignition' }, boot: { kernel: '/assets/vmlinuz', initrd: ['/assets/initrd.img'], args: ['console=ttyS0'] } } as never,
  });
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        await store.create('Machine', {
          name: nameOf(i),
          spec: { selectors: { mac: [macOf(i)], uuid: uuidOf(i), serial: serialOf(i), labels: {} }, cluster: 'prod', profile: 'worker', nodeLabels: {}, taints: [] },
        });
        if (++done % 10_000 === 0) progress?.(done);
      }
    }),
  );
}
