/**
 * The whole pipeline (DESIGN §1): NodeBootstrap → kubeadm builder → ProvisioningPlan →
 * one renderer. Used by the CLI and the HTTP layer alike, so both give the same bytes.
 */
import { createHash } from 'node:crypto';
import { buildKubeadm } from './bootstrap/kubeadm/build.js';
import type { KubeadmApiVersion } from './bootstrap/kubeadm/version.js';
import { fieldError, RequestError } from './errors.js';
import { CLOUD_CONFIG_MEDIA_TYPE, renderCloudConfig } from './provision/cloudinit/render.js';
import { renderIgnition } from './provision/ignition/render.js';
import { renderIgnitionV2 } from './provision/ignition/v2/render.js';
import { LEGACY_IGNITION_SPEC, type LegacyIgnitionSpecVersion, legacySpecAtMost } from './provision/ignition/v2/version.js';
import { compareSpecs, highestSpecAtMost, type IgnitionSpecVersion } from './provision/ignition/versions.js';
import { buildPlan } from './provision/plan/build.js';
import { clusterApiOrigin, rewriteProblems, rewriteText } from './request/capi/convert.js';
import type { NodeBootstrap, OutputFormat, Platform } from './request/schema.js';
import { fitUserData, USER_DATA_LIMITS } from './platform.js';

/** The media type of Ignition configs (Ignition's own `Accept` names it). */
export const IGNITION_MEDIA_TYPE = 'application/vnd.coreos.ignition+json';

/** The media type of a payload delivered gzip-compressed whole (RFC 6713). */
export const GZIP_MEDIA_TYPE = 'application/gzip';

/** The first Ignition spec that decompresses `data:` URLs (`compression: gzip`). */
const GZIP_SPEC: IgnitionSpecVersion = '3.1.0';

/** An Ignition spec bootwright writes: 3.0.0–3.6.0, or the legacy 2.3.0. */
export type IgnitionOutputVersion = IgnitionSpecVersion | LegacyIgnitionSpecVersion;

/** What the caller asks of a render beyond the request itself (negotiation wins over `spec.output`). */
export interface RenderOptions {
  format?: OutputFormat;
  /**
   * Requested Ignition spec ({@link resolveIgnitionVersion}): 3.x gives the highest
   * supported 3.x spec not above it, 2.3 and later 2.x give 2.3.0. Absent:
   * `spec.output.ignitionVersion`, else the lowest 3.x spec that can express the config.
   */
  ignitionVersion?: string;
  /** Name of the field or flag `ignitionVersion` came from, for errors (default `spec.output.ignitionVersion`). */
  ignitionVersionField?: string;
  /**
   * The platform whose user data limit applies ({@link fitUserData}); absent:
   * `spec.output.platform`; `null`: none (e.g. for the target of a pointer config).
   */
  platform?: Platform | null;
  /** Name of the field or flag `platform` came from, for errors (default `spec.output.platform`). */
  platformField?: string;
  /**
   * The signed boot report URL of the machine the data is served for
   * (src/provision/plan/report.ts); absent for a bare render: no report.
   */
  reportUrl?: string;
}

/** A finished render. */
export interface RenderResult {
  format: OutputFormat;
  /**
   * `text/cloud-config`, `application/vnd.coreos.ignition+json; version=X`, or
   * `application/gzip` when the payload is the gzip of `body`.
   */
  mediaType: string;
  /** The document, UTF-8. */
  body: string;
  /**
   * The payload as delivered when it is not `body` itself: `body` gzip-compressed whole
   * (a cloud-config fitted into a platform's user data limit).
   */
  gzip?: Uint8Array;
  /** Hex SHA-256 of the delivered bytes (`gzip` when present, else `body`). */
  sha256: string;
  /** Size of the delivered bytes. */
  size: number;
  kubeadmApiVersion: KubeadmApiVersion;
  ignitionVersion?: IgnitionOutputVersion;
  warnings: string[];
}

/**
 * Resolve a requested Ignition spec to the one written (DESIGN §4): for 3.x the highest
 * supported spec not above it (`version=3.9.0` gives 3.6.0); for 2.x, 2.3.0 when the
 * request is 2.3.0 or later 2.x (Ignition v0.x reads any 2.x config at or below its own
 * spec), nothing below 2.3.0 (such an Ignition cannot read 2.3.0). See
 * `highestSpecAtMost` and `legacySpecAtMost`.
 *
 * @returns the spec, or undefined when none is served for `requested`
 */
export function servedIgnitionVersion(requested: string): IgnitionOutputVersion | undefined {
  return highestSpecAtMost(requested) ?? legacySpecAtMost(requested);
}

/**
 * {@link servedIgnitionVersion}, failing when there is none.
 *
 * @throws RequestError naming `field` when no spec is served for `requested` (1.x, 2.0–2.2, 4.x, garbage)
 */
export function resolveIgnitionVersion(requested: string, field: string): IgnitionOutputVersion {
  const version = servedIgnitionVersion(requested);
  if (!version) fieldError(field, `Ignition spec ${requested} is not supported; bootwright emits ${LEGACY_IGNITION_SPEC} and 3.0.0 to 3.6.0`);
  return version;
}

/**
 * Render a validated request.
 *
 * Format: `options.format`, then `spec.output.format`, then cloud-config. Ignition spec:
 * see {@link RenderOptions.ignitionVersion}; 2.3.0 is rendered by `renderIgnitionV2`
 * (the 3.0.0 config translated down), every 3.x spec by `renderIgnition`.
 *
 * @throws RequestError (422) naming the field for anything the builder or the renderer
 *   cannot express (for a request given in Cluster API shape, the Cluster API field).
 */
export function renderNodeBootstrap(req: NodeBootstrap, options: RenderOptions = {}): RenderResult {
  try {
    const result = render(req, options);
    const rewrite = clusterApiOrigin(req);
    return rewrite ? { ...result, warnings: result.warnings.map((w) => rewriteText(w, rewrite)) } : result;
  } catch (e) {
    // A request rewritten from Cluster API input: name the fields the caller wrote.
    const rewrite = e instanceof RequestError ? clusterApiOrigin(req) : undefined;
    if (rewrite) throw new RequestError(rewriteProblems((e as RequestError).problems, rewrite), (e as RequestError).status);
    throw e;
  }
}

function render(req: NodeBootstrap, options: RenderOptions): RenderResult {
  const format = options.format ?? req.spec.output?.format ?? 'cloud-config';
  const kubeadm = buildKubeadm(req);
  const plan = buildPlan(req, kubeadm, options.reportUrl !== undefined ? { url: options.reportUrl } : undefined);
  let body: string;
  let mediaType: string;
  let ignitionVersion: IgnitionOutputVersion | undefined;
  const warnings = [...plan.warnings];
  const platform = options.platform === undefined ? req.spec.output?.platform : (options.platform ?? undefined);
  if (format === 'ignition') {
    const requested = options.ignitionVersion ?? req.spec.output?.ignitionVersion;
    const field = options.ignitionVersion !== undefined ? (options.ignitionVersionField ?? 'ignitionVersion') : 'spec.output.ignitionVersion';
    const version = requested === undefined ? undefined : resolveIgnitionVersion(requested, field);
    let out = version === LEGACY_IGNITION_SPEC ? renderIgnitionV2(plan, { versionField: field }) : renderIgnition(plan, version ? { version, versionField: field } : {});
    // Unasked, the lowest spec is chosen, and below 3.1.0 file contents are never gzipped:
    // over a platform's limit, try 3.1.0, whose data: URLs Ignition decompresses.
    if (version === undefined && platform && Buffer.byteLength(out.body, 'utf8') > USER_DATA_LIMITS[platform].bytes && out.version !== LEGACY_IGNITION_SPEC && compareSpecs(out.version, GZIP_SPEC) < 0) {
      out = renderIgnition(plan, { version: GZIP_SPEC, versionField: field });
    }
    body = out.body;
    warnings.push(...(out.warnings ?? []));
    ignitionVersion = out.version;
    mediaType = `${IGNITION_MEDIA_TYPE}; version=${out.version}`;
  } else {
    body = renderCloudConfig(plan);
    mediaType = CLOUD_CONFIG_MEDIA_TYPE;
    // Cluster API's kubeadm bootstrap provider ignores `ignition` for cloud-config too.
    if (plan.ignition) warnings.push(`${plan.ignition.origin} is ignored: it applies to Ignition output only`);
  }
  const fitted = platform ? fitUserData(format, body, platform, options.platform ? (options.platformField ?? 'platform') : 'spec.output.platform') : { warnings: [] };
  const bytes = fitted.gzip ?? Buffer.from(body, 'utf8');
  return {
    format,
    mediaType: fitted.gzip ? GZIP_MEDIA_TYPE : mediaType,
    body,
    ...(fitted.gzip ? { gzip: fitted.gzip } : {}),
    sha256: createHash('sha256').update(bytes).digest('hex'),
    size: bytes.length,
    kubeadmApiVersion: kubeadm.apiVersion,
    ...(ignitionVersion ? { ignitionVersion } : {}),
    warnings: [...warnings, ...fitted.warnings],
  };
}
