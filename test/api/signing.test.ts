/**
 * src/api/signing.ts: the report URL carried in bootstrap data, made once per machine,
 * incarnation, base URL and expiry grid step, and verifiable as the /report route verifies it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { machineIncarnation, REPORT_PATH, verifySignature } from '../../src/boot/sign.js';
import { REPORT_EXPIRY_GRID_SECONDS, reportUrlFor, type UrlSigning } from '../../src/api/signing.js';
import type { MachineSpec, StoredResource } from '../../src/store/resources.js';

const signingWith = (key: Buffer): UrlSigning => ({ key: () => key, lifetimeSeconds: 3600, baseUrl: () => 'http://127.0.0.1:8080' });
const machine = (createdAt: string, cluster = 'prod'): StoredResource<MachineSpec> => ({
  kind: 'Machine', name: 'node-1', labels: {}, revision: 1, spec: { selectors: { mac: [], labels: {} }, cluster, profile: 'worker', nodeLabels: {}, taints: [] }, rules: 1,
  createdAt,
  updatedAt: createdAt,
});

describe('reportUrlFor', () => {
  it('is one URL per machine incarnation, base, key and grid step, each verifying for its own incarnation only', () => {
    const key = randomBytes(32);
    const ctx = { signing: signingWith(key), config: { reportUrlSeconds: 86_400 } };
    const exp = 2_000_000_000;
    const first = machine('2026-12-01T00:00:00.000Z');
    const url = new URL(reportUrlFor(ctx, 'http://boot.example:8080', first, String(exp)));
    assert.equal(url.pathname, REPORT_PATH);
    const q = url.searchParams;
    assert.equal(Number(q.get('exp')), Math.ceil(exp / REPORT_EXPIRY_GRID_SECONDS) * REPORT_EXPIRY_GRID_SECONDS + 86_400);
    assert.equal(q.get('inc'), machineIncarnation(first));
    assert.equal(verifySignature(key, 'node-1', REPORT_PATH, q.get('exp')!, q.get('sig')!, exp, undefined, q.get('inc')!), 'ok');
    // The same grid step: the same URL, byte for byte (so the data and its ETag are too).
    assert.equal(reportUrlFor(ctx, 'http://boot.example:8080', first, String(exp - 1)), url.href);
    // Whatever it is made of changes it: the incarnation (re-created, moved), the base, the step, the key.
    const others = [
      reportUrlFor(ctx, 'http://boot.example:8080', machine('2026-12-02T00:00:00.000Z'), String(exp)),
      reportUrlFor(ctx, 'http://boot.example:8080', machine('2026-12-01T00:00:00.000Z', 'staging'), String(exp)),
      reportUrlFor(ctx, 'https://boot.example:8443', first, String(exp)),
      reportUrlFor(ctx, 'http://boot.example:8080', first, String(exp + REPORT_EXPIRY_GRID_SECONDS)),
      reportUrlFor({ ...ctx, signing: signingWith(randomBytes(32)) }, 'http://boot.example:8080', first, String(exp)),
    ];
    assert.equal(new Set([url.href, ...others]).size, 6);
    const moved = new URL(others[1]!).searchParams;
    assert.equal(verifySignature(key, 'node-1', REPORT_PATH, moved.get('exp')!, moved.get('sig')!, exp, undefined, q.get('inc')!), 'invalid', "the first incarnation's inc does not verify the moved machine's URL");
  });
});
