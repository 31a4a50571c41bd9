/**
 * `bootwright delete KIND NAME`, as `kubectl delete`: one cluster, profile or machine
 * (its revisions stay readable), or one discovered machine by its id. Prints
 * `machine "node-1" deleted`.
 */
import { EXIT, UsageError, type Command, type Parsed } from '../commands.js';
import { clientFrom, CONNECTION_FLAGS } from './client.js';
import { collectionOf, KIND_NAMES, kindOf } from './kinds.js';

/** `bootwright delete`. */
export const DELETE: Command = {
  name: 'delete',
  summary: 'Delete a cluster, profile or machine, or dismiss a discovered machine',
  usage: [`delete ${KIND_NAMES} NAME`],
  positionals: 2,
  flags: [...CONNECTION_FLAGS],
  details: `A cluster or profile that machines still use is not deleted: the service answers 409
naming them (exit 3). For discovered machines NAME is the ID that 'get discovered' shows.

Examples:
  bootwright delete machine node-1
  bootwright delete discovered 7`,
};

/** Run `delete`. @returns 0; @throws UsageError, ConfigError, ServerRefusal, ServerUnavailable */
export async function runDelete(parsed: Parsed, out: NodeJS.WritableStream): Promise<number> {
  const kind = kindOf(parsed.positionals[0], 'delete');
  const name = parsed.positionals[1];
  if (name === undefined) throw new UsageError('a NAME is required', 'delete');
  await clientFrom(parsed).request('DELETE', `/v1/${collectionOf(kind)}/${encodeURIComponent(name)}`);
  out.write(`${kind === 'Discovered' ? 'discovered machine' : kind.toLowerCase()} "${name}" deleted\n`);
  return EXIT.ok;
}
