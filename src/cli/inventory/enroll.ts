/**
 * `bootwright enroll DISCOVERED --profile P --cluster C [--name N]`: turn a machine that
 * booted unmatched (`get discovered`) into a Machine whose selectors are the identity it
 * reported (MAC, UUID, serial, host name), so its next boot is served. The service then
 * marks the entry enrolled.
 */
import { RESOURCE_API_VERSION } from '../../store/resources.js';
import { EXIT, UsageError, type Command, type Parsed } from '../commands.js';
import { clientFrom, CONNECTION_FLAGS } from './client.js';
import { type DiscoveredDocument, printable, type ResourceDocument } from './kinds.js';

/** `bootwright enroll`. */
export const ENROLL: Command = {
  name: 'enroll',
  summary: 'Register a discovered machine as a machine of a cluster and profile',
  usage: ['enroll DISCOVERED --profile PROFILE --cluster CLUSTER [--name NAME] [-L key=value]'],
  positionals: 1,
  flags: [
    { name: 'profile', short: 'p', type: 'string', value: 'PROFILE', help: 'the profile the machine uses (required)' },
    { name: 'cluster', short: 'c', type: 'string', value: 'CLUSTER', help: 'the cluster it joins (required)' },
    { name: 'name', short: 'n', type: 'string', value: 'NAME', help: 'the machine name (default: its host name when that is a DNS label, else m-<MAC without colons>)' },
    { name: 'labels', short: 'L', type: 'string', value: 'K=V,...', help: 'labels of the machine, comma-separated key=value pairs' },
    ...CONNECTION_FLAGS,
  ],
  details: `DISCOVERED is the ID that 'bootwright get discovered' shows. The machine's selectors are
every identity value the entry holds; the service refuses (409) one that another machine
already has. Prints machine/NAME created.

Example:
  bootwright enroll 3 --profile worker --cluster prod --name rack1-n3`,
};

/** DNS-1123 labels: machine names. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The default machine name for an entry. @throws UsageError when none can be made. */
function defaultName(d: DiscoveredDocument): string {
  if (d.hostname !== undefined && DNS_LABEL.test(d.hostname)) return d.hostname;
  if (d.mac !== undefined) return `m-${d.mac.replaceAll(':', '')}`;
  throw new UsageError(`discovered machine ${d.id} has no host name or MAC to name it after: give --name`, 'enroll');
}

/** `a=b,c=d` as labels. @throws UsageError for a pair without `=`. */
function labelsOf(text: string | undefined): Record<string, string> | undefined {
  if (text === undefined) return undefined;
  const out: Record<string, string> = {};
  for (const pair of text.split(',').map((p) => p.trim()).filter((p) => p !== '')) {
    const eq = pair.indexOf('=');
    if (eq < 1) throw new UsageError(`--labels: "${pair}" is not key=value`, 'enroll');
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

/** Run `enroll`. @returns 0; @throws UsageError, ConfigError, ServerRefusal, ServerUnavailable */
export async function runEnroll(parsed: Parsed, out: NodeJS.WritableStream): Promise<number> {
  const id = parsed.positionals[0];
  if (id === undefined) throw new UsageError('the DISCOVERED id is required (see bootwright get discovered)', 'enroll');
  const profile = parsed.values.profile as string | undefined;
  const cluster = parsed.values.cluster as string | undefined;
  if (profile === undefined || cluster === undefined) throw new UsageError(`${profile === undefined ? '--profile' : '--cluster'} is required`, 'enroll');
  const labels = labelsOf(parsed.values.labels as string | undefined);
  const client = clientFrom(parsed);
  const entry = await client.get<DiscoveredDocument>(`/v1/discovered/${encodeURIComponent(id)}`);
  const name = (parsed.values.name as string | undefined) ?? defaultName(entry);
  const machine = {
    apiVersion: RESOURCE_API_VERSION,
    kind: 'Machine',
    metadata: { name, ...(labels ? { labels } : {}) },
    spec: {
      selectors: {
        ...(entry.mac !== undefined ? { mac: [entry.mac] } : {}),
        ...(entry.uuid !== undefined ? { uuid: entry.uuid } : {}),
        ...(entry.serial !== undefined ? { serial: entry.serial } : {}),
        ...(entry.hostname !== undefined ? { hostname: entry.hostname } : {}),
      },
      cluster,
      profile,
    },
  };
  const created = (await client.request('POST', '/v1/machines', { body: machine })).json as ResourceDocument;
  out.write(`machine/${printable(created.metadata.name)} created (discovered ${printable(entry.id)})\n`);
  return EXIT.ok;
}
