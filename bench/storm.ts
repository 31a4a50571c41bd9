/**
 * The boot storm client: machines doing what a PXE-booted machine does — GET
 * /boot.ipxe, GET /ipxe with its own MAC, UUID and serial (hex, as iPXE's
 * `${serial:hex}`), then the signed Ignition URL from its script with Ignition's own
 * Accept header — `concurrency` machines at a time, over loopback. Optionally retrying
 * the way Ignition does (connection errors and 5xx: 200 ms, doubling, 5 s cap).
 * Latencies are of answered requests, per route.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { ipxeQuery, nameOf } from './machines.js';

/** The Accept header Ignition sends. */
export const IGNITION_ACCEPT = 'application/vnd.coreos.ignition+json;version=3.4.0, */*;q=0.1';
/** The storm's routes, in boot order. */
export const ROUTES = ['/boot.ipxe', '/ipxe', '/ignition'] as const;

/** Latency summary of one route, milliseconds. */
export interface RouteFigure {
  route: string;
  count: number;
  p50Ms: number;
  p99Ms: number;
  /**
   * p99 of the requests started in the storm's first second (every booting machine
   * starts at once: the burst, which meets cold code in a fresh process), and of those
   * started after it; NaN where there are none.
   */
  firstSecondP99Ms: number;
  laterP99Ms: number;
}

/** What one storm measured. */
export interface StormRun {
  machines: number;
  concurrency: number;
  totalSeconds: number;
  /** Machines that did not get their config (each counted once). */
  errors: number;
  /** Requests retried (connection errors and 5xx), when retrying. */
  retries: number;
  routes: RouteFigure[];
  /** Machines that got their Ignition config, by index. */
  booted: Set<number>;
  /** The first few error messages. */
  errorSamples: string[];
}

/** Options of {@link bootStorm}. */
export interface StormOptions {
  /** Machines booting at once (default 200). */
  concurrency?: number;
  /** Retry connection errors and 5xx as Ignition does (default false: count an error). */
  retry?: boolean;
  /** Called after each machine finishes, with how many have. */
  onProgress?: (finished: number) => void;
  /** The path each connection is opened with before the clock starts (default `/healthz`). */
  warmPath?: string;
  /**
   * The config URL machine i takes from its iPXE script (default {@link signedConfigUrl});
   * undefined when the script names none of its own.
   */
  configUrl?: (script: string, i: number) => string | undefined;
}

/** The `ignition.config.url=` kernel argument of an iPXE script, as written there. */
export const scriptConfigUrl = (script: string): string | undefined => /ignition\.config\.url=(\S+)/.exec(script)?.[1];

/** bootwright's: the signed `ignition.config.url` of the script, which names machine i. */
export function signedConfigUrl(script: string, i: number): string | undefined {
  const url = scriptConfigUrl(script);
  return url && new URL(url).searchParams.get('machine') === nameOf(i) ? url : undefined;
}

/** The p-th percentile of sorted values (nearest rank). */
export const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

const RETRY_FIRST_MS = 200;
const RETRY_CAP_MS = 5000;
/** Give up on a machine after this many attempts of one request. */
const MAX_ATTEMPTS = 20;

/**
 * Boot the machines with the given indices against `base` (a replica or a proxy).
 *
 * @returns the figures; a machine whose request failed (after the retries, if any)
 *   or whose config is not Ignition 3.4.0 counts as one error.
 */
export async function bootStorm(base: string, indices: number[], options: StormOptions = {}): Promise<StormRun> {
  const concurrency = options.concurrency ?? 200;
  // One keep-alive connection per booting machine, as that many machines would hold, each
  // its own, opened (one GET /healthz each) before the clock starts. An unbounded client
  // pool opened connections past the concurrency and stalled whole seconds doing so; and
  // 200 connections opened at once by this (cold) client made a fresh storm's first
  // second's `/boot.ipxe` p99 1.5–5.8 s while the service's event loop lagged at most
  // 190 ms, against 0.23 s with the connections opened first: costs of the client.
  const slots = Math.min(concurrency, indices.length);
  const dispatchers = Array.from({ length: slots }, () => new Agent({ connections: 1, keepAliveTimeout: 30_000 }));
  await Promise.all(dispatchers.map(async (dispatcher) => (await request(`${base}${options.warmPath ?? '/healthz'}`, { dispatcher })).body.text()));
  const times: Record<string, number[]> = Object.fromEntries(ROUTES.map((r) => [r, []]));
  /** When each answered request started, ms after the storm's start (parallel to `times`). */
  const starts: Record<string, number[]> = Object.fromEntries(ROUTES.map((r) => [r, []]));
  // The clock starts here, with every connection open; the first machines start below.
  const start = performance.now();
  const booted = new Set<number>();
  const errorSamples: string[] = [];
  let errors = 0;
  let retries = 0;
  let finished = 0;

  /** One GET, retried per the options; resolves with the body of a 200. */
  const get = async (dispatcher: Agent, route: string, url: string, headers: Record<string, string> = {}): Promise<string> => {
    let delay = RETRY_FIRST_MS;
    for (let attempt = 1; ; attempt++) {
      let failure = '';
      const t0 = performance.now();
      // undici's request, not fetch: a tenth of fetch's CPU per request, which matters
      // when 200 "machines" share the two cores with the service they measure.
      let answer: { status: number; text: string } | undefined;
      try {
        const res = await request(url, { headers, dispatcher });
        answer = { status: res.statusCode, text: await res.body.text() };
      } catch (e) {
        answer = undefined; // a connection error (refused, reset, cut mid-body)
        failure = `${route}: ${(e as Error).message}`;
      }
      if (answer) {
        times[route]!.push(performance.now() - t0);
        starts[route]!.push(t0 - start);
        if (answer.status === 200) return answer.text;
        failure = `${route}: ${answer.status} ${answer.text.slice(0, 200)}`;
        if (answer.status < 500) throw new Error(failure);
      }
      if (!options.retry || attempt >= MAX_ATTEMPTS) throw new Error(failure);
      retries++;
      await sleep(delay);
      delay = Math.min(delay * 2, RETRY_CAP_MS);
    }
  };

  const boot = async (dispatcher: Agent, i: number) => {
    try {
      await get(dispatcher, '/boot.ipxe', `${base}/boot.ipxe`);
      const script = await get(dispatcher, '/ipxe', `${base}/ipxe?${ipxeQuery(i)}`);
      const url = (options.configUrl ?? signedConfigUrl)(script, i);
      if (!url) throw new Error(`${nameOf(i)}: no Ignition URL of its own in its script`);
      const config = await get(dispatcher, '/ignition', url, { accept: IGNITION_ACCEPT });
      if ((JSON.parse(config) as { ignition?: { version?: string } }).ignition?.version !== '3.4.0') throw new Error(`${nameOf(i)}: not an Ignition 3.4.0 config`);
      booted.add(i);
    } catch (e) {
      errors++;
      if (errorSamples.length < 5) errorSamples.push((e as Error).message);
    }
    options.onProgress?.(++finished);
  };

  let next = 0;
  try {
    await Promise.all(
      dispatchers.map(async (dispatcher) => {
        while (next < indices.length) await boot(dispatcher, indices[next++]!);
      }),
    );
  } finally {
    await Promise.all(dispatchers.map((d) => d.close()));
  }
  const totalSeconds = (performance.now() - start) / 1000;
  const p99Of = (values: number[]) => percentile([...values].sort((a, b) => a - b), 99);
  return {
    machines: indices.length,
    concurrency,
    totalSeconds,
    errors,
    retries,
    booted,
    errorSamples,
    routes: ROUTES.map((route) => {
      const all = times[route]!;
      const sorted = [...all].sort((a, b) => a - b);
      const first = all.filter((_, i) => starts[route]![i]! < 1000);
      const later = all.filter((_, i) => starts[route]![i]! >= 1000);
      return { route, count: sorted.length, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), firstSecondP99Ms: p99Of(first), laterP99Ms: p99Of(later) };
    }),
  };
}
