/**
 * The rules `ignition-validate` enforces that the JSON schemas do not carry
 * (checked against the real tool; coreos/ignition `config/v3_N/types` validation
 * and `config/shared/errors`). For tests and for configs merged from user input; the
 * renderer builds configs that keep them and does not call this on its hot path.
 */
import type { FieldProblem } from '../../errors.js';
import { UNIT_DIR } from './registry.js';
import { LABEL_LIMITS } from './storage.js';
import { cleanPath } from './systemd.js';

/** Unit types Ignition accepts as a unit name suffix (`validateName` in its unit types). */
export const UNIT_SUFFIXES = ['.service', '.socket', '.device', '.mount', '.automount', '.swap', '.target', '.path', '.timer', '.snapshot', '.slice', '.scope'];
const MAX_MODE = 0o7777;
/** What a data URL may hold: printable ASCII without the space. */
const DATA_URL_CHARS = /^[\x21-\x7e]*$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The objects of list `key` of `holder`, with their paths (`<at>.<key>[i]`); `[]` when it is no list. */
export function items(holder: unknown, key: string, at: string): [Obj, string][] {
  if (!isObject(holder) || !Array.isArray(holder[key])) return [];
  const out: [Obj, string][] = [];
  for (const [i, v] of (holder[key] as unknown[]).entries()) if (isObject(v)) out.push([v, `${at}.${key}[${i}]`]);
  return out;
}

/** Why `source` is not a data URL Ignition accepts, or undefined (RFC 2397 as Ignition parses it). */
export function dataUrlProblem(source: string): string | undefined {
  if (!DATA_URL_CHARS.test(source)) return 'data URL has a raw space, control character or non-ASCII character; percent-encode it';
  const comma = source.indexOf(',');
  if (comma < 0) return 'data URL has no "," before its data';
  const payload = source.slice(comma + 1);
  if (/;base64$/i.test(source.slice(0, comma))) return BASE64.test(payload) ? undefined : 'data URL is not valid padded base64';
  return /%(?![0-9A-Fa-f]{2})/.test(payload) ? 'data URL has a "%" not followed by two hex digits' : undefined;
}

/** Every resource object (`source` holder) in the config, with its path. */
function resources(config: Obj): [Obj, string][] {
  const ign = config.ignition;
  const out: [Obj, string][] = [];
  if (isObject(ign)) {
    const cfg = ign.config;
    out.push(...items(cfg, 'merge', 'ignition.config'));
    if (isObject(cfg) && isObject(cfg.replace)) out.push([cfg.replace, 'ignition.config.replace']);
    const tls = isObject(ign.security) ? ign.security.tls : undefined;
    out.push(...items(tls, 'certificateAuthorities', 'ignition.security.tls'));
  }
  for (const [file, at] of items(config.storage, 'files', 'storage')) {
    if (isObject(file.contents)) out.push([file.contents, `${at}.contents`]);
    out.push(...items(file, 'append', at));
  }
  for (const [luks, at] of items(config.storage, 'luks', 'storage')) if (isObject(luks.keyFile)) out.push([luks.keyFile, `${at}.keyFile`]);
  return out;
}

/** Report the second and later occurrences of each `[key, path]` as `duplicate <what> <key>` at its path. */
export function unique(list: [string, string][], problems: FieldProblem[], what: string): void {
  const seen = new Set<string>();
  for (const [key, at] of list) {
    if (seen.has(key)) problems.push({ path: at, message: `duplicate ${what} ${key}` });
    seen.add(key);
  }
}

/**
 * Check an Ignition 3.x config against the rules its JSON schema does not express:
 * - files, directories and links: `path` absolute and simplified (Go `path.Clean`),
 *   unique across all three, and not a unit or drop-in Ignition also writes (Ignition
 *   ≥ 2.15); `mode` an integer 0..07777; `overwrite: true` only with `contents.source`;
 * - `systemd.units[]`: names with a unit type suffix and unique; drop-in names ending in
 *   `.conf` and unique per unit;
 * - every resource `source` that is a `data:` URL: only printable ASCII (no raw space,
 *   control or non-ASCII character), a `,`, valid padded base64 or `%XX` escapes;
 * - unique disk devices, partition numbers per disk (non-zero), filesystem devices, user
 *   and group names; filesystem labels within the format's limit.
 *
 * @param config a parsed config
 * @returns one problem per breach, `path` in the config (e.g. `storage.files[2].path`);
 *   `[]` when it keeps them all
 */
export function checkIgnitionRules(config: Record<string, unknown>): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const nodes: [string, string][] = [];
  for (const kind of ['files', 'directories', 'links']) {
    for (const [node, at] of items(config.storage, kind, 'storage')) {
      const p = node.path;
      if (typeof p !== 'string' || !p.startsWith('/')) problems.push({ path: `${at}.path`, message: 'path not absolute' });
      else if (cleanPath(p) !== p) problems.push({ path: `${at}.path`, message: 'path is not fully simplified' });
      else nodes.push([p, `${at}.path`]);
      if (kind !== 'links' && node.mode !== undefined && node.mode !== null && !(Number.isInteger(node.mode) && (node.mode as number) >= 0 && (node.mode as number) <= MAX_MODE)) {
        problems.push({ path: `${at}.mode`, message: 'illegal file mode' });
      }
      if (kind === 'files' && node.overwrite === true && !(isObject(node.contents) && typeof node.contents.source === 'string')) {
        problems.push({ path: `${at}.overwrite`, message: 'overwrite must be false if source is unspecified' });
      }
    }
  }
  unique(nodes, problems, 'path');

  checkUnits(config, problems, new Set(nodes.map(([p]) => p)));

  for (const [res, at] of resources(config)) {
    if (typeof res.source !== 'string' || !res.source.startsWith('data:')) continue;
    const why = dataUrlProblem(res.source);
    if (why) problems.push({ path: `${at}.source`, message: why });
  }

  const disks: [string, string][] = [];
  for (const [disk, at] of items(config.storage, 'disks', 'storage')) {
    disks.push([String(disk.device), `${at}.device`]);
    const numbers = items(disk, 'partitions', at)
      .filter(([p]) => typeof p.number === 'number' && p.number !== 0)
      .map(([p, pat]): [string, string] => [String(p.number), `${pat}.number`]);
    unique(numbers, problems, 'partition number');
  }
  unique(disks, problems, 'disk');

  const filesystems: [string, string][] = [];
  for (const [fs, at] of items(config.storage, 'filesystems', 'storage')) {
    filesystems.push([String(fs.device), `${at}.device`]);
    const limit = typeof fs.format === 'string' ? LABEL_LIMITS[fs.format] : undefined;
    if (typeof fs.label === 'string' && limit !== undefined && fs.label.length > limit) {
      problems.push({ path: `${at}.label`, message: `filesystem labels cannot be longer than ${limit} characters when using ${String(fs.format)}` });
    }
  }
  unique(filesystems, problems, 'filesystem device');

  uniquePasswd(config, problems);
  return problems;
}

/** Ignition's rule (both spec lines): `passwd.users` and `passwd.groups` names are unique. */
export function uniquePasswd(config: Record<string, unknown>, problems: FieldProblem[]): void {
  for (const kind of ['users', 'groups']) {
    unique(
      items(config.passwd, kind, 'passwd').map(([u, at]): [string, string] => [String(u.name), `${at}.name`]),
      problems,
      kind === 'users' ? 'user' : 'group',
    );
  }
}

/**
 * Ignition's unit rules (both spec lines): names end in a unit type, drop-ins in
 * `.conf`, both unique; a unit or drop-in must not share its path under
 * /etc/systemd/system with a file, directory or link in `nodePaths`.
 */
export function checkUnits(config: Record<string, unknown>, problems: FieldProblem[], nodePaths: ReadonlySet<string> = new Set()): void {
  const units: [string, string][] = [];
  for (const [unit, at] of items(config.systemd, 'units', 'systemd')) {
    const name = unit.name;
    if (typeof name !== 'string' || !UNIT_SUFFIXES.some((s) => name.endsWith(s) && name.length > s.length)) {
      problems.push({ path: `${at}.name`, message: 'invalid systemd unit extension' });
      continue;
    }
    units.push([name, `${at}.name`]);
    if (nodePaths.has(`${UNIT_DIR}/${name}`)) problems.push({ path: `${at}.name`, message: `a file, directory or link is also at ${UNIT_DIR}/${name}` });
    const dropins: [string, string][] = [];
    for (const [dropin, dat] of items(unit, 'dropins', at)) {
      const dn = dropin.name;
      if (typeof dn !== 'string' || !dn.endsWith('.conf')) problems.push({ path: `${dat}.name`, message: 'invalid systemd unit drop-in extension' });
      else {
        dropins.push([dn, `${dat}.name`]);
        if (nodePaths.has(`${UNIT_DIR}/${name}.d/${dn}`)) problems.push({ path: `${dat}.name`, message: `a file, directory or link is also at ${UNIT_DIR}/${name}.d/${dn}` });
      }
    }
    unique(dropins, problems, 'drop-in');
  }
  unique(units, problems, 'unit');
}
