/**
 * The Ignition spec 2.3.0 renderer (DESIGN §3: "and 2.3.0 for old Flatcar"): the plan is
 * rendered by the 3.x renderer ({@link renderIgnition}), then translated down
 * ({@link toIgnitionV2}). The 3.x renderer stays the one place that knows the plan, so
 * both outputs carry the same files, units and users.
 */
import { type FieldProblem, RequestError } from '../../../errors.js';
import type { ProvisioningPlan } from '../../plan/types.js';
import { renderIgnition } from '../render.js';
import { compareSpecs, featuresUsed, type IgnitionFeature } from '../versions.js';
import { toIgnitionV2 } from './translate.js';
import { LEGACY_IGNITION_SPEC, type LegacyIgnitionSpecVersion } from './version.js';

/** A rendered 2.3.0 config. */
export interface IgnitionV2Render {
  version: LegacyIgnitionSpecVersion;
  /** The config object (`body` parsed). */
  config: Record<string, unknown>;
  /** `JSON.stringify(config)` plus a final newline: the bytes served to the node. */
  body: string;
  /** Remarks from the 3.x render (e.g. about the additional config). */
  warnings?: string[];
}

/** What a file's 3.x config field is called in the request (`mode` comes from `permissions`). */
const FILE_FIELDS: Record<string, string> = { mode: 'permissions', contents: 'content', append: 'content', user: 'owner', group: 'owner' };

const LOCATION = /^(storage\.files|storage\.disks|passwd\.users)\[(\d+)\](?:\.(\w+))?/;

/**
 * The request field behind a place in the 3.x config, when the plan knows it: files by
 * path (the last plan file at that path; its `permissions`, `content` or `owner` for
 * `mode`, `contents`/`append`, `user`/`group`), disks by device, users by name.
 */
function requestField(at: string, config: Record<string, unknown>, plan: PlanIndex): string | undefined {
  const m = LOCATION.exec(at);
  if (!m) return undefined;
  const [, list, index, field] = m;
  const [section, key] = list!.split('.') as [string, string];
  const entry = ((config[section] as Record<string, unknown[]> | undefined)?.[key] ?? [])[Number(index)] as Record<string, unknown> | undefined;
  if (!entry) return undefined;
  if (list === 'storage.files') {
    const origin = typeof entry.path === 'string' ? plan.files.get(entry.path) : undefined;
    if (origin === undefined) return undefined;
    const sub = field !== undefined ? FILE_FIELDS[field] : undefined;
    return sub ? `${origin}.${sub}` : origin;
  }
  if (list === 'storage.disks') return typeof entry.device === 'string' ? plan.disks.get(entry.device) : undefined;
  return typeof entry.name === 'string' ? plan.users.get(entry.name) : undefined;
}

/** The origins {@link requestField} looks up, indexed once per render: files by path (the last with an origin), disks by device and users by name (the first). */
interface PlanIndex {
  files: Map<string, string>;
  disks: Map<string, string | undefined>;
  users: Map<string, string | undefined>;
}

/** Index a plan's origins for {@link requestField}, in time linear in the plan. */
function indexPlan(plan: ProvisioningPlan): PlanIndex {
  const files = new Map<string, string>();
  for (const f of plan.files) if (f.origin !== undefined) files.set(f.path, f.origin);
  const disks = new Map<string, string | undefined>();
  for (const d of plan.disks) if (!disks.has(d.device)) disks.set(d.device, d.origin);
  const users = new Map<string, string | undefined>();
  for (const u of plan.users) if (!users.has(u.name)) users.set(u.name, u.origin);
  return { files, disks, users };
}

/**
 * Whether the translation handles a use of `feature` itself: gzip `compression` of a
 * file's `data:` URL (the 3.x renderer adds it above 3.0.0 where smaller), which
 * {@link toIgnitionV2} decodes and writes plain.
 */
function translatable(feature: IgnitionFeature): boolean {
  return feature.path.startsWith('storage.files[]') && feature.path.endsWith('.compression');
}

/**
 * Render a plan as an Ignition spec 2.3.0 config (coreos/ignition
 * `docs/configuration-v2_3.md`), for Ignition v0.x (Container Linux, older Flatcar).
 *
 * The plan is rendered by {@link renderIgnition} at the lowest 3.x spec that expresses
 * it; when that is above 3.0.0 the plan needs something only later 3.x specs have (e.g.
 * setuid/setgid/sticky mode bits, 3.6.0: Ignition v0.x drops those bits silently), which
 * 2.3.0 cannot express either. Otherwise the 3.0.0 config (no gzip: v0.x cannot
 * decompress `data:` URLs) is translated by {@link toIgnitionV2}.
 *
 * @param plan the provisioning plan
 * @param options.versionField the request field or flag that asked for 2.3.0, named in
 *   errors that no plan item can be blamed for (default `spec.output.ignitionVersion`)
 * @returns the version (`2.3.0`), the config object and its serialisation
 * @throws RequestError (422) for whatever the 3.x renderer refuses, and for each feature
 *   2.3.0 cannot express: at the request field it comes from (e.g.
 *   `spec.provisioning.files[0].permissions`) when the plan knows it, else at
 *   `versionField`, saying which Ignition 3.x spec it needs
 */
export function renderIgnitionV2(plan: ProvisioningPlan, options: { versionField?: string } = {}): IgnitionV2Render {
  const versionField = options.versionField ?? 'spec.output.ignitionVersion';
  const v3 = renderIgnition(plan);
  const problems: FieldProblem[] = [];
  // What no plan item explains comes from the additional config when there is one
  // (bootwright's own entries all translate), else from asking for 2.3.0 at all.
  let index: PlanIndex | undefined;
  const blame = (at: string, message: string, located = false): void => {
    const field = requestField(at, v3.config, (index ??= indexPlan(plan)));
    problems.push(field ? { path: field, message } : { path: plan.ignition?.origin ?? versionField, message: located ? message : `${message} (at ${at} of the merged config)` });
  };
  if (v3.version !== '3.0.0') {
    for (const use of featuresUsed(v3.config)) {
      if (compareSpecs(use.feature.since, '3.0.0') <= 0 || translatable(use.feature)) continue;
      blame(use.at, `Ignition spec ${LEGACY_IGNITION_SPEC} cannot express ${use.feature.name}; it needs Ignition spec ${use.feature.since} or later (a 3.x spec)`);
    }
    // No feature to blame: the spec was raised by the additional config's own version.
    if (problems.length === 0) {
      const origin = plan.ignition?.origin;
      problems.push({
        path: origin ?? versionField,
        message: `is an Ignition ${v3.version} config, and Ignition spec ${LEGACY_IGNITION_SPEC} output can carry additional configs of spec 3.0.0 (or Container Linux Config, or Butane fcos 1.0.0) only`,
      });
    }
    throw new RequestError(problems);
  }
  const translated: FieldProblem[] = [];
  const config = toIgnitionV2(v3.config, translated);
  for (const p of translated) blame(p.path, `Ignition spec ${LEGACY_IGNITION_SPEC}: ${p.path} of the merged config ${p.message}`, true);
  if (problems.length) throw new RequestError(problems);
  return { version: LEGACY_IGNITION_SPEC, config, body: `${JSON.stringify(config)}\n`, ...(v3.warnings ? { warnings: v3.warnings } : {}) };
}
