/**
 * The routes' validator compiler (src/api/validation.ts): an empty query string skips a
 * schema only when that schema would have answered `{}` with `{}`.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { routeValidator } from '../../src/api/validation.js';

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

  it('validates other parts as the zod type provider does', () => {
    assert.ok('error' in compile(z.object({ name: z.string() }), 'params')({}));
  });
});
