/**
 * Hostile query strings: label selectors past their caps, parameter floods on token
 * routes (400 naming the parameter) and on firmware routes (ignored past the cap: iPXE
 * retries only a 503, so a firmware answer stays a script or a plain 4xx).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeOnBothStores } from '../support/postgres.js';
import { ADMIN, testService, type TestService } from '../support/server.js';
import * as hostile from './inputs.js';

let svc: TestService;


const get = (url: string, token?: string) => svc.app.inject({ method: 'GET', url, headers: token ? { authorization: `Bearer ${token}` } : {} });

async function stillServing(): Promise<void> {
  assert.equal((await get('/healthz')).statusCode, 200);
}

describeOnBothStores(
  'hostile queries, on each store',
  async (store) => {
    svc = await testService({}, { store });
    return { close: () => svc.app.close() };
  },
  () => {
    describe('labelSelector', () => {
      for (const kind of ['clusters', 'profiles', 'machines']) {
        it(`a 20,000-character selector on /v1/${kind} is a 400 naming labelSelector and the limit`, async () => {
          const res = await get(`/v1/${kind}?labelSelector=${'a=b,'.repeat(5000)}`, ADMIN);
          assert.equal(res.statusCode, 400);
          assert.deepEqual(res.json<{ errors: unknown }>().errors, [{ path: 'labelSelector', message: 'is 20000 characters long; the limit is 1024 (BOOTWRIGHT_MAX_LABEL_SELECTOR_CHARS)' }]);
          await stillServing();
        });
      }

      it('33 terms are a 400 naming the term limit; 32 are served', async () => {
        const over = await get(`/v1/machines?labelSelector=${hostile.labelSelector(33)}`, ADMIN);
        assert.equal(over.statusCode, 400);
        assert.deepEqual(over.json<{ errors: unknown }>().errors, [{ path: 'labelSelector', message: 'has 33 terms; the limit is 32 (BOOTWRIGHT_MAX_LABEL_SELECTOR_TERMS)' }]);
        const at = await get(`/v1/machines?labelSelector=${hostile.labelSelector(32)}`, ADMIN);
        assert.equal(at.statusCode, 200);
      });

      it('a __proto__ key is refused as no label key (kubectl says the same); it never selects everything', async () => {
        const created = await svc.app.inject({
          method: 'POST',
          url: '/v1/clusters',
          headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
          payload: { apiVersion: 'bootwright.dev/v1alpha1', kind: 'Cluster', metadata: { name: 'prod', labels: { env: 'prod' } }, spec: { name: 'prod', controlPlaneEndpoint: 'api.prod.example.com:6443' } },
        });
        assert.equal(created.statusCode, 201, created.body);
        const res = await get('/v1/clusters?labelSelector=__proto__=x', ADMIN);
        assert.equal(res.statusCode, 400);
        assert.match(res.json<{ errors: { path: string; message: string }[] }>().errors[0]!.message, /"__proto__" is not a label key/);
        const notIn = await get('/v1/clusters?labelSelector=!constructor', ADMIN);
        assert.equal(notIn.statusCode, 200, 'a key named like an Object member is a label like any other');
        assert.equal(notIn.json<{ items: unknown[] }>().items.length, 1);
        const all = await get('/v1/clusters?labelSelector=env=prod', ADMIN);
        assert.equal(all.json<{ items: unknown[] }>().items.length, 1);
      });
    });

    describe('query floods', () => {
      for (const url of ['/v1/machines', '/v1/profiles/none', '/v1/discovered']) {
        it(`1,000 parameters on ${url} are a 400 naming the query and the limit`, async () => {
          const res = await get(`${url}?${hostile.queryFlood(1000)}`, ADMIN);
          assert.equal(res.statusCode, 400);
          assert.deepEqual(res.json<{ errors: unknown }>().errors, [{ path: 'query', message: 'has 1000 parameters; the limit is 32 (BOOTWRIGHT_MAX_QUERY_PARAMETERS)' }]);
        });
      }

      it('a flood on POST /v1/render is a 400 before the body is parsed', async () => {
        const res = await svc.app.inject({ method: 'POST', url: `/v1/render?${hostile.queryFlood(3000)}`, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/yaml' }, payload: hostile.aliasBomb() });
        assert.equal(res.statusCode, 400);
        assert.equal(res.json<{ errors: { path: string }[] }>().errors[0]!.path, 'query');
      });

      it('/ipxe with 5,000 free labels still answers its script (labels past the cap are ignored)', async () => {
        const res = await get(`/ipxe?mac=52:54:00:12:34:56&${hostile.queryFlood(5000)}`);
        assert.equal(res.statusCode, 200);
        assert.match(res.body, /^#!ipxe\n/);
        assert.match(res.body, /this machine reported mac=52:54:00:12:34:56/);
        await stillServing();
      });

      it('/boot.ipxe with a flood is its usual script', async () => {
        const plain = await get('/boot.ipxe');
        const flooded = await get(`/boot.ipxe?${hostile.queryFlood(5000)}`);
        assert.equal(flooded.statusCode, 200);
        assert.equal(flooded.body, plain.body);
      });

      it('/ignition with a flood and a forged signature is a 403 problem (the extra parameters ignored), never a 5xx', async () => {
        const res = await get(`/ignition?machine=m1&exp=1&sig=x&${hostile.queryFlood(5000)}`);
        assert.equal(res.statusCode, 403);
        assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
      });

      it('/nocloud with oversized path segments is a 414 problem', async () => {
        const res = await get(`/nocloud/${'a'.repeat(5000)}/1/x/user-data`);
        assert.equal(res.statusCode, 414);
        assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
        await stillServing();
      });

      it('a bad percent-encoding in a firmware path is a 400 problem that does not echo the path', async () => {
        const res = await get('/nocloud/m1/1/SECRETSIG%zz/user-data');
        assert.equal(res.statusCode, 400);
        assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
        assert.doesNotMatch(res.body, /SECRETSIG/);
        assert.doesNotMatch(svc.logs(), /SECRETSIG/);
      });
    });
  },
);
