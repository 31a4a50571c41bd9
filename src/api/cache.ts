/**
 * The render cache (DESIGN §4): a bounded in-process LRU of finished renders, keyed by
 * the hash of (normalised request, format, requested Ignition version, renderer version).
 * Keyed by content, so replicas never serve each other's stale data.
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import stringify from 'safe-stable-stringify';
import type { RenderResult } from '../render.js';
import type { NodeBootstrap, OutputFormat } from '../request/schema.js';
import { RENDERER_VERSION } from '../version.js';

/** Counters the metrics read. */
export interface CacheStats {
  hits: number;
  misses: number;
}

/**
 * Key for a render: SHA-256 over the canonical JSON of the validated request (keys
 * sorted, so key order and YAML-versus-JSON do not matter; binary contents as base64),
 * the format, the requested Ignition version and {@link RENDERER_VERSION}.
 */
export function renderKey(req: NodeBootstrap, format: OutputFormat, ignitionVersion: string | undefined): string {
  const canonical = stringify(req, (_key, value: unknown) => (value instanceof Uint8Array ? { base64: Buffer.from(value).toString('base64') } : value));
  return createHash('sha256').update(`${RENDERER_VERSION}\n${format}\n${ignitionVersion ?? ''}\n${canonical}`).digest('base64url');
}

/** An LRU of renders bounded by the total size of their bodies, in bytes. */
export class RenderCache {
  private readonly lru: LRUCache<string, RenderResult> | undefined;
  readonly stats: CacheStats = { hits: 0, misses: 0 };

  /** @param maxBytes bound on the summed body sizes; 0 disables caching. */
  constructor(maxBytes: number) {
    this.lru = maxBytes > 0 ? new LRUCache<string, RenderResult>({ maxSize: maxBytes, sizeCalculation: (r) => Math.max(1, r.size) }) : undefined;
  }

  /** The cached render for `key`, or the result of `render()` (cached when it fits). */
  getOrRender(key: string, render: () => RenderResult): RenderResult {
    const hit = this.lru?.get(key);
    if (hit) {
      this.stats.hits++;
      return hit;
    }
    this.stats.misses++;
    const result = render();
    this.lru?.set(key, result);
    return result;
  }

  /** Bytes of bodies held. */
  get bytes(): number {
    return this.lru?.calculatedSize ?? 0;
  }
}
