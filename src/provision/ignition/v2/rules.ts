/**
 * The rules Ignition v0.x enforces on a spec 2.3.0 config beyond its JSON schema
 * (coreos/ignition `schema/ignition.json` of spec 2.3.0), for tests: Debian's
 * `ignition-validate` rejects 2.x, so this is the check besides the schema. Sources:
 * coreos/ignition `docs/configuration-v2_3.md` and its `config/v2_3/types` validation
 * (path, mode, unit and partition checks), `internal/resource/url.go` of the v0.x line
 * (no `compression` on `data:` URLs).
 */
import type { FieldProblem } from '../../../errors.js';
import { checkUnits, dataUrlProblem, items, unique, uniquePasswd } from '../rules.js';
import { LABEL_LIMITS } from '../storage.js';
import { ROOT_FILESYSTEM } from './translate.js';
import { LEGACY_IGNITION_SPEC } from './version.js';

type Obj = Record<string, unknown>;

const MAX_MODE = 0o7777;
const GUID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;
const FORMATS = ['ext4', 'btrfs', 'xfs', 'vfat', 'swap'];

function isObject(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

const set = (v: unknown): boolean => v !== null && v !== undefined;

/** Every resource (`source` holder) of the config with its path, and whether it is a file's. */
function resources(config: Obj): [Obj, string, boolean][] {
  const out: [Obj, string, boolean][] = [];
  const ign = config.ignition;
  if (isObject(ign)) {
    const cfg = ign.config;
    for (const [r, at] of items(cfg, 'append', 'ignition.config')) out.push([r, at, false]);
    if (isObject(cfg) && isObject(cfg.replace)) out.push([cfg.replace, 'ignition.config.replace', false]);
    const tls = isObject(ign.security) ? ign.security.tls : undefined;
    for (const [r, at] of items(tls, 'certificateAuthorities', 'ignition.security.tls')) out.push([r, at, false]);
  }
  for (const [file, at] of items(config.storage, 'files', 'storage')) if (isObject(file.contents)) out.push([file.contents, `${at}.contents`, true]);
  return out;
}

/**
 * Check an Ignition spec 2.3.0 config against the rules its JSON schema does not carry:
 * - `ignition.version` is `2.3.0`;
 * - files, directories and links: `filesystem` is `root` (Ignition's own) or the `name`
 *   of a `storage.filesystems[]` entry; `path` absolute; no path twice across the three
 *   (bootwright's rule: v0.x would apply repeats in order, 3.x refuses them); `mode` an
 *   integer 0..07777; a file not both `append` and `overwrite: true`;
 * - resources: `data:` URLs well formed (printable ASCII, a `,`, padded base64 or `%XX`
 *   escapes), `compression` only `gzip` and never on a `data:` URL (v0.x refuses it),
 *   `verification.hash` of the form `sha512-<hex>`;
 * - disks: unique absolute devices; partitions with unique non-zero numbers,
 *   non-negative `size`/`start`/`sizeMiB`/`startMiB`, GUIDs well formed;
 * - filesystems: `mount.device` absolute and unique, `format` one of ext4, btrfs, xfs,
 *   vfat, swap, labels within the format's limit, unique names;
 * - units: names with a unit type suffix, unique; drop-ins ending in `.conf`, unique per
 *   unit; users and groups unique by name.
 *
 * @param config a parsed config
 * @returns one problem per breach, `path` in the config (e.g. `storage.files[2].mode`);
 *   `[]` when it keeps them all
 */
export function checkIgnitionV2Rules(config: Record<string, unknown>): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const ign = config.ignition;
  if (!isObject(ign) || ign.version !== LEGACY_IGNITION_SPEC) problems.push({ path: 'ignition.version', message: `must be ${LEGACY_IGNITION_SPEC}` });

  const filesystems = items(config.storage, 'filesystems', 'storage');
  const names = new Set([ROOT_FILESYSTEM, ...filesystems.map(([fs]) => fs.name).filter((n): n is string => typeof n === 'string')]);
  const nodes: [string, string][] = [];
  for (const kind of ['files', 'directories', 'links']) {
    for (const [node, at] of items(config.storage, kind, 'storage')) {
      if (typeof node.filesystem !== 'string' || !names.has(node.filesystem)) {
        problems.push({ path: `${at}.filesystem`, message: `filesystem ${JSON.stringify(node.filesystem)} is neither ${ROOT_FILESYSTEM} nor defined in storage.filesystems` });
      }
      const p = node.path;
      if (typeof p !== 'string' || !p.startsWith('/')) problems.push({ path: `${at}.path`, message: 'path not absolute' });
      else nodes.push([p, `${at}.path`]);
      if (kind !== 'links' && set(node.mode) && !(Number.isInteger(node.mode) && (node.mode as number) >= 0 && (node.mode as number) <= MAX_MODE)) {
        problems.push({ path: `${at}.mode`, message: 'illegal file mode' });
      }
      if (kind === 'files' && node.append === true && node.overwrite === true) problems.push({ path: `${at}.overwrite`, message: 'cannot append and overwrite' });
    }
  }
  unique(nodes, problems, 'path');

  for (const [res, at, isFile] of resources(config)) {
    const source = typeof res.source === 'string' ? res.source : '';
    if (source.startsWith('data:')) {
      const why = dataUrlProblem(source);
      if (why) problems.push({ path: `${at}.source`, message: why });
    }
    if (isFile && set(res.compression)) {
      if (res.compression !== 'gzip') problems.push({ path: `${at}.compression`, message: 'compression must be gzip or unset' });
      else if (source.startsWith('data:')) problems.push({ path: `${at}.compression`, message: 'Ignition v0.x does not decompress data: URLs' });
    }
    const hash = isObject(res.verification) ? res.verification.hash : undefined;
    if (set(hash) && !(typeof hash === 'string' && /^sha512-[0-9a-f]{128}$/.test(hash))) problems.push({ path: `${at}.verification.hash`, message: 'hash must be sha512-<128 hex digits>' });
  }

  const disks: [string, string][] = [];
  for (const [disk, at] of items(config.storage, 'disks', 'storage')) {
    if (typeof disk.device !== 'string' || !disk.device.startsWith('/')) problems.push({ path: `${at}.device`, message: 'device path not absolute' });
    disks.push([String(disk.device), `${at}.device`]);
    const numbers: [string, string][] = [];
    for (const [part, pat] of items(disk, 'partitions', at)) {
      if (typeof part.number === 'number' && part.number !== 0) numbers.push([String(part.number), `${pat}.number`]);
      for (const k of ['size', 'start', 'sizeMiB', 'startMiB']) {
        if (set(part[k]) && !(Number.isInteger(part[k]) && (part[k] as number) >= 0)) problems.push({ path: `${pat}.${k}`, message: `${k} must be a non-negative integer` });
      }
      for (const k of ['typeGuid', 'guid']) {
        if (set(part[k]) && !(typeof part[k] === 'string' && GUID.test(part[k]))) problems.push({ path: `${pat}.${k}`, message: 'not a GUID' });
      }
    }
    unique(numbers, problems, 'partition number');
  }
  unique(disks, problems, 'disk');

  const devices: [string, string][] = [];
  const fsNames: [string, string][] = [];
  for (const [fs, at] of filesystems) {
    if (typeof fs.name === 'string') fsNames.push([fs.name, `${at}.name`]);
    if (!isObject(fs.mount)) {
      if (!set(fs.path)) problems.push({ path: at, message: 'a filesystem needs mount or path' });
      continue;
    }
    const m = fs.mount;
    if (typeof m.device !== 'string' || !m.device.startsWith('/')) problems.push({ path: `${at}.mount.device`, message: 'device path not absolute' });
    devices.push([String(m.device), `${at}.mount.device`]);
    if (typeof m.format !== 'string' || !FORMATS.includes(m.format)) problems.push({ path: `${at}.mount.format`, message: `format must be one of ${FORMATS.join(', ')}` });
    const limit = typeof m.format === 'string' ? LABEL_LIMITS[m.format] : undefined;
    if (typeof m.label === 'string' && limit !== undefined && m.label.length > limit) {
      problems.push({ path: `${at}.mount.label`, message: `filesystem labels cannot be longer than ${limit} characters when using ${String(m.format)}` });
    }
  }
  unique(devices, problems, 'filesystem device');
  unique(fsNames, problems, 'filesystem name');

  checkUnits(config, problems);

  uniquePasswd(config, problems);
  return problems;
}
