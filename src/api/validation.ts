/**
 * The routes' validator compiler: fastify-type-provider-zod's, with two shortcuts on the
 * hot path.
 * - A query string with no parameters (the common request: a render, a boot fetch asked
 *   without `?format=`) is not run through a schema that accepts `{}` as `{}` (every
 *   field optional, no defaults or transforms): the answer is known when the route is
 *   compiled.
 * - Headers are checked, not replaced: fastify assigns a validator's `value` to
 *   `request.headers`, and once assigned, every later read of `request.headers` copies
 *   all of them (fastify's getter merges `raw.headers` with the assigned object), which
 *   a request then pays on each header it reads. The header schemas hold optional
 *   strings only (no defaults or transforms), so what passes is the headers as they came.
 * Anything else is validated as before.
 */
import type { FastifyRouteSchemaDef } from 'fastify/types/schema.js';
import { validatorCompiler } from 'fastify-type-provider-zod';
import type { ZodType } from 'zod';

type Validate = (data: unknown) => { value: unknown } | { error: Error } | typeof PASSED;

/** A validator's answer that passes the part and assigns nothing (fastify assigns only a `value`). */
export const PASSED: Readonly<Record<string, never>> = Object.freeze({});

/** Whether `value` is an object with no own enumerable keys. */
function empty(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  for (const _ in value) return false;
  return true;
}

/**
 * Compile a route part's validator (fastify `setValidatorCompiler`).
 *
 * @returns fastify-type-provider-zod's validator for the part; for headers, one that
 *   answers its errors or {@link PASSED}; for a query string whose schema parses `{}`
 *   to exactly `{}`, one that passes an empty query through unparsed.
 */
export function routeValidator(route: FastifyRouteSchemaDef<ZodType>): Validate {
  const validate = validatorCompiler(route) as Validate;
  if (route.httpPart === 'headers') {
    return (data) => {
      const checked = validate(data);
      return 'error' in checked ? checked : PASSED;
    };
  }
  if (route.httpPart !== 'querystring') return validate;
  const probe = route.schema.safeParse({});
  if (!probe.success || !empty(probe.data)) return validate;
  return (data) => (empty(data) ? { value: data } : validate(data));
}
