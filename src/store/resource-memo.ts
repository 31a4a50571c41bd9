/**
 * Current resources a store has read, remembered while the store is unchanged (issue 32):
 * a signed fetch reads its machine, cluster and profile, and in a boot storm every
 * machine names the same cluster and profile; a diskless machine reads its own at every
 * boot. The SQLite store keeps them here, keyed by kind and name, under a version that
 * changes whenever a resource may have: its own resource writes, and any commit of
 * another connection to the file (SQLite's `PRAGMA data_version`). A version other than
 * the entries' forgets them all.
 *
 * Bounded by the bytes of the rows they were read from. Entries are frozen (deeply), as
 * every caller shares them: a caller that tried to change one would throw, not change
 * what the next fetch reads.
 */
import { LRUCache } from 'lru-cache';
import type { ResourceKind, StoredResource } from './resources.js';
import type { SpecOf } from './store.js';

/** Freeze a JSON value and everything in it. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** The memo; see the module comment. */
export class ResourceMemo {
  private readonly entries: LRUCache<string, StoredResource>;
  private version: string | undefined;

  /** @param maxBytes the bound, in bytes of the rows read (their JSON text) */
  constructor(maxBytes: number) {
    this.entries = new LRUCache({ maxSize: maxBytes });
  }

  /** Keep the entries only if they were read at `version`; from now on, entries are of `version`. */
  at(version: string): void {
    if (version === this.version) return;
    this.entries.clear();
    this.version = version;
  }

  /** The resource remembered, or undefined. */
  get<K extends ResourceKind>(kind: K, name: string): StoredResource<SpecOf<K>> | undefined {
    return this.entries.get(`${kind}\0${name}`) as StoredResource<SpecOf<K>> | undefined;
  }

  /**
   * Remember a resource just read at the current version (frozen from now on).
   *
   * @param bytes the size of the row it was read from
   */
  set(resource: StoredResource, bytes: number): void {
    this.entries.set(`${resource.kind}\0${resource.name}`, deepFreeze(resource), { size: Math.max(1, bytes) });
  }
}
