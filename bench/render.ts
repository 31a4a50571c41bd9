/**
 * Render benchmark (issue: core pipeline): renders per second per format for a worker
 * join and an init with certificates, no cache, against the cost of serializing the
 * same finished output (JSON.stringify of the Ignition config, a YAML dump of the
 * cloud-config document). Reports ratios measured in one run, since this machine is
 * shared and noisy.
 */
import { readFileSync } from 'node:fs';
import { load, YAML11_SCHEMA } from 'js-yaml';
import { Bench } from 'tinybench';
import { renderNodeBootstrap } from '../src/render.js';
import { parseNodeBootstrap } from '../src/request/parse.js';
import type { OutputFormat } from '../src/request/schema.js';
import { dumpYaml } from '../src/yaml/dump.js';

/** One line of the report. */
export interface RenderFigure {
  name: string;
  /** Mean time of one full render (parse + validate + build + render), in microseconds. */
  renderMicros: number;
  /** The same, from an already validated request (build + render only). */
  renderValidatedMicros: number;
  rendersPerSecond: number;
  /** Mean time to serialize the finished output object alone, in microseconds. */
  serializeMicros: number;
  /** renderMicros / serializeMicros. */
  ratioToSerialize: number;
}

const mean = (b: Bench, name: string) => {
  const r = b.getTask(name)!.result as { latency?: { mean: number } };
  return (r.latency?.mean ?? NaN) * 1000;
};

/** Run the render benchmark; `time` is milliseconds per task. */
export async function renderBenchmark(time = 500): Promise<RenderFigure[]> {
  const bench = new Bench({ time, warmupTime: 100 });
  const subjects: [string, string, OutputFormat][] = [];
  for (const role of ['worker', 'init'] as const) {
    const text = readFileSync(new URL(`../examples/${role}.yaml`, import.meta.url), 'utf8');
    for (const format of ['cloud-config', 'ignition'] as const) subjects.push([`${role} ${format}`, text, format]);
  }
  for (const [name, text, format] of subjects) {
    const req = parseNodeBootstrap(text, 'yaml');
    const body = renderNodeBootstrap(req, { format }).body;
    const finished: unknown = format === 'ignition' ? JSON.parse(body) : load(body, { schema: YAML11_SCHEMA });
    bench.add(`${name} render`, () => void renderNodeBootstrap(parseNodeBootstrap(text, 'yaml'), { format }));
    bench.add(`${name} render validated`, () => void renderNodeBootstrap(req, { format }));
    bench.add(`${name} serialize`, format === 'ignition' ? () => void JSON.stringify(finished) : () => void dumpYaml(finished));
  }
  await bench.run();
  return subjects.map(([name]) => {
    const render = mean(bench, `${name} render`);
    const serialize = mean(bench, `${name} serialize`);
    return {
      name,
      renderMicros: render,
      renderValidatedMicros: mean(bench, `${name} render validated`),
      rendersPerSecond: 1e6 / render,
      serializeMicros: serialize,
      ratioToSerialize: render / serialize,
    };
  });
}
