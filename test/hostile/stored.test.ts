/**
 * Stored documents cannot poison the store: a write passes the same document limits as
 * a render, and a document stored without them (before the limits, or under larger
 * ones) makes its machine's render a 422 naming it, while the service keeps serving.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { machineSpecSchema } from '../../src/store/resources.js';
import type { Store } from '../../src/store/store.js';
import { HASH, TOKEN } from '../support/requests.js';
import { describeOnBothStores } from '../support/postgres.js';
import { ADMIN, RENDERER, testService, type TestService } from '../support/server.js';

let store: Store;
let svc: TestService;

describeOnBothStores(
  'stored documents, on each store',
  async (opened) => {
    store = opened;
    svc = await testService({}, { store });
    await store.create('Cluster', { name: 'prod', spec: { name: 'prod', controlPlaneEndpoint: 'api.prod.example.com:6443', bootstrapToken: TOKEN, caCertHashes: [HASH] } });
    // Written straight into the store, as an older version without limits could have.
    const files = Array.from({ length: 300 }, (_, i) => ({ path: `/etc/app/f${i}`, content: 'x' }));
    await store.create('Profile', { name: 'big', spec: { role: 'worker', kubernetesVersion: 'v1.33.2', provisioning: { files } } as never });
    await store.create('Machine', { name: 'm1', spec: machineSpecSchema.parse({ cluster: 'prod', profile: 'big', selectors: { mac: ['52:54:00:00:00:01'] } }) });
    return { close: () => svc.app.close() };
  },
  () => {
    describe('stored documents', () => {
      it('a machine whose stored profile is over the list limit renders a 422 naming it, not a crash', async () => {
        const res = await svc.app.inject({ method: 'GET', url: '/v1/machines/m1/bootstrap', headers: { authorization: `Bearer ${RENDERER}` } });
        assert.equal(res.statusCode, 422);
        assert.deepEqual(res.json<{ errors: unknown }>().errors, [{ path: 'profile.spec.provisioning.files', message: 'has 300 items; the limit is 256 (BOOTWRIGHT_MAX_LIST_ITEMS)' }]);
        assert.equal((await svc.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
      });

      it('the same profile sent through the API is refused with 413 before it is stored', async () => {
        const big = await store.get('Profile', 'big');
        const res = await svc.app.inject({
          method: 'PUT',
          url: '/v1/profiles/big',
          headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
          payload: { apiVersion: 'bootwright.dev/v1alpha1', kind: 'Profile', metadata: { name: 'big' }, spec: big.spec },
        });
        assert.equal(res.statusCode, 413);
        assert.deepEqual(res.json<{ errors: unknown }>().errors, [{ path: 'spec.provisioning.files', message: 'has 300 items; the limit is 256 (BOOTWRIGHT_MAX_LIST_ITEMS)' }]);
        assert.equal((await store.get('Profile', 'big')).revision, big.revision);
      });

      it('listing the stored documents still works', async () => {
        const res = await svc.app.inject({ method: 'GET', url: '/v1/profiles', headers: { authorization: `Bearer ${ADMIN}` } });
        assert.equal(res.statusCode, 200);
        assert.equal(res.json<{ items: unknown[] }>().items.length, 1);
      });
    });
  },
);
