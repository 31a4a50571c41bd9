/**
 * The render cache (DESIGN §4): bounded in-process LRUs keyed by content, so replicas
 * never serve each other's stale data.
 *
 * Two levels, both bounded in bytes:
 * - requests: the raw body (syntax + SHA-256 of its bytes), or an assembled machine's
 *   names and revisions → the validated request and its canonical digest, so a repeated
 *   body is neither decoded, parsed nor validated again;
 * - renders: (renderer version, format, served Ignition spec, platform, canonical request
 *   digest) → the finished render. Equivalent requests (key order, YAML versus JSON)
 *   share the canonical digest and so hit the same render.
 *
 * A miss is loaded once however many requests ask for it meanwhile: concurrent misses of
 * one key share the one load (a parse or render in the worker pool, src/work/pool.ts).
 * Lookups are synchronous ({@link RenderCache.peekRender}, {@link RenderCache.peekBody}),
 * so a cache hit allocates no promise.
 */
import { hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { RenderResult } from '../render.js';
import type { RequestSyntax } from '../request/parse.js';
import type { NodeBootstrap } from '../request/schema.js';
import { adoptRequest, type FollowedRender, type ValidatedRequest } from '../work/task.js';

/** Counters the metrics read (render level). */
export interface CacheStats {
  hits: number;
  misses: number;
}

/** A validated request, the digest of its canonical form and its size. */
export interface KnownRequest {
  req: NodeBootstrap;
  /** base64url SHA-256 of the canonical JSON (keys sorted, binary as base64). */
  digest: string;
  /** The body's bytes (or the assembled request's JSON bytes): the request cache's charge, and how the pool sizes a render. */
  bytes: number;
  /**
   * The render the worker made in the same trip as the parse or assembly (a task's
   * `render`, src/work/task.ts), under its render-cache key: only on what the load that
   * made it returns, never in the cache.
   */
  rendered?: FollowedRender;
}

/** The two LRUs. Cached objects are shared between requests and never mutated. */
export class RenderCache {
  private readonly renders: LRUCache<string, RenderResult> | undefined;
  private readonly requests: LRUCache<string, KnownRequest> | undefined;
  private readonly loadingRenders = new Map<string, Promise<RenderResult>>();
  private readonly loadingRequests = new Map<string, Promise<KnownRequest>>();
  readonly stats: CacheStats = { hits: 0, misses: 0 };
  /** The bound of each level, bytes (0: caching off). */
  readonly maxBytes: number;

  /**
   * @param maxBytes bound on the summed sizes of cached bodies, in bytes, for each level
   *   (rendered bodies; raw request texts); 0 disables caching.
   */
  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
    this.renders = maxBytes > 0 ? new LRUCache<string, RenderResult>({ maxSize: maxBytes, sizeCalculation: (r) => Math.max(1, r.size) }) : undefined;
    this.requests = maxBytes > 0 ? new LRUCache<string, KnownRequest>({ maxSize: maxBytes, sizeCalculation: (r) => Math.max(1, r.bytes) }) : undefined;
  }

  /**
   * The request-cache key of a raw body: its syntax and the base64url SHA-256 of its
   * bytes, as the render cache keys a request by the SHA-256 of its canonical form. One
   * native digest of the bytes costs less than a map hashing the body's text (V8 hashes
   * a string key char by char, about 2 µs per KB here, and again for each new string), and
   * a repeated body needs no UTF-8 decoding to be found.
   */
  bodyKey(bytes: Uint8Array, syntax: RequestSyntax): string {
    return `${syntax === 'json' ? 'j' : 'y'}${hash('sha256', bytes, 'base64url')}`;
  }

  /** The validated request cached under `key` (from {@link bodyKey}), if any. */
  peekBody(key: string): KnownRequest | undefined {
    return this.requests?.get(key);
  }

  /**
   * The validated request for a raw body's `key`, loading (parsing and validating) only
   * on a miss.
   *
   * @throws whatever `load` throws (RequestError for bad input; nothing is cached).
   */
  request(key: string, load: () => Promise<ValidatedRequest>): Promise<KnownRequest> {
    const known = this.requests?.get(key);
    return known ? Promise.resolve(known) : this.loadRequest(key, load);
  }

  /**
   * The validated request for an immutable source other than a body (a stored
   * machine's three revisions), building it only on a miss.
   *
   * @param key identifies the source's content forever (it must change whenever the
   *   content could), e.g. the machine, cluster and profile names and revisions.
   * @throws whatever `build` throws (nothing is cached).
   */
  assembled(key: string, build: () => Promise<ValidatedRequest>): Promise<KnownRequest> {
    return this.request(`a${key}`, build);
  }

  private loadRequest(key: string, load: () => Promise<ValidatedRequest>): Promise<KnownRequest> {
    let loading = this.loadingRequests.get(key);
    if (!loading) {
      loading = load()
        .then((v) => {
          const entry: KnownRequest = { req: adoptRequest(v), digest: v.digest, bytes: v.bytes };
          this.requests?.set(key, entry);
          return v.rendered ? { ...entry, rendered: v.rendered } : entry;
        })
        .finally(() => this.loadingRequests.delete(key));
      this.loadingRequests.set(key, loading);
    }
    return loading;
  }

  /** The cached render for `key` (counted as a hit), if any. */
  peekRender(key: string): RenderResult | undefined {
    const hit = this.renders?.get(key);
    if (hit) this.stats.hits++;
    return hit;
  }

  /**
   * Cache a render made elsewhere (a worker's, in the trip that parsed the request) under
   * `key`, counted as the miss it was; a render cached meanwhile under `key` wins.
   */
  adoptRender(key: string, result: RenderResult): RenderResult {
    const cached = this.renders?.get(key);
    if (cached) return cached;
    this.stats.misses++;
    this.renders?.set(key, result);
    return result;
  }

  /** Whether a render for `key` is cached (not counted, not made recent). */
  hasRender(key: string): boolean {
    return this.renders?.has(key) ?? false;
  }

  /**
   * The cached render for `key`, or the result of `render()` (cached when it fits).
   *
   * @param shareKey concurrent misses with the same share key wait for one render
   *   (default `key`; a caller whose errors would read differently, naming another
   *   field, passes its own).
   */
  render(key: string, render: () => Promise<RenderResult>, shareKey = key): Promise<RenderResult> {
    const hit = this.peekRender(key);
    if (hit) return Promise.resolve(hit);
    this.stats.misses++;
    let loading = this.loadingRenders.get(shareKey);
    if (!loading) {
      loading = render()
        .then((result) => {
          this.renders?.set(key, result);
          return result;
        })
        .finally(() => this.loadingRenders.delete(shareKey));
      this.loadingRenders.set(shareKey, loading);
    }
    return loading;
  }

  /** Bytes of rendered bodies held. */
  get bytes(): number {
    return this.renders?.calculatedSize ?? 0;
  }
}
