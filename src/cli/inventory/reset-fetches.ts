/**
 * `bootwright reset-fetches MACHINE`: start a machine's fetch count again, so a machine
 * that reached its `maxFetches` (a reinstall, a diskless node's next boots) may fetch
 * its bootstrap data once more. It is `DELETE /v1/machines/NAME/fetches` (write scope).
 * Prints `machine "node-1" fetches reset`.
 */
import { EXIT, UsageError, type Command, type Parsed } from '../commands.js';
import { clientFrom, CONNECTION_FLAGS } from './client.js';

/** `bootwright reset-fetches`. */
export const RESET_FETCHES: Command = {
  name: 'reset-fetches',
  summary: "Start a machine's fetch count again (after it reached maxFetches)",
  usage: ['reset-fetches MACHINE'],
  positionals: 1,
  flags: [...CONNECTION_FLAGS],
  details: `A machine with maxFetches set is refused its bootstrap data (403, "fetch limit reached")
once it has fetched that many times; every boot of a diskless node is a fetch. This
forgets the fetches counted so far; the audit log keeps them.

Examples:
  bootwright reset-fetches rack1-n1`,
};

/** Run `reset-fetches`. @returns 0; @throws UsageError, ConfigError, ServerRefusal, ServerUnavailable */
export async function runResetFetches(parsed: Parsed, out: NodeJS.WritableStream): Promise<number> {
  const name = parsed.positionals[0];
  if (name === undefined) throw new UsageError('a MACHINE name is required', 'reset-fetches');
  await clientFrom(parsed).request('DELETE', `/v1/machines/${encodeURIComponent(name)}/fetches`);
  out.write(`machine "${name}" fetches reset\n`);
  return EXIT.ok;
}
