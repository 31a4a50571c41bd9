/**
 * What kind of config Cluster API's `ignition.containerLinuxConfig.additionalConfig`
 * holds, told by its content (the field has no type of its own):
 * 1. JSON with `ignition.version` → a raw Ignition config;
 * 2. YAML (JSON is YAML too) whose top level has `variant` → a Butane config;
 * 3. any other YAML mapping → a Container Linux Config (what CABPK's transpiler reads).
 *
 * Parse errors give the line and column and never quote the text, which may hold secrets.
 */
import { CORE_SCHEMA, intYaml11Tag, load, YAML11_SCHEMA, YAMLException } from 'js-yaml';
import { printParseErrorCode, visit } from 'jsonc-parser';
import { RequestError } from '../../../errors.js';
import { checkBounds, checkJsonDepth, DEFAULT_DOCUMENT_LIMITS } from '../../../request/bounds.js';
import { formatPath } from '../../../request/parse.js';
import { type ConfigProblem, isObject } from './shape.js';

/**
 * Butane's reader (go-yaml v3): YAML 1.2 core, but a leading-zero integer such as
 * `0644` is octal as in YAML 1.1 (go-yaml v3 keeps that for modes; Butane's docs write
 * `mode: 0644`). `0o644` and `yes`/`no` stay strings here: go-yaml v3 reads them as an
 * integer or a boolean only into a field of that type, which `./butane.ts` does.
 */
const BUTANE_SCHEMA = CORE_SCHEMA.withTags(intYaml11Tag);

/** The three formats. */
export type AdditionalKind = 'ignition' | 'butane' | 'clc';

/** A parsed additional config, not yet checked or translated. */
export interface DetectedConfig {
  kind: AdditionalKind;
  /** The parsed document (a mapping). */
  document: Record<string, unknown>;
}

/**
 * Thrown with the problem (position, reason) when the text does not parse, or (status
 * 413) when what it parses to is over a document limit.
 */
export class ParseProblem extends Error {
  constructor(
    readonly problem: ConfigProblem,
    readonly status: 413 | 422 = 422,
  ) {
    super(problem.message);
  }
}

/**
 * Hold a parsed additional config to the default document limits ({@link checkBounds};
 * it is a string inside a request that kept the configured ones), so its aliases cannot
 * expand past them either.
 */
function bounded<T>(value: T): T {
  try {
    // Prototype-named keys are the shape reader's to report, as any unknown key.
    checkBounds(value, DEFAULT_DOCUMENT_LIMITS, formatPath, { reservedKeys: false });
    return value;
  } catch (e) {
    if (!(e instanceof RequestError)) throw e;
    const p = e.problems[0]!;
    throw new ParseProblem({ at: p.path, message: p.message }, e.status === 413 ? 413 : 422);
  }
}

function yamlProblem(e: unknown): ConfigProblem {
  const mark = e instanceof YAMLException ? e.mark : undefined;
  const where = mark ? ` at line ${mark.line + 1} column ${mark.column + 1}` : '';
  const reason = e instanceof YAMLException ? `: ${e.reason}` : '';
  return { at: '', message: `malformed YAML${where}${reason}` };
}

function loadYaml(text: string, schema: typeof CORE_SCHEMA): unknown {
  try {
    return bounded(load(text, { schema, maxAliases: DEFAULT_DOCUMENT_LIMITS.maxAliases, maxDepth: DEFAULT_DOCUMENT_LIMITS.maxDepth, maxTotalMergeKeys: DEFAULT_DOCUMENT_LIMITS.maxNodes }));
  } catch (e) {
    if (e instanceof ParseProblem) throw e;
    const problem = yamlProblem(e);
    throw new ParseProblem(problem, /exceeded max(Depth|Aliases|TotalMergeKeys)/.test(problem.message) ? 413 : 422);
  }
}

/** JSON.parse, with jsonc-parser's scanner for the position of the first error. */
function parseJson(text: string): unknown {
  try {
    checkJsonDepth(text, DEFAULT_DOCUMENT_LIMITS.maxDepth);
  } catch (e) {
    throw new ParseProblem({ at: '', message: (e as RequestError).problems[0]!.message }, 413);
  }
  try {
    return bounded(JSON.parse(text));
  } catch (e) {
    if (e instanceof ParseProblem) throw e;
    let where = '';
    visit(text, { onError: (code, _o, _l, line, column) => void (where ||= ` at line ${line + 1} column ${column + 1}: ${printParseErrorCode(code)}`) }, { disallowComments: true });
    throw new ParseProblem({ at: '', message: `malformed JSON${where}` });
  }
}

/**
 * Parse `text` and tell its kind.
 *
 * Text starting with `{` is JSON (RFC 8259): with an `ignition` mapping it is an Ignition
 * config whatever its version (the caller checks the version); otherwise it is read as
 * YAML like any other text. YAML is read first with Butane's reader; with a top-level
 * `variant` it is Butane, else it is read again as YAML 1.1 (go-yaml v2, the Container
 * Linux Config Transpiler's reader: `0644` octal, `yes`/`on` booleans) as a CLC.
 *
 * @throws ParseProblem for empty text, malformed JSON or YAML (line and column), or a
 *   document that is not a mapping
 */
export function detectAdditionalConfig(text: string): DetectedConfig {
  if (text.trim() === '') throw new ParseProblem({ at: '', message: 'is empty' });
  if (text.trimStart().startsWith('{')) {
    const doc = parseJson(text);
    if (isObject(doc) && isObject(doc.ignition) && Object.hasOwn(doc.ignition, 'version')) return { kind: 'ignition', document: doc };
  }
  const butane = loadYaml(text, BUTANE_SCHEMA);
  if (!isObject(butane)) throw new ParseProblem({ at: '', message: 'must be a mapping (an Ignition JSON config, a Butane config or a Container Linux Config)' });
  if (Object.hasOwn(butane, 'variant')) return { kind: 'butane', document: butane };
  if (isObject(butane.ignition) && Object.hasOwn(butane.ignition, 'version')) return { kind: 'ignition', document: butane };
  return { kind: 'clc', document: loadYaml(text, YAML11_SCHEMA) as Record<string, unknown> };
}
