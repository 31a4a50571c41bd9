/**
 * `bootwright enroll DISCOVERED|MAC --profile P --cluster C [--name N] [-L k=v]
 * [--max-fetches N]`: turn a machine that booted unmatched (`get discovered`) into a
 * Machine whose selectors are the hardware identity it reported (MAC, UUID, serial; the
 * host name only when it reported nothing else: src/boot/match.ts enrolmentSelectors),
 * so its next boot is served. Given a MAC, the discovered entry with that MAC is
 * enrolled, or, when none booted yet, a machine matched by that MAC alone is registered
 * ahead of its first boot. The service then marks the entry enrolled.
 */
import { normaliseMac } from '../../boot/identity.js';
import { enrolmentSelectors } from '../../boot/match.js';
import { RESOURCE_API_VERSION } from '../../store/resources.js';
import { EXIT, UsageError, type Command, type Parsed } from '../commands.js';
import { clientFrom, CONNECTION_FLAGS, type InventoryClient } from './client.js';
import { type DiscoveredDocument, printable, type ResourceDocument } from './kinds.js';

/** `bootwright enroll`. */
export const ENROLL: Command = {
  name: 'enroll',
  summary: 'Register a discovered machine as a machine of a cluster and profile',
  usage: ['enroll DISCOVERED|MAC --profile PROFILE --cluster CLUSTER [--name NAME] [-L key=value] [--max-fetches N]'],
  positionals: 1,
  flags: [
    { name: 'profile', short: 'p', type: 'string', value: 'PROFILE', help: 'the profile the machine uses (required)' },
    { name: 'cluster', short: 'c', type: 'string', value: 'CLUSTER', help: 'the cluster it joins (required)' },
    { name: 'name', short: 'n', type: 'string', value: 'NAME', help: 'the machine name (default: its host name when that is a DNS label, else m-<MAC without colons>)' },
    { name: 'labels', short: 'L', type: 'string', value: 'K=V,...', help: 'labels of the machine, comma-separated key=value pairs' },
    { name: 'max-fetches', type: 'string', value: 'N', help: "the machine's maxFetches: how many times it may fetch its bootstrap data (every boot of a diskless node is one)" },
    ...CONNECTION_FLAGS,
  ],
  details: `DISCOVERED is the ID that 'bootwright get discovered' shows, or the MAC it shows
(aa:bb:cc:dd:ee:ff, aa-bb-..., aabb.ccdd.eeff). The machine's selectors are the entry's
MAC, UUID and serial: the host name only when it reported none of them, since a host name
changes with a DHCP lease or a reinstall and a changed one would no longer match. The
service refuses (409) a selector that another machine already has. A MAC that no
discovered entry holds registers a machine matched by that MAC alone, before it boots.
Prints machine/NAME created.

Examples:
  bootwright enroll 3 --profile worker --cluster prod --name rack1-n3
  bootwright enroll 52:54:00:10:00:07 -p worker -c prod -L rack=rack1 --max-fetches 5`,
};

/** DNS-1123 labels: machine names. */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** The default machine name for an entry. @throws UsageError when none can be made. */
function defaultName(d: { hostname?: string | undefined; mac?: string | undefined }, which: string): string {
  if (d.hostname !== undefined && DNS_LABEL.test(d.hostname)) return d.hostname;
  if (d.mac !== undefined) return `m-${d.mac.replaceAll(':', '')}`;
  throw new UsageError(`discovered machine ${which} has no host name or MAC to name it after: give --name`, 'enroll');
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

/** Pages of `/v1/discovered` read looking for a MAC: 20 of 1,000 entries, twice the service's default bound on discovered entries (BOOTWRIGHT_DISCOVERED_MAX). */
const DISCOVERED_PAGES = 20;

/** The discovered entry (enrolled or not) holding `mac`, if one is kept. */
async function discoveredByMac(client: InventoryClient, mac: string): Promise<DiscoveredDocument | undefined> {
  let next: string | undefined;
  for (let page = 0; page < DISCOVERED_PAGES; page++) {
    const list = await client.get<{ items: DiscoveredDocument[]; continue?: string }>(`/v1/discovered?enrolled=true&limit=1000${next ? `&continue=${encodeURIComponent(next)}` : ''}`);
    const found = list.items.find((d) => d.mac === mac);
    if (found || list.continue === undefined) return found;
    next = list.continue;
  }
  return undefined;
}

/** `--max-fetches` as a positive integer. @throws UsageError */
function maxFetchesOf(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!/^[1-9]\d{0,8}$/.test(text)) throw new UsageError('--max-fetches: must be a whole number from 1', 'enroll');
  return Number(text);
}

/** Run `enroll`. @returns 0; @throws UsageError, ConfigError, ServerRefusal, ServerUnavailable */
export async function runEnroll(parsed: Parsed, out: NodeJS.WritableStream): Promise<number> {
  const which = parsed.positionals[0];
  if (which === undefined) throw new UsageError('the DISCOVERED id or a MAC is required (see bootwright get discovered)', 'enroll');
  const profile = parsed.values.profile as string | undefined;
  const cluster = parsed.values.cluster as string | undefined;
  if (profile === undefined || cluster === undefined) throw new UsageError(`${profile === undefined ? '--profile' : '--cluster'} is required`, 'enroll');
  const labels = labelsOf(parsed.values.labels as string | undefined);
  const maxFetches = maxFetchesOf(parsed.values['max-fetches'] as string | undefined);
  // A MAC is hex digits with separators (aa:bb:…, aa-bb-…, aabb.ccdd.…); a discovered id
  // is a number, so hex and separators that make no MAC are a mistyped MAC.
  const macLike = /[:.-]/.test(which) && /^[0-9a-f:.-]+$/i.test(which);
  const mac = macLike ? normaliseMac(which) : undefined;
  if (macLike && mac === undefined) throw new UsageError(`"${which}" is neither a discovered id nor a MAC`, 'enroll');
  const client = clientFrom(parsed);
  const entry = mac === undefined ? await client.get<DiscoveredDocument>(`/v1/discovered/${encodeURIComponent(which)}`) : await discoveredByMac(client, mac);
  const identity = entry ?? { mac };
  const name = (parsed.values.name as string | undefined) ?? defaultName(identity, which);
  const machine = {
    apiVersion: RESOURCE_API_VERSION,
    kind: 'Machine',
    metadata: { name, ...(labels ? { labels } : {}) },
    spec: { selectors: enrolmentSelectors(identity), cluster, profile, ...(maxFetches !== undefined ? { maxFetches } : {}) },
  };
  const created = (await client.request('POST', '/v1/machines', { body: machine })).json as ResourceDocument;
  out.write(`machine/${printable(created.metadata.name)} created${entry ? ` (discovered ${printable(entry.id)})` : ''}\n`);
  return EXIT.ok;
}
