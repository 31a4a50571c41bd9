/**
 * The test control plane (test/support/controlplane.ts) is a real API server: it
 * authenticates the admin by client certificate, stores objects in etcd, validates
 * them, and refuses an anonymous client (RBAC).
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { type ControlPlane, freePort, retryOnPortClash, startControlPlane } from './controlplane.js';
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

describe('retryOnPortClash', () => {
  it('tries again while a port was taken, up to its attempts, and never on another error', async () => {
    let calls = 0;
    const clash = () => new Error('listen tcp 127.0.0.1:36691: bind: address already in use');
    assert.equal(await retryOnPortClash(() => (++calls < 3 ? Promise.reject(clash()) : Promise.resolve('up'))), 'up');
    assert.equal(calls, 3);
    calls = 0;
    await assert.rejects(retryOnPortClash(() => (++calls, Promise.reject(clash())), 2), /address already in use/);
    assert.equal(calls, 2);
    calls = 0;
    await assert.rejects(retryOnPortClash(() => (++calls, Promise.reject(new Error('etcd: bad flag')))), /bad flag/);
    assert.equal(calls, 1);
  });
});

describe('test control plane on a port another process took', { skip }, () => {
  it('chooses its ports again and starts (the race of a port freed and taken before the API server binds it)', async () => {
    // Held open for the test: the first secure port handed out is one a listener has.
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const takenPort = (taken.address() as { port: number }).port;
    let handed = 0;
    const cp = await startControlPlane(120_000, () => (++handed === 3 ? Promise.resolve(takenPort) : freePort())).finally(() => taken.close());
    try {
      assert.ok(handed >= 6, `a second attempt chose its ports (${String(handed)} handed out)`);
      assert.notEqual(new URL(cp.url).port, String(takenPort));
      assert.equal((await cp.request('GET', '/version')).status, 200);
    } finally {
      await cp.stop();
    }
  });
});
