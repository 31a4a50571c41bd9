/**
 * `bootwright render` and `bootwright validate`: a NodeBootstrap file in, bootstrap data
 * (or a verdict) out, through the same pipeline as `POST /v1/render` (src/render.ts).
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { documentLimits, loadConfig } from '../config.js';
import { RequestError } from '../errors.js';
import { renderNodeBootstrap } from '../render.js';
import { decodeUtf8, parseNodeBootstrap, syntaxForFile } from '../request/parse.js';
import { DEFAULT_FORMAT, FORMATS, formatNamed, VERSIONED_FORMATS } from '../provision/formats.js';
import { OUTPUT_FORMATS, PLATFORMS, type NodeBootstrap, type OutputFormat, type Platform } from '../request/schema.js';
import { EXIT, UsageError, type Command, type Parsed } from './commands.js';

/** `cloud-config|ignition`: the registered formats, for usage lines. */
const FORMAT_CHOICES = OUTPUT_FORMATS.join('|');
/** `cloud-config or Ignition`. */
const FORMAT_TITLES = FORMATS.map((f) => f.title).join(' or ');

const FILE_FLAG = { name: 'file', short: 'f', type: 'string', value: 'FILE', help: 'the NodeBootstrap request, YAML or JSON (- for standard input); or give FILE as the argument' } as const;
const FORMAT_FLAG = { name: 'format', type: 'string', value: 'FORMAT', help: `output format: ${OUTPUT_FORMATS.join(' | ')} (default: spec.output.format, else ${DEFAULT_FORMAT})` } as const;

/** `bootwright render`. */
export const RENDER: Command = {
  name: 'render',
  summary: `Render a NodeBootstrap request to ${FORMAT_TITLES}`,
  usage: [
    `render FILE [--format ${FORMAT_CHOICES}] [--ignition-version X.Y.Z] [--platform NAME] [-o OUT]`,
    'render -f FILE ...',
  ],
  positionals: 1,
  flags: [
    FILE_FLAG,
    FORMAT_FLAG,
    { name: 'ignition-version', type: 'string', value: 'X.Y.Z', help: 'Ignition spec: the highest supported not above it (3.x), or 2.3.0 for any 2.x' },
    { name: 'platform', type: 'string', value: 'NAME', help: `apply a platform's user data limit: ${PLATFORMS.join(' | ')}` },
    { name: 'output', short: 'o', type: 'string', value: 'OUT', help: 'write to OUT (atomically, mode 0600) instead of standard output' },
  ],
  details: `Warnings go to standard error. Bad input exits 2 with one line per problem, each naming
the field (spec.cluster.bootstrapToken: ...); nothing is written to OUT.

Examples:
  bootwright render examples/worker.yaml
  bootwright render examples/worker.yaml --format ignition --ignition-version 3.4.0 -o worker.ign`,
};

/** `bootwright validate`. */
export const VALIDATE: Command = {
  name: 'validate',
  summary: 'Check that a NodeBootstrap request renders (exit 0) or say why not (exit 2)',
  usage: [`validate FILE [--format ${FORMAT_CHOICES}]`, 'validate -f FILE ...'],
  positionals: 1,
  flags: [FILE_FLAG, FORMAT_FLAG],
  details: 'Valid means renderable: what render would refuse is refused here too, naming the field.',
};

/** The request file named by `-f FILE` or the FILE argument (`-` is standard input). */
function requestFile(parsed: Parsed, command: string): string {
  const flag = parsed.values.file as string | undefined;
  const arg = parsed.positionals[0];
  if (flag !== undefined && arg !== undefined) throw new UsageError('give FILE either as an argument or with -f, not both', command);
  const file = flag ?? arg;
  if (file === undefined) throw new UsageError('a request FILE is required', command);
  return file;
}

/**
 * Read and validate the request in `file` (`-` is standard input) as UTF-8, under the
 * document limits the service would hold it to (BOOTWRIGHT_MAX_*, or the configuration
 * file's).
 *
 * @throws UsageError when the file cannot be read; RequestError for bad input;
 *   ConfigError for a bad limit setting.
 */
function readRequest(file: string, command: string): NodeBootstrap {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file === '-' ? 0 : file);
  } catch (e) {
    throw new UsageError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`, command);
  }
  const text = decodeUtf8(bytes);
  return parseNodeBootstrap(text, file === '-' ? (text.trimStart().startsWith('{') ? 'json' : 'yaml') : syntaxForFile(file), documentLimits(loadConfig()));
}

/** Write OUT atomically: a sibling temporary file renamed over it, so no half-written file is left. */
function writeAtomically(path: string, body: string | Uint8Array): void {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, body, { mode: 0o600 });
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw new UsageError(`cannot write ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

/** `--format`, checked. */
function formatFlag(parsed: Parsed): OutputFormat | undefined {
  const format = parsed.values.format as string | undefined;
  if (format !== undefined && !(OUTPUT_FORMATS as readonly string[]).includes(format)) {
    throw new RequestError([{ path: '--format', message: `must be one of ${OUTPUT_FORMATS.join(', ')}` }]);
  }
  return format as OutputFormat | undefined;
}

/**
 * Run `render`: print (or write to `-o`) the bootstrap data, warnings on `err`.
 *
 * @throws RequestError for bad input (naming the field or flag); UsageError.
 */
export function runRender(parsed: Parsed, out: NodeJS.WritableStream, err: NodeJS.WritableStream): number {
  const format = formatFlag(parsed);
  const platform = parsed.values.platform as string | undefined;
  if (platform !== undefined && !(PLATFORMS as readonly string[]).includes(platform)) {
    throw new RequestError([{ path: '--platform', message: `must be one of ${PLATFORMS.join(', ')}` }]);
  }
  const ignitionVersion = parsed.values['ignition-version'] as string | undefined;
  const req = readRequest(requestFile(parsed, 'render'), 'render');
  const result = renderNodeBootstrap(req, {
    ...(format ? { format } : {}),
    ...(ignitionVersion ? { ignitionVersion, ignitionVersionField: '--ignition-version' } : {}),
    ...(platform ? { platform: platform as Platform, platformField: '--platform' } : {}),
  });
  if (ignitionVersion && !formatNamed(result.format).versions) {
    throw new RequestError([{ path: '--ignition-version', message: `applies only to --format ${VERSIONED_FORMATS.map((f) => f.name).join('|')}` }]);
  }
  for (const w of result.warnings) err.write(`warning: ${w}\n`);
  const payload = result.gzip ?? result.body;
  const output = parsed.values.output as string | undefined;
  if (output) writeAtomically(output, payload);
  else out.write(payload);
  return EXIT.ok;
}

/**
 * Run `validate`: render the request in its format (or `--format`) and say it is valid.
 *
 * @throws RequestError for what render would refuse; UsageError.
 */
export function runValidate(parsed: Parsed, err: NodeJS.WritableStream): number {
  const format = formatFlag(parsed);
  const file = requestFile(parsed, 'validate');
  const result = renderNodeBootstrap(readRequest(file, 'validate'), format ? { format } : {});
  for (const w of result.warnings) err.write(`warning: ${w}\n`);
  err.write(`${file}: valid (${result.format}${result.ignitionVersion ? ` ${result.ignitionVersion}` : ''})\n`);
  return EXIT.ok;
}
