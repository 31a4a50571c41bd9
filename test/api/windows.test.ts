/**
 * A Windows node over HTTP (issue 12): negotiation gives cloud-config for cloudbase-init,
 * and Ignition, however asked, is a 422 problem document naming the field that made the
 * node Windows.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import request from 'supertest';
import { RENDERER, testService, type TestService } from '../support/server.js';
import { capzWindowsRequest } from '../support/windows.js';

const IGN = 'application/vnd.coreos.ignition+json';
const CRI_SOCKET = 'spec.kubeadmConfig.spec.template.spec.joinConfiguration.nodeRegistration.criSocket';

let svc: TestService;
before(async () => {
  svc = await testService({ bodyLimit: 64 * 1024 });
});
after(async () => {
  await svc.app.close();
});

const post = (accept?: string, query = '') => {
  const r = request(svc.app.server).post(`/v1/render${query}`).set('authorization', `Bearer ${RENDERER}`).set('content-type', 'application/json');
  if (accept !== undefined) r.set('accept', accept);
  return r.send(JSON.stringify(capzWindowsRequest()));
};

describe('POST /v1/render for a Windows node', () => {
  it("Ignition's own Accept with a wildcard, or none, gets cloud-config for cloudbase-init", async () => {
    for (const accept of [undefined, `${IGN};version=3.4.0;q=0.5, */*;q=0.1`, 'text/cloud-config']) {
      const res = await post(accept);
      assert.equal(res.status, 200, accept);
      assert.equal(res.headers['content-type'], 'text/cloud-config; charset=utf-8');
      assert.match(res.text, /\n {2}- kubeadm join --config C:\/run\/kubeadm\/kubeadm-join-config\.yaml && echo success > C:\\run\\cluster-api\\bootstrap-success\.complete\n/);
    }
  });

  it('Ignition asked outright (Accept or ?format=) is a 422 naming the criSocket field', async () => {
    for (const [accept, query] of [[IGN, ''], [undefined, '?format=ignition']] as const) {
      const res = await post(accept, query);
      assert.equal(res.status, 422);
      assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
      const problem = JSON.parse(res.text) as { errors: { path: string; message: string }[] };
      assert.deepEqual(problem.errors, [{ path: CRI_SOCKET, message: 'Ignition is not served for windows nodes; windows nodes get cloud-config' }]);
    }
  });
});
