/**
 * Discovered machines page by `continue` (keyset on last seen and id), on SQLite and
 * PostgreSQL alike: `GET /v1/discovered` and the status page list every entry once
 * across pages, however many share a timestamp; a forged token is a 400 naming it.
 */
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import type { Store } from '../../src/store/store.js';
import { onBothStores } from '../support/postgres.js';
import { ADMIN, testService } from '../support/server.js';

const ENTRIES = 250;

async function probe(store: Store): Promise<void> {
  // Recorded concurrently: many share a millisecond, so the id breaks the ties.
  await Promise.all(Array.from({ length: ENTRIES }, (_, i) => store.recordDiscovered({ mac: `02:00:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i & 255).toString(16).padStart(2, '0')}` })));
  const svc = await testService({}, { store });
  try {
    const get = (url: string) => svc.app.inject({ url, headers: { authorization: `Bearer ${ADMIN}` } });
    const seen: string[] = [];
    const sizes: number[] = [];
    let next: string | undefined = '';
    while (next !== undefined) {
      const res = await get(`/v1/discovered?limit=100${next ? `&continue=${next}` : ''}`);
      assert.equal(res.statusCode, 200, res.body);
      const page = JSON.parse(res.body) as { items: { id: string; lastSeen: string }[]; continue?: string };
      sizes.push(page.items.length);
      seen.push(...page.items.map((d) => d.id));
      next = page.continue;
    }
    assert.deepEqual(sizes, [100, 100, 50]);
    assert.equal(new Set(seen).size, ENTRIES, 'every entry once');
    const bad = await get('/v1/discovered?continue=bm90LWEtdG9rZW4');
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /"path":"continue"/);

    // The status page shows the first 100 and links the next page.
    const cookie = String((await svc.app.inject({ method: 'POST', url: '/ui/login', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `token=${ADMIN}` })).headers['set-cookie']).split(';')[0]!;
    const first = await svc.app.inject({ url: '/ui', headers: { cookie } });
    const link = /<a href="(\/ui\?discovered=[^"]+)">Next page of discovered machines<\/a>/.exec(first.body)?.[1];
    assert.ok(link, 'a link to the next page');
    const second = await svc.app.inject({ url: link.replaceAll('&amp;', '&'), headers: { cookie } });
    assert.equal(second.statusCode, 200);
    const macs = (body: string) => new Set([...body.matchAll(/MAC (02:00:00:00:[0-9a-f:]+)/g)].map((m) => m[1]));
    const [a, b] = [macs(first.body), macs(second.body)];
    assert.deepEqual([a.size, b.size], [100, 100]);
    assert.equal([...a].filter((m) => b.has(m)).length, 0, 'the second page shows other machines');
  } finally {
    await svc.app.close();
  }
}

describe('discovered machines, page by page', () => {
  onBothStores('GET /v1/discovered and the status page list every entry once', probe);
});
