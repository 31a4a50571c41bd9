/**
 * Reported identities are bounded and normalised before they reach a store, the same on
 * SQLite and PostgreSQL: what any client on the boot network may send to `/ipxe` (a NUL
 * in a host name or serial, an 8,000-character host name, C1 controls and bidirectional
 * overrides, oversized free labels) gets an answer, never a 5xx, and what the store keeps
 * of it has no control character and bounded lengths; a bad value is listed as ignored,
 * as `mac=zz` always was.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { machineIdentity } from '../../src/boot/identity.js';
import type { Store } from '../../src/store/store.js';
import { onBothStores } from '../support/postgres.js';
import { ADMIN, testService } from '../support/server.js';

const hex = (s: string) => Buffer.from(s, 'utf8').toString('hex');
/** Control characters a store or a terminal must never get from a client: C0 (NUL included), DEL, C1, line separators, bidi overrides. */
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** Hostile query strings for /ipxe, each with a real MAC so that a discovered entry is written. */
const HOSTILE: [string, string][] = [
  ['a NUL in hostname', `hostname=${encodeURIComponent('node\u0000one')}`],
  ['a NUL in hostname_hex', `hostname_hex=${hex('node\u0000two')}`],
  ['a NUL in serial', `serial=${encodeURIComponent('SN\u000042')}`],
  ['a NUL in serial_hex', `serial_hex=${hex('SN\u000043')}`],
  ['an 8,000-character random host name', `hostname=${randomBytes(4000).toString('hex')}`],
  ['an 8,000-character serial', `serial=${'S'.repeat(8000)}`],
  ['C1 and bidi in hostname', `hostname=${encodeURIComponent('evil\u009b31m\u202eexe')}`],
  ['an ESC in serial', `serial=${encodeURIComponent('SN\u001b[2J')}`],
  ['a 5,000-character label value', `rack=${'r'.repeat(5000)}`],
  ['a 300-character label name', `${'k'.repeat(300)}=v`],
  ['a NUL in a label', `rack=${encodeURIComponent('r\u00001')}`],
  ['a NUL in buildarch', `buildarch=${encodeURIComponent('x86\u0000_64')}`],
  ['a long platform', `platform=${'p'.repeat(1000)}`],
];

/** Run the hostile queries against a service over `store`; check the answers and what was kept. */
async function probe(store: Store): Promise<void> {
  const svc = await testService({ publicUrl: 'http://boot.example' }, { store });
  try {
    let i = 0;
    for (const [what, query] of HOSTILE) {
      const mac = `02:00:00:00:${(i >> 8).toString(16).padStart(2, '0')}:${(i++ & 255).toString(16).padStart(2, '0')}`;
      const res = await svc.app.inject({ url: `/ipxe?mac=${mac}&${query}` });
      assert.ok(res.statusCode < 500, `${what}: ${res.statusCode} ${res.body.slice(0, 300)}`);
    }
    const listed = await svc.app.inject({ url: '/v1/discovered?limit=1000', headers: { authorization: `Bearer ${ADMIN}` } });
    assert.equal(listed.statusCode, 200);
    const items = (JSON.parse(listed.body) as { items: Record<string, unknown>[] }).items;
    assert.equal(items.length, HOSTILE.length, 'every machine is discovered by its MAC');
    for (const item of items) {
      for (const [k, v] of Object.entries(item)) if (typeof v === 'string') assert.ok(v.length <= 255 || k === 'id', `${k}: ${v.length} characters kept`);
      for (const [k, v] of Object.entries((item.labels ?? {}) as Record<string, string>)) assert.ok(k.length <= 63 && v.length <= 255, `label ${k.length}/${v.length}`);
      assert.doesNotMatch(Object.values(item).filter((v) => typeof v === 'string').join(' '), CONTROLS);
    }
  } finally {
    await svc.app.close();
  }
}

describe('hostile identities on /ipxe, on both stores', () => {
  it('a bad value is left out and listed as ignored, as mac=zz is', () => {
    for (const [, query] of HOSTILE) {
      const identity = machineIdentity(new URLSearchParams(query));
      const values = [identity.serial, identity.hostname, identity.buildarch, identity.platform, ...Object.keys(identity.labels), ...Object.values(identity.labels)];
      assert.deepEqual(values.filter((v) => v !== undefined), [], query.slice(0, 60));
      assert.equal(identity.ignored.length, 1, query.slice(0, 60));
    }
    assert.deepEqual(machineIdentity(new URLSearchParams('hostname=Node-1.Example.&serial=%20SN%2042%20&rack=r12&buildarch=x86_64')), { labels: { rack: 'r12' }, ignored: [], hostname: 'node-1.example', serial: 'SN 42', buildarch: 'x86_64' });
  });

  onBothStores('an answer for each, nothing unbounded or with a control character kept', probe);
});
