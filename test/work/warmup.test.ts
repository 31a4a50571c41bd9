/**
 * The start-up warm-up (src/work/warmup.ts): it runs the example inventory's machines
 * through assembly and both renderers, each round as a machine of its own, on every
 * render thread and on the calling thread when that renders inline; an example that
 * does not render ends it early; the pool counts what ran.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { RenderPool } from '../../src/work/pool.js';
import { runTask } from '../../src/work/task.js';
import { type WarmUp, warmUpRound, warmUpTask, warmUpTasks, warmUpThread } from '../../src/work/warmup.js';

/** A file of an Ignition config, decoded (and gunzipped when compressed). */
function ignitionFile(config: string, path: string): string {
  const file = (JSON.parse(config) as { storage: { files: { path: string; contents: { source: string; compression?: string } }[] } }).storage.files.find((f) => f.path === path);
  assert.ok(file, `no ${path} in the config`);
  const base64 = /^data:;base64,(.*)$/.exec(file.contents.source)?.[1];
  const bytes = base64 !== undefined ? Buffer.from(base64, 'base64') : Buffer.from(decodeURIComponent(file.contents.source.replace(/^data:,/, '')));
  return (file.contents.compression === 'gzip' ? gunzipSync(bytes) : bytes).toString('utf8');
}

describe('start-up warm-up', () => {
  it('warms up on the example Flatcar machine (Ignition, the first pre-rendered spec) and the Ubuntu one (cloud-config)', () => {
    const tasks = warmUpTasks(['3.5.0', '3.4.0'], 'https://boot.example.com');
    assert.deepEqual(
      tasks.map((t) => [t.parts.machine.name, t.parts.profile.name, t.render?.accept, t.render?.query.format, t.render?.query.reportUrl]),
      [
        ['rack1-n1', 'flatcar-worker', 'application/vnd.coreos.ignition+json;version=3.5.0', 'ignition', 'https://boot.example.com/report/rack1-n1'],
        ['rack1-n2', 'ubuntu-worker', undefined, 'cloud-config', 'https://boot.example.com/report/rack1-n2'],
      ],
    );
  });

  it('runs each round as a machine of its own: its name and report URL in the data, its files compressed anew', () => {
    const [flatcar, ubuntu] = warmUpTasks(['3.4.0']);
    const ignition = runTask(warmUpTask(flatcar!, 7, 0)).rendered!.result;
    assert.equal(ignition.ignitionVersion, '3.4.0');
    assert.match(ignitionFile(ignition.body, '/etc/kubeadm/report.sh'), /http:\/\/127\.0\.0\.1\/report\/warm-up-7-0/);
    const other = runTask(warmUpTask(flatcar!, 8, 0)).rendered!.result;
    assert.match(ignitionFile(other.body, '/etc/kubeadm/report.sh'), /report\/warm-up-8-0/);
    assert.notEqual(ignition.sha256, other.sha256);
    const cloudConfig = runTask(warmUpTask(ubuntu!, 7, 1)).rendered!.result;
    assert.equal(cloudConfig.format, 'cloud-config');
    assert.match(cloudConfig.body, /^#cloud-config\n/);
    assert.match(cloudConfig.body, /report\/warm-up-7-1/);
  });

  it('stops at the first round an example does not render in', () => {
    const flatcar = warmUpTasks(['3.4.0'])[0]!;
    assert.equal(warmUpRound({ tasks: [flatcar], rounds: 1 }, 0), true);
    // A cluster without its endpoint does not assemble (as a stored one the rules no longer accept).
    const { controlPlaneEndpoint: _gone, ...cluster } = flatcar.parts.cluster.spec;
    const broken = { ...flatcar, parts: { ...flatcar.parts, cluster: { ...flatcar.parts.cluster, spec: cluster as typeof flatcar.parts.cluster.spec } } };
    assert.equal(warmUpRound({ tasks: [flatcar, broken], rounds: 1 }, 0), false);
    assert.equal(warmUpThread({ tasks: [flatcar, broken], rounds: 5 }), 0);
    assert.equal(warmUpThread({ tasks: [flatcar], rounds: 3 }), 3);
  });

  it('runs in every worker and, when it renders inline, on the calling thread; the pool is starting until then', async () => {
    const warmUp: WarmUp = { tasks: warmUpTasks(['3.4.0']), rounds: 3 };
    for (const [options, threads] of [
      [{ workers: 2, inlineBytes: 4096 }, 3],
      [{ workers: 2, inlineBytes: 0 }, 2],
      [{ workers: 0, inlineBytes: 0 }, 1],
    ] as const) {
      const pool = new RenderPool({ ...options, queue: 4, timeoutMs: 30_000 });
      try {
        const warming = pool.warm(warmUp);
        assert.equal(pool.starting, true);
        await warming;
        assert.equal(pool.starting, false);
        assert.deepEqual(pool.warmedUp, { threads, rounds: 3 * threads }, JSON.stringify(options));
      } finally {
        await pool.close();
      }
    }
  });
});
