/**
 * Ignition's config merging (coreos/ignition `config/merge/merge.go`, "Rules of Config
 * Merging"; the same rules Ignition applies to `ignition.config.merge`), on plain JSON
 * config objects: the parent is the config bootwright generates, the child the additional
 * config.
 *
 * - Objects merge field by field; a scalar the child sets (not null) wins, else the
 *   parent's stays.
 * - Lists marked "ignore duplicates" are concatenated, parent first: `files[].append`,
 *   `filesystems[].options`/`mountOptions`, `luks[].options`, `raid[].options`.
 * - Other lists merge by key: parent items in parent order (merged with the child item of
 *   the same key, when there is one), then the child's new items in child order. Keys:
 *   `path` (files, directories and links share one key space: a child entry at a path
 *   the parent holds in another of the three lists removes the parent's entry), `name`
 *   (units, dropins, users, groups, raid, luks, httpHeaders), `device` (disks,
 *   filesystems), `number` else `label` (partitions), `source` (config merge list,
 *   certificate authorities), `url` (tang), the value itself (lists of strings, e.g.
 *   `sshAuthorizedKeys`, `groups`: appended without repeats).
 * - An `httpHeaders` child item whose `value` is null removes the parent's header.
 *
 * One deliberate difference: a child resource that names a `source` replaces the parent's
 * resource whole. Ignition would keep the parent's `compression` and `verification`
 * beside the child's `source`, describing bytes that are no longer there (Butane writes
 * `compression: ""` for that reason); bootwright's parents carry `compression: gzip` on
 * their data URLs.
 */
import { isObject } from './shape.js';

type Obj = Record<string, unknown>;

/** Lists concatenated as they are (Ignition `IgnoreDuplicates`), by the field holding them. */
const APPEND_LISTS = new Set(['append', 'options', 'mountOptions']);
/** Fields holding a resource (see the header: replaced whole when the child names a source). */
const RESOURCE_FIELDS = new Set(['contents', 'replace', 'keyFile']);
/** Lists that share one key space (Ignition `Storage.MergedKeys`: the "Node" handle). */
const NODE_LISTS = ['files', 'directories', 'links'];

function keyOf(list: string, item: unknown): string {
  if (!isObject(item)) return `=${String(item)}`;
  switch (list) {
    case 'files':
    case 'directories':
    case 'links':
      return String(item.path);
    case 'disks':
    case 'filesystems':
      return String(item.device);
    case 'partitions':
      return typeof item.number === 'number' && item.number !== 0 ? `number:${item.number}` : typeof item.label === 'string' ? `label:${item.label}` : '';
    case 'merge':
    case 'certificateAuthorities':
      return String(item.source);
    case 'tang':
      return String(item.url);
    default:
      return String(item.name);
  }
}

function mergeValue(field: string, parent: unknown, child: unknown): unknown {
  if (child === undefined || child === null) return parent;
  if (parent === undefined || parent === null) return child;
  if (Array.isArray(parent) && Array.isArray(child)) {
    const [p, c] = [parent as unknown[], child as unknown[]];
    return APPEND_LISTS.has(field) ? [...p, ...c] : mergeKeyed(field, p, c);
  }
  if (isObject(parent) && isObject(child)) {
    if (RESOURCE_FIELDS.has(field) && child.source !== undefined && child.source !== null) return child;
    return mergeObjects(parent, child);
  }
  return child;
}

function mergeKeyed(field: string, parent: unknown[], child: unknown[]): unknown[] {
  const childByKey = new Map<string, unknown>();
  for (const item of child) childByKey.set(keyOf(field, item), item);
  const parentKeys = new Set(parent.map((item) => keyOf(field, item)));
  const out: unknown[] = [];
  for (const item of parent) {
    const key = keyOf(field, item);
    if (!childByKey.has(key)) {
      out.push(item);
      continue;
    }
    const c = childByKey.get(key);
    if (field === 'httpHeaders' && isObject(c) && (c.value === null || c.value === undefined)) continue;
    out.push(isObject(item) && isObject(c) ? mergeObjects(item, c) : c);
  }
  for (const item of child) if (!parentKeys.has(keyOf(field, item))) out.push(item);
  return out;
}

/**
 * Merge two config objects (or any two objects of the same config type) by the rules in
 * this module's header. Keys come in the parent's order, then the child's new ones;
 * neither input is modified.
 */
export function mergeObjects(parent: Obj, child: Obj): Obj {
  let p = parent;
  // Storage: a path the child holds in another of files/directories/links drops the parent's entry.
  if (NODE_LISTS.some((l) => Array.isArray(child[l])) && NODE_LISTS.some((l) => Array.isArray(parent[l]))) {
    p = { ...parent };
    for (const list of NODE_LISTS) {
      if (!Array.isArray(parent[list])) continue;
      const elsewhere = new Set(NODE_LISTS.filter((l) => l !== list).flatMap((l) => (Array.isArray(child[l]) ? child[l].map((i: unknown) => keyOf(l, i)) : [])));
      p[list] = (parent[list] as unknown[]).filter((i) => !elsewhere.has(keyOf(list, i)));
    }
  }
  // Own keys only, and the result built from entries: a key is never a prototype lookup.
  const entries: [string, unknown][] = Object.keys(p).map((key) => [key, mergeValue(key, p[key], Object.hasOwn(child, key) ? child[key] : undefined)]);
  for (const key of Object.keys(child)) if (!Object.hasOwn(p, key) && child[key] !== null && child[key] !== undefined) entries.push([key, child[key]]);
  return Object.fromEntries(entries);
}

/**
 * Merge an Ignition 3.x child config into a parent (Ignition `MergeStructTranscribe`
 * semantics, see the module header). Both are plain config objects of any 3.x version;
 * the result keeps the parent's `ignition.version` unless the child sets one (callers
 * set the version afterwards).
 */
export function mergeIgnitionConfigs(parent: Obj, child: Obj): Obj {
  return mergeObjects(parent, child);
}
