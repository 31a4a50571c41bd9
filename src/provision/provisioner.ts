/**
 * A provisioner: one renderer from a ProvisioningPlan to one payload format, with what it
 * needs to be chosen (DESIGN §1, §4). Each lives in its folder under `src/provision/` and
 * exports one registration; `./registry.ts` lists them. `src/render.ts`, negotiation and
 * the CLI go through the registry and name no format.
 *
 * Choosing one (`selectProvisioner`): the format (negotiated or `spec.output.format`), the
 * plan's target operating system, the requested version (the format's `version=`
 * parameter), then the first registration, in registry order, whose `accepts` takes the
 * plan. A variant of a format (cloud-config with instance-data Jinja, say) is a
 * registration of the same format listed before the general one, whose `accepts` tests
 * the plan for what the variant is for.
 */
import type { Platform } from '../request/schema.js';
import type { PayloadFormat, UserDataRule } from './format.js';
import type { ProvisioningPlan, TargetOs } from './plan/types.js';

/** What a render is asked beyond the plan. */
export interface ProvisionContext {
  /** The version to write, as this provisioner's `serves` resolved it; absent: its default. */
  version?: string;
  /** The request field, flag or header the version came from, for errors. */
  versionField: string;
  /** The platform whose user data limit will apply to the payload, if any. */
  platform?: Platform;
}

/** What a provisioner gives back. */
export interface ProvisionOutput {
  /** The payload, UTF-8. */
  body: string;
  /** The version written, for a versioned format. */
  version?: string;
  /** Remarks for the caller, in order. */
  warnings: string[];
}

/** One provisioner's registration. */
export interface Provisioner {
  /** Unique name, e.g. `cloud-init`, `cloudbase-init`, `ignition`, `ignition-2.3`. */
  name: string;
  /** The format it writes. */
  format: PayloadFormat;
  /** The operating system of the nodes it writes for (the plan's `os`). */
  os: TargetOs;
  /**
   * For a versioned format: the version it writes for a requested one (Ignition: the
   * highest served spec not above it), or undefined when it serves none for it. Absent:
   * the format is unversioned, or this provisioner is only chosen unasked.
   */
  serves?: (requested: string) => string | undefined;
  /**
   * True when this provisioner is the one chosen unasked for its format and OS (no
   * version requested). Exactly one per format and OS.
   */
  default: boolean;
  /** A variant's test on the plan (see the module comment); absent: any plan. */
  accepts?: (plan: ProvisioningPlan) => boolean;
  /** Its user data rule, when it differs from the format's. */
  userData?: UserDataRule;
  /**
   * Render the plan.
   *
   * @throws RequestError (422) naming the request field for anything the format cannot
   *   express, or the version field for a version too low for the config
   */
  render(plan: ProvisioningPlan, context: ProvisionContext): ProvisionOutput;
}
