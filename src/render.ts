/**
 * The whole pipeline (DESIGN §1): NodeBootstrap → kubeadm builder → ProvisioningPlan →
 * one renderer. Used by the CLI and the HTTP layer alike, so both give the same bytes.
 */
import { createHash } from 'node:crypto';
import { buildKubeadm } from './bootstrap/kubeadm/build.js';
import type { KubeadmApiVersion } from './bootstrap/kubeadm/version.js';
import { fieldError } from './errors.js';
import { CLOUD_CONFIG_MEDIA_TYPE, renderCloudConfig } from './provision/cloudinit/render.js';
import { renderIgnition } from './provision/ignition/render.js';
import { highestSpecAtMost, type IgnitionSpecVersion } from './provision/ignition/versions.js';
import { buildPlan } from './provision/plan/build.js';
import type { NodeBootstrap, OutputFormat } from './request/schema.js';

/** The media type of Ignition configs (Ignition's own `Accept` names it). */
export const IGNITION_MEDIA_TYPE = 'application/vnd.coreos.ignition+json';

/** What the caller asks of a render beyond the request itself (negotiation wins over `spec.output`). */
export interface RenderOptions {
  format?: OutputFormat;
  /**
   * Requested Ignition spec: the highest supported spec not above it is used. Absent:
   * `spec.output.ignitionVersion`, else the lowest spec that can express the config.
   */
  ignitionVersion?: string;
  /** Name of the field or flag `ignitionVersion` came from, for errors (default `spec.output.ignitionVersion`). */
  ignitionVersionField?: string;
}

/** A finished render. */
export interface RenderResult {
  format: OutputFormat;
  /** `text/cloud-config` or `application/vnd.coreos.ignition+json; version=X`. */
  mediaType: string;
  /** The payload a node reads, UTF-8. */
  body: string;
  /** Hex SHA-256 of the body's bytes. */
  sha256: string;
  /** Body size in bytes. */
  size: number;
  kubeadmApiVersion: KubeadmApiVersion;
  ignitionVersion?: IgnitionSpecVersion;
  warnings: string[];
}

/**
 * Resolve a requested Ignition spec to the highest supported one not above it
 * (DESIGN §4: `version=3.9.0` gives 3.6.0).
 *
 * @throws RequestError naming `field` when no supported spec is at or below it.
 */
export function resolveIgnitionVersion(requested: string, field: string): IgnitionSpecVersion {
  const version = highestSpecAtMost(requested);
  if (!version) fieldError(field, `Ignition spec ${requested} is not supported; bootwright emits 3.0.0 to 3.6.0`);
  return version;
}

/**
 * Render a validated request.
 *
 * Format: `options.format`, then `spec.output.format`, then cloud-config.
 *
 * @throws RequestError (422) naming the field for anything the builder or the renderer
 *   cannot express.
 */
export function renderNodeBootstrap(req: NodeBootstrap, options: RenderOptions = {}): RenderResult {
  const format = options.format ?? req.spec.output?.format ?? 'cloud-config';
  const kubeadm = buildKubeadm(req);
  const plan = buildPlan(req, kubeadm);
  let body: string;
  let mediaType: string;
  let ignitionVersion: IgnitionSpecVersion | undefined;
  const warnings = [...plan.warnings];
  if (format === 'ignition') {
    const requested = options.ignitionVersion ?? req.spec.output?.ignitionVersion;
    const field = options.ignitionVersion !== undefined ? (options.ignitionVersionField ?? 'ignitionVersion') : 'spec.output.ignitionVersion';
    const version = requested === undefined ? undefined : resolveIgnitionVersion(requested, field);
    const out = renderIgnition(plan, version ? { version, versionField: field } : {});
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
  const bytes = Buffer.from(body, 'utf8');
  return {
    format,
    mediaType,
    body,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    size: bytes.length,
    kubeadmApiVersion: kubeadm.apiVersion,
    ...(ignitionVersion ? { ignitionVersion } : {}),
    warnings,
  };
}
