/**
 * Body deadlines (src/api/deadlines.ts): a request is held only while its body may still
 * be arriving; answered, it is released at once (a request held until the next sweep
 * kept its whole graph alive through the young generation's collections).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { BodyDeadlines } from '../../src/api/deadlines.js';

/** The fields the sweep reads, as a request and reply have them. */
const pair = (complete = false) => ({
  request: { raw: { complete, destroyed: false } } as unknown as FastifyRequest,
  reply: { sent: false } as unknown as FastifyReply,
});

describe('BodyDeadlines', () => {
  it('releases an answered request at once, not at the next sweep', () => {
    const deadlines = new BodyDeadlines(60_000, () => assert.fail('nothing expires'));
    const a = pair();
    const b = pair();
    deadlines.watch(a.request, a.reply);
    deadlines.watch(b.request, b.reply);
    assert.equal(deadlines.size, 2);
    deadlines.release(a.request);
    assert.equal(deadlines.size, 1);
    deadlines.release(a.request);
    assert.equal(deadlines.size, 1);
    deadlines.close();
    assert.equal(deadlines.size, 0);
  });

  it('expires a body still arriving at its deadline, and lets a completed one go', async () => {
    const expired: FastifyRequest[] = [];
    const deadlines = new BodyDeadlines(40, (request) => expired.push(request));
    const slow = pair();
    const done = pair();
    deadlines.watch(slow.request, slow.reply);
    deadlines.watch(done.request, done.reply);
    (done.request.raw as { complete: boolean }).complete = true;
    await sleep(120);
    assert.deepEqual(expired, [slow.request]);
    assert.equal(deadlines.size, 0);
    deadlines.close();
  });
});
