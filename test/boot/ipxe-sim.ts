/**
 * A model of how iPXE reads a script, for tests: the line handling of
 * `src/image/script.c` (`process_script`), the tokenising and command separators of
 * `src/core/exec.c` (`split_command`, `command_terminator`) and the settings expansion
 * of `src/core/settings.c` (`expand_settings`, with the `hex`, `hexhyp`, `hexraw`,
 * `uristring`, `string` and `uuid` formats). Control flow (`goto`, `||` outcomes) is not
 * run: every command of every line is listed with its expanded arguments, so a test can
 * check exactly what each command would receive.
 */

/** A setting's raw value: text (stored as its UTF-8 bytes) or bytes. */
export type SettingValue = string | Uint8Array;

/** One command as iPXE would execute it. */
export interface SimCommand {
  /** 1-based line number of the (first physical) line. */
  line: number;
  /** The label on that line, if any. */
  label?: string;
  /** Expanded arguments, `argv[0]` the command name. */
  argv: string[];
  /** The separator that followed it (`||`, `&&`, `;`), if any. */
  next?: string;
}

const ISSPACE = /[ \t\n\v\f\r]/;

function bytesOf(v: SettingValue): Uint8Array {
  return typeof v === 'string' ? new TextEncoder().encode(v) : v;
}

/** An approximation of iPXE's `uri_encode` (the tests only pass plain words through `:uristring`). */
function uriEncode(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-._~!$'()*,;:@/?]/.test(c) && b < 0x80 ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

function hex(bytes: Uint8Array, delimiter: string): string {
  return [...bytes].map((b) => b.toString(16).padStart(2, '0')).join(delimiter);
}

/** Format a setting the way `fetchf_setting` would for `name[:type]`. */
function formatSetting(name: string, settings: Readonly<Record<string, SettingValue>>): string {
  const colon = name.lastIndexOf(':');
  const key = colon < 0 ? name : name.slice(0, colon);
  const type = colon < 0 ? undefined : name.slice(colon + 1);
  const value = settings[key];
  if (value === undefined) return '';
  const bytes = bytesOf(value);
  switch (type) {
    case 'hex':
      return hex(bytes, ':');
    case 'hexhyp':
      return hex(bytes, '-');
    case 'hexraw':
      return hex(bytes, '');
    case 'uristring':
      return uriEncode(bytes);
    case undefined:
    case 'string':
    case 'uuid':
      return new TextDecoder().decode(bytes);
    default:
      throw new Error(`simulator: unknown setting type ${type}`);
  }
}

/** `expand_settings`: replace the innermost `${...}` and start over until none is left. */
export function expandSettings(token: string, settings: Readonly<Record<string, SettingValue>>): string {
  let s = token;
  for (;;) {
    let start = -1;
    let end = -1;
    for (let i = 0; i < s.length; i++) {
      if (s[i] === '$' && s[i + 1] === '{') start = i;
      if (start >= 0 && s[i] === '}') {
        end = i;
        break;
      }
    }
    if (end < 0) return s;
    s = s.slice(0, start) + formatSetting(s.slice(start + 2, end), settings) + s.slice(end + 1);
  }
}

/** Split a script into logical lines (`process_script`): CR dropped, `\` continuations joined. */
function logicalLines(text: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let buf = '';
  let first = 0;
  const physical = text.split('\n');
  if (physical.at(-1) === '') physical.pop();
  physical.forEach((raw, i) => {
    if (buf === '') first = i + 1;
    let l = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (l.endsWith('\\')) {
      l = l.slice(0, -1);
      buf += l;
      return;
    }
    out.push({ line: first, text: buf + l });
    buf = '';
  });
  return out;
}

/**
 * Every command of a script, as iPXE would run it with `settings` in effect.
 *
 * @throws Error when the script does not start with `#!ipxe` and white space (`script_probe`)
 */
export function simulate(text: string, settings: Readonly<Record<string, SettingValue>> = {}): SimCommand[] {
  if (!/^#!ipxe[ \t\n\v\f\r]/.test(text)) throw new Error('not an iPXE script');
  const commands: SimCommand[] = [];
  for (const { line, text: l } of logicalLines(text)) {
    let command = l.replace(/^[ \t\n\v\f\r]+/, '');
    let label: string | undefined;
    if (command.startsWith(':')) {
      const m = /^:([^ \t\n\v\f\r]*)[ \t\n\v\f\r]?/.exec(command)!;
      label = m[1];
      command = command.slice(m[0].length);
    }
    const tokens = command.split(ISSPACE).filter((t) => t !== '');
    let current: string[] = [];
    let labelled = label;
    const flush = (next?: string) => {
      if (current.length === 0) return;
      commands.push({ line, ...(labelled !== undefined ? { label: labelled } : {}), argv: current, ...(next ? { next } : {}) });
      current = [];
      labelled = undefined;
    };
    for (const t of tokens) {
      if (t.startsWith('#')) break;
      if (t === '||' || t === '&&' || t === ';') {
        flush(t);
        continue;
      }
      current.push(expandSettings(t, settings));
    }
    flush();
    if (labelled !== undefined) commands.push({ line, label: labelled, argv: [] });
  }
  return commands;
}
