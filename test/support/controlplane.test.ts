/**
 * The test control plane (test/support/controlplane.ts) is a real API server: it
 * authenticates the admin by client certificate, stores objects in etcd, validates
 * them, and refuses an anonymous client (RBAC).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, startControlPlane } from './controlplane.js';
import { referenceToolMissing } from './tools.js';

const skip = referenceToolMissing('kube-apiserver', 'no real API server: the control-plane tests are NOT run') || referenceToolMissing('etcd', 'no etcd: the control-plane tests are NOT run');

describe('test control plane (etcd + kube-apiserver)', { skip }, () => {
  let cp: ControlPlane | undefined;
  before(async () => {
    cp = await startControlPlane();
  });
  after(() => cp?.stop());
  /** The control plane `before` started (it throws when that failed). */
  const up = (): ControlPlane => {
    if (cp === undefined) throw new Error('the control plane did not start');
    return cp;
  };

  it('serves the admin, stores a Secret and reads it back, and validates what it stores', async () => {
    assert.equal((await up().request('GET', '/version')).status, 200);
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bootstrap-token-abcdef', namespace: 'kube-system' }, type: 'bootstrap.kubernetes.io/token', stringData: { 'token-id': 'abcdef', 'token-secret': '0123456789abcdef' } };
    const created = await up().request('POST', '/api/v1/namespaces/kube-system/secrets', secret);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const read = (await up().request('GET', '/api/v1/namespaces/kube-system/secrets/bootstrap-token-abcdef')).body as { data: Record<string, string> };
    assert.equal(Buffer.from(read.data['token-id']!, 'base64').toString(), 'abcdef');
    const bad = await up().request('POST', '/api/v1/namespaces/kube-system/secrets', { ...secret, metadata: { name: 'Not_A_Name', namespace: 'kube-system' } });
    assert.equal(bad.status, 422);
  });

  it('refuses a client without a certificate', async () => {
    const res = await fetch(`${up().url}/api/v1/namespaces`, { dispatcher: undefined }).catch((e: unknown) => e as Error);
    // The serving certificate is the API server's own: an untrusting client fails TLS first.
    assert.ok(res instanceof Error || res.status === 401 || res.status === 403);
  });
});
