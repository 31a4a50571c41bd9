/**
 * `bootwright status`: the fleet at a glance, machines counted by lifecycle phase and
 * the discovered machines still to enrol. Reads `GET /v1/fleet`; from a service without
 * that route (404) it counts the machines' own `status.phase` itself, a machine that
 * reports none counted as Registered (nothing has happened to it that the service
 * records), and says so.
 */
import { EXIT, type Command, type Parsed } from '../commands.js';
import { clientFrom, CONNECTION_FLAGS } from './client.js';
import { outputOf } from './get.js';
import { type DiscoveredDocument, type ResourceDocument, table } from './kinds.js';

/** The lifecycle phases, in order. */
export const PHASES = ['Registered', 'Booting', 'Provisioning', 'Joined', 'Failed', 'Stalled'] as const;

/** `bootwright status`. */
export const STATUS: Command = {
  name: 'status',
  summary: 'Count the machines by phase, and the discovered machines to enrol',
  usage: ['status [-o table|json]'],
  positionals: 0,
  flags: [{ name: 'output', short: 'o', type: 'string', value: 'FORMAT', help: 'table | json (default table)' }, ...CONNECTION_FLAGS],
  details: `Phases: ${PHASES.join(' -> ')} (Failed, Stalled: a join that failed, or never reported).`,
};

/** The fleet summary (the shape of GET /v1/fleet). */
export interface Fleet {
  machines: number;
  phases: Record<string, number>;
  discovered: number;
}

/** Run `status`. @returns 0; @throws ConfigError, ServerRefusal, ServerUnavailable */
export async function runStatus(parsed: Parsed, out: NodeJS.WritableStream, err: NodeJS.WritableStream): Promise<number> {
  const output = outputOf(parsed, 'status', ['table', 'json']);
  const client = clientFrom(parsed);
  const answer = await client.request('GET', '/v1/fleet', { allow: [404] });
  let fleet: Fleet;
  if (answer.status === 404) {
    const machines = await client.listAll<ResourceDocument>('machines');
    const phases: Record<string, number> = Object.fromEntries(PHASES.map((p) => [p, 0]));
    for (const m of machines) {
      const phase = typeof m.status?.phase === 'string' ? m.status.phase : 'Registered';
      phases[phase] = (phases[phase] ?? 0) + 1;
    }
    const discovered = (await client.get<{ items: DiscoveredDocument[] }>('/v1/discovered?limit=1000')).items.length;
    fleet = { machines: machines.length, phases, discovered };
    err.write('note: the service has no /v1/fleet; counted from the machine list (a machine without status.phase as Registered)\n');
  } else fleet = answer.json as Fleet;
  if (output === 'json') {
    out.write(`${JSON.stringify(fleet, null, 2)}\n`);
    return EXIT.ok;
  }
  const names = [...PHASES, ...Object.keys(fleet.phases).filter((p) => !(PHASES as readonly string[]).includes(p))];
  out.write(table(['PHASE', 'MACHINES'], names.map((p) => [p, String(fleet.phases[p] ?? 0)])));
  out.write(`\nMachines: ${fleet.machines}   Discovered, not enrolled: ${fleet.discovered}\n`);
  return EXIT.ok;
}
