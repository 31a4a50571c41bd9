/**
 * Typed errors, mapped to HTTP statuses and CLI exit codes in one place each.
 * Messages never contain secret values (tokens, keys, password hashes): they name the
 * field, not its content.
 */

/**
 * One problem with the request: `path` is the field (`spec.cluster.bootstrapToken`);
 * `rule` names the refusal rule when a release after v0.1.0 brought it (src/rules.ts), so
 * that what an earlier release stored is excused from it.
 */
export interface FieldProblem {
  path: string;
  message: string;
  rule?: string;
}

/**
 * The request cannot be served as asked: malformed, invalid or asking for something the
 * chosen output cannot express. Always the caller's to fix (HTTP 4xx, CLI exit 2).
 */
export class RequestError extends Error {
  readonly problems: FieldProblem[];
  /**
   * Suggested HTTP status: 400 for unparseable input, 413 for input over a configured
   * limit (the message names it), 422 for well-formed but invalid.
   */
  readonly status: 400 | 413 | 422;

  constructor(problems: FieldProblem[], status: 400 | 413 | 422 = 422) {
    super(problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)).join('; '));
    this.name = 'RequestError';
    this.problems = problems;
    this.status = status;
  }
}

/** Throw a RequestError for one field. */
export function fieldError(path: string, message: string, status: 400 | 422 = 422): never {
  throw new RequestError([{ path, message }], status);
}
