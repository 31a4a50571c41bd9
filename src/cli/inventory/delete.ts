/**
 * `bootwright delete KIND NAME` and `bootwright delete -f FILE|DIR|-`, as
 * `kubectl delete`: one cluster, profile or machine (its revisions stay readable), one
 * discovered machine by its id, or every document of the files (machines first, then
 * profiles, then clusters: the reverse of apply). Prints `machine "node-1" deleted`,
 * with ` (server dry run)` under `--dry-run=server`.
 */
import { EXIT, UsageError, type Command, type Parsed } from '../commands.js';
import { clientFrom, CONNECTION_FLAGS, type InventoryClient, printRefusal, ServerRefusal } from './client.js';
import { type CliKind, collectionOf, KIND_NAMES, kindOf, printable } from './kinds.js';
import { APPLY_ORDER, DRY_RUN_FLAG, dryRunOf, FILE_FLAGS, readManifests } from './manifests.js';

/** `bootwright delete`. */
export const DELETE: Command = {
  name: 'delete',
  summary: 'Delete clusters, profiles or machines (by name or from files), or dismiss a discovered machine',
  usage: [`delete ${KIND_NAMES} NAME [--dry-run=server]`, 'delete -f FILE|DIR|- [-R] [--ignore-not-found] [--dry-run=server]'],
  positionals: 2,
  flags: [...FILE_FLAGS, { name: 'ignore-not-found', type: 'boolean', help: 'a resource that does not exist is not an error' }, DRY_RUN_FLAG, ...CONNECTION_FLAGS],
  details: `A cluster or profile that machines still use is not deleted: the service answers 409
naming them (exit 3). For discovered machines NAME is the ID that 'get discovered' shows.
With -f, the documents' machines are deleted first, then profiles, then clusters; a
document the service refuses prints its problem, the others are still deleted, and the
exit code is 3.

Examples:
  bootwright delete machine node-1
  bootwright delete discovered 7
  bootwright delete -f examples/inventory/flatcar/`,
};

/** What `delete` prints for a kind (`discovered machine "7"`). */
const noun = (kind: CliKind): string => (kind === 'Discovered' ? 'discovered machine' : kind.toLowerCase());

/** Delete one; @returns whether it existed. @throws ServerRefusal (404 unless `ignoreMissing`) */
async function deleteOne(client: InventoryClient, kind: CliKind, name: string, dryRun: boolean, ignoreMissing: boolean): Promise<boolean> {
  const answer = await client.request('DELETE', `/v1/${collectionOf(kind)}/${encodeURIComponent(name)}${dryRun ? '?dryRun=All' : ''}`, ignoreMissing ? { allow: [404] } : {});
  return answer.status !== 404;
}

/**
 * Run `delete`.
 *
 * @returns 0; with `-f`, 3 when the service refused any document (each printed).
 * @throws UsageError, ConfigError, RequestError (a file that cannot be read), ServerRefusal, ServerUnavailable
 */
export async function runDelete(parsed: Parsed, out: NodeJS.WritableStream, err: NodeJS.WritableStream, stdin: () => Promise<Buffer>): Promise<number> {
  const dryRun = dryRunOf(parsed, 'delete');
  const suffix = dryRun ? ' (server dry run)' : '';
  const ignoreMissing = parsed.values['ignore-not-found'] === true;
  if (parsed.values.filename === undefined) {
    const kind = kindOf(parsed.positionals[0], 'delete');
    const name = parsed.positionals[1];
    if (name === undefined) throw new UsageError('a NAME is required', 'delete');
    if (kind === 'Discovered' && dryRun) throw new UsageError('--dry-run does not apply to discovered machines', 'delete');
    if (await deleteOne(clientFrom(parsed, process.env, err), kind, name, dryRun, ignoreMissing)) out.write(`${noun(kind)} "${printable(name)}" deleted${suffix}\n`);
    return EXIT.ok;
  }
  if (parsed.positionals.length > 0) throw new UsageError('give KIND NAME or -f, not both', 'delete');
  const manifests = await readManifests(parsed, 'delete', stdin);
  const client = clientFrom(parsed, process.env, err);
  manifests.sort((a, b) => APPLY_ORDER[b.doc.kind] - APPLY_ORDER[a.doc.kind]);
  let refused = false;
  for (const m of manifests) {
    try {
      if (await deleteOne(client, m.doc.kind, m.doc.metadata.name, dryRun, ignoreMissing)) out.write(`${noun(m.doc.kind)} "${printable(m.doc.metadata.name)}" deleted${suffix}\n`);
    } catch (e) {
      if (!(e instanceof ServerRefusal)) throw e;
      refused = true;
      err.write(`${m.source}: `);
      printRefusal(e, err);
    }
  }
  return refused ? EXIT.refused : EXIT.ok;
}
