/**
 * The Ignition v3 renderer: one ProvisioningPlan → one Ignition config (DESIGN §1, §3).
 * Pure and deterministic: objects are built in a fixed key order, lists keep the plan's
 * order, nothing depends on time, randomness or the zlib version.
 */
import { type FieldProblem, RequestError, fieldError } from '../../errors.js';
import type { ProvisioningPlan } from '../plan/types.js';
import { mergeAdditionalConfig, type MergedConfig } from './additional/apply.js';
import { bootstrapEntries, layoutNames } from './bootstrap.js';
import type { IgnitionFile, IgnitionUnit, Sourced } from './config.js';
import type { EncodeOptions } from './dataurl.js';
import { directoryEntries, fileEntries } from './files.js';
import { deferGroupOwners, groupEntries } from './groups.js';
import { mountUnits } from './mounts.js';
import { networkEntries } from './network.js';
import { ntpEntries } from './ntp.js';
import { passwdEntries } from './passwd.js';
import { PathRegistry } from './registry.js';
import { diskEntries, filesystemEntries } from './storage.js';
import { type IgnitionSpecVersion, compareSpecs, isIgnitionSpecVersion, lowestSpecFor, unsupportedFeature } from './versions.js';

/** A rendered config. */
export interface IgnitionRender {
  /** The spec version written in `ignition.version`. */
  version: IgnitionSpecVersion;
  /** The config object (`body` parsed). */
  config: Record<string, unknown>;
  /** `JSON.stringify(config)` plus a final newline: the bytes served to the node. */
  body: string;
  /** Non-fatal remarks (e.g. unknown keys of a non-strict additional config); absent when none. */
  warnings?: string[];
}

/** The request field a requested spec version comes from (DESIGN §2 `spec.output`). */
const VERSION_FIELD = 'spec.output.ignitionVersion';

const entries = <T>(list: readonly Sourced<T>[]): T[] => list.map((s) => s.entry);

/**
 * Build the config (with `ignition.version` set to `version`), with the plan's
 * additional config merged in (`./additional/apply.ts`).
 *
 * @throws RequestError listing every plan item Ignition cannot express
 */
function buildConfig(plan: ProvisioningPlan, version: IgnitionSpecVersion): MergedConfig {
  const encoding: EncodeOptions = { gzip: compareSpecs(version, '3.1.0') >= 0 };
  const problems: FieldProblem[] = [];

  for (const use of plan.bootValues?.jinjaUses ?? []) {
    problems.push({
      path: use.path,
      message: `uses cloud-init Jinja (${use.source}), which only cloud-config fills in; an Ignition node reads its metadata from a metadata file: use a variable such as \${COREOS_EC2_HOSTNAME} (Flatcar) or \${AFTERBURN_AWS_HOSTNAME} (Fedora CoreOS), see docs/boot-identity.md`,
    });
  }
  const passwd = passwdEntries(plan.users, encoding, problems);
  const lateFiles = deferGroupOwners(plan.users, plan.files);
  const lateDirs = deferGroupOwners(plan.users, plan.directories);
  const groups = groupEntries(plan.users, [...lateFiles.late, ...lateDirs.late], encoding);
  const boot = bootstrapEntries(plan, encoding, groups[0]?.entry.path);
  const ntp = ntpEntries(plan.ntp, encoding);
  const derivedFiles = [...boot.files, ...groups, ...passwd.files, ...ntp.files, ...networkEntries(plan.network, encoding)];
  const planFiles = fileEntries(lateFiles.entries, encoding, problems);
  const directories = directoryEntries(lateDirs.entries, problems);
  const disks = diskEntries(plan.disks, problems);
  const filesystems = filesystemEntries(plan.filesystems, plan.disks, problems);
  const planUnits: Sourced<IgnitionUnit>[] = plan.units.map((u, i) => ({
    entry: { name: u.name, ...(u.enabled !== undefined ? { enabled: u.enabled } : {}), ...(u.contents !== undefined ? { contents: u.contents } : {}) },
    origin: `plan.units[${i}]`,
  }));
  const derivedUnits = [...mountUnits(plan.mounts, filesystems.resolved, problems), ...boot.units];

  // One owner per path. Entries bootwright derives (scripts, units, sudoers, NTP) claim
  // theirs before the plan's explicit files, directories and units, so a clash names the
  // explicit item that collides with them.
  const registry = new PathRegistry(problems);
  for (const u of [...derivedUnits, ...planUnits]) registry.claimUnit(u.entry.name, u.origin);
  for (const f of [...derivedFiles, ...planFiles]) registry.claim(f.entry.path, 'file', f.origin);
  for (const d of directories) registry.claim(d.entry.path, 'directory', d.origin);
  const files: Sourced<IgnitionFile>[] = [...planFiles, ...derivedFiles];
  const units: Sourced<IgnitionUnit>[] = [...planUnits, ...derivedUnits];

  if (problems.length) throw new RequestError(problems);

  const storage = {
    ...(disks.length ? { disks: entries(disks) } : {}),
    ...(filesystems.entries.length ? { filesystems: entries(filesystems.entries) } : {}),
    files: entries(files),
    ...(directories.length ? { directories: entries(directories) } : {}),
  };
  const generated = {
    ignition: { version },
    storage,
    systemd: { units: entries(units) },
    ...(passwd.users.length ? { passwd: { users: entries(passwd.users) } } : {}),
  };
  return mergeAdditionalConfig(generated, plan.ignition, {
    paths: [...boot.files, ...groups].map((f) => f.entry.path),
    units: boot.units.map((u) => u.entry.name),
    kubeadmUnit: layoutNames(plan.layout, plan.commands.main.configFile.name).unit,
  });
}

/**
 * Render a plan as an Ignition config (DESIGN §3 "Ignition").
 *
 * Version: with `options.version`, that spec; a config feature it cannot express is a
 * RequestError at `spec.output.ignitionVersion` naming the feature, where it is and the
 * lowest spec that has it. Gzip is optional and never raises the version: it is used
 * (where smaller) from 3.1.0 on and simply left out below. Without a version, the lowest
 * spec that can express the config ({@link lowestSpecFor}), so usually 3.0.0.
 *
 * Output: files (plan order, then the kubeadm configuration and scripts, sudoers and NTP
 * drop-ins) as `data:` URLs with decimal modes and owners by name; directories; disks
 * (GPT), filesystems; `.mount`/`.swap` units for mounts; `kubeadm-bootstrap.service`
 * (once: the groups script for supplementary groups, then the commands and kubeadm) and
 * `kubeadm-bootcmd.service` (every boot); users. See the modules for each
 * part's rules.
 *
 * Additional config (`plan.ignition`, Cluster API `ignition.containerLinuxConfig`): merged
 * into the generated config with Ignition's merge rules (`./additional/`); the output is
 * never below the additional config's own spec, and a requested spec below it is a
 * RequestError at the version field.
 *
 * @param plan the provisioning plan
 * @param options.version the spec to write, one of 3.0.0–3.6.0
 * @param options.versionField the request field or negotiation input the version came
 *   from, for errors (default `spec.output.ignitionVersion`)
 * @returns the version, the config object and its serialisation (`body`, newline-terminated)
 * @throws RequestError (422) listing every plan item Ignition cannot express, each at
 *   the request field it came from (e.g. `spec.provisioning.users[0].inactive`), every
 *   problem of the additional config (at its request field), or at the version field
 *   for a spec that is too low (for the config or the additional config's spec) or unknown
 */
export function renderIgnition(plan: ProvisioningPlan, options: { version?: IgnitionSpecVersion; versionField?: string } = {}): IgnitionRender {
  const requested = options.version;
  const field = options.versionField ?? VERSION_FIELD;
  let version: IgnitionSpecVersion;
  let built: MergedConfig;
  if (requested !== undefined) {
    if (!isIgnitionSpecVersion(requested)) fieldError(field, `Ignition spec ${String(requested)} is not supported; bootwright writes 3.0.0 to 3.6.0`);
    version = requested;
    built = buildConfig(plan, version);
    if (built.floor && compareSpecs(version, built.floor) < 0) {
      fieldError(field, `Ignition spec ${version} is lower than the spec of ${plan.ignition!.origin} (${built.floor}); ask for ${built.floor} or higher`);
    }
    const use = unsupportedFeature(built.config, version);
    if (use) {
      fieldError(
        field,
        `Ignition spec ${version} cannot express ${use.feature.name} (at ${use.at}); the lowest spec that has it is ${use.feature.since}`,
      );
    }
  } else {
    // Without gzip (3.0.0) first: gzip is optional, so only the rest decides the version,
    // and never below the additional config's own spec.
    built = buildConfig(plan, '3.0.0');
    version = lowestSpecFor(built.config).version;
    if (built.floor && compareSpecs(built.floor, version) > 0) version = built.floor;
    if (version !== '3.0.0') built = buildConfig(plan, version);
  }
  const { config, warnings } = built;
  return { version, config, body: `${JSON.stringify(config)}\n`, ...(warnings.length ? { warnings } : {}) };
}
