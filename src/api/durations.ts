/**
 * `http_request_duration_seconds{method, route, status_code}`: every answered request's
 * duration, a Prometheus histogram (issue 15, lean hit path).
 *
 * prom-client's `Histogram.observe` takes a label object and, on every call, wraps it,
 * checks each label name and builds a string key from the labels before it counts: in
 * `perf`, 3.5 % of a `POST /v1/render` cache hit's CPU, the largest single cost the
 * service adds to the request. Here a series (one method, route pattern and status) is
 * found through three maps keyed by those values as the request has them (method and
 * route pattern are strings fastify holds per route, the status a number), and counting
 * is a few additions to a typed array.
 *
 * The histogram joins the service's prom-client registry as a metric of its own
 * (`Registry.registerMetric`): at scrape time {@link RequestDurations.getForPromString}
 * answers the values a prom-client `Histogram` with these buckets would (cumulative
 * `_bucket` per `le`, then `+Inf`, `_sum` and `_count`, series in the order first seen),
 * so `/metrics` reads the same as before.
 */
import type { Metric } from 'prom-client';

/** One series: per-bucket counts (not cumulative; the last slot is above every bound), the sum and the count. */
interface Series {
  labels: { method: string; route: string; status_code: string };
  counts: Float64Array;
  sum: number;
  count: number;
}

/** A value as prom-client's registry formats it. */
interface Value {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName: string;
  exemplar?: null | undefined;
}

/** What a scrape reads. */
interface Exposed {
  name: string;
  help: string;
  type: string;
  aggregator: string;
  values: Value[];
}

/** The request-duration histogram; see the module comment. */
export class RequestDurations {
  readonly name = 'http_request_duration_seconds';
  readonly help = 'HTTP request duration in seconds, by route pattern and status';
  readonly type = 'histogram';
  /** How prom-client's cluster support would merge workers' values. */
  readonly aggregator = 'sum';
  /** method → route → status → series. */
  private readonly series = new Map<string, Map<string, Map<number, Series>>>();
  /** Series in the order first seen (the exposition order). */
  private readonly ordered: Series[] = [];

  /** @param buckets upper bounds in seconds, ascending (`le` labels). */
  constructor(readonly buckets: readonly number[]) {}

  /**
   * Count one answered request.
   *
   * @param route the route pattern (`/v1/machines/:name`), never a URL; `unmatched` for none.
   * @param seconds its duration, arrival to answer.
   */
  observe(method: string, route: string, statusCode: number, seconds: number): void {
    let byRoute = this.series.get(method);
    if (!byRoute) this.series.set(method, (byRoute = new Map<string, Map<number, Series>>()));
    let byStatus = byRoute.get(route);
    if (!byStatus) byRoute.set(route, (byStatus = new Map<number, Series>()));
    let s = byStatus.get(statusCode);
    if (!s) {
      s = { labels: { method, route, status_code: String(statusCode) }, counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 };
      byStatus.set(statusCode, s);
      this.ordered.push(s);
    }
    let i = 0;
    while (i < this.buckets.length && seconds > this.buckets[i]!) i++;
    s.counts[i]!++;
    s.sum += seconds;
    s.count++;
  }

  /**
   * The values for the text exposition, as prom-client's `Histogram` gives them to its
   * registry (`getForPromString`): the series' labels as shared labels of each value.
   */
  getForPromString(): Promise<Exposed> {
    const values: Value[] = [];
    for (const s of this.ordered) {
      let cumulative = 0;
      this.buckets.forEach((le, i) => {
        cumulative += s.counts[i]!;
        values.push({ labels: { le }, sharedLabels: s.labels, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_bucket` },
        { labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` },
      );
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values });
  }

  /** The values with each series' labels among their own, as prom-client's `Histogram.get()` answers (JSON). */
  async get(): Promise<Exposed> {
    const exposed = await this.getForPromString();
    // prom-client's values carry an `exemplar`: null on buckets without exemplars, undefined on _sum and _count.
    return {
      ...exposed,
      values: exposed.values.map(({ sharedLabels, labels, ...v }) => ({ ...v, exemplar: v.metricName.endsWith('_bucket') ? null : undefined, labels: { ...labels, ...sharedLabels } })),
    };
  }

  /** Forget every series (prom-client's `Registry.resetMetrics`). */
  reset(): void {
    this.series.clear();
    this.ordered.length = 0;
  }

  /**
   * This histogram as the registry takes it. prom-client types `registerMetric` with its
   * own classes only; the registry reads a metric's `name`, `help`, `type`,
   * `aggregator`, `getForPromString()` or `get()`, and `reset()`, which this has.
   */
  asMetric(): Metric {
    return this as unknown as Metric;
  }
}
