/**
 * What this release does with a stored machine (issue 27, DESIGN §8): renders it as its
 * boot would (its profile's format, the Ignition spec it was last served, a boot report,
 * no platform limit) and says whether it boots as before (`ok`), boots with a change a
 * node would notice (`changed`, src/compat/changes.ts), boots although a rule that came
 * in after it was stored refuses it on write (`warn`, src/rules.ts), or is refused
 * (`fail`). `bootwright upgrade check` lists every machine so; a machine's
 * `status.warnings` are its `warn` problems.
 */
import { LRUCache } from 'lru-cache';
import { bootFormat } from '../boot/ipxe.js';
import { type FieldProblem, RequestError } from '../errors.js';
import type { OutputFormat } from '../provision/formats.js';
import { renderNodeBootstrap } from '../render.js';
import type { DocumentLimits } from '../request/bounds.js';
import type { ToleratedProblem } from '../rules.js';
import { type AssemblyParts, machineNodeBootstrap, ruleLevels, withStandInToken } from '../store/assemble.js';
import { bootProblems } from '../store/writecheck.js';
import { changesSince } from './changes.js';

/** The verdicts, from best to worst. */
export const VERDICTS = ['ok', 'changed', 'warn', 'fail'] as const;
export type Verdict = (typeof VERDICTS)[number];

/** One machine's verdict. */
export interface MachineCheck {
  machine: string;
  cluster: string;
  profile: string;
  format: OutputFormat;
  result: Verdict;
  /** `fail`: what refuses it; `warn`: what it is excused from (with the rule and the rules version that brought it). */
  problems: (FieldProblem | ToleratedProblem)[];
  /** What its next boot gets that its last one did not (empty when never served). */
  changes: string[];
}

/** What is known of a machine's last boot. */
export interface LastServed {
  /** The renderer version that served it (undefined: never served). */
  rendererVersion?: number;
  /** The Ignition spec it was served, when it was. */
  ignitionVersion?: string;
}

/** The report URL a check renders with: the script's text is all that depends on it, not what is checked. */
const CHECK_REPORT_URL = 'https://bootwright.invalid/report?machine=check';

/**
 * Check one stored machine with its current cluster and profile: its `/ipxe` script
 * (when `boot` is given: the kernel command line with this release's signed URL, whose
 * length depends on the base URL and the URL lifetime) and its bootstrap data.
 *
 * @param limits the document limits the service holds stored documents to (a safety
 *   rule: a document over them fails, whatever release stored it)
 * @param boot the base URL machines reach the service at and the signing settings
 *   (src/store/writecheck.ts {@link bootProblems}); absent, the script is not checked
 * @throws what is not the request's fault (a renderer bug)
 */
export function checkMachine(parts: AssemblyParts, limits: DocumentLimits, last: LastServed = {}, boot?: Parameters<typeof bootProblems>[2]): MachineCheck {
  const format = bootFormat(parts.profile.spec.output?.format);
  const base = { machine: parts.machine.name, cluster: parts.cluster.name, profile: parts.profile.name, format };
  const levels = ruleLevels(parts);
  // /ipxe answers a machine whose script cannot be built with a retry script: it never boots.
  const script = boot ? bootProblems(parts.profile.spec, parts.machine, boot) : [];
  if (script.length > 0) return { ...base, result: 'fail', problems: script, changes: [] };
  try {
    const req = machineNodeBootstrap(withStandInToken(parts), limits);
    const result = renderNodeBootstrap(req, {
      format,
      platform: null,
      reportUrl: CHECK_REPORT_URL,
      ...(format === 'ignition' && last.ignitionVersion !== undefined ? { ignitionVersion: last.ignitionVersion } : {}),
      ...(levels ? { levels } : {}),
    });
    const changes = changesSince(last.rendererVersion, { req, format });
    const tolerated = result.tolerated ?? [];
    return { ...base, result: tolerated.length > 0 ? 'warn' : changes.length > 0 ? 'changed' : 'ok', problems: tolerated, changes };
  } catch (e) {
    if (!(e instanceof RequestError)) throw e;
    return { ...base, result: 'fail', problems: e.problems, changes: [] };
  }
}

/** Warnings by machine, cluster and profile revision (the same three revisions always give the same warnings). */
const warningsByRevisions = new LRUCache<string, ToleratedProblem[]>({ max: 10_000 });

/**
 * What a stored machine boots in spite of (its `status.warnings`): the problems of rules
 * that came in after its documents were stored, [] when there are none or all three
 * revisions were accepted under this release's rules. Remembered by the three
 * revisions, so a machine is checked once per change, not per read.
 */
export function storedWarnings(parts: AssemblyParts, limits: DocumentLimits): ToleratedProblem[] {
  if (!ruleLevels(parts)) return [];
  const { machine, cluster, profile } = parts;
  const key = `${machine.name}@${machine.revision}|${cluster.name}@${cluster.revision}|${profile.name}@${profile.revision}`;
  let warnings = warningsByRevisions.get(key);
  if (!warnings) {
    const check = checkMachine(parts, limits);
    warnings = check.result === 'warn' ? (check.problems as ToleratedProblem[]) : [];
    warningsByRevisions.set(key, warnings);
  }
  return warnings;
}
