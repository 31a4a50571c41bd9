/**
 * The batcher behind the PostgreSQL store's served writes (src/store/batcher.ts): what is
 * pushed in one turn of the event loop runs together, within the size and in-flight
 * limits, one item per key per batch, and the items of a key one batch after another.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KeyedBatcher } from '../../src/store/batcher.js';

interface Item {
  key: string;
  n: number;
}

/** A batcher whose batches are recorded and answered when the test releases them. */
function recorded(size: number, inFlight: number) {
  const batches: Item[][] = [];
  const release: (() => void)[] = [];
  let running = 0;
  let maxRunning = 0;
  const batcher = new KeyedBatcher<Item, string>(
    async (items) => {
      batches.push(items);
      running++;
      maxRunning = Math.max(maxRunning, running);
      await new Promise<void>((r) => release.push(r));
      running--;
      if (items.some((i) => i.key === 'fail')) throw new Error('batch failed');
      return items.map((i) => `${i.key}:${i.n}`);
    },
    (i) => i.key,
    { size, inFlight },
  );
  const turn = () => new Promise((r) => setImmediate(r));
  /** Let every running batch end, until none is left (a batch starts a turn after the one before ends). */
  const drain = async () => {
    for (;;) {
      await turn();
      await turn();
      if (release.length === 0) return;
      release.splice(0).forEach((r) => r());
    }
  };
  return { batcher, batches, drain, maxRunning: () => maxRunning };
}

describe('KeyedBatcher', () => {
  it('runs what is pushed in one turn together, in batches of at most `size`, at most `inFlight` at once', async () => {
    const { batcher, batches, drain, maxRunning } = recorded(100, 2);
    const answers = Promise.all(Array.from({ length: 250 }, (_, n) => batcher.push({ key: `m${n}`, n })));
    await drain();
    assert.deepEqual(await answers, Array.from({ length: 250 }, (_, n) => `m${n}:${n}`));
    assert.deepEqual(
      batches.map((b) => b.length),
      [100, 100, 50],
    );
    assert.deepEqual(
      batches.flat().map((i) => i.n),
      Array.from({ length: 250 }, (_, n) => n),
    );
    assert.equal(maxRunning(), 2);
  });

  it('holds one item per key in a batch, and the next item of a key waits for the batch running its last one', async () => {
    const { batcher, batches, drain } = recorded(100, 4);
    const first = Promise.all([batcher.push({ key: 'a', n: 1 }), batcher.push({ key: 'a', n: 2 }), batcher.push({ key: 'b', n: 3 })]);
    await new Promise((r) => setImmediate(r));
    // a:2 waits for the batch holding a:1; pushed meanwhile, a:4 waits behind a:2, c:5 does not.
    const later = Promise.all([batcher.push({ key: 'a', n: 4 }), batcher.push({ key: 'c', n: 5 })]);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(
      batches.map((b) => b.map((i) => `${i.key}${i.n}`)),
      [['a1', 'b3'], ['c5']],
    );
    await drain();
    assert.deepEqual(await first, ['a:1', 'a:2', 'b:3']);
    assert.deepEqual(await later, ['a:4', 'c:5']);
    assert.deepEqual(
      batches.map((b) => b.map((i) => `${i.key}${i.n}`)),
      [['a1', 'b3'], ['c5'], ['a2'], ['a4']],
    );
    assert.equal(batcher.queued, 0);
  });

  it("rejects every item of a batch that throws with its error, and only those; the next batches run", async () => {
    const { batcher, drain } = recorded(2, 1);
    const results = [batcher.push({ key: 'x', n: 1 }), batcher.push({ key: 'fail', n: 2 }), batcher.push({ key: 'y', n: 3 })].map((p) => p.then(String, (e: unknown) => (e as Error).message));
    await drain();
    assert.deepEqual(await Promise.all(results), ['batch failed', 'batch failed', 'y:3']);
  });
});
