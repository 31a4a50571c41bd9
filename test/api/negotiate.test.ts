/** Content negotiation (RFC 9110 §12.5.1) among several Ignition ranges. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { negotiate, NotAcceptableError } from '../../src/api/negotiate.js';
import { servedIgnitionVersion } from '../../src/render.js';

const IGN = 'application/vnd.coreos.ignition+json';
const served = (v: string) => servedIgnitionVersion(v) !== undefined;
const pick = (accept: string, format?: 'ignition') => negotiate(format, accept, 'cloud-config', served);

describe('negotiate: several Ignition ranges', () => {
  it('takes the preferred servable range, not the first listed', () => {
    assert.deepEqual(pick(`${IGN}; version=1; q=0.5, ${IGN}; version=2.4.0`), { format: 'ignition', envelope: false, ignitionVersion: '2.4.0' });
    assert.deepEqual(pick(`${IGN}; version=2.4.0; q=0, ${IGN}; version=3.4.0`), { format: 'ignition', envelope: false, ignitionVersion: '3.4.0' });
    assert.deepEqual(pick(`${IGN}; version=2.4.0; q=0.5, ${IGN}; version=3.4.0`), { format: 'ignition', envelope: false, ignitionVersion: '3.4.0' });
    // A spec bootwright cannot serve gives way to one it can, even at a lower q.
    assert.deepEqual(pick(`${IGN}; version=1.0.0, ${IGN}; version=3.4.0; q=0.5`), { format: 'ignition', envelope: false, ignitionVersion: '3.4.0' });
    // Ties keep the order the client wrote.
    assert.deepEqual(pick(`${IGN}; version=3.2.0, ${IGN}; version=3.4.0`), { format: 'ignition', envelope: false, ignitionVersion: '3.2.0' });
  });

  it('?format=ignition takes the same preferred version', () => {
    assert.deepEqual(pick(`${IGN}; version=2.4.0; q=0.5, ${IGN}; version=3.4.0`, 'ignition'), { format: 'ignition', envelope: false, ignitionVersion: '3.4.0' });
  });

  it('refuses with 406 when the only explicit Ignition choices are unservable', () => {
    assert.throws(() => pick(`${IGN}; version=1.0.0, ${IGN}; version=1; q=0.5, */*; q=0.1`), (e: unknown) => e instanceof NotAcceptableError && e.message.includes('Ignition spec 1.0.0 is not served'));
  });
});
