/**
 * Bounded work per document: every parsed body (a NodeBootstrap, an inventory document,
 * an additional Ignition config) is measured against caps before anything digests,
 * validates or renders it, in time linear in the parsed value.
 *
 * YAML aliases make a small text stand for a huge value (`&a [x, x]`, `&b [*a, *a]`, …:
 * a billion nodes in under 1 KB); js-yaml shares one object per anchor, so the walk
 * below measures each distinct object once (memoised by identity) and adds up what it
 * expands to. A value that contains itself (a recursive alias) is refused too.
 */
import { type FieldProblem, RequestError } from '../errors.js';

/** The caps a parsed document must keep, each named after its configuration variable. */
export interface DocumentLimits {
  /** Deepest nesting of mappings and sequences, aliases expanded (`BOOTWRIGHT_MAX_DEPTH`). */
  maxDepth: number;
  /** Values (mappings, sequences, scalars), aliases expanded (`BOOTWRIGHT_MAX_NODES`). */
  maxNodes: number;
  /** Items in any one sequence: files, users, mounts, commands … (`BOOTWRIGHT_MAX_LIST_ITEMS`). */
  maxListItems: number;
  /** Characters of keys and strings (and bytes of `!!binary`), aliases expanded (`BOOTWRIGHT_MAX_DOCUMENT_CHARS`). */
  maxDocumentChars: number;
  /** YAML aliases (`*name`) in one document (`BOOTWRIGHT_MAX_ALIASES`). */
  maxAliases: number;
}

/** The defaults (also the configuration's defaults, see `src/config.ts`). */
export const DEFAULT_DOCUMENT_LIMITS: Readonly<DocumentLimits> = {
  maxDepth: 32,
  maxNodes: 20_000,
  maxListItems: 256,
  maxDocumentChars: 4 * 1024 * 1024,
  maxAliases: 100,
};

/** Configuration variable of each limit, for messages. */
export const LIMIT_VARIABLES: Record<keyof DocumentLimits, string> = {
  maxDepth: 'BOOTWRIGHT_MAX_DEPTH',
  maxNodes: 'BOOTWRIGHT_MAX_NODES',
  maxListItems: 'BOOTWRIGHT_MAX_LIST_ITEMS',
  maxDocumentChars: 'BOOTWRIGHT_MAX_DOCUMENT_CHARS',
  maxAliases: 'BOOTWRIGHT_MAX_ALIASES',
};

/**
 * Keys that name `Object.prototype` machinery: as a key of a plain object they change
 * (`__proto__`) or shadow (`constructor`, `prototype`) what every lookup on it sees.
 */
const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** The message for a document over `limit`: what it has, then the limit and its variable. */
export function limitMessage(limit: keyof DocumentLimits, value: number, what: string): string {
  return `${what}; the limit is ${value} (${LIMIT_VARIABLES[limit]})`;
}

/** What one distinct object expands to. */
interface Measure {
  nodes: number;
  chars: number;
  /** Nesting levels at and below it (a scalar is 0, `[]` is 1). */
  height: number;
}

/** Thrown inside the walk, caught by {@link checkBounds}. */
class Breach extends Error {
  readonly path: readonly PropertyKey[];

  constructor(
    readonly status: 400 | 413 | 422,
    path: readonly PropertyKey[],
    message: string,
  ) {
    super(message);
    this.path = [...path];
  }
}

/**
 * Check a parsed value against `limits`.
 *
 * Each distinct object is visited once (so the walk is linear in the parsed value, not
 * in what its aliases expand to); recursion stops at `maxDepth + 1` levels. Checked per
 * object: sequence length, reserved keys; per document: depth, nodes and characters
 * after alias expansion, recursive aliases.
 *
 * @param value a value from JSON.parse or js-yaml's `load` (plain objects, arrays,
 *   strings, numbers, booleans, null, `Uint8Array` for `!!binary`).
 * @param limits the caps.
 * @param format renders a path for messages (e.g. `spec.provisioning.files`).
 * @param options.reservedKeys whether to refuse reserved keys (default true; false for
 *   a reader that treats them as ordinary unknown keys itself).
 * @throws RequestError: 413 naming the field and the limit for a list, depth, node or
 *   character cap; 422 for a reserved key (`__proto__`, `constructor`, `prototype`);
 *   400 for a value that contains itself.
 */
export function checkBounds(value: unknown, limits: DocumentLimits, format: (path: readonly PropertyKey[]) => string, options: { reservedKeys?: boolean } = {}): void {
  const refuseReserved = options.reservedKeys ?? true;
  const memo = new Map<object, Measure>();
  const onPath = new Set<object>();
  const path: PropertyKey[] = [];

  const measure = (node: unknown, depth: number): Measure => {
    if (typeof node === 'string') return { nodes: 1, chars: node.length, height: 0 };
    if (node instanceof Uint8Array) return { nodes: 1, chars: node.byteLength, height: 0 };
    if (node === null || typeof node !== 'object') return { nodes: 1, chars: 0, height: 0 };
    const known = memo.get(node);
    if (known) {
      if (depth + known.height > limits.maxDepth) throw new Breach(413, path, limitMessage('maxDepth', limits.maxDepth, `nests ${depth + known.height} levels deep`));
      return known;
    }
    if (onPath.has(node)) throw new Breach(400, path, 'contains itself (a recursive YAML alias), which has no finite value');
    if (depth + 1 > limits.maxDepth) throw new Breach(413, path, limitMessage('maxDepth', limits.maxDepth, `nests at least ${depth + 1} levels deep`));
    onPath.add(node);
    const total: Measure = { nodes: 1, chars: 0, height: 1 };
    const add = (child: unknown): void => {
      const m = measure(child, depth + 1);
      total.nodes += m.nodes;
      total.chars += m.chars;
      if (m.height + 1 > total.height) total.height = m.height + 1;
      if (total.nodes > limits.maxNodes) throw new Breach(413, path, limitMessage('maxNodes', limits.maxNodes, `expands to at least ${total.nodes} values`));
      if (total.chars > limits.maxDocumentChars) throw new Breach(413, path, limitMessage('maxDocumentChars', limits.maxDocumentChars, `expands to at least ${total.chars} characters`));
    };
    if (Array.isArray(node)) {
      if (node.length > limits.maxListItems) throw new Breach(413, path, limitMessage('maxListItems', limits.maxListItems, `has ${node.length} items`));
      for (let i = 0; i < node.length; i++) {
        path.push(i);
        add(node[i]);
        path.pop();
      }
    } else {
      for (const key of Object.keys(node)) {
        path.push(key);
        if (refuseReserved && RESERVED_KEYS.has(key)) throw new Breach(422, path, `"${key}" is not allowed as a key`);
        total.chars += key.length;
        add((node as Record<string, unknown>)[key]);
        path.pop();
      }
    }
    onPath.delete(node);
    memo.set(node, total);
    return total;
  };

  try {
    measure(value, 0);
  } catch (e) {
    if (!(e instanceof Breach)) throw e;
    const problem: FieldProblem = { path: format(e.path), message: e.message };
    throw new RequestError([problem], e.status);
  }
}

/**
 * The nesting depth of JSON text, by one scan over it (outside strings, `[` and `{`
 * open a level): JSON.parse and the duplicate-key scan recurse per level, so text
 * nested past `maxDepth` is refused before either runs.
 *
 * @throws RequestError (413) at line and column of the first bracket past the limit.
 */
export function checkJsonDepth(text: string, maxDepth: number): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > maxDepth) {
        const before = text.slice(0, i);
        const line = before.split('\n').length;
        const column = i - before.lastIndexOf('\n');
        throw new RequestError([{ path: '', message: `JSON at line ${line} column ${column} ${limitMessage('maxDepth', maxDepth, `nests at least ${depth} levels deep`)}` }], 413);
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
}
