/**
 * Translate an Ignition spec 3.0.0 config down to spec 2.3.0 (coreos/ignition
 * `docs/configuration-v2_3.md`, `docs/configuration-v3_0.md`, `docs/migrating-configs.md`
 * "From Version 2.3.0 to 3.0.0", read in reverse).
 *
 * What changes between the two:
 * - `ignition.version` is `2.3.0`. (`ignition.config.merge`/`replace` would become
 *   `append`/`replace`, but they name spec 3 configs, which v0.x cannot read: refused.)
 * - A 3.x file without contents keeps an existing file; a 2.x one empties it: refused.
 * - Files, directories and links name the filesystem they go in: always `root`, which
 *   Ignition 2.x defines itself (the root filesystem it will boot, mounted at /sysroot).
 * - `storage.filesystems[]` entries hold their device and format in a `mount` object.
 * - A 2.x file has one `contents` resource and `append` is a boolean; a 3.x file has
 *   `contents` plus a list of resources to `append`. Every resource bootwright writes is
 *   a `data:` URL, so their bytes are known and a 3.x file with several resources becomes
 *   one 2.x entry holding the concatenation: exactly what writing and appending them in
 *   order leaves on disk (duplicate paths, which would do the same in 2.x, are avoided:
 *   3.x refuses them, and this keeps one entry per path in both).
 * - `overwrite` defaults to true for 2.x files and false for 3.x ones, so it is written
 *   out whenever a file has contents; append-only entries leave it out (2.x refuses
 *   `append` with `overwrite: true`, and its own examples leave it out).
 * - Ignition v0.x (spec 2.x) refuses `compression` on `data:` URLs ("compression is not
 *   supported with that scheme", `internal/resource/url.go`; Ignition 2.3.0 first
 *   accepted it, for spec 3.1.0), so such resources are decoded and written plain.
 * Partitions (`sizeMiB`/`startMiB`, which 2.3.0 has beside the deprecated sector-based
 * `size`/`start`, `typeGuid`, `wipeTable`...), units, drop-ins, users and groups keep
 * their fields. Anything else (fields newer than 3.0.0, a filesystem `path`, a remote
 * file with several resources) has no 2.3.0 form and is a problem, never dropped.
 */
import type { FieldProblem } from '../../../errors.js';
import { gunzipSync } from 'fflate';
import { dataUrlResource, decodeDataUrl } from '../dataurl.js';
import { LEGACY_IGNITION_SPEC } from './version.js';

type Obj = Record<string, unknown>;

/** The filesystem Ignition 2.x defines itself: the root of the system it provisions. */
export const ROOT_FILESYSTEM = 'root';

const join = (at: string, key: string): string => (at ? `${at}.${key}` : key);

function isObject(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Reports fields 2.3.0 does not have. */
class Translation {
  constructor(readonly problems: FieldProblem[]) {}

  /** Report a field without a 2.3.0 form. */
  refuse(at: string, why = 'has no equivalent in Ignition spec 2.3.0; it needs a 3.x spec'): void {
    this.problems.push({ path: at, message: why });
  }

  /**
   * The fields of `obj` named in `keys` (in that order; `null` counts as unset), each
   * passed through `map[key]` when given; any other set field is refused.
   */
  pick(obj: Obj, at: string, keys: readonly string[], map: Record<string, (v: unknown, at: string) => unknown> = {}): Obj {
    const out: Obj = {};
    for (const k of keys) {
      const v = obj[k];
      if (v === null || v === undefined) continue;
      const m = map[k];
      const mapped = m ? m(v, join(at, k)) : v;
      if (mapped !== undefined) out[k] = mapped;
    }
    for (const k of Object.keys(obj)) if (!keys.includes(k) && obj[k] !== null && obj[k] !== undefined) this.refuse(join(at, k));
    return out;
  }

  /** Each object of a list through `f`, with its path. */
  list(v: unknown, at: string, f: (o: Obj, at: string) => Obj | undefined): Obj[] {
    if (!Array.isArray(v)) return [];
    const out: Obj[] = [];
    for (const [i, item] of v.entries()) {
      if (!isObject(item)) continue;
      const o = f(item, `${at}[${i}]`);
      if (o) out.push(o);
    }
    return out;
  }

  /** `verification`: 2.3.0 checks `sha512-` hashes only. */
  verification = (v: unknown, at: string): unknown => {
    if (!isObject(v)) return v;
    const out = this.pick(v, at, ['hash']);
    if (typeof out.hash === 'string' && !out.hash.startsWith('sha512-')) {
      this.refuse(`${at}.hash`, 'Ignition spec 2.3.0 verifies sha512 hashes only');
      return undefined;
    }
    return Object.keys(out).length ? out : undefined;
  };

  /** A config or CA reference: `source` and `verification`. */
  reference = (o: Obj, at: string): Obj => this.pick(o, at, ['source', 'verification'], { verification: this.verification });

  /** The bytes of a resource when they are known here (a `data:` URL), else undefined. */
  bytes(r: Obj): Uint8Array | undefined {
    if (typeof r.source !== 'string') return undefined;
    const raw = decodeDataUrl(r.source);
    if (!raw) return undefined;
    if (r.compression === undefined || r.compression === null) return raw;
    if (r.compression !== 'gzip') return undefined;
    try {
      return gunzipSync(raw);
    } catch {
      return undefined;
    }
  }

  /** A file resource in 2.3.0 form: a compressed `data:` URL is written plain. */
  resource(r: Obj, at: string): Obj {
    const picked = this.pick(r, at, ['compression', 'source', 'verification'], { verification: this.verification });
    if (picked.compression !== undefined && typeof picked.source === 'string' && picked.source.startsWith('data:')) {
      const bytes = this.bytes(r);
      if (!bytes) {
        this.refuse(`${at}.source`, 'not a data URL of the compression named');
        return picked;
      }
      return { ...dataUrlResource(bytes, { gzip: false }), ...(picked.verification !== undefined ? { verification: picked.verification } : {}) };
    }
    return picked;
  }

  /** `storage.files[]`: one 2.3.0 entry per 3.x entry (see the module comment). */
  file = (f: Obj, at: string): Obj => {
    const node = this.pick(f, at, ['path', 'overwrite', 'contents', 'append', 'mode', 'user', 'group']);
    const parts: [Obj, string][] = [];
    if (isObject(node.contents)) parts.push([node.contents, `${at}.contents`]);
    if (Array.isArray(node.append)) for (const [i, r] of node.append.entries()) if (isObject(r)) parts.push([r, `${at}.append[${i}]`]);
    const appendOnly = !isObject(node.contents) && parts.length > 0;
    // 3.x: a file without contents keeps what is there (or is created empty); 2.x writes
    // an empty file over it, so the meaning cannot be carried.
    if (parts.length === 0) this.refuse(`${at}.contents`, 'is missing: without contents Ignition 3 keeps an existing file, but Ignition v0.x (spec 2.x) would empty it');

    const resources = parts.map(([r, rat]) => this.resource(r, rat));
    let contents: Obj | undefined;
    if (resources.length === 1) {
      contents = resources[0];
    } else if (resources.length > 1) {
      const all = resources.map((r) => (r.verification !== undefined ? undefined : this.bytes(r)));
      if (all.every((b) => b !== undefined)) {
        contents = { ...dataUrlResource(Buffer.concat(all), { gzip: false }) };
      } else {
        this.refuse(`${at}.append`, 'a 2.3.0 file has one contents resource; several resources can only be joined when all are data: URLs without verification');
      }
    }
    return {
      filesystem: ROOT_FILESYSTEM,
      path: node.path,
      ...(appendOnly ? { append: true } : { overwrite: node.overwrite === true }),
      ...(contents ? { contents } : {}),
      ...(node.mode !== undefined ? { mode: node.mode } : {}),
      ...(node.user !== undefined ? { user: this.owner(node.user, `${at}.user`) } : {}),
      ...(node.group !== undefined ? { group: this.owner(node.group, `${at}.group`) } : {}),
    };
  };

  /** `user` / `group` of a node: `id` and `name`, as in 3.x. */
  owner(v: unknown, at: string): unknown {
    return isObject(v) ? this.pick(v, at, ['id', 'name']) : v;
  }

  /** `storage.directories[]` and `storage.links[]`: the same fields plus `filesystem`. */
  node(keys: readonly string[]) {
    return (n: Obj, at: string): Obj => {
      const picked = this.pick(n, at, keys, { user: (v, a) => this.owner(v, a), group: (v, a) => this.owner(v, a) });
      return { filesystem: ROOT_FILESYSTEM, ...picked };
    };
  }

  /** `storage.filesystems[]` → `{mount: {device, format, wipeFilesystem, label, uuid, options}}`. */
  filesystem = (fs: Obj, at: string): Obj => {
    if (fs.path !== null && fs.path !== undefined) {
      this.refuse(`${at}.path`, 'a 3.x filesystem path (where Ignition mounts it to write files into it) has no 2.3.0 form here: 2.3.0 path means already mounted by the system');
    }
    const mount = this.pick({ ...fs, path: undefined }, at, ['device', 'format', 'wipeFilesystem', 'label', 'uuid', 'options']);
    return { mount };
  };

  disk = (d: Obj, at: string): Obj =>
    this.pick(d, at, ['device', 'wipeTable', 'partitions'], {
      partitions: (v, pat) => this.list(v, pat, (p, a) => this.pick(p, a, ['label', 'number', 'sizeMiB', 'startMiB', 'typeGuid', 'guid', 'wipePartitionEntry', 'shouldExist'])),
    });

  unit = (u: Obj, at: string): Obj =>
    this.pick(u, at, ['name', 'enabled', 'mask', 'contents', 'dropins'], {
      dropins: (v, dat) => this.list(v, dat, (d, a) => this.pick(d, a, ['name', 'contents'])),
    });

  user = (u: Obj, at: string): Obj =>
    this.pick(u, at, ['name', 'passwordHash', 'sshAuthorizedKeys', 'uid', 'gecos', 'homeDir', 'noCreateHome', 'primaryGroup', 'groups', 'noUserGroup', 'noLogInit', 'shell', 'system']);

  group = (g: Obj, at: string): Obj => this.pick(g, at, ['name', 'gid', 'passwordHash', 'system']);
}

/** A list field in 2.3.0 form, left out when empty. */
function listField(key: string, list: Obj[]): Obj {
  return list.length ? { [key]: list } : {};
}

/**
 * Translate a spec 3.0.0 config (any, not only bootwright's; `null` fields count as unset)
 * to spec 2.3.0. Keys keep the 3.x order, with `filesystem` first in nodes.
 *
 * @param config a spec 3.0.0 config object (its `ignition.version` is not checked)
 * @param problems receives one problem per field without a 2.3.0 form, `path` in the
 *   3.x config (e.g. `storage.luks`, `passwd.users[0].shouldExist`); the result then
 *   leaves that field out and must not be served
 * @returns the 2.3.0 config object
 */
export function toIgnitionV2(config: Record<string, unknown>, problems: FieldProblem[]): Record<string, unknown> {
  const t = new Translation(problems);
  const root = t.pick(config, '', ['ignition', 'storage', 'systemd', 'passwd']);
  const ign = isObject(root.ignition) ? root.ignition : {};
  const ignition = t.pick({ ...ign, version: undefined }, 'ignition', ['config', 'timeouts', 'security'], {
    // The configs a 3.x config merges or replaces itself with are 3.x configs, which
    // Ignition v0.x cannot parse (the major versions must match): refused, not renamed.
    config: (v, at) => {
      if (!isObject(v)) return undefined;
      const c = t.pick(v, at, ['merge', 'replace']);
      for (const key of ['merge', 'replace'] as const) {
        if (c[key] !== undefined) t.refuse(`${at}.${key}`, 'names a spec 3 config, which Ignition v0.x (spec 2.x) cannot read');
      }
      return undefined;
    },
    timeouts: (v, at) => (isObject(v) ? t.pick(v, at, ['httpResponseHeaders', 'httpTotal']) : undefined),
    security: (v, at) => {
      if (!isObject(v)) return undefined;
      const s = t.pick(v, at, ['tls']);
      if (!isObject(s.tls)) return undefined;
      const tls = t.pick(s.tls, `${at}.tls`, ['certificateAuthorities']);
      return { tls: listField('certificateAuthorities', t.list(tls.certificateAuthorities, `${at}.tls.certificateAuthorities`, t.reference)) };
    },
  });
  const out: Obj = { ignition: { version: LEGACY_IGNITION_SPEC, ...ignition } };

  if (isObject(root.storage)) {
    const s = t.pick(root.storage, 'storage', ['disks', 'raid', 'filesystems', 'files', 'directories', 'links']);
    out.storage = {
      ...listField('disks', t.list(s.disks, 'storage.disks', t.disk)),
      ...listField('raid', t.list(s.raid, 'storage.raid', (r, at) => t.pick(r, at, ['name', 'level', 'devices', 'spares', 'options']))),
      ...listField('filesystems', t.list(s.filesystems, 'storage.filesystems', t.filesystem)),
      ...listField('files', t.list(s.files, 'storage.files', t.file)),
      ...listField('directories', t.list(s.directories, 'storage.directories', t.node(['path', 'overwrite', 'mode', 'user', 'group']))),
      ...listField('links', t.list(s.links, 'storage.links', t.node(['path', 'overwrite', 'user', 'group', 'target', 'hard']))),
    };
  }
  if (isObject(root.systemd)) {
    const sd = t.pick(root.systemd, 'systemd', ['units']);
    out.systemd = listField('units', t.list(sd.units, 'systemd.units', t.unit));
  }
  if (isObject(root.passwd)) {
    const p = t.pick(root.passwd, 'passwd', ['users', 'groups']);
    out.passwd = { ...listField('users', t.list(p.users, 'passwd.users', t.user)), ...listField('groups', t.list(p.groups, 'passwd.groups', t.group)) };
  }
  return out;
}
