/**
 * cloud-init instance-data Jinja (cloud-init docs, "Instance data" and "Jinja templates
 * in user data"): the subset bootwright accepts, found in text by a small bounded
 * scanner, and the escaping that makes every other brace reach the node byte for byte.
 *
 * A cloud-config whose first line is `## template: jinja` is rendered by cloud-init with
 * Jinja (cloud-init `handlers/jinja_template.py`, `templater.py`: `trim_blocks=True`,
 * undefined variables rendered as `CI_MISSING_JINJA_VAR/<name>`) over the instance data
 * (`/run/cloud-init/instance-data.json`, with `v1` keys copied to the top level and `-`
 * in keys aliased to `_`), and only then parsed as YAML. Cluster API's kubeadm bootstrap
 * provider (CABPK) always writes that header, so provider templates name nodes with
 * `{{ ds.meta_data.local_hostname }}`; and every other `{{`, `{%` or `{#` in its data is
 * mangled (a Go template in a file, a `sed` with braces).
 *
 * Accepted (an *expression*): `{{ ROOT (.NAME | [STRING] | [INT] | .METHOD(ARGS))* (| FILTER[(ARGS)])* }}`
 * where ROOT reads instance data ({@link INSTANCE_DATA_ROOTS}), METHOD is one of
 * {@link METHODS}, FILTER one of {@link FILTERS}, ARGS string or integer literals.
 * A `{{ … }}` that is not such an expression (`{{ .PodSubnet }}`, `{{ not a template }}`)
 * is literal text. Refused: statements (`{% if %}`, `{% for %}`, `{% macro %}`, …)
 * that read instance data or appear where expressions are used, and whitespace control
 * (`{{-`, `-}}`), which would strip the YAML's own line breaks; each with line and column.
 *
 * Work is linear in the text: each `{{` is tried once over at most
 * {@link MAX_EXPRESSION_LENGTH} characters.
 */

/** Longest expression accepted, in characters between `{{` and `}}`. */
export const MAX_EXPRESSION_LENGTH = 256;

/** Problems reported for one text at most (the scan stops there). */
const MAX_PROBLEMS = 10;

/**
 * Names an expression may start with: the instance data's top-level keys
 * (`ds`, `v1`, `v2`, `sys_info`, `merged_cfg`…) and the `v1` keys cloud-init copies to
 * the top level (cloud-init `convert_jinja_instance_data`; the v1 key set is cloud-init's
 * "Standardized instance data" list).
 */
export const INSTANCE_DATA_ROOTS: ReadonlySet<string> = new Set([
  'ds', 'v1', 'v2', 'sys_info', 'merged_cfg', 'merged_system_cfg', 'system_info', 'vendordata', 'features',
  // v1 keys, also top level
  '_beta_keys', 'availability_zone', 'cloud_id', 'cloud_name', 'distro', 'distro_release', 'distro_version', 'instance_id',
  'kernel_release', 'local_hostname', 'machine', 'platform', 'public_ssh_keys', 'python_version', 'region', 'subplatform',
  'system_platform', 'variant',
]);

/** Python `str` methods templates call (`.split(".")[0]`), with their argument counts. */
export const METHODS: Readonly<Record<string, readonly [number, number]>> = {
  split: [0, 2], rsplit: [0, 2], replace: [2, 2], lower: [0, 0], upper: [0, 0], strip: [0, 1], lstrip: [0, 1], rstrip: [0, 1],
};

/** Jinja built-in filters templates use (`| lower`, `| replace("_", "-")`), with their argument counts. */
export const FILTERS: Readonly<Record<string, readonly [number, number]>> = {
  lower: [0, 0], upper: [0, 0], trim: [0, 0], replace: [2, 3], default: [0, 2], d: [0, 2], string: [0, 0], first: [0, 0], last: [0, 0],
};

/** Jinja statement keywords: a `{% … %}` starting with one is a statement. */
const STATEMENTS = /^\{%-?\s*(if|elif|else|endif|for|endfor|macro|endmacro|call|endcall|set|endset|filter|endfilter|raw|endraw|block|endblock|extends|include|import|from|with|endwith|do|autoescape|endautoescape)\b/;

/** A `{{ … }}` that reads instance data, at `[start, end)` of the text. */
export interface JinjaExpression {
  start: number;
  end: number;
  /** The tag exactly as written, `{{` to `}}`. */
  source: string;
  /** The root name it reads (`ds`, `v1`, `local_hostname`, …). */
  root: string;
}

/** A Jinja construct bootwright refuses, at a 1-based line and column of the text. */
export interface JinjaProblem {
  line: number;
  column: number;
  message: string;
}

/** What {@link scanJinja} finds in one text. */
export interface JinjaScan {
  expressions: JinjaExpression[];
  problems: JinjaProblem[];
}

type Token = { kind: 'name' | 'string' | 'int' | 'punct'; value: string };

/**
 * Tokenise an expression body: names, string literals ('…' or "…", backslash escapes
 * refused), integers, and the punctuation `.` `[` `]` `(` `)` `,` `|`.
 *
 * @returns the tokens, or undefined when the body holds anything else
 */
function tokenize(body: string): Token[] | undefined {
  const tokens: Token[] = [];
  let i = 0;
  while (i < body.length) {
    const c = body[i]!;
    if (c === ' ' || c === '\t') {
      i++;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(body.slice(i, i + 64))!;
      tokens.push({ kind: 'name', value: m[0] });
      i += m[0].length;
    } else if (/[0-9-]/.test(c)) {
      const m = /^-?[0-9]{1,9}/.exec(body.slice(i, i + 10));
      if (!m) return undefined;
      tokens.push({ kind: 'int', value: m[0] });
      i += m[0].length;
    } else if (c === '"' || c === "'") {
      const close = body.indexOf(c, i + 1);
      if (close < 0) return undefined;
      const value = body.slice(i + 1, close);
      if (value.includes('\\')) return undefined;
      tokens.push({ kind: 'string', value });
      i = close + 1;
    } else if ('.[](),|'.includes(c)) {
      tokens.push({ kind: 'punct', value: c });
      i++;
    } else {
      return undefined;
    }
  }
  return tokens;
}

/** Parse `( literal, … )` at `at`; returns the index after `)` and the argument count. */
function parseArgs(tokens: Token[], at: number): { next: number; count: number } | undefined {
  const open = tokens[at];
  if (open?.kind !== 'punct' || open.value !== '(') return undefined;
  let i = at + 1;
  let count = 0;
  if (tokens[i]?.kind === 'punct' && tokens[i]?.value === ')') return { next: i + 1, count };
  for (;;) {
    const t = tokens[i];
    if (t?.kind !== 'string' && t?.kind !== 'int') return undefined;
    count++;
    i++;
    const sep = tokens[i];
    if (sep?.kind === 'punct' && sep.value === ')') return { next: i + 1, count };
    if (!(sep?.kind === 'punct' && sep.value === ',')) return undefined;
    i++;
  }
}

const within = (n: number, [min, max]: readonly [number, number]) => n >= min && n <= max;

/**
 * Whether the tokens are an accepted expression ({@link scanJinja}); returns its root.
 */
function parseExpression(tokens: Token[]): string | undefined {
  const root = tokens[0];
  if (root?.kind !== 'name' || !INSTANCE_DATA_ROOTS.has(root.value)) return undefined;
  let i = 1;
  // Postfix: attribute, index, method call.
  for (;;) {
    const t = tokens[i];
    if (t?.kind !== 'punct') break;
    if (t.value === '.') {
      const name = tokens[i + 1];
      if (name?.kind !== 'name') return undefined;
      i += 2;
      if (tokens[i]?.kind === 'punct' && tokens[i]?.value === '(') {
        const arity = METHODS[name.value];
        const args = parseArgs(tokens, i);
        if (!arity || !args || !within(args.count, arity)) return undefined;
        i = args.next;
      }
    } else if (t.value === '[') {
      const key = tokens[i + 1];
      const close = tokens[i + 2];
      if ((key?.kind !== 'string' && key?.kind !== 'int') || close?.kind !== 'punct' || close.value !== ']') return undefined;
      i += 3;
    } else {
      break;
    }
  }
  // Filters.
  while (tokens[i]?.kind === 'punct' && tokens[i]?.value === '|') {
    const name = tokens[i + 1];
    const arity = name?.kind === 'name' ? FILTERS[name.value] : undefined;
    if (!arity) return undefined;
    i += 2;
    if (tokens[i]?.kind === 'punct' && tokens[i]?.value === '(') {
      const args = parseArgs(tokens, i);
      if (!args || !within(args.count, arity)) return undefined;
      i = args.next;
    } else if (arity[0] > 0) {
      return undefined;
    }
  }
  return i === tokens.length ? root.value : undefined;
}

/** 1-based line and column of `offset` in `text`. */
function position(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, column: offset - lineStart + 1 };
}

/** Whether a tag body (between the delimiters) names an instance-data root anywhere. */
function readsInstanceData(body: string): boolean {
  for (const m of body.matchAll(/[A-Za-z_][A-Za-z0-9_]*/g)) if (INSTANCE_DATA_ROOTS.has(m[0]) && m[0] !== 'platform' && m[0] !== 'machine' && m[0] !== 'variant') return true;
  return /\b(?:ds|v1|v2)\s*[.[]/.test(body);
}

/**
 * Find the instance-data expressions in a text, and the Jinja constructs bootwright
 * refuses there.
 *
 * - `{{ expr }}` with an accepted expression (see the module comment): an expression;
 *   with `{{-` or `-}}` around an otherwise accepted expression: a problem;
 * - `{% statement %}`: a problem when it reads instance data, or when `strictStatements`
 *   (the text belongs to a document that uses expressions); otherwise literal text;
 * - anything else, `{#` included: literal text.
 *
 * @param text the value as the request gave it
 * @param strictStatements refuse every Jinja statement, not only those reading instance data
 */
export function scanJinja(text: string, strictStatements = false): JinjaScan {
  const expressions: JinjaExpression[] = [];
  const problems: JinjaProblem[] = [];
  let from = 0;
  while (problems.length < MAX_PROBLEMS) {
    const i = text.indexOf('{', from);
    if (i < 0 || i + 1 >= text.length) break;
    const next = text[i + 1];
    if (next === '{') {
      const rel = text.slice(i + 2, i + 4 + MAX_EXPRESSION_LENGTH).indexOf('}}');
      const close = rel < 0 || rel > MAX_EXPRESSION_LENGTH ? -1 : i + 2 + rel;
      const body = close < 0 ? undefined : text.slice(i + 2, close);
      if (body !== undefined) {
        const trimLeft = body.startsWith('-');
        const trimRight = body.endsWith('-');
        const inner = body.slice(trimLeft ? 1 : 0, trimRight ? -1 : undefined);
        const tokens = tokenize(inner);
        const root = tokens && parseExpression(tokens);
        if (root !== undefined) {
          if (trimLeft || trimRight) {
            problems.push({ ...position(text, i), message: 'uses Jinja whitespace control ({{- or -}}), which would also strip the YAML line breaks around it: write {{ … }}' });
          } else {
            expressions.push({ start: i, end: close + 2, source: text.slice(i, close + 2), root });
          }
          from = close + 2;
          continue;
        }
      }
    } else if (next === '%') {
      const rel = text.slice(i + 2, i + 4 + MAX_EXPRESSION_LENGTH).indexOf('%}');
      const close = rel < 0 ? -1 : i + 2 + rel;
      const tag = close < 0 ? text.slice(i, i + 2 + MAX_EXPRESSION_LENGTH) : text.slice(i, close + 2);
      const statement = STATEMENTS.exec(tag);
      if (statement && (strictStatements || readsInstanceData(tag.slice(2)))) {
        problems.push({
          ...position(text, i),
          message: `is a Jinja statement ({% ${statement[1]!} %}); bootwright accepts only expressions that read instance data, such as {{ ds.meta_data.local_hostname }}: compute the value in a command instead (e.g. $(cloud-init query v1.local_hostname))`,
        });
        from = close < 0 ? i + 2 : close + 2;
        continue;
      }
    }
    from = i + 1;
  }
  return { expressions, problems };
}

/** The header that makes cloud-init render user data with Jinja. */
export const JINJA_HEADER = '## template: jinja';

/** The Jinja text that renders as each delimiter (a string literal in an expression). */
const ESCAPES: Readonly<Record<string, string>> = { '{{': "{{ '{{' }}", '{%': "{{ '{%' }}", '{#': "{{ '{#' }}", '{': "{{ '{' }}" };

/**
 * Escape literal text for a `## template: jinja` document: every `{{`, `{%` and `{#`
 * becomes an expression printing it (`{{ '{{' }}`), so Jinja renders the text exactly
 * as given. `{{ '{{' }}` rather than `{% raw %}`: cloud-init renders with
 * `trim_blocks=True`, which would eat the line break after `{% endraw %}`; expressions
 * are rendered the same by cloud-init 22.4 and current releases.
 *
 * @param endsBeforeExpression the text is followed directly by an expression, so a
 *   final lone `{` is escaped too (it would make `{{{`)
 */
export function escapeForJinja(text: string, endsBeforeExpression = false): string {
  const out = text.replace(/\{[{%#]/g, (m) => ESCAPES[m]!);
  return endsBeforeExpression && out.endsWith('{') ? `${out.slice(0, -1)}${ESCAPES['{']!}` : out;
}
