/**
 * `bootwright get KIND [NAME] [-l SELECTOR] [-o table|wide|yaml|json|name]`, as `kubectl get`:
 * a table by default (`wide`: more columns); YAML or JSON documents (one, or a `<Kind>List` of every page);
 * `kind/name` lines with `-o name`.
 */
import { RESOURCE_API_VERSION } from '../../store/resources.js';
import { load } from 'js-yaml';
import { EXIT, UsageError, type Command, type Parsed } from '../commands.js';
import { clientFrom, CONNECTION_FLAGS, type InventoryClient } from './client.js';
import { collectionOf, columns, type DiscoveredDocument, hasTerminalControls, KIND_NAMES, kindOf, ref, type ResourceDocument, table, terminalJson, terminalYaml, type CliKind } from './kinds.js';

/** Output formats of `get`. */
const OUTPUTS = ['table', 'wide', 'yaml', 'json', 'name'] as const;
type Output = (typeof OUTPUTS)[number];

/** `bootwright get`. */
export const GET: Command = {
  name: 'get',
  summary: 'List clusters, profiles, machines or discovered machines, or show one',
  usage: [`get ${KIND_NAMES} [NAME] [-l SELECTOR] [-o table|wide|yaml|json|name]`],
  positionals: 2,
  flags: [
    { name: 'selector', short: 'l', type: 'string', value: 'SELECTOR', help: 'label selector, as kubectl: env=prod,tier!=db,rack in (r1,r2),!retired' },
    { name: 'output', short: 'o', type: 'string', value: 'FORMAT', help: `${OUTPUTS.join(' | ')} (default table)` },
    { name: 'all', short: 'A', type: 'boolean', help: 'discovered: list the machines already enrolled too' },
    ...CONNECTION_FLAGS,
  ],
  details: `Lists follow every page. A machine's PHASE is the service's status.phase (<none> when it
reports none). Secrets are shown as "<redacted>", as the service answers them.

Examples:
  bootwright get machines -l rack=r1
  bootwright get machine node-1 -o yaml
  bootwright get discovered`,
};

/** The `-o` value. @throws UsageError for another. */
export function outputOf(parsed: Parsed, command: string, allowed: readonly string[] = OUTPUTS): Output {
  const o = (parsed.values.output as string | undefined) ?? 'table';
  if (!allowed.includes(o)) throw new UsageError(`unknown output format "${o}": use ${allowed.join(', ')}`, command);
  return o as Output;
}

/** Print documents in a format. `list` is the List document's kind when printing several. */
function print(kind: CliKind, items: (ResourceDocument | DiscoveredDocument)[], output: Output, one: boolean, out: NodeJS.WritableStream): void {
  if (output === 'name') {
    for (const i of items) out.write(`${ref(kind, kind === 'Discovered' ? (i as DiscoveredDocument).id : (i as ResourceDocument).metadata.name)}\n`);
    return;
  }
  if (output === 'table' || output === 'wide') {
    if (items.length === 0) {
      out.write(`No ${collectionOf(kind)} found.\n`);
      return;
    }
    const { header, row } = columns(kind, new Date(), output === 'wide');
    out.write(table(header, items.map((i) => row(i as never))));
    return;
  }
  const value = one ? items[0] : kind === 'Discovered' ? { items } : { apiVersion: RESOURCE_API_VERSION, kind: `${kind}List`, items };
  out.write(output === 'json' ? terminalJson(value) : terminalYaml(value));
}

/** One resource or discovered machine. @throws ServerRefusal (404 for none) */
async function getOne(client: InventoryClient, kind: CliKind, name: string): Promise<ResourceDocument | DiscoveredDocument> {
  return client.get(`/v1/${collectionOf(kind)}/${encodeURIComponent(name)}`);
}

/** Every resource of a kind (every page), or the discovered machines. */
export async function getAll(client: InventoryClient, kind: CliKind, selector: string | undefined, all = false): Promise<(ResourceDocument | DiscoveredDocument)[]> {
  if (kind === 'Discovered') {
    const items: DiscoveredDocument[] = [];
    let next: string | undefined;
    do {
      const page = await client.get<{ items: DiscoveredDocument[]; continue?: string }>(`/v1/discovered?limit=1000${all ? '&enrolled=true' : ''}${next ? `&continue=${encodeURIComponent(next)}` : ''}`);
      items.push(...page.items);
      next = page.items.length > 0 ? page.continue : undefined;
    } while (next !== undefined);
    return items;
  }
  return client.listAll<ResourceDocument>(collectionOf(kind), selector !== undefined ? { labelSelector: selector } : {});
}

/** Run `get`. @returns 0; @throws UsageError, ConfigError, ServerRefusal, ServerUnavailable */
export async function runGet(parsed: Parsed, out: NodeJS.WritableStream): Promise<number> {
  const kind = kindOf(parsed.positionals[0], 'get');
  const name = parsed.positionals[1];
  const output = outputOf(parsed, 'get');
  const selector = parsed.values.selector as string | undefined;
  if (selector !== undefined && name !== undefined) throw new UsageError('give a NAME or a selector (-l), not both', 'get');
  if (selector !== undefined && kind === 'Discovered') throw new UsageError('discovered machines have no labels: -l does not apply', 'get');
  const client = clientFrom(parsed);
  if (name !== undefined) {
    if (output === 'yaml') {
      // The service's own YAML (Accept: application/yaml), byte for byte, unless it holds a
      // terminal control: then the same value, escaped.
      const text = (await client.request('GET', `/v1/${collectionOf(kind)}/${encodeURIComponent(name)}`, { headers: { accept: 'application/yaml' } })).text;
      out.write(hasTerminalControls(text) ? terminalYaml(load(text)) : text);
      return EXIT.ok;
    }
    print(kind, [await getOne(client, kind, name)], output, true, out);
    return EXIT.ok;
  }
  print(kind, await getAll(client, kind, selector, parsed.values.all === true), output, false, out);
  return EXIT.ok;
}
