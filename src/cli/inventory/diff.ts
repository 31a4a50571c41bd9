/**
 * `bootwright diff -f FILE|DIR|-`, as `kubectl diff`: for each document, what the
 * service stores now against what `apply` would make it store, as a unified diff of the
 * two YAML documents. What it would store is the service's own answer to the write made
 * as a dry run (`?dryRun=All`), so defaults, kept secrets and the revision it would get
 * are the service's, not guessed. `status` is left out (a write does not change it).
 * Secrets read back as `"<redacted>"` on both sides: a changed secret shows as a new
 * revision only.
 *
 * Exit codes are kubectl diff's: 0 no differences, 1 differences found; above 1 (bootwright's
 * own codes) the diff could not be made.
 */
import { createTwoFilesPatch } from 'diff';
import { RESOURCE_KINDS } from '../../store/resources.js';
import { EXIT, type Command, type Parsed } from '../commands.js';
import { clientFrom, CONNECTION_FLAGS, type InventoryClient, printRefusal, ServerRefusal } from './client.js';
import { ref, type ResourceDocument, terminalYaml } from './kinds.js';
import { APPLY_ORDER, documentPath, FILE_FLAGS, readManifests } from './manifests.js';

/** `bootwright diff`. */
export const DIFF: Command = {
  name: 'diff',
  summary: 'Show what apply would change, as a unified diff, changing nothing',
  usage: ['diff -f FILE|DIR|- [-R]'],
  positionals: 0,
  flags: [...FILE_FLAGS, ...CONNECTION_FLAGS],
  details: `Each document is sent to the service as a dry-run write (nothing is kept), and the
answer is compared with what is stored now: a diff of each changed document, headed
live/KIND/NAME and merged/KIND/NAME (a new one is diffed against nothing). status is left
out; secrets read "<redacted>" on both sides, so a changed secret shows as a new
revision only. Documents are checked against what is stored: a machine whose cluster is
new in the same files is refused until the cluster is applied.

Exit codes, as kubectl diff's: 0 no differences; 1 differences found; 2 bad input or
usage; 3 the service refused a document (its problem is printed); 4 the service could
not be reached.

Example:
  bootwright diff -f examples/inventory/flatcar/`,
};

/** The read document without what a write does not set, as YAML (terminal-safe). */
function comparable(doc: ResourceDocument | undefined): string {
  if (doc === undefined) return '';
  const { status: _status, ...rest } = doc;
  return terminalYaml(rest);
}

/** The live document and the one a write would store. @throws ServerRefusal for a write the service refuses */
async function sides(client: InventoryClient, doc: ResourceDocument): Promise<{ live: ResourceDocument | undefined; merged: ResourceDocument }> {
  const path = documentPath(doc);
  const current = await client.request('GET', path, { allow: [404] });
  if (current.status === 404) {
    const created = await client.request('POST', `/v1/${RESOURCE_KINDS[doc.kind]}?dryRun=All`, { body: doc });
    return { live: undefined, merged: created.json as ResourceDocument };
  }
  const live = current.json as ResourceDocument;
  const etag = current.headers.get('etag') ?? `"${live.metadata.revision}"`;
  const merged = await client.request('PUT', `${path}?dryRun=All`, { body: doc, headers: { 'if-match': etag } });
  return { live, merged: merged.json as ResourceDocument };
}

/**
 * Run `diff`.
 *
 * @returns 0 when nothing would change, 1 when something would, 3 when the service
 *   refused a document (printed; the others are still diffed).
 * @throws UsageError, RequestError (files), ConfigError, ServerUnavailable
 */
export async function runDiff(parsed: Parsed, out: NodeJS.WritableStream, err: NodeJS.WritableStream, stdin: () => Promise<Buffer>): Promise<number> {
  const manifests = await readManifests(parsed, 'diff', stdin);
  const client = clientFrom(parsed, process.env, err);
  manifests.sort((a, b) => APPLY_ORDER[a.doc.kind] - APPLY_ORDER[b.doc.kind]);
  let changed = false;
  let refused = false;
  for (const m of manifests) {
    try {
      const { live, merged } = await sides(client, m.doc);
      const before = comparable(live);
      const after = comparable(merged);
      if (before === after) continue;
      changed = true;
      const name = ref(m.doc.kind, m.doc.metadata.name);
      out.write(createTwoFilesPatch(live ? `live/${name}` : '/dev/null', `merged/${name}`, before, after, '', '', { context: 3 }).replace(/^=+\n/, ''));
    } catch (e) {
      if (!(e instanceof ServerRefusal)) throw e;
      refused = true;
      err.write(`${m.source}: ${ref(m.doc.kind, m.doc.metadata.name)}: `);
      printRefusal(e, err);
    }
  }
  if (refused) return EXIT.refused;
  return changed ? 1 : EXIT.ok;
}
