/**
 * Scale: the same boot storm (10,000 machines, 200 at a time) against a store holding
 * 10,000 machines and against one holding 100,000 (every 10th machine booting), on one
 * store kind. Reports registration time, the store's size on disk, the serving
 * process's RSS and the per-route latencies, and the /ignition p99 ratio 100k / 10k.
 */
import { type Inventory, postgresInventory, sqliteInventory } from './inventory.js';
import { freePort } from './net.js';
import { rss, startServe, stopServe } from './serve.js';
import { bootStorm, type StormRun } from './storm.js';

/** One store size's figures. */
export interface ScalePoint {
  registered: number;
  registerSeconds: number;
  sizeBytes: number;
  rssMiB: number;
  peakRssMiB: number;
  run: StormRun;
}

/** Both sizes, one store kind. */
export interface ScaleFigures {
  kind: 'sqlite' | 'postgres';
  points: ScalePoint[];
}

/** Serve `inventory` and boot `booting` machines out of it. */
async function point(inventory: Inventory, registered: number, booting: number): Promise<ScalePoint> {
  const server = await startServe(await freePort(), inventory.env);
  try {
    const step = registered / booting;
    process.stderr.write(`  … scale storm: ${inventory.kind}, ${registered} registered\n`);
    const run = await bootStorm(server.base, Array.from({ length: booting }, (_, i) => Math.floor(i * step)));
    const { rssMiB, peakMiB } = rss(server.child.pid!);
    return { registered, registerSeconds: inventory.registerSeconds, sizeBytes: await inventory.sizeBytes(), rssMiB, peakRssMiB: peakMiB, run };
  } finally {
    await stopServe(server);
  }
}

/**
 * Run the scale comparison.
 *
 * @param large machines in the large store (default 100,000).
 * @param small machines in the baseline store, and machines booting in both storms (default 10,000).
 */
export async function scaleBenchmark(kind: 'sqlite' | 'postgres', large = 100_000, small = 10_000): Promise<ScaleFigures> {
  const make = kind === 'sqlite' ? sqliteInventory : postgresInventory;
  const points: ScalePoint[] = [];
  for (const registered of [small, large]) {
    process.stderr.write(`  … registering ${registered} machines (${kind})\n`);
    const inventory = await make(registered);
    try {
      points.push(await point(inventory, registered, small));
    } finally {
      await inventory.remove();
    }
  }
  return { kind, points };
}
