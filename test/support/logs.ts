/**
 * A pino logger whose lines a test reads back (each line as JSON text): what the
 * controller logs, checked for errors, refusals or secrets.
 */
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';

/** A logger at `level` and the lines it wrote so far. */
export function capturedLog(level: pino.LevelWithSilent = 'debug'): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = pino(
    { level },
    new Writable({
      write: (chunk, _enc, done) => {
        lines.push(String(chunk));
        done();
      },
    }),
  );
  return { log, lines };
}
