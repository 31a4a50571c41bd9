/**
 * Reading a NodeBootstrap from text: JSON or YAML in, a validated request or a
 * RequestError listing every problem with its field path out.
 */
import { binaryTag, CORE_SCHEMA, load, YAMLException } from 'js-yaml';
import type { z } from 'zod';
import { type FieldProblem, RequestError } from '../errors.js';
import { checkRequest } from './checks.js';
import { type NodeBootstrap, nodeBootstrapSchema } from './schema.js';

/** Media syntaxes a request body may use. */
export type RequestSyntax = 'json' | 'yaml';

/**
 * YAML 1.2 core schema plus `!!binary` (for `encoding: gzip` file contents).
 * No custom or executable tags: the safe subset.
 */
const REQUEST_YAML_SCHEMA = CORE_SCHEMA.withTags(binaryTag);

/**
 * Parse request text into a plain value, refusing duplicate keys in both syntaxes.
 *
 * @param text the body, UTF-8 decoded.
 * @param syntax `json` (RFC 8259; checked with JSON.parse, then read again by js-yaml to
 *   refuse duplicate keys, which JSON.parse silently keeps the last of) or `yaml`
 *   (YAML 1.2 core schema, one document).
 * @throws RequestError (status 400) naming line and column. The message never quotes
 *   the input, which may hold secrets.
 */
export function parseDocument(text: string, syntax: RequestSyntax): unknown {
  if (syntax === 'json') {
    try {
      JSON.parse(text);
    } catch (e) {
      const m = /position (\d+)/.exec((e as Error).message);
      const where = m ? ` at ${lineColumn(text, Number(m[1]))}` : '';
      throw new RequestError([{ path: '', message: `malformed JSON${where}` }], 400);
    }
  }
  try {
    return load(text, { schema: REQUEST_YAML_SCHEMA, maxAliases: 100 });
  } catch (e) {
    if (e instanceof YAMLException) {
      const mark = (e as YAMLException & { mark?: { line: number; column: number } }).mark;
      const where = mark ? ` at line ${mark.line + 1} column ${mark.column + 1}` : '';
      throw new RequestError([{ path: '', message: `malformed ${syntax === 'json' ? 'JSON' : 'YAML'}${where}: ${e.reason}` }], 400);
    }
    throw new RequestError([{ path: '', message: `malformed ${syntax === 'json' ? 'JSON' : 'YAML'}` }], 400);
  }
}

function lineColumn(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return `line ${line} column ${offset - before.lastIndexOf('\n')}`;
}

/**
 * Render a zod issue path the way a user writes it: `spec.provisioning.files[0].path`.
 */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else out += out ? `.${String(seg)}` : String(seg);
  }
  return out;
}

/**
 * Turn zod issues into field problems: one per unknown key (`unknown field`), the
 * issue's own message otherwise. Paths are prefixed with `prefix` when given.
 */
export function zodProblems(error: z.ZodError, prefix = ''): FieldProblem[] {
  const join = (p: string) => (prefix && p ? `${prefix}${p.startsWith('[') ? '' : '.'}${p}` : prefix || p);
  const problems: FieldProblem[] = [];
  for (const issue of error.issues) {
    const base = formatPath(issue.path);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) problems.push({ path: join(base ? `${base}.${key}` : key), message: 'unknown field' });
    } else if (issue.code === 'invalid_type' && issue.message.endsWith('received undefined')) {
      problems.push({ path: join(base), message: 'required' });
    } else {
      problems.push({ path: join(base), message: issue.message });
    }
  }
  return problems;
}

/**
 * Validate a parsed value as a NodeBootstrap: the zod schema (types, formats, unknown
 * fields), then the cross-field and role checks of {@link checkRequest}.
 *
 * @throws RequestError (422) with every problem found.
 */
export function validateNodeBootstrap(value: unknown): NodeBootstrap {
  const result = nodeBootstrapSchema.safeParse(value);
  if (!result.success) throw new RequestError(zodProblems(result.error));
  const problems = checkRequest(result.data);
  if (problems.length > 0) throw new RequestError(problems);
  return result.data;
}

/**
 * Read a NodeBootstrap from request text (DESIGN §2).
 *
 * @throws RequestError: 400 for malformed text, 422 for an invalid request.
 */
export function parseNodeBootstrap(text: string, syntax: RequestSyntax): NodeBootstrap {
  return validateNodeBootstrap(parseDocument(text, syntax));
}

/** Guess the syntax from a file name: `.json` is JSON, anything else YAML. */
export function syntaxForFile(name: string): RequestSyntax {
  return name.toLowerCase().endsWith('.json') ? 'json' : 'yaml';
}
