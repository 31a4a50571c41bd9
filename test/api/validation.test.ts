/**
 * The routes' validator compiler (src/api/validation.ts): an empty query string skips a
 * schema only when that schema would have answered `{}` with `{}`; headers are checked
 * and never assigned back (an assigned `request.headers` is copied on every read).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { serializerCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { PASSED, routeValidator } from '../../src/api/validation.js';

const compile = (schema: z.ZodType, httpPart = 'querystring') => routeValidator({ schema, httpPart, url: '/x', method: 'GET' });

describe('route validation', () => {
  it('passes an empty query through a schema of optional fields, and validates any other', () => {
    const validate = compile(z.object({ format: z.enum(['ignition', 'cloud-config']).optional() }));
    const empty = {};
    assert.equal((validate(empty) as { value: unknown }).value, empty);
    assert.deepEqual((validate({ format: 'ignition' }) as { value: unknown }).value, { format: 'ignition' });
    assert.ok('error' in validate({ format: 'png' }));
  });

  it('still refuses an empty query when a field is required, and applies defaults', () => {
    assert.ok('error' in compile(z.object({ machine: z.string() }))({}));
    assert.deepEqual((compile(z.object({ pointer: z.string().default('false') }))({}) as { value: unknown }).value, { pointer: 'false' });
  });

  it('checks headers without handing back a value to assign', () => {
    const validate = compile(z.object({ 'if-match': z.string().optional() }), 'headers');
    assert.equal(validate({ 'if-match': '"3"', host: 'x' }), PASSED);
    assert.ok(!('value' in validate({})));
    assert.ok('error' in validate({ 'if-match': 3 }));
  });

  it('a route with a headers schema reads the headers Node parsed, not a copy', async () => {
    const app = Fastify().withTypeProvider<ZodTypeProvider>();
    app.setValidatorCompiler(routeValidator);
    app.setSerializerCompiler(serializerCompiler);
    app.get('/x', { schema: { headers: z.object({ 'if-none-match': z.string().optional() }) } }, (request) => ({
      same: request.headers === request.raw.headers,
      tag: request.headers['if-none-match'] ?? null,
      other: request.headers['x-other'] ?? null,
    }));
    const res = await app.inject({ url: '/x', headers: { 'if-none-match': '"a"', 'x-other': 'kept' } });
    assert.deepEqual(res.json(), { same: true, tag: '"a"', other: 'kept' });
    await app.close();
  });

  it('validates other parts as the zod type provider does', () => {
    assert.ok('error' in compile(z.object({ name: z.string() }), 'params')({}));
  });
});
