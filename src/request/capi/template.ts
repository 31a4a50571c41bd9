/**
 * Cluster API's file templates (`files[].contentFormat: Template`, Cluster API v1beta2):
 * the content is a Go `text/template` executed with `{controlPlane: {version}}`, so a
 * worker's script can fetch the kubeadm that matches its control plane
 * (kubernetes-sigs/cluster-api#13433). bootwright evaluates the part of the template
 * language such a file uses: field chains (`{{ .controlPlane.version }}`), the trim
 * markers `{{-` and `-}}`, and comments. Anything else (pipelines, functions, `if`,
 * `range`) is refused with its position rather than guessed at.
 */
import { type FieldProblem } from '../../errors.js';

/** The data a template sees: `.controlPlane.version` is a `v`-prefixed Kubernetes version. */
export interface TemplateData {
  controlPlane: { version: string };
}

/** One action: `{{`, an optional `-` trim marker, the body, an optional trim marker, `}}`. */
const ACTION = /\{\{(-\s)?\s*([\s\S]*?)\s*(\s-)?\}\}/g;
/** A field chain such as `.controlPlane.version` (Go identifiers). */
const FIELD_CHAIN = /^(\.[A-Za-z_][A-Za-z0-9_]*)+$/;
/** A comment action `/* … *\/` (Go allows only this form, trim markers around it). */
const COMMENT = /^\/\*[\s\S]*\*\/$/;

/** Line and column (1-based) of an offset, for messages that must not quote the content. */
function position(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return `line ${line} column ${offset - before.lastIndexOf('\n')}`;
}

/**
 * Execute a Cluster API file template (Go `text/template` semantics for the supported
 * subset): `{{ .a.b }}` prints the field; `{{-` trims the white space before the action
 * and `-}}` the white space after it; `{{/* … *\/}}` prints nothing. A field that does
 * not exist is an error (Go's `missingkey=error`), as is any other action.
 *
 * @param text the file content (UTF-8 text)
 * @param data the values the template may read
 * @param field the request field of the content, for problems
 * @param problems receives one problem per bad action (position only; the content is
 *   never quoted, since it may hold secrets)
 * @returns the rendered text (meaningless when problems were added)
 */
export function executeTemplate(text: string, data: TemplateData, field: string, problems: FieldProblem[]): string {
  let out = '';
  let last = 0;
  let trimNext = false;
  for (const m of text.matchAll(ACTION)) {
    let literal = text.slice(last, m.index);
    if (trimNext) literal = literal.replace(/^\s+/, '');
    if (m[1]) literal = literal.replace(/\s+$/, '');
    out += literal;
    last = m.index + m[0].length;
    trimNext = m[3] !== undefined;
    const body = m[2]!;
    if (COMMENT.test(body)) continue;
    if (!FIELD_CHAIN.test(body)) {
      problems.push({ path: field, message: `template action at ${position(text, m.index)} is not supported: bootwright evaluates field references such as {{ .controlPlane.version }}, not functions, pipelines or control structures` });
      continue;
    }
    let value: unknown = data;
    for (const key of body.slice(1).split('.')) {
      value = typeof value === 'object' && value !== null && Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
    }
    if (typeof value !== 'string') {
      problems.push({ path: field, message: `template at ${position(text, m.index)} reads ${body}, which does not exist; available: .controlPlane.version` });
      continue;
    }
    out += value;
  }
  let tail = text.slice(last);
  const open = tail.indexOf('{{');
  if (open >= 0) problems.push({ path: field, message: `template action at ${position(text, last + open)} is not closed with }}` });
  if (trimNext) tail = tail.replace(/^\s+/, '');
  return out + tail;
}
