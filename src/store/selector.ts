/**
 * Kubernetes label selectors, as `kubectl get -l` and the `labelSelector` query parameter
 * take them (k8s.io/apimachinery/pkg/labels, `Parse`): requirements separated by commas,
 * every one of which must hold.
 *
 *   key=value, key==value   the label is present with this value
 *   key!=value              the label is absent, or has another value
 *   key in (v1,v2)          the label is present with one of these values
 *   key notin (v1,v2)       the label is absent, or has none of these values
 *   key                     the label is present (any value)
 *   !key                    the label is absent
 *
 * Keys and values are checked as Kubernetes label keys and values. The numeric `gt` and
 * `lt` operators (`key>1`) of apimachinery are not supported: they are refused by name.
 */
import { InvalidArgumentError } from './errors.js';

/** One requirement of a selector (apimachinery's `Requirement`). */
export interface LabelRequirement {
  key: string;
  /** `in`: present with one of `values`; `notin`: absent or none of them; `exists`; `!`: absent. */
  operator: 'in' | 'notin' | 'exists' | '!';
  /** The values of `in` and `notin` (one for `=` and `!=`), distinct, sorted; empty otherwise. */
  values: string[];
}

/** Caps on a label selector: its characters and its terms. */
export interface LabelSelectorLimits {
  maxChars: number;
  /** Requirements plus the extra values of sets: each is a condition of the store's query. */
  maxTerms: number;
}

/** The configuration's defaults (`src/config.ts`). */
export const DEFAULT_LABEL_SELECTOR_LIMITS: Readonly<LabelSelectorLimits> = { maxChars: 1024, maxTerms: 32 };

/** A label key: an optional DNS-subdomain prefix and `/`, then a name (as in src/store/resources.ts). */
const KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
/** A label value: empty, or a name of up to 63 characters. */
const VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

const bad = (reason: string) => new InvalidArgumentError('labelSelector', reason);

function checkKey(key: string): string {
  if (!KEY.test(key) || key.length > 317) throw bad(`"${key.slice(0, 80)}" is not a label key (a name of up to 63 letters, digits, "-", "_", "." with an optional DNS prefix and "/")`);
  return key;
}

function checkValue(value: string): string {
  if (!VALUE.test(value)) throw bad(`"${value.slice(0, 80)}" is not a label value (up to 63 letters, digits, "-", "_", ".", beginning and ending with a letter or digit)`);
  return value;
}

/** Split on commas outside parentheses. @throws InvalidArgumentError for unbalanced parentheses. */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') {
      if (++depth > 1) throw bad('has a "(" inside a set');
    } else if (c === ')') {
      if (--depth < 0) throw bad('has a ")" without its "("');
    } else if (c === ',' && depth === 0) {
      terms.push(text.slice(start, i));
      start = i + 1;
    }
  }
  if (depth !== 0) throw bad('has a "(" without its ")"');
  terms.push(text.slice(start));
  return terms;
}

/** One requirement from its text (trimmed, not empty). */
function parseTerm(term: string): LabelRequirement {
  let m = /^!\s*(\S+)$/.exec(term);
  if (m) return { key: checkKey(m[1]!), operator: '!', values: [] };
  m = /^(\S+?)\s+(in|notin)\s*\(([^()]*)\)$/.exec(term);
  if (m) {
    const values = m[3]!.split(',').map((v) => checkValue(v.trim()));
    if (m[3]!.trim() === '') throw bad(`the set of "${m[1]!}" ${m[2]!} is empty: give at least one value`);
    return { key: checkKey(m[1]!), operator: m[2] as 'in' | 'notin', values: [...new Set(values)].sort() };
  }
  m = /^([^=!<>\s]+)\s*(==|=|!=)\s*([^,\s]*)$/.exec(term);
  if (m) return { key: checkKey(m[1]!), operator: m[2] === '!=' ? 'notin' : 'in', values: [checkValue(m[3]!)] };
  if (/^[^=!<>\s]+\s*[<>]/.test(term)) throw bad(`"${term.slice(0, 80)}": the gt and lt operators are not supported`);
  m = /^([^=!<>()\s]+)$/.exec(term);
  if (m) return { key: checkKey(m[1]!), operator: 'exists', values: [] };
  throw bad(`"${term.slice(0, 80)}" is not a requirement: use key=value, key!=value, key in (a,b), key notin (a,b), key or !key`);
}

/**
 * Parse a label selector (this module's grammar).
 *
 * @param limits the longest selector (characters) and the most terms
 *   (`BOOTWRIGHT_MAX_LABEL_SELECTOR_CHARS`, `BOOTWRIGHT_MAX_LABEL_SELECTOR_TERMS`): the
 *   length is checked before anything is read, the terms (requirements, plus one per
 *   further value of a set) before any is parsed; each is a condition of the store's query.
 * @returns the requirements, in the order written (an empty selector selects everything).
 * @throws InvalidArgumentError naming `labelSelector`: over a limit, a term that is not a
 *   requirement, a key or value that is not a label's, or an empty set.
 */
export function parseLabelSelector(text: string, limits: LabelSelectorLimits = DEFAULT_LABEL_SELECTOR_LIMITS): LabelRequirement[] {
  if (text.length > limits.maxChars) {
    throw bad(`is ${text.length} characters long; the limit is ${limits.maxChars} (BOOTWRIGHT_MAX_LABEL_SELECTOR_CHARS)`);
  }
  // Every comma separates two terms, inside a set or not: one pass, before any parsing.
  let terms = 1;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 0x2c) terms++;
  if (terms > limits.maxTerms) throw bad(`has ${terms} terms; the limit is ${limits.maxTerms} (BOOTWRIGHT_MAX_LABEL_SELECTOR_TERMS)`);
  return splitTerms(text)
    .map((t) => t.trim())
    .filter((t) => t !== '')
    .map(parseTerm);
}

/**
 * The requirements of a selector given as either form: requirements as they are, or an
 * equality map (`{ env: 'prod' }`, every label present with its value).
 */
export function requirementsOf(selector: readonly LabelRequirement[] | Record<string, string> | undefined): LabelRequirement[] {
  if (selector === undefined) return [];
  if (Array.isArray(selector)) return selector as LabelRequirement[];
  return Object.entries(selector).map(([key, value]) => ({ key, operator: 'in', values: [value] }));
}

/**
 * Whether labels satisfy every requirement (the store's SQL says the same; this is the
 * reference the property test compares it with, and what clients filtering locally use).
 */
export function selects(requirements: readonly LabelRequirement[], labels: Readonly<Record<string, string>>): boolean {
  return requirements.every((r) => {
    const has = Object.hasOwn(labels, r.key);
    switch (r.operator) {
      case 'in':
        return has && r.values.includes(labels[r.key]!);
      case 'notin':
        return !has || !r.values.includes(labels[r.key]!);
      case 'exists':
        return has;
      default:
        return !has;
    }
  });
}
