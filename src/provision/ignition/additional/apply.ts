/**
 * The additional-config step of the Ignition renderer: read the user's config (by kind:
 * `./detect.ts`), refuse what would break the node's bootstrap, merge it into the
 * generated config with Ignition's rules (`./merge.ts`) and check the result with
 * Ignition's own rules (`../rules.ts`).
 */
import { type FieldProblem, RequestError } from '../../../errors.js';
import type { PlanIgnitionAdditional } from '../../plan/types.js';
import { PathRegistry, UNIT_DIR } from '../registry.js';
import { checkIgnitionRules } from '../rules.js';
import type { IgnitionSpecVersion } from '../versions.js';
import { BOOTSTRAP_UNIT } from '../bootstrap.js';
import { BOOT_TREES, BOOTSTRAP_STATE_DIR } from '../../plan/protected.js';
import { readButaneConfig } from './butane.js';
import { readClcConfig } from './clc.js';
import { detectAdditionalConfig, ParseProblem } from './detect.js';
import { type ReadConfig, readIgnitionConfig, withoutVersion } from './ignition.js';
import { mergeIgnitionConfigs } from './merge.js';
import { invalidValues, isObject, missingRequired } from './shape.js';

type Obj = Record<string, unknown>;

/** What bootwright generates for the bootstrap itself, which additional config may not take over. */
export interface ProtectedEntries {
  /** Node paths bootwright writes (the kubeadm configuration, scripts). */
  paths: readonly string[];
  /** Units bootwright writes (`kubeadm-bootstrap.service`, ...). */
  units: readonly string[];
  /** The unit that runs kubeadm: `kubeadm-bootstrap.service`, or CABPK's `kubeadm.service` for Cluster API input. */
  kubeadmUnit?: string;
}

/** The merged config, plus what the additional config asks of the output. */
export interface MergedConfig {
  config: Obj;
  /** The additional config's own spec: the output may not be lower. Absent without one. */
  floor?: IgnitionSpecVersion;
  /** Non-fatal remarks (unknown keys when not strict), each prefixed with the request field. */
  warnings: string[];
}

/**
 * Directory trees an additional config may not write into: bootwright's own
 * (plan/protected.ts), and the bootstrap unit's state directory, which holds the stamp
 * that skips kubeadm (refused to additional configs since v0.1.0).
 */
const PROTECTED_TREES = [...BOOT_TREES, BOOTSTRAP_STATE_DIR];

/**
 * The unit Cluster API's kubeadm bootstrap provider runs kubeadm from (`/etc/kubeadm.sh`);
 * Cluster API provider templates add drop-ins to it, which would land on no unit here.
 */
const CAPI_KUBEADM_UNIT = 'kubeadm.service';

/**
 * Drop-in settings that would stop the kubeadm unit running its script once: another
 * `ExecStart=` (or its reset), another `Type=`, a condition or assertion that can skip it.
 */
const KUBEADM_DROPIN_REFUSED = /^[ \t]*(ExecStart|Type|Condition[A-Za-z]+|Assert[A-Za-z]+)[ \t]*=/m;

/**
 * Read the additional config by kind (see `./detect.ts`). `strict` defaults: Butane and
 * raw Ignition strict unless `strict: false`; a Container Linux Config strict only with
 * `strict: true` (Cluster API's default, false, for its CLC transpiler).
 *
 * @throws ParseProblem when the text does not parse
 */
export function readAdditionalConfig(text: string, strict: boolean | undefined): ReadConfig {
  const detected = detectAdditionalConfig(text);
  switch (detected.kind) {
    case 'ignition':
      return readIgnitionConfig(detected.document, strict ?? true);
    case 'butane':
      return readButaneConfig(detected.document, strict ?? true);
    case 'clc':
      return readClcConfig(detected.document, strict ?? false);
  }
}

const under = (p: string, tree: string) => p === tree || p.startsWith(`${tree}/`);
/** Whether `p` is a proper ancestor directory of `other`. */
const ancestorOf = (p: string, other: string) => p !== other && other.startsWith(p.endsWith('/') ? p : `${p}/`);

/** Problems for child entries that would replace or disable bootwright's own. */
function protectedProblems(child: Obj, prot: ProtectedEntries): { at: string; message: string }[] {
  const out: { at: string; message: string }[] = [];
  const storage = isObject(child.storage) ? child.storage : {};
  const unitPaths = prot.units.map((u) => `${UNIT_DIR}/${u}`);
  for (const kind of ['files', 'directories', 'links']) {
    const list = storage[kind];
    if (!Array.isArray(list)) continue;
    for (const [i, node] of list.entries()) {
      const p = isObject(node) && typeof node.path === 'string' ? node.path : undefined;
      if (p === undefined) continue;
      const tree = PROTECTED_TREES.find((t) => under(p, t));
      if (tree !== undefined || prot.paths.includes(p) || unitPaths.some((u) => under(p, u))) {
        out.push({ at: `storage.${kind}[${i}].path`, message: `may not replace or write under a path bootwright generates for the bootstrap (${tree ?? p}): the node would not join` });
        continue;
      }
      // A file or link where bootwright needs a directory (e.g. /etc, /var/lib).
      const below = kind === 'directories' ? undefined : [...PROTECTED_TREES, ...prot.paths, ...unitPaths].find((q) => ancestorOf(p, q));
      if (below !== undefined) {
        out.push({ at: `storage.${kind}[${i}].path`, message: `may not be a ${kind === 'files' ? 'file' : 'link'}: bootwright needs it to be a directory for what it generates for the bootstrap (${below}): the node would not join` });
      }
    }
  }
  const units = isObject(child.systemd) && Array.isArray(child.systemd.units) ? child.systemd.units : [];
  for (const [i, unit] of units.entries()) {
    if (!isObject(unit) || typeof unit.name !== 'string') continue;
    const kubeadmUnit = prot.kubeadmUnit ?? BOOTSTRAP_UNIT;
    if (unit.name === CAPI_KUBEADM_UNIT && kubeadmUnit !== CAPI_KUBEADM_UNIT && unit.contents === undefined && Array.isArray(unit.dropins) && unit.dropins.length > 0) {
      out.push({ at: `systemd.units[${i}]`, message: `${CAPI_KUBEADM_UNIT} is Cluster API's unit name, which bootwright uses for Cluster API input only; this request runs kubeadm from ${kubeadmUnit}: add the drop-in there` });
    }
    if (!prot.units.includes(unit.name)) continue;
    // What bootwright sets already may be said again (templates write `enabled: true`).
    const same: Record<string, unknown> = { enabled: true, mask: false };
    for (const field of ['contents', 'enabled', 'mask']) {
      if (unit[field] !== undefined && unit[field] !== same[field]) out.push({ at: `systemd.units[${i}].${field}`, message: `may not change ${unit.name}, which bootwright generates to run kubeadm (dropins may be added)` });
    }
    if (unit.name !== kubeadmUnit || !Array.isArray(unit.dropins)) continue;
    for (const [j, dropin] of unit.dropins.entries()) {
      const setting = isObject(dropin) && typeof dropin.contents === 'string' ? KUBEADM_DROPIN_REFUSED.exec(dropin.contents) : null;
      if (setting) {
        out.push({ at: `systemd.units[${i}].dropins[${j}].contents`, message: `sets ${setting[1]!}=, which would stop ${unit.name} running kubeadm once (bootwright's ExecStart runs the commands and kubeadm): add ExecStartPre=, EnvironmentFile=, Requires= or After= instead` });
      }
    }
  }
  const cfg = isObject(child.ignition) && isObject(child.ignition.config) ? child.ignition.config : undefined;
  if (cfg?.replace !== undefined) out.push({ at: 'ignition.config.replace', message: 'would discard the generated config (and with it kubeadm): use ignition.config.merge' });
  return out;
}

/** File-under-file clashes in the merged config's nodes (Ignition cannot make a path both a file and a directory). */
function nestingProblems(config: Obj): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const registry = new PathRegistry(problems);
  const storage = isObject(config.storage) ? config.storage : {};
  for (const [kind, what] of [['files', 'file'], ['links', 'link'], ['directories', 'directory']] as const) {
    const list = storage[kind];
    if (!Array.isArray(list)) continue;
    for (const [i, node] of list.entries()) if (isObject(node) && typeof node.path === 'string') registry.claim(node.path, what, `storage.${kind}[${i}]`);
  }
  // Duplicates are reported by the rules check; keep only nesting here.
  return problems.filter((p) => !p.message.includes('Ignition needs one entry per path'));
}

/**
 * Owners naming both an `id` and a non-empty `name` (Ignition `validateIDorName`: "cannot
 * set both id and name"). Merging makes these easily: owners merge field by field, and
 * bootwright's entries name their owners.
 */
function ownerProblems(config: Obj): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const storage = isObject(config.storage) ? config.storage : {};
  for (const kind of ['files', 'directories', 'links']) {
    const list = storage[kind];
    if (!Array.isArray(list)) continue;
    for (const [i, node] of list.entries()) {
      if (!isObject(node)) continue;
      for (const owner of ['user', 'group']) {
        const o = node[owner];
        if (isObject(o) && typeof o.id === 'number' && typeof o.name === 'string' && o.name !== '') {
          problems.push({ path: `storage.${kind}[${i}].${owner}`, message: 'cannot set both id and name (an entry merged over a generated one keeps its owner name: give name, or id with name "")' });
        }
      }
    }
  }
  return problems;
}

/**
 * Merge the plan's additional config (when there is one) into `generated`, the config
 * bootwright built, following Ignition's merge rules with the generated config as parent.
 *
 * Refused (problems at the request field, each message starting with the key path in the
 * additional config, e.g. `storage.files[0].contnts: unknown key`): text that does not
 * parse (line and column, never the text); unknown keys when strict; missing required
 * fields (a file's `path`, a unit's `name`, a link's `target`...) and values Ignition
 * refuses (`compression`, `verification.hash`, filesystem `format`, a `mode` outside
 * 0..07777); unsupported kinds, versions and sugar; fields newer than the config's own
 * spec; entries that would take over what bootwright generates for kubeadm (paths under
 * /etc/kubeadm, /etc/kubernetes/pki, /run/kubeadm, /run/cluster-api, /var/lib/bootwright
 * and the given `prot` paths, and a file or link at an ancestor of any of them; the
 * contents, `enabled` or `mask` of the kubeadm units; `ignition.config.replace`); drop-ins
 * for Cluster API's `kubeadm.service`, which does not exist here; a
 * merged config breaking Ignition's rules (duplicate paths, a file where a directory
 * must be, unit and drop-in names, data URLs, an owner with both id and name...).
 *
 * @param generated the generated config (parent), with `ignition.version` set; not modified
 * @param additional the plan's additional config, or undefined (the result is `generated`)
 * @param prot what bootwright generates for the bootstrap
 * @returns the merged config (`ignition.version` as in `generated`), the additional
 *   config's spec as a floor for the output version, and warnings
 * @throws RequestError (422) listing every problem
 */
export function mergeAdditionalConfig(generated: Obj, additional: PlanIgnitionAdditional | undefined, prot: ProtectedEntries): MergedConfig {
  if (!additional) return { config: generated, warnings: [] };
  const origin = additional.origin;
  const fail = (problems: { at: string; message: string }[]): FieldProblem[] => problems.map((p) => ({ path: origin, message: p.at ? `${p.at}: ${p.message}` : p.message }));
  let read: ReadConfig;
  try {
    read = readAdditionalConfig(additional.additionalConfig, additional.strict);
  } catch (e) {
    if (e instanceof ParseProblem) throw new RequestError(fail([e.problem]), e.status);
    throw e;
  }
  const child = withoutVersion(read.config);
  // Missing fields only when the reading went well (a field of the wrong type is dropped, then missing too).
  const problems = [...fail(read.problems), ...fail(read.problems.length ? [] : missingRequired(child)), ...fail(invalidValues(child)), ...fail(protectedProblems(child, prot))];
  if (problems.length) throw new RequestError(problems);
  const config = mergeIgnitionConfigs(generated, child);
  const after = [...checkIgnitionRules(config), ...nestingProblems(config), ...ownerProblems(config)];
  if (after.length) throw new RequestError(after.map((p) => ({ path: origin, message: `merged into the generated config, ${p.path}: ${p.message}` })));
  return { config, floor: read.version, warnings: read.warnings.map((w) => `${origin}: ${w}`) };
}
