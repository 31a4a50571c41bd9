/**
 * The render pool (src/work/pool.ts): renders are byte-identical whichever thread does
 * them (every example and case request, both formats, Ignition 2.3.0, a platform limit
 * that gzips, and the errors of invalid requests, class and problems included); a full
 * queue refuses at once; a render past its time is abandoned, its worker terminated,
 * and the pool keeps serving; close lets queued work finish.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { RequestError } from '../../src/errors.js';
import { UserDataLimitError } from '../../src/platform.js';
import type { RenderOptions } from '../../src/render.js';
import { DEFAULT_DOCUMENT_LIMITS } from '../../src/request/bounds.js';
import { LOAD_SAMPLE_MS, RenderOverloadedError, RenderPool, RenderTimeoutError, TASKS_PER_WORKER } from '../../src/work/pool.js';
import { portable, runTask, type Task } from '../../src/work/task.js';

const SPIN_WORKER = new URL('./spin-worker.ts', import.meta.url);

/** What test/work/spin-worker.ts answers a spin task. */
interface Spun {
  spun?: number;
  endedAt: number;
}

/** Hand the spin worker a task that keeps its thread busy `ms` milliseconds (forever without). */
const spinOn = (pool: RenderPool, ms?: number) => pool.run({ op: 'spin', ms } as unknown as Task, Infinity) as unknown as Promise<Spun>;
const limits = { ...DEFAULT_DOCUMENT_LIMITS };

/** Every request file the repository ships: the examples and the collected cases. */
function requestFiles(): [string, string][] {
  const out: [string, string][] = [];
  for (const dir of ['../../examples/', '../fixtures/cases/']) {
    const url = new URL(dir, import.meta.url);
    for (const f of readdirSync(url).filter((n) => n.endsWith('.yaml')).sort()) out.push([`${dir}${f}`, readFileSync(new URL(f, url), 'utf8')]);
  }
  return out;
}

const OPTIONS: [string, RenderOptions][] = [
  ['cloud-config', { format: 'cloud-config' }],
  ['ignition', { format: 'ignition' }],
  ['ignition 3.4.0 via Accept', { format: 'ignition', ignitionVersion: '3.4.0', ignitionVersionField: 'Accept' }],
  ['ignition 2.3.0', { format: 'ignition', ignitionVersion: '2.3.0' }],
  ['cloud-config on aws (gzip over 16 KiB)', { format: 'cloud-config', platform: 'aws', platformField: 'platform' }],
];

/** The outcome of a task, value or error, as comparable data. */
async function outcome(run: () => unknown): Promise<unknown> {
  try {
    return { value: await run() };
  } catch (e) {
    const error = e as Error;
    return {
      error: error.name,
      requestError: error instanceof RequestError,
      userDataLimit: error instanceof UserDataLimitError,
      ...(error instanceof RequestError ? { status: error.status, problems: error.problems } : { message: error.message }),
    };
  }
}

describe('render pool', () => {
  const pool = new RenderPool({ workers: 2, queue: 64, timeoutMs: 30_000, inlineBytes: 0 });
  after(() => pool.close());

  it('renders byte-identical to the calling thread, errors included', async () => {
    let compared = 0;
    for (const [name, text] of requestFiles()) {
      const parse: Task = { op: 'parse', text, syntax: 'yaml', limits };
      const inlineParsed = await outcome(() => runTask(parse));
      const pooledParsed = await outcome(() => pool.run(parse, Infinity));
      assert.deepEqual(pooledParsed, inlineParsed, `${name}: parse`);
      const parsed = (inlineParsed as { value?: ReturnType<typeof runTask<typeof parse>> }).value;
      if (!parsed) continue;
      for (const [label, options] of OPTIONS) {
        const task: Task = { op: 'render', request: portable(parsed.req), options };
        const inline = await outcome(() => runTask(task));
        const pooled = await outcome(() => pool.run(task, Infinity));
        assert.deepEqual(pooled, inline, `${name}, ${label}`);
        compared++;
      }
    }
    assert.ok(compared >= 30, `compared ${compared} renders`);
    assert.ok(pool.stats.pooled >= compared);
  });

  it('a Cluster API request keeps its field names across threads', async () => {
    const text = readFileSync(new URL('../../examples/cluster-api-worker.yaml', import.meta.url), 'utf8');
    const parsed = runTask({ op: 'parse', text, syntax: 'yaml', limits });
    assert.ok(parsed.origin, 'the example is in Cluster API shape');
    // 1.x is not a spec bootwright writes: the error names the field the caller wrote.
    const task: Task = { op: 'render', request: portable(parsed.req), options: { format: 'ignition', ignitionVersion: '1.0.0', ignitionVersionField: 'ignitionVersion' } };
    const inline = await outcome(() => runTask(task));
    assert.deepEqual(await outcome(() => pool.run(task, Infinity)), inline);
    assert.equal((inline as { requestError: boolean }).requestError, true);
  });

  it('an invalid body fails the same way in a worker: 400, 413 and 422 with their fields', async () => {
    for (const text of ['spec: [', `a: ${'['.repeat(200)}`, 'apiVersion: bootwright.dev/v1alpha1\nkind: NodeBootstrap\nspec: {}\n']) {
      const task: Task = { op: 'parse', text, syntax: 'yaml', limits };
      const inline = await outcome(() => runTask(task));
      assert.equal((inline as { requestError?: boolean }).requestError, true);
      assert.deepEqual(await outcome(() => pool.run(task, Infinity)), inline);
    }
  });

  it('runs tasks sized at most inlineBytes on the calling thread', async () => {
    const small = new RenderPool({ workers: 1, queue: 4, timeoutMs: 30_000, inlineBytes: 1 << 20, busy: () => false });
    try {
      const text = readFileSync(new URL('../../examples/worker.yaml', import.meta.url), 'utf8');
      await small.run({ op: 'parse', text, syntax: 'yaml', limits }, text.length);
      assert.deepEqual(small.stats, { inline: 1, pooled: 0, shed: 0, timedOut: 0 });
    } finally {
      await small.close();
    }
  });

  it('sends small tasks to the workers too while the calling thread is busy, and back once it is not', async () => {
    const pool = new RenderPool({ workers: 1, queue: 4, timeoutMs: 30_000, inlineBytes: 1 << 20 });
    const text = readFileSync(new URL('../../examples/worker.yaml', import.meta.url), 'utf8');
    const parse = () => pool.run({ op: 'parse', text, syntax: 'yaml', limits }, text.length);
    try {
      await pool.warm();
      await parse();
      assert.deepEqual([pool.stats.inline, pool.stats.pooled], [1, 0]);
      // Busy for two sampling periods, as a storm's event loop is; the sample then says so.
      const until = performance.now() + 2 * LOAD_SAMPLE_MS;
      while (performance.now() < until) {
        // busy
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
      await parse();
      assert.deepEqual([pool.stats.inline, pool.stats.pooled], [1, 1]);
      await new Promise((resolve) => setTimeout(resolve, 3 * LOAD_SAMPLE_MS));
      await parse();
      assert.deepEqual([pool.stats.inline, pool.stats.pooled], [2, 1]);
    } finally {
      await pool.close();
    }
  });

  it('keeps small tasks inline while its threads are still loading, however busy the calling thread', async () => {
    // Just after start the main thread is busiest and the threads not loaded yet (on a
    // loaded CI machine a first request waited 2 s for them): the small task runs here.
    const pool = new RenderPool({ workers: 1, queue: 4, timeoutMs: 30_000, inlineBytes: 1 << 20, busy: () => true });
    const text = readFileSync(new URL('../../examples/worker.yaml', import.meta.url), 'utf8');
    const parse = () => pool.run({ op: 'parse', text, syntax: 'yaml', limits }, text.length);
    try {
      const warming = pool.warm(); // the thread starts loading; it cannot have loaded yet
      await parse();
      assert.deepEqual([pool.stats.inline, pool.stats.pooled], [1, 0]);
      await warming;
      await parse();
      assert.deepEqual([pool.stats.inline, pool.stats.pooled], [1, 1]);
    } finally {
      await pool.close();
    }
  });
});

describe('render pool bounds', () => {
  it('refuses a task at once when the queue is full', async () => {
    const pool = new RenderPool({ workers: 1, queue: 1, timeoutMs: 30_000, inlineBytes: 0, filename: SPIN_WORKER });
    try {
      const spin = (ms: number) => spinOn(pool, ms);
      const running = spin(300);
      const queued = spin(10);
      const t0 = performance.now();
      await assert.rejects(spin(10), RenderOverloadedError);
      assert.ok(performance.now() - t0 < 100, 'refused without waiting');
      assert.deepEqual((await Promise.all([running, queued])).map((r) => r.spun), [300, 10]);
      assert.equal(pool.stats.shed, 1);
    } finally {
      await pool.close();
    }
  });

  it('terminates a render past its time and keeps serving', async () => {
    const pool = new RenderPool({ workers: 1, queue: 4, timeoutMs: 300, inlineBytes: 0, filename: SPIN_WORKER });
    try {
      const t0 = performance.now();
      await assert.rejects(spinOn(pool), RenderTimeoutError);
      const took = performance.now() - t0;
      assert.ok(took >= 290 && took < 5000, `abandoned after ${took} ms`);
      assert.equal(pool.stats.timedOut, 1);
      // The spinning thread was terminated: the pool's one worker serves again.
      const text = readFileSync(new URL('../../examples/worker.yaml', import.meta.url), 'utf8');
      const parsed = await pool.run({ op: 'parse', text, syntax: 'yaml', limits }, Infinity);
      assert.equal(parsed.req.metadata.name, runTask({ op: 'parse', text, syntax: 'yaml', limits }).req.metadata.name);
    } finally {
      await pool.close();
    }
  });

  it('a task waiting behind a stuck one in its worker is handed over again', async () => {
    const pool = new RenderPool({ workers: 1, queue: 4, timeoutMs: 300, inlineBytes: 0, filename: SPIN_WORKER });
    try {
      const stuck = spinOn(pool);
      const behind = spinOn(pool, 1);
      await assert.rejects(stuck, RenderTimeoutError);
      assert.equal((await behind).spun, 1);
      assert.deepEqual({ timedOut: pool.stats.timedOut, pooled: pool.stats.pooled }, { timedOut: 1, pooled: 2 });
    } finally {
      await pool.close();
    }
  });

  it('once warm, every thread has loaded, the late one too: two tasks run side by side at once', async () => {
    // A thread still loading would leave both to the other (each holds several), one after the other.
    process.env.SPIN_WORKER_SLOW_LOAD_MS = '1500';
    const pool = new RenderPool({ workers: 2, queue: 8, timeoutMs: 30_000, inlineBytes: 0, filename: SPIN_WORKER });
    try {
      await pool.warm();
      delete process.env.SPIN_WORKER_SLOW_LOAD_MS;
      const [a, b] = await Promise.all([spinOn(pool, 300), spinOn(pool, 300)]);
      assert.ok(Math.abs(a.endedAt - b.endedAt) < 200, `ended ${Math.abs(a.endedAt - b.endedAt)} ms apart`);
    } finally {
      delete process.env.SPIN_WORKER_SLOW_LOAD_MS;
      await pool.close();
    }
  });

  it('a worker goes on to its next task while the main thread is busy', async () => {
    // With one task per worker, the second could only start once this thread had taken
    // the first's answer, after the busy spell below.
    const pool = new RenderPool({ workers: 1, queue: 2 * TASKS_PER_WORKER, timeoutMs: 30_000, inlineBytes: 0, filename: SPIN_WORKER });
    try {
      await pool.warm();
      const tasks = Array.from({ length: TASKS_PER_WORKER }, () => spinOn(pool, 20));
      const until = Date.now() + 100 + 40 * TASKS_PER_WORKER;
      while (Date.now() < until) {
        // this thread busy, as in a boot storm
      }
      for (const r of await Promise.all(tasks)) assert.ok(r.endedAt < until, 'ended while the main thread was busy');
    } finally {
      await pool.close();
    }
  });

  it('close lets queued tasks finish, then refuses', async () => {
    const pool = new RenderPool({ workers: 1, queue: 2 * TASKS_PER_WORKER, timeoutMs: 30_000, inlineBytes: 0, filename: SPIN_WORKER });
    // More than one worker holds: some wait in the pool's queue, some in the worker.
    const tasks = Array.from({ length: TASKS_PER_WORKER + 2 }, () => spinOn(pool, 20));
    // Closed twice meanwhile (a signal and the server's close hook): both wait, both end.
    await Promise.all([pool.close(), pool.close()]);
    assert.deepEqual((await Promise.all(tasks)).map((r) => r.spun), Array(TASKS_PER_WORKER + 2).fill(20));
    await assert.rejects(spinOn(pool, 1), /closed/);
  });
});
