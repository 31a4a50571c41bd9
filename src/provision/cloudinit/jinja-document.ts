/**
 * Writing a `## template: jinja` cloud-config: the request's instance-data expressions
 * are replaced by marks (plain ASCII words the YAML serializer writes as they are) before
 * the document is serialized, and put back afterwards, once every other `{{`, `{%` and
 * `{#` of the serialized text has been escaped ({@link escapeForJinja}). So cloud-init's
 * Jinja pass renders exactly the expressions the request meant, each as written, and
 * gives back every other byte of the YAML the serializer wrote.
 */
import type { ProvisioningPlan } from '../plan/types.js';
import { dumpYaml } from '../../yaml/dump.js';
import { escapeForJinja, JINJA_HEADER, scanJinja } from './jinja.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);

/** The marks of one document. */
export class JinjaMarks {
  private readonly sources: string[] = [];
  private readonly pattern: RegExp;

  private constructor(private readonly prefix: string) {
    this.pattern = new RegExp(`${prefix}(\\d+)q`, 'g');
  }

  /**
   * Marks whose prefix (`bwjinja<N>q`) occurs nowhere in `plain`, the document serialized
   * without marks (N is one more than any N found there: linear in its size).
   */
  static avoiding(plain: string): JinjaMarks {
    let n = 0;
    for (const m of plain.matchAll(/bwjinja(\d{1,9})q/g)) n = Math.max(n, Number(m[1]) + 1);
    return new JinjaMarks(`bwjinja${n}q`);
  }

  /** `text` with each instance-data expression ({@link scanJinja}) replaced by a mark. */
  mark(text: string): string {
    const { expressions } = scanJinja(text);
    if (expressions.length === 0) return text;
    let out = '';
    let at = 0;
    for (const e of expressions) {
      out += `${text.slice(at, e.start)}${this.prefix}${this.sources.length}q`;
      this.sources.push(e.source);
      at = e.end;
    }
    return out + text.slice(at);
  }

  /** A copy of `value` with every string value (not keys) {@link mark}ed. */
  markStrings<T>(value: T): T {
    if (typeof value === 'string') return this.mark(value) as T;
    if (Array.isArray(value)) return value.map((v: unknown) => this.markStrings(v)) as T;
    if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.markStrings(v)])) as T;
    return value;
  }

  /** Whether a string holds a mark (the serializer then double-quotes it). */
  has(value: string): boolean {
    return value.includes(this.prefix);
  }

  /**
   * The final document: the Jinja header, then `text` with everything but the marks
   * escaped and each mark replaced by its expression as written.
   *
   * @throws Error when a mark went missing or was duplicated (a serializer fault)
   */
  finish(text: string): string {
    let out = '';
    let at = 0;
    let seen = 0;
    for (const m of text.matchAll(this.pattern)) {
      out += escapeForJinja(text.slice(at, m.index), true) + this.sources[Number(m[1])]!;
      at = m.index + m[0].length;
      seen++;
    }
    if (seen !== this.sources.length) throw new Error(`cloud-config Jinja: ${this.sources.length} expressions marked, ${seen} found after serializing`);
    return `${JINJA_HEADER}\n${out}${escapeForJinja(text.slice(at))}`;
  }
}

/** How request text enters a document: as it is, or with its Jinja expressions marked ({@link JinjaMarks}). */
export interface Mark {
  /** A command or plain-text file content of the request. */
  text: (text: string) => string;
  /** The kubeadm documents, serialized; undefined: the plan's `contents`. */
  kubeadm?: (documents: readonly Record<string, unknown>[]) => string;
}

/** Request text as it is (a document without Jinja). */
export const LITERAL: Mark = { text: (t) => t };

/**
 * A cloud-config document (`#cloud-config`, then the YAML of `build(mark)`), with
 * instance-data Jinja when the plan reads instance data (`plan.bootValues.jinja`): the
 * Jinja header first, request text through the marks (all of it for Cluster API input,
 * the kubeadm configuration only for `spec.nodeName.fromMetadata`), values holding an
 * expression double-quoted, every other brace escaped. Shared by the cloud-init and
 * cloudbase-init renderers, which read the same header.
 *
 * @param build the renderer's document, request text through `mark`
 */
export function cloudConfigWithJinja(plan: ProvisioningPlan, build: (mark: Mark) => Record<string, unknown>): string {
  const scope = plan.bootValues?.jinja;
  if (scope === undefined) return `#cloud-config\n${dumpYaml(build(LITERAL))}`;
  // The plain document first, so the marks' prefix is one no value contains.
  const marks = JinjaMarks.avoiding(dumpYaml(build(LITERAL)));
  const doubleQuote = (v: string) => marks.has(v);
  const mark: Mark = {
    text: scope === 'request' ? (t) => marks.mark(t) : (t) => t,
    kubeadm: (docs) => docs.map((d) => `---\n${dumpYaml(marks.markStrings(d), { doubleQuote })}`).join(''),
  };
  return marks.finish(`#cloud-config\n${dumpYaml(build(mark), { doubleQuote })}`);
}
