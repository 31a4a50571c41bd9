/**
 * A machine's lifecycle (issue 14): `Registered` → `Booting` (its `/ipxe` script served)
 * → `Provisioning` (its config fetched) → `Joined` | `Failed` (its boot report), and
 * `Stalled` for a machine still `Provisioning` after the report timeout (computed on
 * read, never stored). Pure: the stores keep the record and apply {@link applyEvent}
 * inside one transaction; the routes read {@link machineStatus}.
 */

/** The phases, in lifecycle order. */
export const PHASES = ['Registered', 'Booting', 'Provisioning', 'Joined', 'Failed', 'Stalled'] as const;
export type Phase = (typeof PHASES)[number];
/** The phases a store records (`Stalled` is computed on read). */
export type StoredPhase = Exclude<Phase, 'Stalled'>;

/** Transitions kept per machine, newest last; older ones are dropped. */
export const MAX_TRANSITIONS = 32;
/** Characters of a report's output kept (its end). */
export const MAX_REPORT_OUTPUT_CHARS = 4096;

/** One phase change. */
export interface Transition {
  phase: Phase;
  /** ISO 8601 UTC. */
  time: string;
}

/** What the latest config fetch served. */
export interface Served {
  /** The machine revision served. */
  revision: number;
  /** Hex SHA-256 of the bytes served. */
  sha256: string;
  format: 'cloud-config' | 'ignition';
  ignitionVersion?: string;
  /** The renderer version that made the bytes (src/version.ts); absent in records of releases before v0.2.0. */
  rendererVersion?: string;
  time: string;
}

/** A boot report as kept. */
export interface BootReport {
  outcome: 'success' | 'failure';
  /** kubeadm's exit code (absent when the node could not tell). */
  exitCode?: number;
  /** The last lines of kubeadm's output, scrubbed of secrets, at most {@link MAX_REPORT_OUTPUT_CHARS}. */
  output: string;
  time: string;
}

/**
 * What the machine's firmware reported at the `/ipxe` that started its latest boot (src/boot/identity.ts,
 * normalised and bounded there): its identity, iPXE's `${buildarch}` and `${platform}`,
 * and the address the request came from. Reported by whoever asked for the script, so
 * shown as reported, never trusted.
 */
export interface FirmwareReport {
  mac?: string;
  uuid?: string;
  serial?: string;
  hostname?: string;
  buildarch?: string;
  platform?: string;
  /** The client address the service saw (behind trusted proxies, the forwarded one). */
  client?: string;
}

/** The record a store keeps per machine. */
export interface StatusRecord {
  phase: StoredPhase;
  /** When the machine entered `phase`. */
  since: string;
  transitions: Transition[];
  served?: Served;
  lastReport?: BootReport;
  /** What iPXE reported at the `/ipxe` that started the latest boot (absent in records of releases before v0.3.0). */
  firmware?: FirmwareReport;
  /** Reports received since the latest config fetch (bounds unauthenticated writes). */
  reports: number;
}

/** Something that happened to a machine. */
export type StatusEvent =
  | { kind: 'booting'; firmware?: FirmwareReport }
  | { kind: 'served'; served: Omit<Served, 'time'> }
  | { kind: 'report'; report: Omit<BootReport, 'time'>; maxReports: number };

/** The status as `GET /v1/machines/{name}` shows it. */
export interface MachineStatus {
  phase: Phase;
  transitions: Transition[];
  served?: Served;
  lastReport?: BootReport;
  firmware?: FirmwareReport;
}

/**
 * The audit `reason` of a served fetch that came with no `/ipxe` since the machine
 * joined or failed ({@link applyEvent}): not a new provisioning cycle.
 */
export const WITHOUT_IPXE = 'without-ipxe';

function withPhase(prev: StatusRecord | undefined, phase: StoredPhase, at: string): Pick<StatusRecord, 'phase' | 'since' | 'transitions'> {
  const transitions = prev?.transitions ?? [];
  // A new boot, fetch or report is a transition even in the same phase (a reboot, a retry).
  const next = [...transitions, { phase, time: at }].slice(-MAX_TRANSITIONS);
  return { phase, since: prev?.phase === phase ? prev.since : at, transitions: next };
}

/**
 * The record after `event` at time `at`.
 *
 * - `booting`: phase `Booting`. It comes from `/ipxe`, which any client that knows a MAC
 *   can ask, so it neither restarts the report count (only a signed fetch does) nor
 *   changes anything while the machine is already `Booting` (a thousand requests are one
 *   boot: they push no earlier transition out of the history, and overwrite no firmware
 *   report; `accepted` false, nothing to write).
 * - `served`: phase `Provisioning` (a repeated fetch in `Provisioning` keeps its `since`
 *   and adds no transition), `served` updated; the report count starts again. A fetch of
 *   a machine that is `Joined` or `Failed`, with no `/ipxe` since (a cloud-init reboot
 *   re-reading its user-data, a debugging curl, a leaked URL), starts no provisioning
 *   cycle: the phase, transitions and report count stay, `served` is updated, and the
 *   result is flagged {@link WITHOUT_IPXE} (the stores put it in the audit row's `reason`).
 * - `report`: phase `Joined` (success) or `Failed`, `lastReport` set; refused (the
 *   record unchanged, `accepted` false) once `maxReports` reports came since the latest fetch.
 *
 * @param at ISO 8601 UTC
 */
export function applyEvent(prev: StatusRecord | undefined, event: StatusEvent, at: string): { record: StatusRecord; accepted: boolean; flag?: typeof WITHOUT_IPXE } {
  const base = prev ?? { phase: 'Registered' as const, since: at, transitions: [], reports: 0 };
  switch (event.kind) {
    case 'booting': {
      const firmware = event.firmware ? { firmware: event.firmware } : {};
      // Repeated boots while Booting are one boot: nothing changes, nothing is written, and
      // what the firmware reported is that of the /ipxe that started it, which a flood
      // (anyone who knows the MAC) cannot overwrite.
      if (prev?.phase === 'Booting') return { record: prev, accepted: false };
      return { record: { ...base, ...withPhase(prev, 'Booting', at), ...firmware }, accepted: true };
    }
    case 'served': {
      const served = { ...event.served, time: at };
      if (prev?.phase === 'Provisioning') return { record: { ...prev, served, reports: 0 }, accepted: true };
      if (prev?.phase === 'Joined' || prev?.phase === 'Failed') return { record: { ...prev, served }, accepted: true, flag: WITHOUT_IPXE };
      return { record: { ...base, ...withPhase(prev, 'Provisioning', at), served, reports: 0 }, accepted: true };
    }
    case 'report': {
      if (base.reports >= event.maxReports) return { record: base, accepted: false };
      const output = event.report.output.length > MAX_REPORT_OUTPUT_CHARS ? event.report.output.slice(-MAX_REPORT_OUTPUT_CHARS) : event.report.output;
      const lastReport = { ...event.report, output, time: at };
      return { record: { ...base, ...withPhase(prev, event.report.outcome === 'success' ? 'Joined' : 'Failed', at), lastReport, reports: base.reports + 1 }, accepted: true };
    }
  }
}

/**
 * The status shown for a record at `now`: `Registered` without one; `Stalled` (with a
 * transition at the moment it became so) for `Provisioning` longer than `timeoutSeconds`.
 */
export function machineStatus(record: StatusRecord | undefined, now: Date, timeoutSeconds: number): MachineStatus {
  if (!record) return { phase: 'Registered', transitions: [] };
  const { served, lastReport, firmware } = record;
  const extra = { ...(served ? { served } : {}), ...(lastReport ? { lastReport } : {}), ...(firmware ? { firmware } : {}) };
  const stalledAt = Date.parse(record.since) + timeoutSeconds * 1000;
  if (record.phase === 'Provisioning' && now.getTime() >= stalledAt) {
    return { phase: 'Stalled', transitions: [...record.transitions, { phase: 'Stalled', time: new Date(stalledAt).toISOString() }], ...extra };
  }
  return { phase: record.phase, transitions: record.transitions, ...extra };
}

/** Fleet counts: machines, and machines by phase. */
export interface FleetCounts {
  machines: number;
  phases: Record<Phase, number>;
  /** Entries under `/v1/discovered` not yet enrolled (no machine matches them). */
  discovered: number;
}

/** Zero for every phase. */
export const emptyPhases = (): Record<Phase, number> => ({ Registered: 0, Booting: 0, Provisioning: 0, Joined: 0, Failed: 0, Stalled: 0 });
