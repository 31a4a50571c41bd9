/**
 * The peer's storm: matchbox (github.com/poseidon/matchbox, the network boot service of
 * the bare-metal field, built by scripts/tools.sh from tools/reference/matchbox/) boots
 * the same machines as bootwright does in bench/storm-stores.ts, from a file-based data
 * directory laid out as matchbox's docs lay one out (docs/matchbox.md, examples/):
 *
 *   groups/node-i.json     {"id", "name", "profile": "worker", "selector": {"mac": …}}, one per machine
 *   profiles/worker.json   the same kernel, initrd and arguments as bootwright's profile, and
 *                          `ignition.config.url=…/ignition?uuid=${uuid}&mac=${mac:hexhyp}`
 *   ignition/worker.ign    the Ignition config bootwright served machine 0 (the same bytes'
 *                          worth of work to parse and serve; matchbox serves one file to
 *                          every machine of a profile, where bootwright renders each its own)
 *
 * The client is bench/storm.ts's: /boot.ipxe, /ipxe with the machine's MAC and UUID, then
 * the config URL of the script with iPXE's variables substituted as iPXE substitutes them.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { macOf, nameOf, uuidOf } from './machines.js';
import { freePort } from './net.js';
import { type BenchServer, reapOnExit, rss, stopServe } from './serve.js';
import { bootStorm, scriptConfigUrl, type StormRun } from './storm.js';

/** What iPXE puts for `${uuid}` and `${mac:hexhyp}` in machine i's script. */
export function ipxeSubstitute(script: string, i: number): string | undefined {
  return scriptConfigUrl(script)?.replaceAll('${uuid}', uuidOf(i)).replaceAll('${mac:hexhyp}', macOf(i).replaceAll(':', '-'));
}

/** Write matchbox's data directory for machines 0 … n-1 (see the file's head). */
export function writeMatchboxData(dir: string, n: number, port: number, config: string): void {
  for (const sub of ['groups', 'profiles', 'ignition', 'assets']) mkdirSync(join(dir, sub), { recursive: true });
  writeFileSync(
    join(dir, 'profiles', 'worker.json'),
    JSON.stringify({
      id: 'worker',
      name: 'worker',
      boot: { kernel: '/assets/vmlinuz', initrd: ['/assets/initrd.img'], args: ['console=ttyS0', `ignition.config.url=http://127.0.0.1:${String(port)}/ignition?uuid=\${uuid}&mac=\${mac:hexhyp}`] },
      ignition_id: 'worker.ign',
    }),
  );
  writeFileSync(join(dir, 'ignition', 'worker.ign'), config);
  for (let i = 0; i < n; i++) {
    writeFileSync(join(dir, 'groups', `${nameOf(i)}.json`), JSON.stringify({ id: nameOf(i), name: nameOf(i), profile: 'worker', selector: { mac: macOf(i) } }));
  }
}

/** matchbox's storm: the run and the server's peak RSS, MiB. */
export interface MatchboxStorm {
  version: string;
  /** Groups in its data directory (the run's `machines` is how many of them booted). */
  groups: number;
  run: StormRun;
  peakRssMiB: number;
}

/**
 * Serve `n` machines from a fresh matchbox on loopback and boot `boots` of them (every
 * (n / boots)-th, default all), 200 at a time. matchbox's file store reads every group file
 * on each `/ipxe` and `/ignition` request (storage/filestore.go, GroupList), so a storm's
 * time grows with the square of the machines: `boots` keeps the store at `n` and the run
 * bounded.
 *
 * @param config the Ignition config (JSON text) every machine is to get
 * @throws Error when the binary is missing, matchbox does not answer within 30 s, or exits
 */
export async function matchboxStorm(binary: string, n: number, config: string, boots = n): Promise<MatchboxStorm> {
  const version = spawnSync(binary, ['-version'], { encoding: 'utf8' }).stdout.trim();
  const dir = mkdtempSync(join(tmpdir(), 'bootwright-bench-matchbox-'));
  const port = await freePort();
  let server: BenchServer | undefined;
  try {
    writeMatchboxData(dir, n, port, config);
    const child = spawn(binary, [`-address=127.0.0.1:${String(port)}`, `-data-path=${dir}`, `-assets-path=${join(dir, 'assets')}`, '-log-level=warning'], { stdio: ['ignore', 'ignore', 'inherit'] });
    reapOnExit(child);
    const base = `http://127.0.0.1:${String(port)}`;
    server = { child, port, base };
    for (let i = 0; ; i++) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`matchbox exited (${String(child.exitCode ?? child.signalCode)})`);
      if (await fetch(`${base}/`).then((r) => r.ok, () => false)) break;
      if (i >= 300) throw new Error('matchbox not answering within 30 s');
      await sleep(100);
    }
    const step = n / Math.min(boots, n);
    const indices = Array.from({ length: Math.min(boots, n) }, (_, k) => Math.floor(k * step));
    const run = await bootStorm(base, indices, { warmPath: '/', configUrl: ipxeSubstitute });
    return { version, groups: n, run, peakRssMiB: rss(child.pid!).peakMiB };
  } finally {
    if (server) await stopServe(server);
    rmSync(dir, { recursive: true, force: true });
  }
}
