/**
 * Bearer authentication on keep-alive connections (src/api/auth.ts `authenticateOn`):
 * a header equal to the last one that authenticated on a connection is that principal
 * again without hashing; any other header on the same connection is authenticated afresh,
 * so a valid token never vouches for a wrong one sent after it, nor a reader's for a
 * renderer's scope.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { TokenTable } from '../../src/api/auth.js';
import { READER, RENDERER, testService, type TestService } from '../support/server.js';

const workerYaml = readFileSync(new URL('../../examples/worker.yaml', import.meta.url), 'utf8');

describe('TokenTable.authenticateOn', () => {
  const table = new TokenTable([
    { name: 'renderer', token: RENDERER, scopes: ['render'] },
    { name: 'reader', token: READER, scopes: ['read'] },
  ]);

  it('answers a repeated header with the principal it authenticated as, per connection', () => {
    const a = {};
    const b = {};
    assert.equal(table.authenticateOn(a, `Bearer ${RENDERER}`)?.name, 'renderer');
    assert.equal(table.authenticateOn(a, `Bearer ${RENDERER}`)?.name, 'renderer');
    assert.equal(table.authenticateOn(b, `Bearer ${READER}`)?.name, 'reader');
    assert.equal(table.authenticateOn(a, `Bearer ${RENDERER}`)?.name, 'renderer');
  });

  it('authenticates any other header afresh: wrong, missing, one character off, or another token', () => {
    const c = {};
    assert.equal(table.authenticateOn(c, `Bearer ${RENDERER}`)?.name, 'renderer');
    assert.equal(table.authenticateOn(c, `Bearer ${RENDERER.slice(0, -1)}x`), undefined);
    assert.equal(table.authenticateOn(c, `Bearer ${RENDERER}x`), undefined);
    assert.equal(table.authenticateOn(c, undefined), undefined);
    assert.equal(table.authenticateOn(c, `Bearer ${READER}`)?.name, 'reader');
    assert.equal(table.authenticateOn(c, `Bearer ${RENDERER.slice(0, -1)}x`), undefined);
    assert.equal(table.authenticateOn(c, `Bearer ${READER}`)?.name, 'reader');
  });
});

describe('authentication on one keep-alive connection', () => {
  let svc: TestService;
  let agent: Agent;
  let base: string;
  before(async () => {
    svc = await testService();
    await svc.app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(svc.app.server.address() as AddressInfo).port}`;
    agent = new Agent({ connections: 1, pipelining: 1 });
  });
  after(async () => {
    await agent.close();
    await svc.app.close();
  });

  const render = async (token: string) => {
    const res = await request(`${base}/v1/render`, {
      method: 'POST',
      dispatcher: agent,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/yaml', accept: 'text/cloud-config' },
      body: workerYaml,
    });
    await res.body.text();
    return res.statusCode;
  };

  it('a valid token, then a wrong one, then a token lacking the scope, then the valid one: 200, 401, 403, 200', async () => {
    const sockets = new Set<unknown>();
    svc.app.server.on('connection', (s) => sockets.add(s));
    assert.equal(await render(RENDERER), 200);
    assert.equal(await render(RENDERER), 200);
    assert.equal(await render(`${RENDERER.slice(0, -1)}x`), 401);
    // The wrong token came on the connection the valid one had authenticated on.
    assert.equal(sockets.size, 1);
    // (The 401 closed it, its body unread; the next requests open their own.)
    assert.equal(await render(READER), 403);
    assert.equal(await render(RENDERER), 200);
  });
});
