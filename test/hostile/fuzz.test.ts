/**
 * Property: whatever the body, query or bytes, the answer is a 2xx or a 4xx problem,
 * never a 5xx, and the service keeps serving. Reproduce a failure with the seed and
 * path fast-check prints: `fc.assert(..., { seed, path })`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeOnBothStores } from '../support/postgres.js';
import fc from 'fast-check';
import { dump } from 'js-yaml';
import { ADMIN, testService, type TestService } from '../support/server.js';
import { worker } from '../support/requests.js';

let svc: TestService;


const ROUTES = ['/v1/render', '/v1/profiles', '/v1/machines', '/v1/clusters'];
const TYPES = ['application/json', 'application/yaml', 'application/json; charset=latin1', 'text/yaml; charset=utf-8'];

/** A 4xx answer is a problem document; any answer is below 500. */
function assertNo5xx(res: { statusCode: number; headers: Record<string, unknown>; body: string }, what: string): void {
  assert.ok(res.statusCode < 500, `${what}: ${res.statusCode} ${res.body.slice(0, 200)}`);
  if (res.statusCode >= 400) assert.match(String(res.headers['content-type']), /^application\/problem\+json/, what);
}

/** Keys that trip naive code: prototype members, YAML merge keys, empty and odd ones. */
const key = fc.oneof(fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', '<<', '', 'spec', 'files', 'metadata'), fc.string({ maxLength: 8 }));
const value = fc.letrec((tie) => ({
  node: fc.oneof({ depthSize: 'small' }, fc.jsonValue({ maxDepth: 2 }), fc.array(tie('node'), { maxLength: 4 }), fc.dictionary(key, tie('node'), { maxKeys: 4 })),
})).node;

describeOnBothStores(
  'no input answers 5xx, on each store',
  async (store) => {
    svc = await testService({ bodyLimit: 64 * 1024 }, { store });
    return { close: () => svc.app.close() };
  },
  () => {
    describe('no input answers 5xx', () => {
      it('arbitrary values spliced into a valid worker, as JSON and YAML', async () => {
        await fc.assert(
          fc.asyncProperty(fc.constantFrom(...ROUTES), fc.constantFrom('json', 'yaml'), fc.constantFrom('metadata', 'spec', 'provisioning', 'kubeadm', 'top'), value, async (url, syntax, where, v) => {
            const doc = worker() as Record<string, Record<string, unknown>>;
            if (where === 'top') doc.extra = v as never;
            else if (where === 'metadata' || where === 'spec') doc[where]!.extra = v;
            else doc.spec![where] = v;
            const payload = syntax === 'json' ? JSON.stringify(doc) : dump(doc);
            const res = await svc.app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': `application/${syntax}` }, payload });
            assertNo5xx(res, `${url} ${syntax}`);
          }),
          { numRuns: 150 },
        );
      });

      it('arbitrary bytes under any accepted media type', async () => {
        await fc.assert(
          fc.asyncProperty(fc.constantFrom(...ROUTES), fc.constantFrom(...TYPES), fc.uint8Array({ maxLength: 512 }), async (url, type, bytes) => {
            const res = await svc.app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': type }, payload: Buffer.from(bytes) });
            assertNo5xx(res, `${url} ${type}`);
          }),
          { numRuns: 150 },
        );
      });

      it('arbitrary query strings on token and firmware routes', async () => {
        const routes = ['/v1/machines', '/v1/profiles', '/v1/discovered', '/boot.ipxe', '/ipxe', '/ignition', '/nocloud/m1/1/x/user-data', '/healthz'];
        await fc.assert(
          fc.asyncProperty(fc.constantFrom(...routes), fc.array(fc.tuple(fc.oneof(fc.constantFrom('labelSelector', 'limit', 'continue', 'mac', 'machine', 'exp', 'sig', '__proto__'), fc.string({ maxLength: 6 })), fc.string({ maxLength: 40 })), { maxLength: 40 }), async (route, pairs) => {
            const query = pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
            const res = await svc.app.inject({ method: 'GET', url: `${route}?${query}`, headers: { authorization: `Bearer ${ADMIN}` } });
            assertNo5xx(res, `${route}?${query}`);
          }),
          { numRuns: 200 },
        );
        assert.equal((await svc.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
      });
    });
  },
);
