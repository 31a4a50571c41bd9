/**
 * Hostile bodies on every route that parses one: each answered with its exact 4xx and
 * problem fields, and the service still serving (`/healthz` 200) afterwards.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ADMIN, testService, type TestService } from '../support/server.js';
import { worker } from '../support/requests.js';
import * as hostile from './inputs.js';
import { describeOnBothStores } from '../support/postgres.js';

let svc: TestService;


interface Problem {
  type: string;
  status: number;
  errors?: { path: string; message: string }[];
}

const BODY_ROUTES = ['/v1/render', '/v1/clusters', '/v1/profiles', '/v1/machines'];

async function send(url: string, contentType: string, payload: string | Buffer) {
  const res = await svc.app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': contentType }, payload });
  return { status: res.statusCode, type: res.headers['content-type'], problem: res.json<Problem>(), connection: res.headers.connection };
}

/** The service still answers its liveness probe. */
async function stillServing(): Promise<void> {
  const res = await svc.app.inject({ method: 'GET', url: '/healthz' });
  assert.equal(res.statusCode, 200);
}

describeOnBothStores(
  'hostile bodies, on each store',
  async (store) => {
    svc = await testService({}, { store });
    return { close: () => svc.app.close() };
  },
  () => {
    describe('alias, merge and recursion bombs', () => {
      for (const url of BODY_ROUTES) {
        it(`a 1 KB alias bomb (10^9 strings) to ${url} is a 413 naming the node limit`, async () => {
          const text = hostile.aliasBomb();
          assert.ok(text.length < 1024);
          const r = await send(url, 'application/yaml', text);
          assert.equal(r.status, 413);
          assert.equal(r.type, 'application/problem+json; charset=utf-8');
          assert.equal(r.problem.type, 'https://bootwright.dev/problems/payload-too-large');
          assert.equal(r.problem.errors?.length, 1);
          assert.match(r.problem.errors[0]!.path, /^spec\.kubeadm\.clusterConfiguration\.l\d/);
          assert.match(r.problem.errors[0]!.message, /expands to at least \d+ values; the limit is 20000 \(BOOTWRIGHT_MAX_NODES\)/);
          await stillServing();
        });
      }

      it('a mapping bomb spelled with merge keys is a 413 naming the node limit', async () => {
        const r = await send('/v1/render', 'application/yaml', hostile.mergeBomb());
        assert.equal(r.status, 413);
        assert.match(r.problem.errors![0]!.path, /^spec\.kubeadm\.clusterConfiguration\.m\d/);
        assert.match(r.problem.errors![0]!.message, /\(BOOTWRIGHT_MAX_NODES\)$/);
        await stillServing();
      });

      it('a merge bomb inside an additional Ignition config (YAML 1.1 merges) is a 413 at that field', async () => {
        const r = await send('/v1/render', 'application/json', hostile.additionalConfigBomb());
        assert.equal(r.status, 413);
        assert.equal(r.problem.errors![0]!.path, 'spec.provisioning.ignition.containerLinuxConfig.additionalConfig');
        assert.match(r.problem.errors![0]!.message, /^storage\.m\d.*\(BOOTWRIGHT_MAX_NODES\)$/);
        await stillServing();
      });

      it('a recursive alias is a 400 at the place it recurs', async () => {
        const r = await send('/v1/profiles', 'application/yaml', hostile.recursiveAlias());
        assert.equal(r.status, 400);
        assert.deepEqual(r.problem.errors, [{ path: 'spec.kubeadm.clusterConfiguration.loop[0]', message: 'contains itself (a recursive YAML alias), which has no finite value' }]);
        await stillServing();
      });

      it('an alias bomb posted as a profile is not stored: the list stays empty', async () => {
        const r = await send('/v1/profiles', 'application/yaml', hostile.aliasBomb());
        assert.equal(r.status, 413);
        const list = await svc.app.inject({ method: 'GET', url: '/v1/profiles', headers: { authorization: `Bearer ${ADMIN}` } });
        assert.deepEqual(list.json<{ items: unknown[] }>().items, []);
      });
    });

    describe('depth and breadth bombs', () => {
      for (const url of BODY_ROUTES) {
        it(`JSON nested 400,000 deep to ${url} is a 413 at its first bracket past the limit`, async () => {
          const r = await send(url, 'application/json', hostile.deepJson(400_000));
          assert.equal(r.status, 413);
          assert.deepEqual(r.problem.errors, [{ path: '', message: 'JSON at line 1 column 33 nests at least 33 levels deep; the limit is 32 (BOOTWRIGHT_MAX_DEPTH)' }]);
          await stillServing();
        });
      }

      it('YAML nested past the limit is a 413 naming BOOTWRIGHT_MAX_DEPTH', async () => {
        const r = await send('/v1/render', 'application/yaml', hostile.deepYaml(100_000));
        assert.equal(r.status, 413);
        assert.match(r.problem.errors![0]!.message, /^YAML at line \d+ column \d+ nests more than 32 levels deep; the limit is 32 \(BOOTWRIGHT_MAX_DEPTH\)$/);
        await stillServing();
      });

      it('aliases nesting past the limit (each anchor within it) are a 413 at the deepest place', async () => {
        const inner = `${'['.repeat(20)}1${']'.repeat(20)}`;
        const text = hostile.deepYaml(1).replace('deep: {a: 1}', `a: &a ${inner}\n      b: ${'['.repeat(15)}*a${']'.repeat(15)}`);
        const r = await send('/v1/render', 'application/yaml', text);
        assert.equal(r.status, 413);
        assert.match(r.problem.errors![0]!.path, /^spec\.kubeadm\.clusterConfiguration\.b(\[0\])+$/);
        assert.match(r.problem.errors![0]!.message, /levels deep; the limit is 32 \(BOOTWRIGHT_MAX_DEPTH\)$/);
      });

      for (const [name, body, path] of [
        ['files', hostile.manyFiles(5000), 'spec.provisioning.files'],
        ['mounts', hostile.manyMounts(5000), 'spec.provisioning.mounts'],
      ] as const) {
        it(`5000 ${name} (under 1 MiB) are a 413 naming the field and BOOTWRIGHT_MAX_LIST_ITEMS`, async () => {
          assert.ok(body.length < 1024 * 1024);
          const r = await send('/v1/render', 'application/json', body);
          assert.equal(r.status, 413);
          assert.deepEqual(r.problem.errors, [{ path, message: 'has 5000 items; the limit is 256 (BOOTWRIGHT_MAX_LIST_ITEMS)' }]);
          await stillServing();
        });
      }

      it('a list at the limit is served', async () => {
        const r = await svc.app.inject({ method: 'POST', url: '/v1/render', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, payload: hostile.manyFiles(256) });
        assert.equal(r.statusCode, 200);
      });
    });

    describe('huge strings, charsets and prototype keys', () => {
      it('a body over the size limit is a 413 before it is read, and the connection closes', async () => {
        const r = await send('/v1/render', 'application/json', hostile.hugeString(2 * 1024 * 1024));
        assert.equal(r.status, 413);
        assert.equal(r.problem.type, 'https://bootwright.dev/problems/payload-too-large');
        assert.equal(r.connection, 'close');
      });

      it('a 900 KB string where a token goes is a 422 at that field', async () => {
        const doc = worker() as { spec: { cluster: Record<string, unknown> } };
        doc.spec.cluster.bootstrapToken = 'a'.repeat(900 * 1024);
        const r = await send('/v1/render', 'application/json', JSON.stringify(doc));
        assert.equal(r.status, 422);
        assert.deepEqual(r.problem.errors, [{ path: 'spec.cluster.bootstrapToken', message: 'must match [a-z0-9]{6}.[a-z0-9]{16}' }]);
      });

      it('invalid UTF-8 is a 400, not silently replaced', async () => {
        for (const url of BODY_ROUTES) {
          const r = await send(url, 'application/yaml', hostile.invalidUtf8());
          assert.equal(r.status, 400, url);
          assert.deepEqual(r.problem.errors, [{ path: '', message: 'the body is not well-formed UTF-8' }]);
        }
        await stillServing();
      });

      for (const charset of ['iso-8859-1', 'utf-16', 'x-unknown']) {
        it(`charset=${charset} is a 415 naming Content-Type`, async () => {
          const r = await send('/v1/render', `application/json; charset=${charset}`, JSON.stringify(worker()));
          assert.equal(r.status, 415);
          assert.deepEqual(r.problem.errors, [{ path: 'Content-Type', message: `charset ${charset} is not supported` }]);
        });
      }

      it('charset=UTF-8 (any case, quoted) is read', async () => {
        const res = await svc.app.inject({ method: 'POST', url: '/v1/render', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json; charset="UTF-8"' }, payload: JSON.stringify(worker()) });
        assert.equal(res.statusCode, 200);
      });

      for (const key of ['__proto__', 'constructor', 'prototype'] as const) {
        for (const where of ['top', 'labels'] as const) {
          it(`a "${key}" key (${where}) is a 422 naming it, on every body route`, async () => {
            for (const url of BODY_ROUTES) {
              const r = await send(url, 'application/json', hostile.prototypeKey(key, where));
              assert.equal(r.status, 422, url);
              assert.deepEqual(r.problem.errors, [{ path: where === 'top' ? key : `metadata.labels.${key}`, message: `"${key}" is not allowed as a key` }]);
            }
            assert.equal(({} as Record<string, unknown>).polluted, undefined);
            await stillServing();
          });
        }
      }
    });
  },
);
