/**
 * The render cache (DESIGN §4): bounded in-process LRUs keyed by content, so replicas
 * never serve each other's stale data.
 *
 * Two levels, both bounded in bytes:
 * - requests: hash of the raw body (syntax + text) → the validated request and its
 *   canonical digest, so a repeated body is neither parsed nor validated again;
 * - renders: hash of (canonical request digest, format, requested Ignition version,
 *   renderer version) → the finished render. Equivalent requests (key order, YAML
 *   versus JSON) share the canonical digest and so hit the same render.
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import stringify from 'safe-stable-stringify';
import type { RenderResult } from '../render.js';
import type { RequestSyntax } from '../request/parse.js';
import type { NodeBootstrap, OutputFormat } from '../request/schema.js';
import { RENDERER_VERSION } from '../version.js';

/** Counters the metrics read (render level). */
export interface CacheStats {
  hits: number;
  misses: number;
}

/** A validated request and the digest of its canonical form. */
export interface KnownRequest {
  req: NodeBootstrap;
  /** base64url SHA-256 of the canonical JSON (keys sorted, binary as base64). */
  digest: string;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('base64url');

/**
 * Digest of a validated request's canonical JSON: keys sorted, so key order and YAML
 * versus JSON do not matter; binary contents as `{base64}`.
 */
export function requestDigest(req: NodeBootstrap): string {
  const canonical = stringify(req, (_key, value: unknown) => (value instanceof Uint8Array ? { base64: Buffer.from(value).toString('base64') } : value));
  return sha256(canonical ?? '');
}

/**
 * Key of one render of a request: renderer version, format, requested Ignition spec,
 * the platform asked by the query (`-` for none asked; `null` for limits turned off),
 * the request's canonical digest (which covers `spec.output`), and the boot report URL
 * carried in the data (none for a bare render).
 */
export function renderKey(digest: string, format: OutputFormat, ignitionVersion: string | undefined, platform?: string | null, reportUrl?: string): string {
  const report = reportUrl === undefined ? '' : `\n${reportUrl}`;
  return sha256(`${RENDERER_VERSION}\n${format}\n${ignitionVersion ?? ''}\n${platform === undefined ? '-' : String(platform)}\n${digest}${report}`);
}

/** The two LRUs. Cached objects are shared between requests and never mutated. */
export class RenderCache {
  private readonly renders: LRUCache<string, RenderResult> | undefined;
  private readonly requests: LRUCache<string, KnownRequest & { bytes: number }> | undefined;
  readonly stats: CacheStats = { hits: 0, misses: 0 };

  /**
   * @param maxBytes bound on the summed sizes of cached bodies, in bytes, for each level
   *   (rendered bodies; raw request texts); 0 disables caching.
   */
  constructor(maxBytes: number) {
    this.renders = maxBytes > 0 ? new LRUCache<string, RenderResult>({ maxSize: maxBytes, sizeCalculation: (r) => Math.max(1, r.size) }) : undefined;
    this.requests = maxBytes > 0 ? new LRUCache<string, KnownRequest & { bytes: number }>({ maxSize: maxBytes, sizeCalculation: (r) => Math.max(1, r.bytes) }) : undefined;
  }

  /**
   * The validated request for a raw body, parsing and validating only on a miss.
   *
   * @throws whatever `parse` throws (RequestError for bad input; nothing is cached).
   */
  request(text: string, syntax: RequestSyntax, parse: () => NodeBootstrap): KnownRequest {
    const key = sha256(`${syntax}\n${text}`);
    const known = this.requests?.get(key);
    if (known) return known;
    const req = parse();
    const entry = { req, digest: requestDigest(req), bytes: Buffer.byteLength(text) };
    this.requests?.set(key, entry);
    return entry;
  }

  /**
   * The validated request for an immutable source other than a body (a stored
   * machine's three revisions), building it only on a miss.
   *
   * @param key identifies the source's content forever (it must change whenever the
   *   content could), e.g. the machine, cluster and profile names and revisions.
   * @throws whatever `build` throws (nothing is cached).
   */
  assembled(key: string, build: () => NodeBootstrap): KnownRequest {
    const cacheKey = sha256(`assembled\n${key}`);
    const known = this.requests?.get(cacheKey);
    if (known) return known;
    const req = build();
    const digest = requestDigest(req);
    // Stored specs are JSON values (no binary), so their JSON size is the charge.
    const entry = { req, digest, bytes: Buffer.byteLength(JSON.stringify(req)) };
    this.requests?.set(cacheKey, entry);
    return entry;
  }

  /** The cached render for `key`, or the result of `render()` (cached when it fits). */
  render(key: string, render: () => RenderResult): RenderResult {
    const hit = this.renders?.get(key);
    if (hit) {
      this.stats.hits++;
      return hit;
    }
    this.stats.misses++;
    const result = render();
    this.renders?.set(key, result);
    return result;
  }

  /** Bytes of rendered bodies held. */
  get bytes(): number {
    return this.renders?.calculatedSize ?? 0;
  }
}
