/**
 * src/heap.ts: the `bootwright` process runs with V8's allocation-site pretenuring off,
 * from before the service's modules load. Read off V8's own trace of its pretenuring
 * decisions (`--trace-pretenuring-statistics`) in a real `bootwright` process, against
 * the same probe in a plain Node.js process, which shows the probe does make V8 decide
 * to pretenure.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { V8_FLAGS } from '../src/heap.js';
import { MARKER } from './support/pretenure-probe.js';

const probe = new URL('./support/pretenure-probe.ts', import.meta.url).pathname;

/** Decisions to pretenure (`=> tenure`, or its first step `=> maybe tenure`) V8 traced after the probe's marker, in a process running `args`. */
function tenureDecisions(args: string[]): number {
  const out = execFileSync(process.execPath, ['--trace-pretenuring-statistics', '--import', import.meta.resolve('tsx'), '--import', probe, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const at = out.indexOf(MARKER);
  assert.ok(at >= 0, 'the probe ran');
  assert.match(out.slice(at), /pretenure-probe: done true/);
  return out.slice(at).split('\n').filter((line) => /=> (maybe )?tenure/.test(line)).length;
}

describe('V8 heap settings (src/heap.ts)', () => {
  it('names pretenuring off', () => {
    assert.deepEqual(V8_FLAGS, ['--no-allocation-site-pretenuring']);
  });

  it('a plain Node.js process pretenures the probe\'s surviving allocation site; a bootwright process does not', () => {
    assert.ok(tenureDecisions(['-e', '0']) > 0, 'without the setting, V8 decides to pretenure the probe');
    assert.equal(tenureDecisions(['src/cli.ts', 'version']), 0);
  });
});
