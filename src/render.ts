/**
 * The whole pipeline (DESIGN §1): NodeBootstrap → kubeadm builder → ProvisioningPlan →
 * one renderer. Used by the CLI and the HTTP layer alike, so both give the same bytes.
 */
import { createHash } from 'node:crypto';
import { buildKubeadm } from './bootstrap/kubeadm/build.js';
import type { KubeadmApiVersion } from './bootstrap/kubeadm/version.js';
import { fieldError, RequestError } from './errors.js';
import { DEFAULT_FORMAT, formatNamed, VERSIONED_FORMATS } from './provision/formats.js';
import type { LegacyIgnitionSpecVersion } from './provision/ignition/v2/version.js';
import type { IgnitionSpecVersion } from './provision/ignition/versions.js';
import { metadataNodeName, platformVariableProblems } from './provision/plan/bootvalues.js';
import { buildPlan } from './provision/plan/build.js';
import { selectProvisioner, servedVersion } from './provision/registry.js';
import { clusterApiOrigin, rewriteProblems, rewriteText } from './request/capi/convert.js';
import { Ratchet, type RuleLevels, type ToleratedProblem, toleratedWarning } from './rules.js';
import type { NodeBootstrap, OutputFormat, Platform } from './request/schema.js';
import { fitUserData } from './platform.js';

export { IGNITION_MEDIA_TYPE } from './provision/ignition/format.js';

/** The media type of a payload delivered gzip-compressed whole (RFC 6713). */
export const GZIP_MEDIA_TYPE = 'application/gzip';

/** An Ignition spec bootwright writes: 3.0.0–3.6.0, or the legacy 2.3.0. */
export type IgnitionOutputVersion = IgnitionSpecVersion | LegacyIgnitionSpecVersion;

/** What the caller asks of a render beyond the request itself (negotiation wins over `spec.output`). */
export interface RenderOptions {
  format?: OutputFormat;
  /**
   * Requested version of a versioned format (the Ignition spec, {@link resolveIgnitionVersion}):
   * 3.x gives the highest supported 3.x spec not above it, 2.3 and later 2.x give 2.3.0.
   * Absent: `spec.output.ignitionVersion`, else the lowest 3.x spec that can express the
   * config. Ignored for an unversioned format.
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
  /**
   * The rules versions the stored machine's cluster, profile and machine were accepted
   * under (src/rules.ts): a problem whose rule came in later is tolerated and reported
   * in `tolerated` and `warnings`. Absent (a request that is not stored): every rule holds.
   */
  levels?: RuleLevels;
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
  /** The version written, for a versioned format (the Ignition spec). */
  ignitionVersion?: IgnitionOutputVersion;
  warnings: string[];
  /**
   * What a stored machine was excused from ({@link RenderOptions.levels}): problems of
   * rules that came in after its documents were stored (each also in `warnings`).
   * Absent when none.
   */
  tolerated?: ToleratedProblem[];
}

/**
 * Resolve a requested Ignition spec to the one written (DESIGN §4): for 3.x the highest
 * supported spec not above it (`version=3.9.0` gives 3.6.0); for 2.x, 2.3.0 when the
 * request is 2.3.0 or later 2.x (Ignition v0.x reads any 2.x config at or below its own
 * spec), nothing below 2.3.0 (such an Ignition cannot read 2.3.0). The registered
 * provisioners of every versioned format decide (`servedVersion`); only Ignition has
 * versions.
 *
 * @returns the spec, or undefined when none is served for `requested`
 */
export function servedIgnitionVersion(requested: string): IgnitionOutputVersion | undefined {
  for (const f of VERSIONED_FORMATS) {
    const v = servedVersion(f.name as OutputFormat, requested);
    if (v !== undefined) return v as IgnitionOutputVersion;
  }
  return undefined;
}

/**
 * {@link servedIgnitionVersion}, failing when there is none.
 *
 * @throws RequestError naming `field` when no spec is served for `requested` (1.x, 2.0–2.2, 4.x, garbage)
 */
export function resolveIgnitionVersion(requested: string, field: string): IgnitionOutputVersion {
  const version = servedIgnitionVersion(requested);
  if (!version) {
    const f = VERSIONED_FORMATS[0]!.versions!;
    fieldError(field, `${f.noun} ${requested} is not supported; bootwright emits ${f.served}`);
  }
  return version;
}

/**
 * Render a validated request.
 *
 * Format: `options.format`, then `spec.output.format`, then the default format
 * (cloud-config). The provisioner: the registry's choice for the format, the plan's OS
 * and the requested version (`src/provision/registry.ts`); see
 * {@link RenderOptions.ignitionVersion}.
 *
 * @throws RequestError (422) naming the field for anything the builder or the renderer
 *   cannot express (for a request given in Cluster API shape, the Cluster API field).
 */
export function renderNodeBootstrap(req: NodeBootstrap, options: RenderOptions = {}): RenderResult {
  try {
    const result = render(req, options);
    const rewrite = clusterApiOrigin(req);
    return rewrite ? { ...result, warnings: result.warnings.map((w) => rewriteText(w, rewrite)), ...(result.tolerated ? { tolerated: rewriteProblems(result.tolerated, rewrite) } : {}) } : result;
  } catch (e) {
    // A request rewritten from Cluster API input: name the fields the caller wrote.
    const rewrite = e instanceof RequestError ? clusterApiOrigin(req) : undefined;
    if (rewrite) throw new RequestError(rewriteProblems((e as RequestError).problems, rewrite), (e as RequestError).status);
    throw e;
  }
}

function render(req: NodeBootstrap, options: RenderOptions): RenderResult {
  const format = formatNamed(options.format ?? req.spec.output?.format ?? DEFAULT_FORMAT);
  const nodeName = metadataNodeName(req, format.name);
  const ratchet = new Ratchet(options.levels, format.name);
  const kubeadm = buildKubeadm(req, { ratchet, ...(nodeName ? { nodeName: nodeName.value } : {}) });
  const plan = buildPlan(req, kubeadm, { clusterApi: clusterApiOrigin(req) !== undefined, ratchet, ...(nodeName ? { nodeName } : {}), ...(options.reportUrl !== undefined ? { report: { url: options.reportUrl } } : {}) });
  const platform = options.platform === undefined ? req.spec.output?.platform : (options.platform ?? undefined);
  const platformField = options.platform ? (options.platformField ?? 'platform') : 'spec.output.platform';
  // A metadata variable another platform's agent writes is never set there (Ignition reads them).
  const wrongPlatform = platform && format.name === 'ignition' ? platformVariableProblems(plan.bootValues, platform, platformField) : [];
  if (wrongPlatform.length > 0) throw new RequestError(wrongPlatform);
  const requested = options.ignitionVersion ?? req.spec.output?.ignitionVersion;
  const versionField = options.ignitionVersion !== undefined ? (options.ignitionVersionField ?? 'ignitionVersion') : 'spec.output.ignitionVersion';
  const { provisioner, version } = selectProvisioner(format.name, plan, requested, versionField);
  const out = provisioner.render(plan, { ...(version !== undefined ? { version } : {}), versionField, ...(platform ? { platform } : {}) });
  const body = out.body;
  const mediaType = format.versions && out.version !== undefined ? `${format.mediaType}; version=${out.version}` : format.mediaType;
  const fitted = platform ? fitUserData(provisioner.userData ?? format.userData, body, platform, platformField) : { warnings: [] };
  const bytes = fitted.gzip ?? Buffer.from(body, 'utf8');
  return {
    format: format.name,
    mediaType: fitted.gzip ? GZIP_MEDIA_TYPE : mediaType,
    body,
    ...(fitted.gzip ? { gzip: fitted.gzip } : {}),
    sha256: createHash('sha256').update(bytes).digest('hex'),
    size: bytes.length,
    kubeadmApiVersion: kubeadm.apiVersion,
    ...(out.version !== undefined ? { ignitionVersion: out.version as IgnitionOutputVersion } : {}),
    warnings: [...plan.warnings, ...out.warnings, ...fitted.warnings, ...ratchet.tolerated.map(toleratedWarning)],
    ...(ratchet.tolerated.length > 0 ? { tolerated: ratchet.tolerated } : {}),
  };
}
