/**
 * RFC 9457 problem details: every error the HTTP API sends is one of these, as
 * `application/problem+json`.
 */
import { z } from 'zod';
import type { FieldProblem } from '../errors.js';

export const PROBLEM_MEDIA_TYPE = 'application/problem+json';

/** Problem types, each a stable URI (RFC 9457 §3.1.1) and a title. */
export const PROBLEM_TYPES = {
  'malformed-request': 'Malformed request',
  'invalid-request': 'Invalid request',
  'not-acceptable': 'Not acceptable',
  'unsupported-media-type': 'Unsupported media type',
  'payload-too-large': 'Payload too large',
  unauthorized: 'Unauthorized',
  forbidden: 'Forbidden',
  'not-found': 'Not found',
  'misdirected-request': 'Misdirected request',
  conflict: 'Conflict',
  'precondition-failed': 'Precondition failed',
  'too-many-requests': 'Too many requests',
  overloaded: 'Service overloaded',
  unavailable: 'Service unavailable',
  internal: 'Internal error',
} as const;

export type ProblemKind = keyof typeof PROBLEM_TYPES;

/** The problem document's schema (also documents it in OpenAPI). */
export const problemSchema = z
  .object({
    type: z.string().describe('URI identifying the problem type'),
    title: z.string(),
    status: z.int(),
    detail: z.string(),
    errors: z
      .array(
        z.object({
          path: z.string().describe('the field, e.g. spec.cluster.bootstrapToken'),
          message: z.string(),
          rule: z.string().optional().describe('the refusal rule, when a release after v0.1.0 brought it (CHANGELOG.md): what an earlier release stored is excused from it'),
        }),
      )
      .optional()
      .describe('one entry per problem with the request'),
  })
  .meta({ id: 'Problem', description: 'RFC 9457 problem details' });

export type Problem = z.infer<typeof problemSchema>;

/** Build a problem document. */
export function problem(kind: ProblemKind, status: number, detail: string, errors?: FieldProblem[]): Problem {
  return { type: `https://bootwright.dev/problems/${kind}`, title: PROBLEM_TYPES[kind], status, detail, ...(errors ? { errors } : {}) };
}
