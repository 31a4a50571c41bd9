/**
 * The command table of bootwright's command line, and its help text, in the style of
 * kubectl: `bootwright help [COMMAND]` and `COMMAND --help` print a command's own usage
 * and flags (exit 0); an unknown flag is named with a pointer to `--help` (exit 2).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** Exit codes of every command. */
export const EXIT = {
  /** Success. */
  ok: 0,
  /** An unexpected failure, or the service could not start. */
  failure: 1,
  /** Bad input or usage: one line per problem, naming the field or flag. */
  usage: 2,
  /** The service refused the request (a 4xx problem, printed with its fields). */
  refused: 3,
  /** The service could not be reached, did not answer in time, or failed (5xx). */
  unavailable: 4,
} as const;

/** The exit codes as help and the docs list them. */
export const EXIT_CODES_HELP =
  'Exit codes: 0 success; 1 unexpected failure or the service could not start; 2 bad input or usage;\n' +
  '3 the service refused the request (its problem is printed); 4 the service could not be reached or failed.';

/** One flag of a command. */
export interface Flag {
  name: string;
  short?: string;
  /** `string` flags take a value (`--port 8080` or `--port=8080`). */
  type: 'string' | 'boolean';
  /** The value's placeholder in help, e.g. `FILE`. */
  value?: string;
  /** A `string` flag that may be given more than once (`-f a.yaml -f b.yaml`): its value is then a list. */
  multiple?: boolean;
  help: string;
}

/** A command: its name, one-line summary, usage lines, flags and what runs it. */
export interface Command {
  name: string;
  summary: string;
  /** Usage lines, without the leading `bootwright `. */
  usage: string[];
  /** More text for `--help`, after the usage. */
  details?: string;
  /** The names of the positional arguments, at most this many. */
  positionals: number;
  flags: Flag[];
}

/** A usage problem: printed with a pointer to the command's `--help`, exit 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
    this.name = 'UsageError';
  }
}

const HELP_FLAG: Flag = { name: 'help', short: 'h', type: 'boolean', help: 'show this help' };

/** The parsed flags and positionals of one command line. */
export interface Parsed {
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

/**
 * Parse a command's arguments with node's `util.parseArgs` (strict: only its flags).
 *
 * @param command the command whose flags apply (plus `-h`/`--help`).
 * @param args the arguments after the command name.
 * @throws UsageError naming an unknown flag, a missing flag value or an extra argument.
 */
export function parseCommand(command: Command, args: string[]): Parsed {
  const flags = [...command.flags, HELP_FLAG];
  const options: NonNullable<ParseArgsConfig['options']> = {};
  for (const f of flags) options[f.name] = { type: f.type, ...(f.short ? { short: f.short } : {}), ...(f.multiple ? { multiple: true } : {}) };
  let parsed: Parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true }) as Parsed;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      // Name the flag as written: the first option token that is not one of ours.
      const { tokens } = parseArgs({ args, options, allowPositionals: true, strict: false, tokens: true });
      const unknown = tokens.find((t) => t.kind === 'option' && !(t.name in options));
      throw new UsageError(`unknown flag: ${unknown?.kind === 'option' ? unknown.rawName : '?'}`, command.name);
    }
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      const { tokens } = parseArgs({ args, options, allowPositionals: true, strict: false, tokens: true });
      const bad = tokens.find((t) => t.kind === 'option' && options[t.name]?.type === 'string' && t.value === undefined);
      throw new UsageError(`flag needs a value: ${bad?.kind === 'option' ? bad.rawName : '?'}`, command.name);
    }
    throw new UsageError((e as Error).message, command.name);
  }
  if (!parsed.values.help && parsed.positionals.length > command.positionals) {
    throw new UsageError(`unexpected argument: ${parsed.positionals[command.positionals]!}`, command.name);
  }
  return parsed;
}

/** `  -f, --file FILE   text` lines for a command's flags, aligned. */
function flagLines(flags: Flag[]): string[] {
  const left = flags.map((f) => `${f.short ? `-${f.short}, ` : '    '}--${f.name}${f.value ? ` ${f.value}` : ''}`);
  const width = Math.max(...left.map((l) => l.length));
  return flags.map((f, i) => `  ${left[i]!.padEnd(width)}   ${f.help}`);
}

/** A command's help: summary, usage, flags and details. */
export function commandHelp(command: Command): string {
  return [
    command.summary,
    '',
    'Usage:',
    ...command.usage.map((u) => `  bootwright ${u}`),
    '',
    'Flags:',
    ...flagLines([...command.flags, HELP_FLAG]),
    ...(command.details ? ['', command.details.trimEnd()] : []),
    '',
    EXIT_CODES_HELP,
    '',
  ].join('\n');
}

/** The top-level help: every command with its summary. */
export function overallHelp(commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'bootwright turns a Kubernetes node bootstrap request into cloud-init or Ignition bootstrap data.',
    '',
    'Usage:',
    '  bootwright COMMAND [FLAGS]',
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}   ${c.summary}`),
    '',
    'Flags:',
    '  -h, --help      show this help',
    '      --version   print the version',
    '',
    "Run 'bootwright help COMMAND' or 'bootwright COMMAND --help' for a command's usage and flags.",
    EXIT_CODES_HELP,
    '',
  ].join('\n');
}
