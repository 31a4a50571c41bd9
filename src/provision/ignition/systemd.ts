/**
 * Writing user-controlled values into systemd unit files safely: unit names from paths
 * (systemd.unit(5) "String Escaping for Inclusion in Unit Names"), `%` specifiers, and
 * values a unit file cannot carry.
 */
import { posix } from 'node:path';

/** The longest unit name systemd accepts (UNIT_NAME_MAX − 1). */
export const UNIT_NAME_MAX = 255;

/** Characters systemd's unit_name_escape() leaves as they are (besides `/` → `-`). */
const NAME_SAFE = /^[A-Za-z0-9:_.]$/;

function hexEscape(byte: number): string {
  return `\\x${byte.toString(16).padStart(2, '0')}`;
}

/**
 * Go's `path.Clean` for absolute paths: `//` and `/./` collapse, `..` is resolved, a
 * trailing `/` is dropped (Ignition compares paths with it).
 */
export function cleanPath(p: string): string {
  const n = posix.normalize(p);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

/**
 * The unit name prefix for an absolute path, as `systemd-escape --path` prints it
 * (systemd `unit_name_path_escape`): the path is simplified, `/` alone becomes `-`,
 * otherwise leading and trailing `/` are dropped, inner `/` become `-`, and every byte of
 * the UTF-8 form other than `A-Z a-z 0-9 : _ .` (and a leading `.`) becomes `\xNN`
 * (lower-case hex), so `/var/lib/my-data` → `var-lib-my\x2ddata`.
 *
 * @param path an absolute path; callers check that it is absolute and has no `..`
 */
export function escapeUnitPath(path: string): string {
  const p = cleanPath(path);
  if (p === '/') return '-';
  const bytes = Buffer.from(p.slice(1), 'utf8');
  let out = '';
  for (const [i, b] of bytes.entries()) {
    const c = String.fromCharCode(b);
    if (c === '/') out += '-';
    else if (b < 0x80 && NAME_SAFE.test(c) && !(i === 0 && c === '.')) out += c;
    else out += hexEscape(b);
  }
  return out;
}

/**
 * Escape `%` as `%%` for unit settings that expand specifiers (systemd.unit(5)
 * "Specifiers": What=, Where=, Options=, Description=... all do).
 */
export function escapeSpecifiers(value: string): string {
  return value.replaceAll('%', '%%');
}

/**
 * Why `value` cannot be a unit file setting, or undefined when it can: a line break or
 * other control character would end the setting or start another, leading or trailing
 * whitespace is stripped by systemd's parser, and a trailing `\` continues the line.
 */
export function unitValueProblem(value: string): string | undefined {
  if (/[\x00-\x1f\x7f]/.test(value)) return 'contains a line break or control character, which a systemd unit setting cannot hold';
  if (value !== value.trim()) return 'has leading or trailing whitespace, which systemd strips from unit settings';
  if (value.endsWith('\\')) return 'ends with a backslash, which systemd reads as a line continuation';
  return undefined;
}
