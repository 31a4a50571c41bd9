import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import request from 'supertest';
import { RenderCache } from '../../src/api/cache.js';
import { worker } from '../support/requests.js';
import { RENDERER, testService, type TestService } from '../support/server.js';

describe('RenderCache.bodyKey', () => {
  const cache = new RenderCache(1024);
  const body = Buffer.from(JSON.stringify(worker()));

  it('is the syntax and the base64url SHA-256 of the bytes', () => {
    assert.equal(cache.bodyKey(body, 'json'), `j${createHash('sha256').update(body).digest('base64url')}`);
    assert.equal(cache.bodyKey(body, 'yaml'), `y${createHash('sha256').update(body).digest('base64url')}`);
  });

  it('tells apart bodies one byte apart, and the same bytes read as JSON and as YAML', () => {
    const other = Buffer.from(body);
    other[other.length - 2] = other.at(-2)! ^ 1;
    assert.notEqual(cache.bodyKey(body, 'json'), cache.bodyKey(other, 'json'));
    assert.notEqual(cache.bodyKey(body, 'json'), cache.bodyKey(body, 'yaml'));
    assert.equal(cache.bodyKey(body, 'json'), cache.bodyKey(Buffer.from(body), 'json'));
  });

  it('has one length whatever the body (a 1 MB body is not a 1 MB map key)', () => {
    assert.equal(cache.bodyKey(Buffer.alloc(1024 * 1024, 0x61), 'yaml').length, 44);
    assert.equal(cache.bodyKey(Buffer.alloc(0), 'json').length, 44);
  });
});

describe('POST /v1/render: a repeated body', () => {
  let svc: TestService;
  before(async () => {
    svc = await testService();
  });
  after(async () => {
    await svc.app.close();
  });
  const post = (type: string, body: string) => request(svc.app.server).post('/v1/render').set('authorization', `Bearer ${RENDERER}`).set('content-type', type).send(body);

  it('is served from the cache, and its charset is still checked (415), however often it was served', async () => {
    const body = JSON.stringify(worker({ provisioning: { preKubeadmCommands: ['echo repeated-body'] } }));
    const first = await post('application/json', body);
    const again = await post('application/json; charset=utf-8', body);
    assert.equal(first.status, 200);
    assert.equal(again.status, 200);
    assert.equal(again.text, first.text);
    const latin1 = await post('application/json; charset=iso-8859-1', body);
    assert.equal(latin1.status, 415);
    assert.deepEqual(latin1.body.errors, [{ path: 'Content-Type', message: 'charset iso-8859-1 is not supported' }]);
  });

  it('that is not UTF-8 is a 400 each time it is sent (nothing is cached for it)', async () => {
    const bad = Buffer.concat([Buffer.from('{"apiVersion": "'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    for (let i = 0; i < 2; i++) {
      // inject, not supertest: superagent would send a Buffer as its JSON serialization.
      const r = await svc.app.inject({ method: 'POST', url: '/v1/render', headers: { authorization: `Bearer ${RENDERER}`, 'content-type': 'application/json' }, payload: bad });
      assert.equal(r.statusCode, 400);
      assert.deepEqual(r.json().errors, [{ path: '', message: 'the body is not well-formed UTF-8' }]);
    }
  });
});
