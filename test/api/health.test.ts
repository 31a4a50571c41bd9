/**
 * Readiness follows the store (src/api/routes/health.ts): `/readyz` is 200 while the
 * store answers and a 503 problem when it does not, for both stores — SQLite closed
 * under the service, PostgreSQL dropped under it. `/healthz` (liveness) stays 200.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import request from 'supertest';
import { openPostgresStore } from '../../src/store/postgres.js';
import { openSqliteStore } from '../../src/store/sqlite.js';
import type { Store } from '../../src/store/store.js';
import { dropDatabase, testDatabase } from '../support/postgres.js';
import { testService } from '../support/server.js';

/** Ready with the store up; after `breakStore`, a 503 problem+json while /healthz stays 200. */
async function checkReadiness(store: Store, breakStore: () => Promise<void>): Promise<void> {
  const s = await testService({ logLevel: 'silent' }, { store });
  try {
    const up = await request(s.app.server).get('/readyz');
    assert.equal(up.status, 200);
    assert.deepEqual(up.body, { status: 'ok' });
    await breakStore();
    const down = await request(s.app.server).get('/readyz');
    assert.equal(down.status, 503);
    assert.match(down.headers['content-type'] ?? '', /^application\/problem\+json/);
    assert.equal(down.body.status, 503);
    assert.equal(down.body.detail, 'the store does not answer');
    assert.equal((await request(s.app.server).get('/healthz')).status, 200);
  } finally {
    await s.app.close();
  }
}

describe('/readyz', () => {
  it('SQLite: 200 while the store answers, 503 once it is closed', async () => {
    const store = await openSqliteStore(':memory:');
    await checkReadiness(store, () => store.close());
  });

  it('503 while the render workers load after listening, then 200; /healthz 200 throughout', async () => {
    const s = await testService({ logLevel: 'silent', renderWorkers: 2 });
    try {
      await s.app.listen({ host: '127.0.0.1', port: 0 });
      // Loading the pipeline into two threads takes far longer than one request.
      const early = await s.app.inject({ url: '/readyz' });
      assert.equal(early.statusCode, 503);
      assert.equal(early.json<{ detail: string }>().detail, 'the render workers are starting');
      assert.equal((await s.app.inject({ url: '/healthz' })).statusCode, 200);
      let ready = early;
      for (let i = 0; i < 3000 && ready.statusCode !== 200; i++) {
        await new Promise((r) => setTimeout(r, 10));
        ready = await s.app.inject({ url: '/readyz' });
      }
      assert.equal(ready.statusCode, 200, 'the workers never became ready');
      // The pings are not render tasks: the metrics count none.
      const metrics = (await s.app.inject({ url: '/metrics' })).body;
      assert.match(metrics, /^bootwright_render_tasks_total\{outcome="pool"\} 0$/m);
    } finally {
      await s.app.close();
    }
  });
});

const databaseUrl = await testDatabase('/readyz on PostgreSQL');
if (databaseUrl !== undefined) {
  describe('/readyz', () => {
    it('PostgreSQL: 200 while the database answers, 503 once it is gone', async () => {
      const store = await openPostgresStore(databaseUrl, { poolSize: 2 });
      try {
        await checkReadiness(store, () => dropDatabase(new URL(databaseUrl).pathname.slice(1)));
      } finally {
        await store.close();
      }
    });
  });
}
