/**
 * Which registered machine a booting machine is (issue 4: "match the machine (most
 * selectors matched wins, a deterministic tie-break, then a default)"). Pure: the caller
 * passes the candidate machines; no store, no HTTP.
 *
 * Rules, in order:
 * 1. **Conflict excludes.** A selector the machine defines and the booting machine also
 *    reports must agree; one that disagrees excludes the machine, however many others
 *    agree. A machine registered with uuid X is not the machine that reports uuid Y, even
 *    on a matching MAC: the MAC may have moved to another chassis (a swapped NIC, a
 *    recycled VM MAC), and handing one machine's bootstrap secrets to another is the
 *    failure an operator least expects. Selectors the booting machine does not report
 *    are neither for nor against.
 * 2. **Most selectors matched wins.** `mac` counts one when any of the machine's MACs
 *    equals the reported one (so a machine listing all its NICs matches from any of
 *    them, and a reported MAC missing from a non-empty list is a conflict); `uuid`,
 *    `serial` and `hostname` count one each when equal after normalisation
 *    (identity.ts); each label whose value equals the reported one counts one.
 *    At least one selector must match.
 * 3. **Ties:** more selectors defined (the more specific registration) first, then the
 *    machine name in code-point order.
 * 4. **Default:** with nothing matched, the machine named by `defaultMachine`, if it is
 *    among the candidates. A machine with no selectors at all matches only this way.
 */
import type { MachineSpec } from '../store/resources.js';
import { type MachineIdentity, normaliseHostname, normaliseMac, normaliseSerial, normaliseUuid } from './identity.js';

/** A candidate: a machine's name and (at least) its selectors. */
export interface MatchCandidate {
  name: string;
  spec: { selectors: Pick<MachineSpec['selectors'], 'uuid' | 'serial' | 'hostname'> & { mac?: readonly string[]; labels?: Readonly<Record<string, string>> } };
}

/** How one machine compares with an identity. */
export interface SelectorComparison {
  /** Selectors that agree, in the order `mac`, `uuid`, `serial`, `hostname`, then `label:<key>` by key. */
  matched: string[];
  /** Selectors the machine defines that the identity reports differently (same naming). */
  conflicts: string[];
  /** How many selectors the machine defines (`mac` counts once however many MACs it lists). */
  defined: number;
}

/** The outcome of {@link matchMachine}. */
export interface MachineMatch {
  /** The matched machine's name. */
  machine: string;
  /** Selectors that agreed (empty when chosen as the default), for audit and logs. */
  matched: string[];
  /** True when no machine matched and this is the configured default. */
  byDefault: boolean;
}

/** Options for {@link matchMachine}. */
export interface MatchOptions {
  /** Name of the machine to use when nothing matches (must be among the candidates). */
  defaultMachine?: string;
}

/**
 * Compare one machine's selectors with a reported identity (rules 1 and 2 of this module).
 * The machine's values are normalised the same way as the identity's; a machine value
 * that does not normalise (a malformed MAC, say) can never agree, so it conflicts with
 * any reported value.
 *
 * @returns matched and conflicting selector names and the number defined; never throws
 */
export function compareSelectors(identity: MachineIdentity, machine: MatchCandidate): SelectorComparison {
  const s = machine.spec.selectors;
  const matched: string[] = [];
  const conflicts: string[] = [];
  let defined = 0;
  const compare = (name: string, mine: string | undefined, reported: string | undefined) => {
    if (reported === undefined) return;
    (mine !== undefined && mine === reported ? matched : conflicts).push(name);
  };

  const macs = s.mac ?? [];
  if (macs.length > 0) {
    defined++;
    if (identity.mac !== undefined) (macs.some((m) => normaliseMac(m) === identity.mac) ? matched : conflicts).push('mac');
  }
  if (s.uuid !== undefined) {
    defined++;
    compare('uuid', normaliseUuid(s.uuid), identity.uuid);
  }
  if (s.serial !== undefined) {
    defined++;
    compare('serial', normaliseSerial(s.serial), identity.serial);
  }
  if (s.hostname !== undefined) {
    defined++;
    compare('hostname', normaliseHostname(s.hostname), identity.hostname);
  }
  const labels = s.labels ?? {};
  for (const key of Object.keys(labels).sort()) {
    defined++;
    const reported = Object.hasOwn(identity.labels, key) ? identity.labels[key] : undefined;
    compare(`label:${key}`, labels[key], reported);
  }
  return { matched, conflicts, defined };
}

/**
 * Find the registered machine a booting machine is, by the rules of this module:
 * conflicts exclude, most selectors matched wins, ties go to the machine defining more
 * selectors and then to the lower name (code-point order), and with no match the
 * `defaultMachine` if it is a candidate.
 *
 * @param identity what the booting machine reported (`machineIdentity`)
 * @param machines the candidates, in any order (the result does not depend on it)
 * @param options `defaultMachine`
 * @returns the chosen machine with the selectors that matched, or undefined when none
 *   matched and there is no usable default. Never throws.
 */
export function matchMachine(identity: MachineIdentity, machines: readonly MatchCandidate[], options: MatchOptions = {}): MachineMatch | undefined {
  let best: { name: string; matched: string[]; defined: number } | undefined;
  for (const m of machines) {
    const c = compareSelectors(identity, m);
    if (c.conflicts.length > 0 || c.matched.length === 0) continue;
    const better =
      best === undefined ||
      c.matched.length > best.matched.length ||
      (c.matched.length === best.matched.length && (c.defined > best.defined || (c.defined === best.defined && m.name < best.name)));
    if (better) best = { name: m.name, matched: c.matched, defined: c.defined };
  }
  if (best) return { machine: best.name, matched: best.matched, byDefault: false };
  const fallback = options.defaultMachine;
  if (fallback !== undefined && machines.some((m) => m.name === fallback)) return { machine: fallback, matched: [], byDefault: true };
  return undefined;
}

/** What a machine that booted unmatched reported, as `/v1/discovered` keeps it. */
export interface ReportedIdentity {
  mac?: string | undefined;
  uuid?: string | undefined;
  serial?: string | undefined;
  hostname?: string | undefined;
}

/**
 * The selectors to enrol a discovered machine with: its hardware identity (MAC, SMBIOS
 * UUID, serial), never the host name DHCP or iPXE gave it when it has any of those. A
 * selector the machine later reports differently excludes it (rule 1 above), and a host
 * name changes with a DHCP lease or a reinstall, so pinning it would lose the machine.
 * The host name is the selector only for an entry that reported nothing else.
 */
export function enrolmentSelectors(d: ReportedIdentity): { mac: string[]; uuid?: string; serial?: string; hostname?: string } {
  const hardware = d.mac !== undefined || d.uuid !== undefined || d.serial !== undefined;
  return {
    mac: d.mac !== undefined ? [d.mac] : [],
    ...(d.uuid !== undefined ? { uuid: d.uuid } : {}),
    ...(d.serial !== undefined ? { serial: d.serial } : {}),
    ...(!hardware && d.hostname !== undefined ? { hostname: d.hostname } : {}),
  };
}

/** Most machines a {@link whyUnmatched} sentence names. */
const WHY_MACHINES = 3;

/**
 * Why a reported identity matched no machine, in one sentence for the discovered entry
 * (`/v1/discovered` `why`, the status page): the machines that share a selector with it
 * but were excluded, each with the selectors it reports differently (rule 1), or, with no
 * such machine, that no machine has any of the values it reported.
 *
 * @param identity what the booting machine reported
 * @param machines the candidates {@link matchMachine} was given
 * @returns at most ~300 characters; names at most {@link WHY_MACHINES} machines
 */
export function whyUnmatched(identity: MachineIdentity, machines: readonly MatchCandidate[]): string {
  const excluded = machines
    .map((m) => ({ name: m.name, ...compareSelectors(identity, m) }))
    .filter((c) => c.matched.length > 0 && c.conflicts.length > 0)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (excluded.length > 0) {
    const named = excluded.slice(0, WHY_MACHINES).map((c) => `machine ${c.name} has its ${c.matched.join(', ')} but another ${c.conflicts.join(', ')}`);
    const more = excluded.length > WHY_MACHINES ? ` (and ${excluded.length - WHY_MACHINES} more)` : '';
    return `${named.join('; ')}${more}: a selector that differs excludes a machine`;
  }
  const reported = (['mac', 'uuid', 'serial', 'hostname'] as const).filter((k) => identity[k] !== undefined);
  return `no machine has its ${reported.join(', ') || 'identity'}`;
}
