/**
 * Schemathesis (the pinned one of tools/reference/schemathesis) against the running
 * service's own OpenAPI document, authenticated as admin, on every operation (issue 28):
 * no 5xx, no status code, media type or response body the document does not declare.
 * The inventory holds the committed examples (examples/inventory/), so the operations on
 * named resources reach their logic, not only their 404s. Bounded: a fixed seed, at most
 * 25 examples per operation, one worker.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { loadAll } from 'js-yaml';
import { startProcess } from '../support/process.js';
import { REPO } from '../support/releases.js';
import { referenceTool, referenceToolMissing } from '../support/tools.js';

const ADMIN = 'schemathesis-admin-token-0123456789';
const skip = referenceToolMissing('schemathesis', 'the OpenAPI document is NOT fuzzed against the running service');

/** The example documents, every YAML file under examples/inventory/ (cluster first: the rest name it). */
function exampleDocuments(): unknown[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const f of readdirSync(dir).sort()) {
      const p = path.join(dir, f);
      if (statSync(p).isDirectory()) walk(p);
      else if (f.endsWith('.yaml')) files.push(p);
    }
  };
  walk(path.join(REPO, 'examples', 'inventory'));
  const docs = files.flatMap((f) => loadAll(readFileSync(f, 'utf8')).filter((d) => d !== null && d !== undefined));
  const order = { Cluster: 0, Profile: 1, Machine: 2 } as Record<string, number>;
  return docs.sort((a, b) => (order[(a as { kind: string }).kind] ?? 3) - (order[(b as { kind: string }).kind] ?? 3));
}

describe('schemathesis against the running service', { skip }, () => {
  const data = mkdtempSync(path.join(tmpdir(), 'bootwright-schemathesis-'));
  after(() => rmSync(data, { recursive: true, force: true }));

  it('finds no server error and nothing the document does not declare, on every operation', { timeout: 15 * 60_000 }, async () => {
    const service = startProcess({
      BOOTWRIGHT_DATA_DIR: data,
      BOOTWRIGHT_HOST: '127.0.0.1',
      BOOTWRIGHT_RATE_LIMIT_MAX: '0',
      BOOTWRIGHT_TOKENS: JSON.stringify([{ name: 'admin', token: ADMIN, scopes: ['admin'] }]),
    });
    try {
      const base = `http://127.0.0.1:${await service.port}`;
      for (const doc of exampleDocuments()) {
        const kind = (doc as { kind: string }).kind;
        const res = await fetch(`${base}/v1/${kind.toLowerCase()}s`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify(doc) });
        assert.equal(res.status, 201, await res.text());
      }
      const run = spawnSync(
        referenceTool('schemathesis')!,
        [
          'run',
          `${base}/openapi.json`,
          '--header',
          `Authorization: Bearer ${ADMIN}`,
          '--checks',
          'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance',
          '--max-examples',
          '25',
          '--seed',
          '28',
          '--workers',
          '1',
          '--request-timeout',
          '20',
          '--no-color',
        ],
        { encoding: 'utf8', cwd: data, timeout: 14 * 60_000, maxBuffer: 64 * 1024 * 1024 },
      );
      const out = `${run.stdout}\n${run.stderr}`;
      const tail = out.slice(-20_000);
      const selected = /Selected: (\d+)\/(\d+)\s+Tested: (\d+)/.exec(out);
      assert.ok(selected, tail);
      assert.equal(selected[3], selected[2], `every operation tested: ${selected[0]}`);
      assert.equal(run.status, 0, tail);
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
  });
});
