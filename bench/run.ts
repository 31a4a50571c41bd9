/**
 * `npm run bench [-- SECTION…]`: the benchmarks, one run, figures as ratios where they
 * compare. Sections: render, http, storm, fault, scale-sqlite, scale-pg, hostile; with none, the
 * default set (render, http, storm, fault; the scale runs take several minutes each).
 * Environment: BENCH_TIME, milliseconds per measured render task (default 500);
 * BENCH_HTTP_SECONDS, seconds per HTTP load (default 10); BENCH_STORM_MACHINES, machines
 * in the storm and fault runs and the scale baseline (default 10000);
 * BENCH_SCALE_MACHINES, machines in the large scale store (default 100000). PostgreSQL
 * sections use a throwaway database on BOOTWRIGHT_TEST_DATABASE_URL's server.
 */
import { availableParallelism } from 'node:os';
import { faultBenchmark } from './fault.js';
import { hostileBenchmark } from './hostile.js';
import { httpBenchmark } from './http.js';
import { renderBenchmark } from './render.js';
import { scaleBenchmark } from './scale.js';
import { storeStorms } from './storm-stores.js';
import type { RouteFigure } from './storm.js';

const SECTIONS = ['render', 'http', 'storm', 'fault', 'scale-sqlite', 'scale-pg', 'hostile'] as const;
const DEFAULT = ['render', 'http', 'storm', 'fault'];
const asked = process.argv.slice(2);
for (const a of asked) if (!(SECTIONS as readonly string[]).includes(a)) throw new Error(`unknown section "${a}"; choose from ${SECTIONS.join(', ')}`);
const run = (section: (typeof SECTIONS)[number]) => (asked.length ? asked : DEFAULT).includes(section);

const f = (n: number, d = 1) => n.toFixed(d);
const machines = Number(process.env.BENCH_STORM_MACHINES ?? 10_000);
const route = (routes: RouteFigure[], name: string) => routes.find((r) => r.route === name)!;
const mib = (bytes: number) => f(bytes / 2 ** 20, 1);

// The runtime every figure below comes from: the service processes run on this Node.js
// too (process.execPath), and figures differ between runtimes (bench/README.md).
console.log(`bootwright bench: Node.js ${process.version}, ${availableParallelism()} cores, ${new Date().toISOString()}`);

if (run('render')) {
  console.log('# render (no cache)');
  console.log('subject                 | render µs | validated µs | renders/s | serialize µs | render/serialize');
  for (const r of await renderBenchmark(Number(process.env.BENCH_TIME ?? 500))) {
    console.log(
      `${r.name.padEnd(23)} | ${f(r.renderMicros).padStart(9)} | ${f(r.renderValidatedMicros).padStart(12)} | ${f(r.rendersPerSecond, 0).padStart(9)} | ${f(r.serializeMicros).padStart(12)} | ${f(r.ratioToSerialize, 2).padStart(16)}`,
    );
  }
}

if (run('http')) {
  console.log('\n# HTTP (autocannon, loopback, 32 connections)');
  const http = await httpBenchmark(Number(process.env.BENCH_HTTP_SECONDS ?? 10));
  console.log('load                         | req/s    | p50 ms | p99 ms | non-2xx | errors');
  for (const h of http.figures) {
    console.log(`${h.name.padEnd(28)} | ${f(h.requestsPerSecond, 0).padStart(8)} | ${f(h.p50Ms, 2).padStart(6)} | ${f(h.p99Ms, 2).padStart(6)} | ${String(h.non2xx).padStart(7)} | ${h.errors}`);
  }
  console.log(`cache hit / bare fastify, same bytes: ${f(http.hitOverBare, 2)} (before issue 15: 0.33; aim ≥ 0.6)`);
  const workers = process.env.BOOTWRIGHT_RENDER_WORKERS ?? 'the cores';
  console.log(`cache-miss throughput, pool of ${workers} workers / inline, init bodies (11 KB, pooled): ${f(http.poolOverInline.init, 2)} (before: 1.00, one thread; aim ≥ 1.7 on 2 cores)`);
  console.log(`cache-miss throughput / inline, worker bodies (0.9 KB): default ${f(http.poolOverInline.worker, 2)} (under the inline threshold), every task pooled ${f(http.poolOverInline.workerAllPooled, 2)}`);
  console.log(`/healthz p99 while 32 clients send cache-miss init renders: pool ${f(http.healthzP99Ms.pool, 1)} ms, inline ${f(http.healthzP99Ms.inline, 1)} ms (before: the inline figure; aim < 50 ms)`);
}

if (run('storm')) {
  console.log(`\n# boot storm (${machines} machines: boot.ipxe → ipxe → ignition, 200 at a time; servers and proxy are separate processes)`);
  const s = await storeStorms(machines);
  console.log(`registration through the Store API: SQLite ${f(s.registerSeconds.sqlite)} s, PostgreSQL ${f(s.registerSeconds.postgres)} s (16 at a time)`);
  console.log('setup                  | total s | req/s | errors | boot.ipxe p50/p99 ms | ipxe p50/p99 ms | ignition p50/p99 ms | peak RSS MiB');
  const mb = 'missing' in s.matchbox ? undefined : s.matchbox;
  const rows = [...s.setups, ...(mb ? [{ name: 'matchbox, 1 process', run: mb.run, peakRssMiB: [mb.peakRssMiB] }] : [])];
  for (const { name, run: r, peakRssMiB } of rows) {
    const pp = (n: string) => `${f(route(r.routes, n).p50Ms, 2)} / ${f(route(r.routes, n).p99Ms, 2)}`.padStart(n === '/ignition' ? 19 : n === '/ipxe' ? 15 : 20);
    console.log(
      `${name.padEnd(22)} | ${f(r.totalSeconds, 1).padStart(7)} | ${f((r.machines * 3) / r.totalSeconds, 0).padStart(5)} | ${String(r.errors).padStart(6)} | ${pp('/boot.ipxe')} | ${pp('/ipxe')} | ${pp('/ignition')} | ${peakRssMiB.map((m) => f(m, 0)).join(' + ')}`,
    );
    for (const e of r.errorSamples) console.log(`  error: ${e}`);
  }
  if (mb) console.log(`matchbox: ${mb.version}, ${mb.groups} file-based groups (one per MAC), one profile and Ignition file; ${mb.run.machines} of the machines booted (BENCH_MATCHBOX_BOOTS)`);
  else console.log(`*** matchbox: ${(s.matchbox as { missing: string }).missing} ***`);
  console.log("the services' own p99 (arrival to answer, histogram bucket bound), ms:");
  for (const { name, serverP99Ms } of s.setups) console.log(`  ${name.padEnd(22)} | ${Object.entries(serverP99Ms).map(([r, ms]) => `${r} ≤ ${f(ms, 1)}`).join(', ')}`);
  const [sq, p1, p2] = s.setups.map((x) => x.run) as [typeof s.setups[0]['run'], typeof s.setups[0]['run'], typeof s.setups[0]['run']];
  const ign = (r: typeof sq) => route(r.routes, '/ignition').p99Ms;
  console.log('ratio                          | total time | /ignition p99');
  console.log(`PostgreSQL 1 / SQLite 1        | ${f(p1.totalSeconds / sq.totalSeconds, 2).padStart(10)} | ${f(ign(p1) / ign(sq), 2).padStart(13)}`);
  console.log(`PostgreSQL 2+proxy / SQLite 1  | ${f(p2.totalSeconds / sq.totalSeconds, 2).padStart(10)} | ${f(ign(p2) / ign(sq), 2).padStart(13)}`);
  console.log(`PostgreSQL 2+proxy / PG 1      | ${f(p2.totalSeconds / p1.totalSeconds, 2).padStart(10)} | ${f(ign(p2) / ign(p1), 2).padStart(13)}`);
  const pr = s.prerendered;
  const p99 = (r: typeof sq, name: string) => route(r.routes, name).p99Ms;
  console.log(
    `SQLite, pre-rendered (${f(pr.prerenderSeconds, 1)} s after start): first boot ${f(pr.first.totalSeconds, 1)} s, errors ${pr.first.errors}, /ignition p99 ${f(p99(pr.first, '/ignition'), 1)} ms; repeated boot ${f(pr.repeat.totalSeconds, 1)} s, /ignition p99 ${f(p99(pr.repeat, '/ignition'), 1)} ms`,
  );
  console.log(`first-boot /ignition p99 / repeated boot's: ${f(p99(pr.first, '/ignition') / p99(pr.repeat, '/ignition'), 2)} (aim ≤ 1.5)`);
  console.log(`SQLite storm p99 per route (before issue 15, 10,000 machines: /boot.ipxe 1186.1, /ipxe 5624.9, /ignition 716.4 ms on a loaded machine; aim < 300 ms): ${['/boot.ipxe', '/ipxe', '/ignition'].map((n) => `${n} ${f(p99(sq, n), 1)}`).join(', ')}`);
  console.log(`SQLite storm p99 per route, pre-rendered first boot (the machines registered before they boot, as in a deployment; aim < 300 ms): ${['/boot.ipxe', '/ipxe', '/ignition'].map((n) => `${n} ${f(p99(pr.first, n), 1)}`).join(', ')}; ${f(pr.first.totalSeconds, 1)} s`);
  const burst = (r: typeof sq) => `${f(route(r.routes, '/ignition').firstSecondP99Ms, 1)} / ${f(route(r.routes, '/ignition').laterP99Ms, 1)} ms`;
  console.log(`/ignition p99, requests started in a storm's first second / after it: SQLite cold ${burst(sq)}; pre-rendered first boot ${burst(pr.first)}, repeated boot ${burst(pr.repeat)}`);
  console.log(`SQLite: /ignition ${f(s.ignitionRps, 0)} req/s vs POST /v1/render cache hit ${f(s.renderHitRps, 0)} req/s: ratio ${f(s.ignitionRps / s.renderHitRps, 2)}`);
  // Issue 32's figures, as name: value lines, the ratios last.
  const boots = (r: typeof sq) => r.machines / r.totalSeconds;
  console.log(`storm boots/s, SQLite 1: ${f(boots(sq), 0)}`);
  console.log(`storm boots/s, PostgreSQL 1: ${f(boots(p1), 0)}`);
  console.log(`storm boots/s, PostgreSQL 2+proxy: ${f(boots(p2), 0)}`);
  if (mb) console.log(`storm boots/s, matchbox: ${f(boots(mb.run), 0)}`);
  console.log(`storm /ignition p99 ms, SQLite 1: ${f(ign(sq), 1)} (aim < 300)`);
  console.log(`storm /ignition p99 ms, PostgreSQL 1: ${f(ign(p1), 1)} (aim < 300)`);
  console.log(`storm /ignition p99 ms, PostgreSQL 2+proxy: ${f(ign(p2), 1)} (aim < 300)`);
  if (mb) console.log(`storm /ignition p99 ms, matchbox: ${f(ign(mb.run), 1)}`);
  console.log(`ratio storm time, PostgreSQL 1 / SQLite 1: ${f(p1.totalSeconds / sq.totalSeconds, 2)} (aim ≤ 1.5)`);
  console.log(`ratio storm time, PostgreSQL 2+proxy / SQLite 1: ${f(p2.totalSeconds / sq.totalSeconds, 2)} (aim ≤ 1.5)`);
  console.log(`ratio /ignition req/s / POST /v1/render cache hit req/s, SQLite: ${f(s.ignitionRps / s.renderHitRps, 2)} (aim ≥ 0.3)`);
  if (mb) {
    for (const [name, r] of [['SQLite 1', sq], ['PostgreSQL 1', p1], ['PostgreSQL 2+proxy', p2]] as const) {
      console.log(`ratio boots/s, bootwright ${name} / matchbox: ${f(boots(r) / boots(mb.run), 2)} (aim ≥ 1, at /ignition p99 ratio ${f(ign(r) / ign(mb.run), 2)}, aim ≤ 1)`);
    }
  }
}

if (run('fault')) {
  console.log(`\n# fault: 2 PostgreSQL replicas behind the proxy, one killed (SIGKILL) halfway through a ${machines}-machine storm; clients retry as Ignition does`);
  const r = await faultBenchmark(machines);
  console.log(`killed after ${r.killedAt} machines; total ${f(r.run.totalSeconds, 1)} s; retries ${r.run.retries}; proxy failovers ${r.proxy.failovers}, dropped ${r.proxy.dropped}`);
  console.log(`machines with their config: ${r.booted} / ${machines} (errors ${r.run.errors}) — ${r.booted === machines ? 'PASS' : 'FAIL'}`);
  console.log(
    `audit: ${r.auditOk} rows /ignition 200 for ${r.booted} configs received; configs without an audit row: ${r.unaudited} — ${r.unaudited === 0 ? 'PASS' : 'FAIL'}; audited but never received (in flight on the killed replica): ${r.auditedNotReceived}`,
  );
  for (const e of r.run.errorSamples) console.log(`  error: ${e}`);
  const ign = route(r.run.routes, '/ignition');
  console.log(`/ignition p50 ${f(ign.p50Ms, 2)} ms, p99 ${f(ign.p99Ms, 2)} ms`);
}

for (const kind of ['sqlite', 'postgres'] as const) {
  if (!run(kind === 'sqlite' ? 'scale-sqlite' : 'scale-pg')) continue;
  const large = Number(process.env.BENCH_SCALE_MACHINES ?? 100_000);
  console.log(`\n# scale (${kind}): ${machines} machines booting out of ${machines} and out of ${large} registered`);
  const s = await scaleBenchmark(kind, large, machines);
  console.log('registered | register s | store MiB | RSS MiB (peak) | errors | ipxe p99 ms | ignition p50 / p99 ms');
  for (const p of s.points) {
    const ign = route(p.run.routes, '/ignition');
    console.log(
      `${String(p.registered).padStart(10)} | ${f(p.registerSeconds, 1).padStart(10)} | ${mib(p.sizeBytes).padStart(9)} | ${`${f(p.rssMiB, 0)} (${f(p.peakRssMiB, 0)})`.padStart(14)} | ${String(p.run.errors).padStart(6)} | ${f(route(p.run.routes, '/ipxe').p99Ms, 2).padStart(11)} | ${f(ign.p50Ms, 2)} / ${f(ign.p99Ms, 2)}`,
    );
  }
  const [small, big] = s.points as [(typeof s.points)[0], (typeof s.points)[0]];
  const ratio = route(big.run.routes, '/ignition').p99Ms / route(small.run.routes, '/ignition').p99Ms;
  console.log(`/ignition p99 ${large} / ${machines}: ${f(ratio, 2)} (aim ≤ 1.5: ${ratio <= 1.5 ? 'met' : 'NOT met'})`);
}

if (run('hostile')) {
  console.log('\n# hostile inputs (one serve process; /healthz every 5 ms on its own connection meanwhile)');
  console.log('input                          | status | request ms | /healthz max ms | /healthz p99 ms | samples');
  for (const h of await hostileBenchmark()) {
    console.log(`${h.name.padEnd(30)} | ${String(h.status).padStart(6)} | ${f(h.requestMs).padStart(10)} | ${f(h.healthzMaxMs).padStart(15)} | ${f(h.healthzP99Ms).padStart(15)} | ${String(h.healthzSamples).padStart(7)}`);
  }
}
