import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Histogram, Registry } from 'prom-client';
import { RequestDurations } from '../../src/api/durations.js';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** The same observations in ours and in prom-client's own Histogram, each in a registry of its own. */
function both(observations: readonly [string, string, number, number][]) {
  const ours = new RequestDurations(BUCKETS);
  const oursRegistry = new Registry();
  oursRegistry.registerMetric(ours.asMetric());
  const theirsRegistry = new Registry();
  const theirs = new Histogram({ name: ours.name, help: ours.help, labelNames: ['method', 'route', 'status_code'] as const, buckets: BUCKETS, registers: [theirsRegistry] });
  for (const [method, route, status, seconds] of observations) {
    ours.observe(method, route, status, seconds);
    theirs.observe({ method, route, status_code: String(status) }, seconds);
  }
  return { ours, oursRegistry, theirsRegistry };
}

const observation = fc.tuple(
  fc.constantFrom('GET', 'POST', 'PUT'),
  fc.constantFrom('/v1/render', '/ipxe', '/v1/machines/:name', 'unmatched', '/nocloud/:id/"odd\\route"'),
  fc.constantFrom(200, 304, 404, 503),
  // Bucket bounds themselves, values between them, beyond the last, and zero.
  fc.oneof(fc.constantFrom(0, ...BUCKETS, 3), fc.double({ min: 0, max: 4, noNaN: true })),
);

describe('RequestDurations', () => {
  it("exposes exactly what prom-client's Histogram exposes for the same observations (text and JSON)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 60 }), async (observations) => {
        const { oursRegistry, theirsRegistry } = both(observations);
        assert.equal(await oursRegistry.metrics(), await theirsRegistry.metrics());
        assert.deepEqual(await oursRegistry.getMetricsAsJSON(), await theirsRegistry.getMetricsAsJSON());
      }),
      { numRuns: 200 },
    );
  });

  it('counts a value equal to a bound in that bound (le is "less than or equal")', async () => {
    const { ours } = both([['GET', '/ipxe', 200, 0.005]]);
    const values = (await ours.get()).values.filter((v) => v.metricName.endsWith('_bucket'));
    assert.equal(values.find((v) => v.labels.le === 0.0025)!.value, 0);
    assert.equal(values.find((v) => v.labels.le === 0.005)!.value, 1);
  });

  it('forgets every series on reset', async () => {
    const { ours, oursRegistry } = both([['GET', '/ipxe', 200, 0.1]]);
    oursRegistry.resetMetrics();
    assert.deepEqual((await ours.get()).values, []);
    ours.observe('GET', '/ipxe', 200, 0.1);
    assert.equal((await ours.get()).values.find((v) => v.metricName.endsWith('_count'))!.value, 1);
  });
});
