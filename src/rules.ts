/**
 * Refusal rules by the release that brought them, and ratcheting (issue 27, DESIGN §8):
 * a rule added in a later release applies to writes, never to what an earlier release
 * accepted and stored. Kubernetes calls this validation ratcheting (KEP-4008: a stored
 * value that newer validation would refuse is kept as long as it is not changed).
 *
 * Every stored revision records the {@link RULES_VERSION} it was accepted under
 * (`rules`, 0 for revisions written before releases recorded it, which is every
 * revision of v0.1.0). A problem tagged with a rule whose `since` is above the level of
 * the document it belongs to is *tolerated*: the render goes on as that earlier release
 * rendered it, and the problem becomes a warning (on the machine's status, in
 * `bootwright get machines`, `bootwright upgrade check`, the log and
 * `bootwright_tolerated_total{rule}`). A problem without a rule is refused whatever the
 * level: either every release refused it, or it is a safety exception (DESIGN §8).
 *
 * Adding a rule that refuses something earlier releases accepted: give it a name here
 * with `since: RULES_VERSION + 1`, raise {@link RULES_VERSION}, tag its problems with
 * the name, and name it in CHANGELOG.md (test/rules.test.ts checks the last two).
 */
import type { FieldProblem } from './errors.js';

/**
 * The version of the refusal rules: raised by one in each release that adds a rule.
 * Recorded on every revision written (`rules`).
 */
export const RULES_VERSION = 1;

/** The two payload formats by name (src/provision/formats.ts; named here to keep this module free of imports). */
type FormatName = 'cloud-config' | 'ignition';

/** A refusal rule: the rules version that brought it (per format, where the formats got it apart) and what it refuses. */
export interface Rule {
  since: number | Readonly<Record<FormatName, number>>;
  /** What the rule refuses, as CHANGELOG.md and the upgrade check say it. */
  summary: string;
}

/**
 * The rules added since v0.1.0 that refuse what v0.1.0 accepted. `since` 0 for a format
 * means that format always refused it (an earlier renderer of its own did), so a stored
 * revision is never excused from it there.
 */
export const RULES = {
  'boot-path': {
    since: 1,
    summary: 'a request file, link or mount point at or under a path bootwright writes for the bootstrap (src/provision/plan/protected.ts), in both formats',
  },
  'command-control': {
    since: 1,
    summary: 'a command (bootCommands, preKubeadmCommands, postKubeadmCommands) holding a C0 control character other than TAB and line feed, or DEL',
  },
  'boot-value': {
    since: 1,
    summary: 'cloud-init Jinja or a metadata variable in a native request\'s kubeadm value, which reaches the node as written (use spec.nodeName.fromMetadata)',
  },
  'kubeadm-value': {
    since: 1,
    summary: 'a kubeadm override value that kubeadm refuses on loading its configuration: a version, endpoint, subnet, DNS domain, bootstrap token group or usage, certificate SAN, image repository, absolute path, node name, CRI socket or advertise address (src/bootstrap/kubeadm/values.ts)',
  },
  'group-name': {
    since: 1,
    summary: 'a user\'s group or primary group that groupadd refuses',
  },
  'sudo-line': {
    since: { 'cloud-config': 1, ignition: 0 },
    summary: 'a user\'s sudo rule of more than one line (cloud-config; Ignition always refused it)',
  },
  'ntp-server': {
    since: { 'cloud-config': 1, ignition: 0 },
    summary: 'an NTP server with whitespace or a control character (cloud-config; Ignition always refused it)',
  },
  'disk-device': {
    since: { 'cloud-config': 1, ignition: 0 },
    summary: 'a disk partitioned twice (cloud-config; Ignition always refused it)',
  },
  'filesystem-device': {
    since: { 'cloud-config': 1, ignition: 0 },
    summary: 'two filesystems on one device or partition (cloud-config; Ignition always refused it)',
  },
  'filesystem-whole-disk': {
    since: 1,
    summary: 'a filesystem with partition none on a disk the request partitions, made over the partition table just written',
  },
  'filesystem-label': {
    since: { 'cloud-config': 1, ignition: 0 },
    summary: 'a filesystem label over its mkfs limit in bytes (cloud-config; Ignition always refused it)',
  },
  'mount-field': {
    since: { 'cloud-config': 1, ignition: 0 },
    summary: 'a mount entry with a line break or control character (cloud-config; Ignition always refused it)',
  },
  'mount-point': {
    since: { 'cloud-config': 1, ignition: 0 },
    summary: 'a mount point used twice (cloud-config; Ignition always refused it)',
  },
} as const satisfies Record<string, Rule>;

/** A rule's name. */
export type RuleName = keyof typeof RULES;

/** The rules version a rule came in for `format`. */
export function ruleSince(rule: RuleName, format: FormatName): number {
  const since: Rule['since'] = RULES[rule].since;
  return typeof since === 'number' ? since : since[format];
}

/**
 * The rules versions a stored machine's three documents were accepted under: its cluster
 * (`spec.cluster.*` problems), its profile (role, kubeadm, provisioning, output) and the
 * machine itself (`metadata.*`). A request that is not stored is held to every rule
 * (no levels).
 */
export interface RuleLevels {
  cluster: number;
  profile: number;
  machine: number;
}

/** The level of the document a NodeBootstrap path comes from ({@link RuleLevels}). */
export function levelAt(levels: RuleLevels, path: string): number {
  if (path === 'spec.cluster' || path.startsWith('spec.cluster.')) return levels.cluster;
  if (path === 'metadata' || path.startsWith('metadata.')) return levels.machine;
  return levels.profile;
}

/** A problem a stored document is excused from (it was accepted before its rule). */
export interface ToleratedProblem extends FieldProblem {
  rule: RuleName;
  /** The rules version that brought the rule. */
  since: number;
}

/**
 * What one render of a stored machine is held to: problems whose rule came in after the
 * level of the document they belong to are tolerated (recorded here, once each), the
 * rest refused. Without levels (a request that is not stored) every problem is refused.
 */
export class Ratchet {
  private readonly excused = new Map<string, ToleratedProblem>();

  /**
   * @param levels the stored documents' rules versions; undefined: hold to every rule
   * @param format the format being rendered (rules may have come in apart per format);
   *   undefined before one is chosen (validation): a rule is tolerated if it came in
   *   after the level for any format, and the render, which knows its format, decides
   */
  constructor(
    readonly levels: RuleLevels | undefined,
    readonly format?: FormatName,
  ) {}

  /** The problems to refuse; the others are recorded as tolerated. */
  refuse(problems: readonly FieldProblem[]): FieldProblem[] {
    if (this.levels === undefined) return [...problems];
    const refused: FieldProblem[] = [];
    for (const p of problems) {
      const rule = p.rule as RuleName | undefined;
      const since = rule === undefined || !(rule in RULES) ? undefined : this.format !== undefined ? ruleSince(rule, this.format) : Math.max(ruleSince(rule, 'cloud-config'), ruleSince(rule, 'ignition'));
      if (rule !== undefined && since !== undefined && since > levelAt(this.levels, p.path)) {
        const key = `${rule}\0${p.path}\0${p.message}`;
        if (!this.excused.has(key)) this.excused.set(key, { path: p.path, message: p.message, rule, since });
      } else refused.push(p);
    }
    return refused;
  }

  /** The problems tolerated so far, in the order first found. */
  get tolerated(): ToleratedProblem[] {
    return [...this.excused.values()];
  }
}

/** A tolerated problem as a render warning line. */
export function toleratedWarning(p: ToleratedProblem): string {
  return `${p.path}: ${p.message} (accepted when stored; rule ${p.rule}, refused on write since rules version ${p.since})`;
}
