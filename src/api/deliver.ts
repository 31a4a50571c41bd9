/**
 * Sending bootstrap data (DESIGN §4), shared by every route that serves it
 * (`POST /v1/render`, `GET /v1/machines/{name}/bootstrap`): negotiation → render cache →
 * strong ETag / `If-None-Match` 304 → the bytes, with `Vary: Accept` and
 * `Cache-Control: private, no-cache` (the data carries secrets).
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { FORMATS, formatNamed } from '../provision/formats.js';
import { GZIP_MEDIA_TYPE, type RenderResult } from '../render.js';
import { OUTPUT_FORMATS, PLATFORMS } from '../request/schema.js';
import type { KnownRequest } from './cache.js';
import { ENVELOPE_MEDIA_TYPE, type Negotiated } from './negotiate.js';
import { type DeliveryQuery, type RenderPlan, renderPlan } from './render-plan.js';
import type { ServiceContext } from './context.js';
import { portable } from '../work/task.js';

/** The JSON envelope for OpenAPI clients. */
export const envelopeSchema = z
  .object({
    format: z.enum(OUTPUT_FORMATS),
    mediaType: z.string().describe('media type of data, e.g. application/vnd.coreos.ignition+json; version=3.4.0'),
    data: z.string().describe('the bootstrap data exactly as a node would receive it (base64 when dataEncoding says so)'),
    dataEncoding: z.literal('base64').optional().describe('base64: data is binary (a gzip-compressed cloud-config, mediaType application/gzip), base64-encoded here'),
    sha256: z.string().describe('hex SHA-256 of the bytes a node receives (data, decoded when base64)'),
    size: z.int().describe('size in bytes of what a node receives'),
    kubeadmApiVersion: z.string(),
    ignitionVersion: z.string().optional().describe('the Ignition spec of data: 3.0.0 to 3.6.0, or 2.3.0'),
    warnings: z.array(z.string()),
  })
  .meta({ id: 'RenderEnvelope' });

/** The query parameters every bootstrap-data route takes. */
export const deliveryQuery = {
  format: z.enum(OUTPUT_FORMATS).optional().describe('payload format; wins over Accept'),
  ignitionVersion: z
    .string()
    .regex(/^\d+\.\d+(\.\d+)?$/)
    .optional()
    .describe('Ignition spec to serve (highest supported 3.x not above it; 2.3.0 for 2.3 and later 2.x)'),
  platform: z
    .enum(PLATFORMS)
    .optional()
    .describe(
      "cloud platform whose user data limit applies, in raw bytes (aws 16384, azure 65535, gcp 262144, openstack 49149 = 65535 of base64, vsphere 65536): a cloud-config over it is served gzip-compressed whole (application/gzip); still over, or an Ignition config over it, is a 422. Default: the request's spec.output.platform",
    ),
};

/** The request headers every bootstrap-data route reads. */
export const deliveryHeaders = {
  accept: z.string().optional().describe('media types wanted, e.g. application/vnd.coreos.ignition+json;version=3.4.0'),
  'if-none-match': z.string().optional().describe('an ETag from an earlier response; a match answers 304'),
};

/** The 200 and 304 responses of every bootstrap-data route (OpenAPI). */
export const deliveryResponses = {
  200: {
    description: 'Bootstrap data',
    content: {
      ...Object.fromEntries(FORMATS.map((f) => [f.mediaType, { schema: f.body === 'text' ? z.string().describe(f.description) : z.record(z.string(), z.unknown()).describe(f.description) }])),
      [ENVELOPE_MEDIA_TYPE]: { schema: envelopeSchema },
      [GZIP_MEDIA_TYPE]: { schema: z.string().describe('a #cloud-config document, gzip-compressed whole to fit ?platform= (binary)') },
    },
  },
  304: z.undefined().describe('Not modified: If-None-Match matched the ETag'),
};

/** Envelope bytes, keys in a fixed order. */
function envelope(r: RenderResult): string {
  return JSON.stringify({
    format: r.format,
    mediaType: r.mediaType,
    data: r.gzip ? Buffer.from(r.gzip).toString('base64') : r.body,
    ...(r.gzip ? { dataEncoding: 'base64' } : {}),
    sha256: r.sha256,
    size: r.size,
    kubeadmApiVersion: r.kubeadmApiVersion,
    ...(r.ignitionVersion ? { ignitionVersion: r.ignitionVersion } : {}),
    warnings: r.warnings,
  });
}

/** A strong entity tag from the body's SHA-256 (RFC 9110 §8.8.3). */
export function strongEtag(sha256Hex: string): string {
  return `"${Buffer.from(sha256Hex, 'hex').toString('base64url')}"`;
}

/**
 * `If-None-Match` evaluation (RFC 9110 §13.1.2): `*` or any listed tag equal to ours
 * under weak comparison means the client already has it.
 */
export function noneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  const ours = etag.replace(/^W\//, '');
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === ours);
}

/** What a served render's answer needs, computed once per cached render (bytes, digests, ETags). */
interface Wire {
  /** The payload as sent. */
  bytes: Buffer;
  etag: string;
  /** `Content-Type` of the payload. */
  type: string;
  /** The JSON envelope and its ETag, once asked for. */
  envelope?: { bytes: Buffer; etag: string };
}

/** Wire forms of cached renders (main thread; a render is dropped from here when the cache drops it). */
const wires = new WeakMap<RenderResult, Wire>();

function wire(result: RenderResult): Wire {
  let w = wires.get(result);
  if (!w) {
    w = {
      bytes: result.gzip ? Buffer.from(result.gzip.buffer, result.gzip.byteOffset, result.gzip.byteLength) : Buffer.from(result.body, 'utf8'),
      etag: strongEtag(result.sha256),
      type: formatNamed(result.format).body === 'text' && !result.gzip ? `${result.mediaType}; charset=utf-8` : result.mediaType,
    };
    wires.set(result, w);
  }
  return w;
}

function envelopeWire(result: RenderResult): { bytes: Buffer; etag: string } {
  const w = wire(result);
  if (!w.envelope) {
    const bytes = Buffer.from(envelope(result), 'utf8');
    w.envelope = { bytes, etag: strongEtag(createHash('sha256').update(bytes).digest('hex')) };
  }
  return w.envelope;
}

/**
 * Render a known request with these options through the render cache: a hit at once;
 * a miss the worker already rendered for this plan, in the trip that parsed or assembled
 * the request (`known.rendered`), cached at once; another miss in the worker pool
 * (src/work/pool.ts), sized by the request's bytes (a small one renders on the main
 * thread, see `BOOTWRIGHT_RENDER_INLINE_BYTES`).
 *
 * @param background a render nobody waits for (pre-rendering): always in a worker, and
 *   not counted as demand; a request's miss is noted so pre-rendering steps aside
 *   (`Prerenderer.noteDemand`, src/api/prerender.ts).
 * @throws as {@link renderNodeBootstrap}; RenderOverloadedError and RenderTimeoutError (503).
 */
export function cachedRender(ctx: ServiceContext, known: KnownRequest, plan: Omit<RenderPlan, 'n'>, background = false): RenderResult | Promise<RenderResult> {
  const hit = ctx.cache.peekRender(plan.key);
  if (hit) return hit;
  if (!background) ctx.prerender.noteDemand();
  // Rendered by the worker in the trip that parsed or assembled the request, for this very plan.
  if (known.rendered?.key === plan.key) return ctx.cache.adoptRender(plan.key, known.rendered.result);
  return ctx.cache.render(plan.key, () => ctx.pool.run({ op: 'render', request: portable(known.req), options: plan.options }, background ? Number.POSITIVE_INFINITY : known.bytes), plan.shareKey);
}

/**
 * Negotiate (DESIGN §4) and render through the render cache: what
 * {@link sendBootstrapData} sends, and what a pointer config hashes.
 *
 * @throws as {@link sendBootstrapData}
 */
export async function negotiatedRender(ctx: ServiceContext, request: FastifyRequest, known: KnownRequest, query: DeliveryQuery): Promise<{ n: Negotiated; result: RenderResult }> {
  const plan = renderPlan(known, request.headers.accept, query);
  const result = await cachedRender(ctx, known, plan);
  ctx.metrics.renders.inc({ format: result.format, version: result.ignitionVersion ?? '' });
  return { n: plan.n, result };
}

/**
 * Render a validated request as the client negotiated and send it.
 *
 * @param known the request and its canonical digest (render-cache key input).
 * @param query `?format=` and `?ignitionVersion=` (they win over `Accept`).
 * Sends 200 with the payload (cloud-config text, the Ignition config, or the JSON
 * envelope) and a strong ETag of those bytes, or 304 when `If-None-Match` matches it.
 * A cache hit is answered without waiting on a promise; a miss waits for the pool.
 *
 * @param beforeSend called with the render just before the reply is sent (its onSend
 *   hooks then see what the caller recorded, e.g. the audit details)
 * @param admit asked once the render succeeded, before anything is sent: false when
 *   the caller has answered with a refusal instead (the firmware routes' fetch limits,
 *   which a refused negotiation or render must not use up)
 * @throws NotAcceptableError (406) when nothing acceptable is offered; RequestError
 *   (422) naming the field for anything the builder or renderer cannot express;
 *   RenderOverloadedError, RenderTimeoutError (503) from the pool. A returned promise
 *   rejects with the same.
 */
export function sendBootstrapData(
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  known: KnownRequest,
  query: DeliveryQuery,
  beforeSend?: (result: RenderResult) => void,
  admit?: () => Promise<boolean>,
): void | Promise<void> {
  reply.header('vary', 'Accept');
  const plan = renderPlan(known, request.headers.accept, query);
  const rendered = cachedRender(ctx, known, plan);
  if (!(rendered instanceof Promise) && admit === undefined) {
    send(ctx, request, reply, plan.n, rendered, beforeSend);
    return;
  }
  return Promise.resolve(rendered).then(async (result) => {
    if (admit && !(await admit())) return;
    send(ctx, request, reply, plan.n, result, beforeSend);
  });
}

/** Send a render as negotiated: 200 with the payload and its ETag, or 304; `beforeSend` first. */
function send(ctx: ServiceContext, request: FastifyRequest, reply: FastifyReply, n: Negotiated, result: RenderResult, beforeSend?: (result: RenderResult) => void): void {
  beforeSend?.(result);
  ctx.metrics.renders.inc({ format: result.format, version: result.ignitionVersion ?? '' });
  const w = n.envelope ? envelopeWire(result) : wire(result);
  reply.header('etag', w.etag).header('cache-control', 'private, no-cache');
  if (noneMatch(request.headers['if-none-match'], w.etag)) {
    void reply.code(304).send();
    return;
  }
  // Bytes, not a string: fastify then sends the media type exactly as given (no added charset).
  void reply.header('content-type', n.envelope ? ENVELOPE_MEDIA_TYPE : wire(result).type).send(w.bytes);
}
