/** The admission of unauthenticated writes (src/api/unauthenticated.ts), on a fake clock. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Counter, Registry } from 'prom-client';
import { MAX_TRACKED, UnauthenticatedWrites } from '../../src/api/unauthenticated.js';

function writes(perMinute: number, intervalSeconds: number) {
  let now = 1_000_000;
  const registry = new Registry();
  const droppedWrites = new Counter({ name: 'dropped', help: 'dropped', labelNames: ['table', 'reason'] as const, registers: [registry] });
  const w = new UnauthenticatedWrites({ unauthenticatedWritesPerMinute: perMinute, refusedAuditIntervalSeconds: intervalSeconds }, { droppedWrites }, () => now);
  const count = async (table: string, reason: string) => (await droppedWrites.get()).values.find((v) => v.labels.table === table && v.labels.reason === reason)?.value ?? 0;
  return { w, count, advance: (ms: number) => (now += ms) };
}
const row = (machine: string, client = '10.0.0.1', status = 403) => ({ machine, route: '/ignition', client, status });

it('gives each address its budget per minute, anew each minute', async () => {
  const { w, count, advance } = writes(3, 0);
  assert.deepEqual(Array.from({ length: 5 }, () => w.admitDiscovered('10.0.0.1')), [true, true, true, false, false]);
  assert.equal(w.admitDiscovered('10.0.0.2'), true);
  assert.equal(await count('discovered', 'rate-limited'), 2);
  advance(59_999);
  assert.equal(w.admitDiscovered('10.0.0.1'), false);
  advance(1);
  assert.equal(w.admitDiscovered('10.0.0.1'), true);
  // Refusal rows share the address's budget.
  assert.deepEqual([w.admitRefusal(row('a')), w.admitRefusal(row('b')), w.admitRefusal(row('c'))], [true, true, false]);
  assert.equal(await count('audit', 'rate-limited'), 1);
});

it('samples identical refusals once per interval; a different machine, address, status or reason is not identical', async () => {
  const { w, count, advance } = writes(0, 60);
  assert.equal(w.admitRefusal(row('a')), true);
  assert.equal(w.admitRefusal(row('a')), false);
  assert.equal(w.admitRefusal(row('b')), true);
  assert.equal(w.admitRefusal(row('a', '10.0.0.2')), true);
  assert.equal(w.admitRefusal(row('a', '10.0.0.1', 404)), true);
  // A copied URL refused at another address after a forged one (an attacker pass hid the first this way).
  const forged = { ...row('c'), reason: 'the signature is not valid for this machine and route' };
  const copied = { ...row('c'), reason: 'the URL is bound to the address that fetched the boot script' };
  assert.deepEqual([w.admitRefusal(forged), w.admitRefusal(copied), w.admitRefusal(copied)], [true, true, false]);
  advance(60_000);
  assert.equal(w.admitRefusal(row('a')), true);
  assert.equal(await count('audit', 'sampled'), 2);
});

it('a rate-limited refusal is not remembered as recorded, and memory stays bounded', () => {
  const { w, advance } = writes(1, 60);
  assert.equal(w.admitRefusal(row('a')), true);
  assert.equal(w.admitRefusal(row('b')), false);
  advance(60_000);
  // b was never written, so it is not "sampled" now.
  assert.equal(w.admitRefusal(row('b')), true);
  for (let i = 0; i < MAX_TRACKED + 10; i++) w.admitDiscovered(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
  const sizes = w as unknown as { windows: Map<string, unknown> };
  assert.equal(sizes.windows.size, MAX_TRACKED);
});
