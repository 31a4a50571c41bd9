/**
 * Every check over files, paths, mounts, disks and units costs time linear (or n log n)
 * in the request: measured as the ratio of the time for 4n items to the time for n,
 * which is about 4 when linear and about 16 when quadratic. Wall-clock time itself is
 * never asserted; each figure is the fastest of several runs, so a busy machine slows
 * both sizes alike.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { FieldProblem } from '../../src/errors.js';
import { mountUnits } from '../../src/provision/ignition/mounts.js';
import { PathRegistry } from '../../src/provision/ignition/registry.js';
import { filesystemEntries } from '../../src/provision/ignition/storage.js';
import type { PlanDisk, PlanFilesystem } from '../../src/provision/plan/types.js';
import { renderNodeBootstrap } from '../../src/render.js';
import { checkBounds, DEFAULT_DOCUMENT_LIMITS } from '../../src/request/bounds.js';
import { formatPath, validateNodeBootstrap } from '../../src/request/parse.js';
import { worker } from '../support/requests.js';

// A full collection before each timing, so garbage from one run is not collected (and
// timed) in the next: V8's gc(), exposed for this file.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** Fastest of `runs` timings of `work()`, milliseconds, each after a full collection. */
function fastest(work: () => void, runs: number): number {
  let best = Infinity;
  for (let i = 0; i < runs; i++) {
    collectGarbage();
    const start = process.hrtime.bigint();
    work();
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e6);
  }
  return best;
}

/**
 * Assert `make(n)`'s work scales linearly: time(4n) / time(n) under 8 (quadratic gives
 * about 16). Load from elsewhere only ever slows a run, so the measurement is tried up
 * to five times and the best ratio counts: a linear check shows about 4 in one of
 * them, a quadratic one never shows under 8.
 */
function assertLinear(name: string, n: number, make: (n: number) => () => void): void {
  const small = make(n);
  const large = make(4 * n);
  // Warm up: the JIT compiles on both sizes.
  for (let i = 0; i < 3; i++) small();
  large();
  let best = Infinity;
  for (let attempt = 0; attempt < 5 && best >= 8; attempt++) {
    // The sizes interleaved, so a neighbour's load falls on both alike.
    let bestSmall = Infinity;
    let bestLarge = Infinity;
    for (let i = 0; i < 5; i++) {
      bestSmall = Math.min(bestSmall, fastest(small, 1));
      bestLarge = Math.min(bestLarge, fastest(large, 1));
    }
    best = Math.min(best, bestLarge / bestSmall);
  }
  assert.ok(best < 8, `${name}: time(${4 * n}) / time(${n}) = ${best.toFixed(1)}, not linear`);
}

/** Paths that nest 20 deep and share parents, the shape the quadratic checks were slowest on. */
const nestedPath = (i: number) => `/opt/${'a/'.repeat(i % 20)}f${i}`;

describe('checks are linear in the number of items', () => {
  it('file path checks of a request (files under files, duplicates, generated paths)', () => {
    assertLinear('checkRequest files', 1000, (n) => {
      const req = worker({ provisioning: { files: Array.from({ length: n }, (_, i) => ({ path: nestedPath(i), content: 'x' })) } });
      return () => validateNodeBootstrap(req);
    });
  });

  it('Ignition path claims (files, directories, units; clashes and nesting)', () => {
    assertLinear('PathRegistry', 5000, (n) => () => {
      const problems: FieldProblem[] = [];
      const registry = new PathRegistry(problems);
      for (let i = 0; i < n; i++) registry.claim(nestedPath(i), i % 3 === 0 ? 'directory' : 'file', `storage.files[${i}]`);
      for (let i = 0; i < n; i++) registry.claimUnit(`u${i}.service`, `systemd.units[${i}]`);
    });
  });

  it('a file over a path already claimed is reported once per clash, in linear time', () => {
    const problems: FieldProblem[] = [];
    const registry = new PathRegistry(problems);
    registry.claim('/etc/a/b', 'file', 'storage.files[0]');
    registry.claim('/etc/a', 'file', 'storage.files[1]');
    registry.claim('/etc/a/b/c', 'file', 'storage.files[2]');
    assert.deepEqual(problems, [
      { path: 'storage.files[1]', message: 'file at /etc/a would have to be a directory: file /etc/a/b (from storage.files[0]) is under it' },
      { path: 'storage.files[2]', message: 'file at /etc/a/b/c is under /etc/a, which is a file (from storage.files[1])' },
      { path: 'storage.files[2]', message: 'file at /etc/a/b/c is under /etc/a/b, which is a file (from storage.files[0])' },
    ]);
  });

  it('mount units looking up their filesystems by device and label', () => {
    assertLinear('mountUnits', 4000, (n) => {
      const filesystems = Array.from({ length: n }, (_, i) => ({ device: `/dev/vd${i}`, format: 'ext4', label: `l${i}`, origin: `f${i}` }));
      const mounts = Array.from({ length: n }, (_, i) => ({ device: i % 2 ? `/dev/vd${i}` : `LABEL=l${i}`, mountPoint: `/mnt/m${i}` }));
      return () => mountUnits(mounts, filesystems, []);
    });
  });

  it('filesystems looking up their disks', () => {
    // 1,000 rather than 4,000: each item allocates several strings and objects, and at
    // 16,000 items the young generation overflows, so promotion alone pushed a linear
    // run to 8.0 on a loaded CI machine.
    assertLinear('filesystemEntries', 1000, (n) => {
      const disks: PlanDisk[] = Array.from({ length: n }, (_, i) => ({ device: `/dev/vd${i}`, tableType: 'gpt', layout: true, tableTypeGiven: false }));
      const filesystems: PlanFilesystem[] = Array.from({ length: n }, (_, i) => ({ device: `/dev/vd${i}`, filesystem: 'ext4', partition: 'auto', extraOpts: [] }));
      return () => filesystemEntries(filesystems, disks, []);
    });
  });

  for (const format of ['cloud-config', 'ignition'] as const) {
    it(`a whole ${format} render of files, users and mounts`, () => {
      assertLinear(`render ${format}`, 300, (n) => {
        const req = validateNodeBootstrap(
          worker({
            provisioning: {
              files: Array.from({ length: n }, (_, i) => ({ path: nestedPath(i), content: 'x' })),
              users: Array.from({ length: n }, (_, i) => ({ name: `u${i}` })),
              mounts: Array.from({ length: n }, (_, i) => [`/dev/vd${i}`, `/mnt/m${i}`]),
            },
            output: { format },
          }),
        );
        return () => renderNodeBootstrap(req);
      });
    });
  }

  it('the document bounds walk itself, aliases shared or not', () => {
    assertLinear('checkBounds', 20_000, (n) => {
      const shared = { a: 'x', b: ['y', 'z'] };
      const value = Array.from({ length: n }, (_, i) => (i % 2 ? shared : { a: `x${i}`, b: ['y', 'z'] }));
      const limits = { ...DEFAULT_DOCUMENT_LIMITS, maxNodes: 1e9, maxListItems: 1e9 };
      return () => checkBounds(value, limits, formatPath);
    });
  });
});
