/**
 * Reading a NodeBootstrap from text: JSON or YAML in, a validated request or a
 * RequestError listing every problem with its field path out.
 */
import { binaryTag, CORE_SCHEMA, load, loadAll, YAMLException } from 'js-yaml';
import { printParseErrorCode, visit } from 'jsonc-parser';
import type { z } from 'zod';
import { type FieldProblem, RequestError } from '../errors.js';
import { checkBounds, checkJsonDepth, DEFAULT_DOCUMENT_LIMITS, type DocumentLimits, limitMessage } from './bounds.js';
import { findBootValues } from '../provision/plan/bootvalues.js';
import { Ratchet, type RuleLevels } from '../rules.js';
import { fromClusterApi, isClusterApiRequest, rememberClusterApiOrigin, rewriteProblems } from './capi/convert.js';
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
 * Parse request text into a plain value, refusing duplicate keys in both syntaxes, and
 * hold it to `limits` ({@link checkBounds}) before anyone digests or validates it.
 *
 * @param text the body, UTF-8 decoded.
 * @param syntax `json` (RFC 8259; JSON.parse for the value, jsonc-parser's scanner to
 *   refuse duplicate keys, which JSON.parse silently keeps the last of, and to locate
 *   syntax errors) or `yaml` (YAML 1.2 core schema, one document).
 * @param limits depth, node, list, character and alias caps (default: the
 *   configuration's defaults).
 * @throws RequestError: 400 naming line and column (malformed text; a recursive alias),
 *   413 naming the field and the limit it is over, 422 for a reserved key (`__proto__`,
 *   `constructor`, `prototype`). The message never quotes the input, which may hold
 *   secrets.
 */
export function parseDocument(text: string, syntax: RequestSyntax, limits: DocumentLimits = DEFAULT_DOCUMENT_LIMITS): unknown {
  const value = syntax === 'json' ? parseJson(text, limits) : parseYaml(text, limits);
  checkBounds(value, limits, formatPath);
  return value;
}

/**
 * Parse a stream of documents (`kubectl apply -f` files): YAML documents separated by
 * `---` (empty ones skipped), or one JSON document; each parsed and held to `limits` as
 * {@link parseDocument} does.
 *
 * @throws RequestError as {@link parseDocument}, at the line and column of the stream.
 */
export function parseDocuments(text: string, syntax: RequestSyntax, limits: DocumentLimits = DEFAULT_DOCUMENT_LIMITS): unknown[] {
  if (syntax === 'json') return [parseDocument(text, 'json', limits)];
  let values: unknown[];
  try {
    values = loadAll(text, { schema: REQUEST_YAML_SCHEMA, maxAliases: limits.maxAliases, maxDepth: limits.maxDepth }).filter((v) => v !== null && v !== undefined);
  } catch (e) {
    throw yamlError(e, limits);
  }
  for (const v of values) checkBounds(v, limits, formatPath);
  return values;
}

/** RFC 8259 JSON: JSON.parse for the value; jsonc-parser's scanner for positions and duplicate keys. */
function parseJson(text: string, limits: DocumentLimits): unknown {
  // Both parsers below recurse per nesting level: refuse deep text before either runs.
  checkJsonDepth(text, limits.maxDepth);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // JSON.parse's messages do not always carry a position: find the first error.
    let where = '';
    visit(text, { onError: (code, _offset, _length, line, column) => void (where ||= ` at line ${line + 1} column ${column + 1}: ${printParseErrorCode(code)}`) }, { disallowComments: true, allowTrailingComma: false });
    throw new RequestError([{ path: '', message: `malformed JSON${where}` }], 400);
  }
  const keys: Set<string>[] = [];
  let duplicate = '';
  visit(text, {
    onObjectBegin: () => void keys.push(new Set()),
    onObjectEnd: () => void keys.pop(),
    onObjectProperty: (name, _offset, _length, line, column) => {
      const seen = keys.at(-1)!;
      if (seen.has(name)) duplicate ||= ` at line ${line + 1} column ${column + 1}: duplicated mapping key`;
      seen.add(name);
    },
  });
  if (duplicate) throw new RequestError([{ path: '', message: `malformed JSON${duplicate}` }], 400);
  return value;
}

/** YAML 1.2 core schema (+ `!!binary`), one document, duplicate keys refused; js-yaml's own depth and alias caps set from `limits`. */
function parseYaml(text: string, limits: DocumentLimits): unknown {
  try {
    return load(text, { schema: REQUEST_YAML_SCHEMA, maxAliases: limits.maxAliases, maxDepth: limits.maxDepth });
  } catch (e) {
    throw yamlError(e, limits);
  }
}

/**
 * A js-yaml error as a RequestError: js-yaml's depth and alias caps are 413 naming the
 * limit, anything else 400; both at line and column, never quoting the text.
 */
export function yamlError(e: unknown, limits: DocumentLimits): RequestError {
  const mark = e instanceof YAMLException ? (e as YAMLException & { mark?: { line: number; column: number } }).mark : undefined;
  const where = mark ? ` at line ${mark.line + 1} column ${mark.column + 1}` : '';
  const reason = e instanceof YAMLException ? e.reason : '';
  if (reason.startsWith('nesting exceeded maxDepth')) {
    return new RequestError([{ path: '', message: `YAML${where} ${limitMessage('maxDepth', limits.maxDepth, `nests more than ${limits.maxDepth} levels deep`)}` }], 413);
  }
  if (reason.startsWith('aliases exceeded maxAliases')) {
    return new RequestError([{ path: '', message: `YAML${where} ${limitMessage('maxAliases', limits.maxAliases, `has more than ${limits.maxAliases} aliases`)}` }], 413);
  }
  return new RequestError([{ path: '', message: `malformed YAML${where}${reason ? `: ${reason}` : ''}` }], 400);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Decode request bytes as UTF-8 (RFC 8259 §8.1; YAML 1.2 streams here are UTF-8 too),
 * dropping a leading byte order mark.
 *
 * @throws RequestError (400) for bytes that are not well-formed UTF-8: they are refused,
 *   never silently replaced by U+FFFD.
 */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw new RequestError([{ path: '', message: 'the body is not well-formed UTF-8' }], 400);
  }
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
 * issue's own message otherwise (`required` for a missing field: src/request/schema.ts
 * sets zod's error map). Paths are prefixed with `prefix` when given.
 */
export function zodProblems(error: z.ZodError, prefix = ''): FieldProblem[] {
  const join = (p: string) => (prefix && p ? `${prefix}${p.startsWith('[') ? '' : '.'}${p}` : prefix || p);
  const problems: FieldProblem[] = [];
  for (const issue of error.issues) {
    const base = formatPath(issue.path);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) problems.push({ path: join(base ? `${base}.${key}` : key), message: 'unknown field' });
    } else if (issue.code === 'invalid_key' && issue.issues.length > 0) {
      // A record key that breaks its rule: the rule's own message, not "Invalid key in record".
      for (const inner of issue.issues) problems.push({ path: join(base), message: inner.message });
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
 * A request in Cluster API shape (`spec.kubeadmConfigSpec` or `spec.kubeadmConfig`)
 * is first rewritten into `spec.kubeadm` + `spec.provisioning` ({@link fromClusterApi});
 * every problem still names the field the caller wrote. Its boot-time values are checked
 * here too ({@link findBootValues}: Jinja statements, whitespace control).
 *
 * @param options.levels the rules versions of a stored machine's documents
 *   (src/rules.ts): what they were accepted under is not refused here, and the render,
 *   which checks the same again, reports it
 * @throws RequestError (422) with every problem found.
 */
export function validateNodeBootstrap(value: unknown, options: { levels?: RuleLevels } = {}): NodeBootstrap {
  if (!isClusterApiRequest(value)) {
    const native = validateNative(value);
    findBootValues(native, false, undefined, new Ratchet(options.levels));
    return native;
  }
  const { request, rewrite } = fromClusterApi(value);
  try {
    const validated = validateNative(request);
    // Jinja statements and mixed metadata files are refused when written, not at render.
    findBootValues(validated, true);
    rememberClusterApiOrigin(validated, rewrite);
    return validated;
  } catch (e) {
    if (e instanceof RequestError) throw new RequestError(rewriteProblems(e.problems, rewrite), e.status);
    throw e;
  }
}

/** The NodeBootstrap schema, then the cross-field checks. */
function validateNative(value: unknown): NodeBootstrap {
  const result = nodeBootstrapSchema.safeParse(value);
  if (!result.success) throw new RequestError(zodProblems(result.error));
  const problems = checkRequest(result.data);
  if (problems.length > 0) throw new RequestError(problems);
  return result.data;
}

/**
 * Read a NodeBootstrap from request text (DESIGN §2), held to `limits` first ({@link parseDocument}).
 *
 * @throws RequestError: 400 for malformed text, 413 over a limit, 422 for an invalid request.
 */
export function parseNodeBootstrap(text: string, syntax: RequestSyntax, limits: DocumentLimits = DEFAULT_DOCUMENT_LIMITS): NodeBootstrap {
  return validateNodeBootstrap(parseDocument(text, syntax, limits));
}

/** Guess the syntax from a file name: `.json` is JSON, anything else YAML. */
export function syntaxForFile(name: string): RequestSyntax {
  return name.toLowerCase().endsWith('.json') ? 'json' : 'yaml';
}
