/**
 * `npm run bench`: every benchmark, one run, figures as ratios where they compare.
 * Set BENCH_TIME (milliseconds per measured task, default 500) for longer runs.
 */
import { renderBenchmark } from './render.js';

const time = Number(process.env.BENCH_TIME ?? 500);
const f = (n: number, d = 1) => n.toFixed(d);

console.log('# render (no cache)');
console.log('subject                 | render µs | validated µs | renders/s | serialize µs | render/serialize');
for (const r of await renderBenchmark(time)) {
  console.log(
    `${r.name.padEnd(23)} | ${f(r.renderMicros).padStart(9)} | ${f(r.renderValidatedMicros).padStart(12)} | ${f(r.rendersPerSecond, 0).padStart(9)} | ${f(r.serializeMicros).padStart(12)} | ${f(r.ratioToSerialize, 2).padStart(16)}`,
  );
}
