/**
 * Sending bootstrap data (DESIGN §4), shared by every route that serves it
 * (`POST /v1/render`, `GET /v1/machines/{name}/bootstrap`): negotiation → render cache →
 * strong ETag / `If-None-Match` 304 → the bytes, with `Vary: Accept` and
 * `Cache-Control: private, no-cache` (the data carries secrets).
 */
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { CLOUD_CONFIG_MEDIA_TYPE } from '../provision/cloudinit/render.js';
import { GZIP_MEDIA_TYPE, IGNITION_MEDIA_TYPE, renderNodeBootstrap, type RenderResult, servedIgnitionVersion } from '../render.js';
import { OUTPUT_FORMATS, type OutputFormat, PLATFORMS, type Platform } from '../request/schema.js';
import { type KnownRequest, renderKey } from './cache.js';
import { ENVELOPE_MEDIA_TYPE, negotiate, type Negotiated } from './negotiate.js';
import type { ServiceContext } from './server.js';

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
      [CLOUD_CONFIG_MEDIA_TYPE]: { schema: z.string().describe('a #cloud-config document') },
      [IGNITION_MEDIA_TYPE]: { schema: z.record(z.string(), z.unknown()).describe('an Ignition config (spec in the media type version parameter)') },
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

/**
 * What a bootstrap-data route's query may ask (`?format=`, `?ignitionVersion=`,
 * `?platform=`); `platform: null` turns platform limits off (a pointer's target).
 */
export interface DeliveryQuery {
  format?: OutputFormat | undefined;
  ignitionVersion?: string | undefined;
  platform?: Platform | null | undefined;
  /** The machine's signed boot report URL, carried in the data (routes that serve a stored machine). */
  reportUrl?: string | undefined;
}

/**
 * Negotiate (DESIGN §4) and render through the render cache: what
 * {@link sendBootstrapData} sends, and what a pointer config hashes.
 *
 * @throws as {@link sendBootstrapData}
 */
export function negotiatedRender(
  ctx: ServiceContext,
  request: FastifyRequest,
  known: KnownRequest,
  query: DeliveryQuery,
): { n: Negotiated; result: RenderResult } {
  const { req, digest } = known;
  const n = negotiate(query.format, request.headers.accept, req.spec.output?.format ?? 'cloud-config', (v) => servedIgnitionVersion(v) !== undefined);
  const requestedVersion = query.ignitionVersion ?? n.ignitionVersion;
  const result = ctx.cache.render(renderKey(digest, n.format, requestedVersion, query.platform, query.reportUrl), () =>
    renderNodeBootstrap(req, {
      format: n.format,
      ...(query.reportUrl !== undefined ? { reportUrl: query.reportUrl } : {}),
      ...(query.platform !== undefined ? { platform: query.platform, platformField: 'platform' } : {}),
      ...(requestedVersion !== undefined ? { ignitionVersion: requestedVersion, ignitionVersionField: query.ignitionVersion ? 'ignitionVersion' : 'Accept' } : {}),
    }),
  );
  ctx.metrics.renders.inc({ format: result.format, version: result.ignitionVersion ?? '' });
  return { n, result };
}

/**
 * Render a validated request as the client negotiated and send it.
 *
 * @param known the request and its canonical digest (render-cache key input).
 * @param query `?format=` and `?ignitionVersion=` (they win over `Accept`).
 * Sends 200 with the payload (cloud-config text, the Ignition config, or the JSON
 * envelope) and a strong ETag of those bytes, or 304 when `If-None-Match` matches it.
 *
 * @param beforeSend called with the render just before the reply is sent (its onSend
 *   hooks then see what the caller recorded, e.g. the audit details)
 * @returns the render sent (also for a 304)
 * @throws NotAcceptableError (406) when nothing acceptable is offered; RequestError
 *   (422) naming the field for anything the builder or renderer cannot express.
 */
export function sendBootstrapData(
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  known: KnownRequest,
  query: DeliveryQuery,
  beforeSend?: (result: RenderResult) => void,
): RenderResult {
  reply.header('vary', 'Accept');
  const { n, result } = negotiatedRender(ctx, request, known, query);
  beforeSend?.(result);
  const body = n.envelope ? Buffer.from(envelope(result), 'utf8') : (result.gzip ?? Buffer.from(result.body, 'utf8'));
  const etag = strongEtag(n.envelope ? createHash('sha256').update(body).digest('hex') : result.sha256);
  reply.header('etag', etag).header('cache-control', 'private, no-cache');
  if (noneMatch(request.headers['if-none-match'], etag)) {
    void reply.code(304).send();
    return result;
  }
  const type = n.envelope || result.format === 'ignition' || result.gzip ? (n.envelope ? ENVELOPE_MEDIA_TYPE : result.mediaType) : `${CLOUD_CONFIG_MEDIA_TYPE}; charset=utf-8`;
  // Bytes, not a string: fastify then sends the media type exactly as given (no added charset).
  void reply.header('content-type', type).send(body);
  return result;
}
