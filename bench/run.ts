/**
 * `npm run bench`: every benchmark, one run, figures as ratios where they compare.
 * BENCH_TIME: milliseconds per measured render task (default 500); BENCH_HTTP_SECONDS:
 * seconds per HTTP load (default 10); BENCH_STORM_MACHINES: machines in the boot storm
 * (default 10000).
 */
import { httpBenchmark } from './http.js';
import { renderBenchmark } from './render.js';
import { stormBenchmark } from './storm.js';

const f = (n: number, d = 1) => n.toFixed(d);

console.log('# render (no cache)');
console.log('subject                 | render µs | validated µs | renders/s | serialize µs | render/serialize');
for (const r of await renderBenchmark(Number(process.env.BENCH_TIME ?? 500))) {
  console.log(
    `${r.name.padEnd(23)} | ${f(r.renderMicros).padStart(9)} | ${f(r.renderValidatedMicros).padStart(12)} | ${f(r.rendersPerSecond, 0).padStart(9)} | ${f(r.serializeMicros).padStart(12)} | ${f(r.ratioToSerialize, 2).padStart(16)}`,
  );
}

console.log('\n# HTTP (autocannon, loopback, 32 connections)');
const http = await httpBenchmark(Number(process.env.BENCH_HTTP_SECONDS ?? 10));
console.log('load                         | req/s    | p50 ms | p99 ms | non-2xx | errors');
for (const h of http.figures) {
  console.log(`${h.name.padEnd(28)} | ${f(h.requestsPerSecond, 0).padStart(8)} | ${f(h.p50Ms, 2).padStart(6)} | ${f(h.p99Ms, 2).padStart(6)} | ${String(h.non2xx).padStart(7)} | ${h.errors}`);
}
console.log(`cache hit / bare: ${f(http.hitOverBare, 2)}`);

const machines = Number(process.env.BENCH_STORM_MACHINES ?? 10_000);
console.log(`\n# boot storm (${machines} machines: boot.ipxe → ipxe → ignition, 200 at a time, SQLite)`);
const storm = await stormBenchmark(machines);
console.log(`total ${f(storm.totalSeconds, 1)} s, ${f((machines * 3) / storm.totalSeconds, 0)} req/s, errors ${storm.errors}, server peak RSS ${f(storm.peakRssMiB, 0)} MiB`);
console.log('route       | count  | p50 ms | p99 ms');
for (const r of storm.routes) console.log(`${r.route.padEnd(11)} | ${String(r.count).padStart(6)} | ${f(r.p50Ms, 2).padStart(6)} | ${f(r.p99Ms, 2).padStart(6)}`);
console.log(`/ignition ${f(storm.ignitionRps, 0)} req/s vs POST /v1/render cache hit ${f(storm.renderHitRps, 0)} req/s: ratio ${f(storm.ignitionRps / storm.renderHitRps, 2)}`);
