/**
 * `bootwright apply -f FILE|DIR|-`, as `kubectl apply`: every Cluster, Profile and
 * Machine document of the files (src/cli/inventory/manifests.ts: multi-document YAML,
 * JSON, `List` documents), clusters first, then profiles, then machines (a machine needs
 * both), each created when absent or replaced with `If-Match` on the revision just read.
 * One line per document: `machine/node-1 created|configured|unchanged` (unchanged: the
 * service wrote no revision, the document changed nothing), with ` (server dry run)`
 * under `--dry-run=server`. What the service sets (`metadata.revision`, `createdAt`,
 * `updatedAt`, `status`) may be in the documents and is ignored, so
 * `get -o yaml | apply -f -` works.
 */
import { RESOURCE_KINDS } from '../../store/resources.js';
import { EXIT, type Command, type Parsed } from '../commands.js';
import { clientFrom, CONNECTION_FLAGS, type InventoryClient, printRefusal, ServerRefusal } from './client.js';
import { ref, type ResourceDocument } from './kinds.js';
import { APPLY_ORDER, documentPath, DRY_RUN_FLAG, dryRunOf, FILE_FLAGS, readManifests } from './manifests.js';

/** `bootwright apply`. */
export const APPLY: Command = {
  name: 'apply',
  summary: 'Create or replace clusters, profiles and machines from YAML or JSON files',
  usage: ['apply -f FILE|DIR|- [-R] [--dry-run=server]'],
  positionals: 0,
  flags: [...FILE_FLAGS, DRY_RUN_FLAG, ...CONNECTION_FLAGS],
  details: `Documents are applied clusters first, then profiles, then machines; each is created when
absent, else replaced with If-Match on the revision read just before (a concurrent change
is refused, 412, not overwritten). A secret written as "<redacted>" keeps the stored one.
What the service sets (metadata.revision, createdAt, updatedAt, and status) is ignored,
so the output of 'get -o yaml' can be applied again; List, ClusterList, ProfileList and
MachineList documents are read item by item.
Each document prints kind/name created, configured or unchanged. A document the service
refuses prints its problem (each field on its own line); the others are still applied,
and the exit code is 3. The service's warnings are printed as "Warning: ..." lines.
With --dry-run=server every write is checked by the service as it would be made, and
nothing is kept.

Examples:
  bootwright apply -f examples/inventory/flatcar/
  bootwright apply -R -f examples/inventory/
  bootwright get machine node-1 -o yaml | bootwright apply -f -
  kustomize build . | bootwright apply -f - --dry-run=server`,
};

/** Create or replace one document. @returns what happened, as kubectl words it. */
async function applyOne(client: InventoryClient, doc: ResourceDocument, dryRun: boolean): Promise<'created' | 'configured' | 'unchanged'> {
  const path = documentPath(doc);
  const query = dryRun ? '?dryRun=All' : '';
  const current = await client.request('GET', path, { allow: [404] });
  if (current.status === 404) {
    await client.request('POST', `/v1/${RESOURCE_KINDS[doc.kind]}${query}`, { body: doc });
    return 'created';
  }
  const before = (current.json as ResourceDocument).metadata.revision;
  const etag = current.headers.get('etag') ?? `"${before}"`;
  const after = (await client.request('PUT', `${path}${query}`, { body: doc, headers: { 'if-match': etag } })).json as ResourceDocument;
  return after.metadata.revision === before ? 'unchanged' : 'configured';
}

/**
 * Run `apply`.
 *
 * @returns 0 when every document was applied; 3 when the service refused any (each
 *   printed); the rest are applied regardless.
 * @throws UsageError without `-f` or for a bad `--dry-run`; RequestError (exit 2) naming
 *   every file that cannot be read or parsed and every document without apiVersion, kind
 *   or name, before anything is sent; ServerUnavailable (exit 4) when the service cannot
 *   be reached.
 */
export async function runApply(parsed: Parsed, out: NodeJS.WritableStream, err: NodeJS.WritableStream, stdin: () => Promise<Buffer>): Promise<number> {
  const dryRun = dryRunOf(parsed, 'apply');
  const manifests = await readManifests(parsed, 'apply', stdin);
  const client = clientFrom(parsed, process.env, err);
  manifests.sort((a, b) => APPLY_ORDER[a.doc.kind] - APPLY_ORDER[b.doc.kind]);
  let refused = false;
  for (const m of manifests) {
    try {
      out.write(`${ref(m.doc.kind, m.doc.metadata.name)} ${await applyOne(client, m.doc, dryRun)}${dryRun ? ' (server dry run)' : ''}\n`);
    } catch (e) {
      if (!(e instanceof ServerRefusal)) throw e;
      refused = true;
      err.write(`${m.source}: ${ref(m.doc.kind, m.doc.metadata.name)}: `);
      printRefusal(e, err);
    }
  }
  return refused ? EXIT.refused : EXIT.ok;
}
