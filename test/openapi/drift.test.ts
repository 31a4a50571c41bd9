/**
 * The committed OpenAPI document (openapi/openapi.json) is exactly what the service
 * generates, and documents the contract of DESIGN §4.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { generateOpenApi, OPENAPI_PATH, REGENERATE_COMMAND } from '../../scripts/openapi.js';
import { testService } from '../support/server.js';

const committedText = readFileSync(OPENAPI_PATH, 'utf8');
const doc = JSON.parse(committedText);

/** The first line where two texts differ, for a readable failure. */
function firstDifference(a: string, b: string): string {
  const as = a.split('\n');
  const bs = b.split('\n');
  for (let i = 0; i < Math.max(as.length, bs.length); i++) {
    if (as[i] !== bs[i]) return `line ${i + 1}: committed ${JSON.stringify(as[i] ?? '<end>')}, generated ${JSON.stringify(bs[i] ?? '<end>')}`;
  }
  return 'no line differs';
}

const PROBLEM_STATUSES = ['400', '401', '403', '406', '413', '415', '422', '429', '503'];

describe('openapi/openapi.json', () => {
  it('is what the service generates', async () => {
    const generated = await generateOpenApi();
    assert.ok(
      committedText === generated,
      `openapi/openapi.json is out of date: run \`${REGENERATE_COMMAND}\` and commit the result (${firstDifference(committedText, generated)})`,
    );
  });

  it('is what GET /openapi.json serves', async () => {
    const svc = await testService({ logLevel: 'silent', maxEventLoopDelayMs: 0 });
    try {
      const res = await svc.app.inject({ method: 'GET', url: '/openapi.json' });
      assert.equal(res.statusCode, 200);
      // Served, the servers list names the service as the request reached it (inject: localhost:80).
      const { servers, ...served } = res.json<Record<string, unknown>>();
      const { servers: _committed, ...committed } = doc as Record<string, unknown>;
      assert.deepEqual(served, committed, `GET /openapi.json differs from openapi/openapi.json: run \`${REGENERATE_COMMAND}\``);
      assert.deepEqual(servers, [{ url: 'http://localhost:80', description: 'this service, as this request reached it' }]);
    } finally {
      await svc.app.close();
    }
  });

  it('is OpenAPI 3.1.0', () => {
    assert.equal(doc.openapi, '3.1.0');
  });

  describe('POST /v1/render', () => {
    const op = doc.paths['/v1/render']?.post;

    it('exists', () => {
      assert.ok(op, 'POST /v1/render is documented');
    });

    it('takes JSON and YAML bodies', () => {
      assert.equal(op.requestBody.required, true);
      assert.deepEqual(Object.keys(op.requestBody.content).sort(), ['application/json', 'application/yaml']);
    });

    it('answers 200 with cloud-config, Ignition, the JSON envelope or a gzip-compressed cloud-config (?platform=)', () => {
      assert.deepEqual(Object.keys(op.responses['200'].content).sort(), ['application/gzip', 'application/json', 'application/vnd.coreos.ignition+json', 'text/cloud-config']);
      assert.deepEqual(op.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/RenderEnvelope' });
    });

    it('documents every error as an RFC 9457 problem', () => {
      for (const status of PROBLEM_STATUSES) {
        const response = op.responses[status];
        assert.ok(response, `response ${status} is documented`);
        assert.deepEqual(Object.keys(response.content), ['application/problem+json'], `response ${status} media types`);
        assert.deepEqual(response.content['application/problem+json'].schema, { $ref: '#/components/schemas/Problem' }, `response ${status} schema`);
      }
    });

    it('requires the bearer scheme', () => {
      assert.deepEqual(op.security, [{ bearer: [] }]);
    });
  });

  it('declares a bearer security scheme', () => {
    assert.deepEqual(doc.components.securitySchemes.bearer, { type: 'http', scheme: 'bearer' });
  });

  it('resolves every schema reference', () => {
    const refs = [...committedText.matchAll(/"\$ref": "#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(refs.length > 0);
    for (const name of refs) assert.ok(doc.components.schemas[name], `components.schemas.${name} exists`);
  });

  for (const path of ['/healthz', '/readyz', '/metrics']) {
    it(`documents GET ${path} as public`, () => {
      const op = doc.paths[path]?.get;
      assert.ok(op, `GET ${path} is documented`);
      assert.deepEqual(op.security, []);
      assert.ok(op.responses['200']);
    });
  }
});
