/**
 * The routes' validator compiler: fastify-type-provider-zod's, with one shortcut on the
 * hot path. A query string with no parameters (the common request: a render, a boot
 * fetch asked without `?format=`) is not run through a schema that accepts `{}` as
 * `{}` (every field optional, no defaults or transforms): the answer is known when the
 * route is compiled. Anything else is validated as before.
 */
import type { FastifyRouteSchemaDef } from 'fastify/types/schema.js';
import { validatorCompiler } from 'fastify-type-provider-zod';
import type { ZodType } from 'zod';

type Validate = (data: unknown) => { value: unknown } | { error: Error };

/** Whether `value` is an object with no own enumerable keys. */
function empty(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  for (const _ in value) return false;
  return true;
}

/**
 * Compile a route part's validator (fastify `setValidatorCompiler`).
 *
 * @returns fastify-type-provider-zod's validator for the part; for a query string whose
 *   schema parses `{}` to exactly `{}`, one that passes an empty query through unparsed.
 */
export function routeValidator(route: FastifyRouteSchemaDef<ZodType>): Validate {
  const validate = validatorCompiler(route) as Validate;
  if (route.httpPart !== 'querystring') return validate;
  const probe = route.schema.safeParse({});
  if (!probe.success || !empty(probe.data)) return validate;
  return (data) => (empty(data) ? { value: data } : validate(data));
}
