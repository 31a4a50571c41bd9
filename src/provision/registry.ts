/**
 * The provisioners, one registration line each, and how one is chosen for a render
 * (`./provisioner.ts`). Within a format and OS, a variant is listed before the general
 * provisioner it refines; a new provisioner is a folder under `src/provision/` exporting
 * its registration, and one line here.
 */
import { fieldError } from '../errors.js';
import { CLOUDBASE_INIT_PROVISIONER } from './cloudbase-init/provisioner.js';
import { CLOUD_INIT_PROVISIONER } from './cloudinit/provisioner.js';
import { formatNamed, FORMATS, type OutputFormat } from './formats.js';
import { IGNITION_PROVISIONER } from './ignition/provisioner.js';
import { IGNITION_V2_PROVISIONER } from './ignition/v2/provisioner.js';
import type { ProvisioningPlan, TargetOs } from './plan/types.js';
import type { Provisioner } from './provisioner.js';

/** Every provisioner, in selection order. */
export const PROVISIONERS: readonly Provisioner[] = [
  CLOUD_INIT_PROVISIONER,
  CLOUDBASE_INIT_PROVISIONER,
  IGNITION_PROVISIONER,
  IGNITION_V2_PROVISIONER,
];

/**
 * The version served for a requested one in `format` (its `version=` parameter), by any
 * of its provisioners, first in registry order; undefined when none serves it or the
 * format is unversioned.
 */
export function servedVersion(format: OutputFormat, requested: string, provisioners: readonly Provisioner[] = PROVISIONERS): string | undefined {
  for (const p of provisioners) {
    if (p.format.name !== format || !p.serves) continue;
    const v = p.serves(requested);
    if (v !== undefined) return v;
  }
  return undefined;
}

/** A provisioner chosen, and the version it is to write (absent: its default). */
export interface Selection {
  provisioner: Provisioner;
  version?: string;
}

/**
 * Choose the provisioner for a render (see `./provisioner.ts`).
 *
 * @param format the payload format
 * @param plan the plan, whose `os` and content pick among the format's provisioners
 * @param requested the version asked for, if any (ignored for an unversioned format)
 * @param versionField the field, flag or header `requested` came from, for errors
 * @param provisioners the registrations to choose among (default: {@link PROVISIONERS})
 * @throws RequestError (422) at `versionField` when no provisioner of the format serves
 *   `requested`; at the plan's `osField` when the format has no provisioner for its OS
 */
export function selectProvisioner(
  format: OutputFormat,
  plan: ProvisioningPlan,
  requested: string | undefined,
  versionField: string,
  provisioners: readonly Provisioner[] = PROVISIONERS,
): Selection {
  const f = formatNamed(format);
  const os = osOf(plan);
  const forOs = provisioners.filter((p) => p.format.name === format && p.os === os);
  if (forOs.length === 0) {
    fieldError(plan.osField ?? 'spec.output.os', `${f.title} is not served for ${os} nodes; ${os} nodes get ${formatsFor(os, provisioners).join(' or ')}`);
  }
  const applicable = forOs.filter((p) => p.accepts?.(plan) ?? true);
  if (requested !== undefined && f.versions) {
    const version = servedVersion(format, requested, provisioners);
    if (version === undefined) fieldError(versionField, `${f.versions.noun} ${requested} is not supported; bootwright emits ${f.versions.served}`);
    const provisioner = applicable.find((p) => p.serves?.(requested) === version);
    if (!provisioner) fieldError(versionField, `${f.versions.noun} ${requested} is not served for ${os} nodes`);
    return { provisioner, version };
  }
  const provisioner = applicable.find((p) => p.default);
  if (!provisioner) throw new Error(`no default ${format} provisioner for ${os} accepts the plan`);
  return { provisioner };
}

/** The plan's operating system (linux when it names none). */
export function osOf(plan: ProvisioningPlan): TargetOs {
  return plan.os ?? 'linux';
}

/** The titles of the formats with a provisioner for `os`, in format order. */
function formatsFor(os: TargetOs, provisioners: readonly Provisioner[]): string[] {
  return formatsServedFor(os, provisioners).map((name) => formatNamed(name).title);
}

/** The formats a plan for `os` can be rendered in, in format order (what negotiation may choose for that node). */
export function formatsServedFor(os: TargetOs, provisioners: readonly Provisioner[] = PROVISIONERS): OutputFormat[] {
  return FORMATS.filter((f) => provisioners.some((p) => p.format.name === f.name && p.os === os)).map((f) => f.name);
}
