/**
 * Render plans (src/api/render-plan.ts): a plan is a pure function of the known request,
 * Accept and the query; one for a query that asks nothing is made once per known request
 * and Accept value and reused, and equals the plan made afresh.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderPlan } from '../../src/api/render-plan.js';
import { validateNodeBootstrap } from '../../src/request/parse.js';
import { requestDigest } from '../../src/work/task.js';
import { worker } from '../support/requests.js';

const IGN = 'application/vnd.coreos.ignition+json;version=3.4.0';
const known = () => {
  const req = validateNodeBootstrap(worker());
  return { req, digest: requestDigest(req) };
};

describe('renderPlan', () => {
  it('reuses the plan of a known request and Accept for an empty query', () => {
    const k = known();
    const first = renderPlan(k, 'text/cloud-config', {});
    assert.equal(renderPlan(k, 'text/cloud-config', {}), first);
    assert.equal(renderPlan(k, undefined, {}), renderPlan(k, undefined, {}));
    const ign = renderPlan(k, IGN, {});
    assert.notEqual(ign, first);
    assert.equal(ign.options.format, 'ignition');
    assert.equal(first.options.format, 'cloud-config');
  });

  it('a reused plan equals one made afresh for another object with the same content', () => {
    const a = known();
    const b = known();
    assert.deepEqual(renderPlan(a, IGN, {}), renderPlan(b, IGN, {}));
    assert.notEqual(renderPlan(a, IGN, {}), renderPlan(b, IGN, {}));
  });

  it('plans afresh, and exactly, when the query asks something', () => {
    const k = known();
    const plain = renderPlan(k, IGN, {});
    const asked = renderPlan(k, IGN, { ignitionVersion: '3.3.0' });
    assert.notEqual(asked, renderPlan(k, IGN, { ignitionVersion: '3.3.0' }));
    assert.deepEqual(asked, renderPlan(k, IGN, { ignitionVersion: '3.3.0' }));
    assert.notEqual(asked.key, plain.key);
    assert.equal(asked.options.ignitionVersion, '3.3.0');
    const format = renderPlan(k, IGN, { format: 'cloud-config' });
    assert.equal(format.options.format, 'cloud-config');
    assert.equal(renderPlan(k, IGN, {}), plain);
  });

  it('a refused Accept is refused every time (not remembered as a plan)', () => {
    const k = known();
    assert.throws(() => renderPlan(k, 'image/png', {}), { name: 'NotAcceptableError' });
    assert.throws(() => renderPlan(k, 'image/png', {}), { name: 'NotAcceptableError' });
  });
});
