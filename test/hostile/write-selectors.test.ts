/**
 * Duplicate hardware selectors (issue 11 C): a second machine with the first one's MAC
 * (in another spelling), UUID or serial would take over its boot; POST and PUT answer
 * 409 naming the field and the machine that has it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertProblem, clusterSpec, doc, inventory, type Inventory, machineSpec, workerProfileSpec } from '../support/inventory.js';

let inv: Inventory;
before(async () => {
  inv = await inventory();
  assert.equal((await inv.send('post', '/v1/clusters', doc('Cluster', 'prod', clusterSpec()))).status, 201);
  assert.equal((await inv.send('post', '/v1/profiles', doc('Profile', 'worker', workerProfileSpec()))).status, 201);
  const first = machineSpec('52:54:00:12:34:56', { selectors: { mac: ['52:54:00:12:34:56'], uuid: '0E5A3C2B-1111-4222-8333-944455556601', serial: 'SN-7' } });
  assert.equal((await inv.send('post', '/v1/machines', doc('Machine', 'first', first))).status, 201);
});
after(() => inv.close());

describe('a second machine with the first one\'s hardware', () => {
  for (const [what, selectors, path] of [
    ['the MAC in Cisco-dot spelling', { mac: ['52:54:00:00:00:01', '5254.0012.3456'] }, 'spec.selectors.mac[1]'],
    ['the MAC in bare upper-case hex', { mac: ['525400123456'] }, 'spec.selectors.mac[0]'],
    ['the UUID without hyphens', { mac: [], uuid: '0e5a3c2b111142228333944455556601' }, 'spec.selectors.uuid'],
    ['the serial', { mac: [], serial: 'SN-7' }, 'spec.selectors.serial'],
  ] as const) {
    it(`POST with ${what} is 409 naming ${path} and machine "first"`, async () => {
      const res = await inv.send('post', '/v1/machines', doc('Machine', 'second', machineSpec('', { selectors: selectors })));
      assertProblem(res, 409, [path], { [path]: /machine "first"/ });
      assert.match(res.body.detail as string, /machine "first"/);
      assert.equal((await inv.get('/v1/machines/second')).status, 404);
    });
  }

  it('PUT taking the first one\'s MAC is 409; the second keeps its revision', async () => {
    assert.equal((await inv.send('post', '/v1/machines', doc('Machine', 'second', machineSpec('52:54:00:00:00:02')))).status, 201);
    const res = await inv.send('put', '/v1/machines/second', doc('Machine', 'second', machineSpec('52-54-00-12-34-56')));
    assertProblem(res, 409, ['spec.selectors.mac[0]']);
    assert.equal((await inv.get('/v1/machines/second')).body.metadata.revision, 1);
  });

  it('host names may be shared (they are not hardware)', async () => {
    const res = await inv.send('post', '/v1/machines', doc('Machine', 'third', machineSpec('52:54:00:00:00:03', { selectors: { mac: ['52:54:00:00:00:03'], hostname: 'node.example.com' } })));
    assert.equal(res.status, 201, res.text);
    const res2 = await inv.send('post', '/v1/machines', doc('Machine', 'fourth', machineSpec('52:54:00:00:00:04', { selectors: { mac: ['52:54:00:00:00:04'], hostname: 'NODE.example.com' } })));
    assert.equal(res2.status, 201, res2.text);
  });
});
