/**
 * Container Linux Configs (the format of coreos/container-linux-config-transpiler, `ct`,
 * which Cluster API's kubeadm bootstrap provider feeds its `additionalConfig` to; spec:
 * flatcar.org "CL Configuration Specification") translated to Ignition 3.x.
 *
 * CLC targets Ignition 2.x, so the translation follows Ignition's own 2.x → 3.0 rules
 * (coreos/ignition `docs/migrating-configs.md`): files, directories and links lose their
 * `filesystem` (only `root` has a 3.x meaning: paths are absolute on the root); a file's
 * `append: true` becomes an `append` resource list; files with contents keep Ignition
 * 2.x's default of overwriting; `ignition.config.append` is `ignition.config.merge`;
 * `verification.hash {function, sum}` is `"<function>-<sum>"`; filesystems lose the
 * `mount` wrapper; networkd units become files under `/etc/systemd/network` (where
 * Ignition 2.x wrote them). CLC-only service sections (`etcd`, `flannel`, `update`,
 * `locksmith`, `docker`) generate Container Linux drop-ins that have no Ignition 3
 * equivalent and are refused.
 */
import { dataUrlResource } from '../dataurl.js';
import { type ReadConfig, checkDeclaredVersion } from './ignition.js';
import { type ConfigProblem, IGNITION_SHAPE, isObject, readShape, snakeCase } from './shape.js';
import { lowestSpecFor } from '../versions.js';

/** Where Ignition 2.x wrote `networkd.units` (systemd.network(5) search path under /etc). */
export const NETWORKD_DIR = '/etc/systemd/network';

const SERVICE_SECTIONS = ['etcd', 'flannel', 'update', 'locksmith', 'docker'];
const SIZE = /^(\d+)\s*(MiB|GiB|TiB)$/;
const SIZE_FACTOR: Record<string, number> = { MiB: 1, GiB: 1024, TiB: 1024 * 1024 };

type Obj = Record<string, unknown>;

interface Ctx {
  problems: ConfigProblem[];
}

/** `{hash: {function, sum}}` → `{hash: "function-sum"}`. */
function verification(v: unknown, at: string, ctx: Ctx): unknown {
  if (!isObject(v) || !isObject(v.hash)) return v;
  const { function: fn, sum } = v.hash;
  if (typeof fn !== 'string' || typeof sum !== 'string') {
    ctx.problems.push({ at: `${at}.hash`, message: 'needs function and sum strings' });
    return undefined;
  }
  return { ...v, hash: `${fn}-${sum}` };
}

/** A CLC `{source, verification}` (config append/replace, CA) → an Ignition resource. */
function sourced(v: unknown, at: string, ctx: Ctx): unknown {
  if (!isObject(v)) return v;
  return { ...v, ...(Object.hasOwn(v, 'verification') ? { verification: verification(v.verification, `${at}.verification`, ctx) } : {}) };
}

/** CLC file `contents` `{inline | remote {url, compression, verification} | local}` → a resource. */
function contents(v: unknown, at: string, ctx: Ctx): unknown {
  if (!isObject(v)) return v;
  const { inline, remote, local, ...others } = v;
  for (const key of Object.keys(others)) ctx.problems.push({ at: `${at}.${key}`, message: 'unknown key (contents take inline, remote or local)' });
  if (local !== undefined) {
    ctx.problems.push({ at: `${at}.local`, message: 'needs ct --files-dir, which bootwright does not have: give the contents inline or remote' });
    return undefined;
  }
  if (inline !== undefined && remote !== undefined) {
    ctx.problems.push({ at, message: 'give one of inline or remote' });
    return undefined;
  }
  if (inline !== undefined) {
    if (typeof inline !== 'string') {
      ctx.problems.push({ at: `${at}.inline`, message: 'must be a string' });
      return undefined;
    }
    return dataUrlResource(Buffer.from(inline, 'utf8'), { gzip: false });
  }
  if (isObject(remote)) {
    const { url, ...rest } = remote;
    return { ...(url !== undefined ? { source: url } : {}), ...sourced(rest, `${at}.remote`, ctx) as Obj };
  }
  return remote === undefined ? { source: 'data:,' } : remote;
}

/** Files, directories and links: `filesystem` must be `root` (or absent) and is dropped. */
function node(v: unknown, at: string, ctx: Ctx): Obj | undefined {
  if (!isObject(v)) return v as undefined;
  const { filesystem, ...rest } = v;
  if (filesystem !== undefined && filesystem !== 'root') {
    ctx.problems.push({ at: `${at}.filesystem`, message: 'only root has an Ignition 3 translation (paths are absolute on the root filesystem)' });
  }
  return rest;
}

function file(v: unknown, at: string, ctx: Ctx): unknown {
  const f = node(v, at, ctx);
  if (!f) return v;
  const { contents: c, append, overwrite, ...rest } = f;
  const resource = c === undefined ? undefined : contents(c, `${at}.contents`, ctx);
  if (append === true) {
    return { ...rest, ...(overwrite !== undefined ? { overwrite } : {}), append: resource === undefined ? [] : [resource] };
  }
  if (append !== undefined && append !== false) ctx.problems.push({ at: `${at}.append`, message: 'must be a boolean' });
  // Ignition 2.x overwrote files by default; 3.x needs `overwrite: true` (with a source) for that.
  const ow = overwrite ?? (resource !== undefined ? true : undefined);
  return { ...rest, ...(ow !== undefined ? { overwrite: ow } : {}), ...(resource !== undefined ? { contents: resource } : {}) };
}

function partition(v: unknown, at: string, ctx: Ctx): unknown {
  if (!isObject(v)) return v;
  const { size, start, ...rest } = v;
  const out: Obj = { ...rest };
  for (const [key, value] of [['size', size], ['start', start]] as const) {
    if (value === undefined || value === null) continue;
    const m = typeof value === 'string' ? SIZE.exec(value.trim()) : null;
    if (!m) ctx.problems.push({ at: `${at}.${key}`, message: 'must be a size in MiB, GiB or TiB (e.g. "10GiB")' });
    else out[`${key}_mib`] = Number(m[1]) * SIZE_FACTOR[m[2]!]!;
  }
  return out;
}

function filesystem(v: unknown, at: string, ctx: Ctx): unknown {
  if (!isObject(v)) return v;
  const { name: _name, mount, ...rest } = v;
  if (!isObject(mount)) {
    ctx.problems.push({ at: `${at}.mount`, message: 'required: a filesystem without mount has no Ignition 3 translation' });
    return undefined;
  }
  const { create, ...m } = mount;
  if (create !== undefined) ctx.problems.push({ at: `${at}.mount.create`, message: 'is deprecated in CLC and has no Ignition 3 translation: use wipe_filesystem' });
  return { ...m, ...rest };
}

const list = (v: unknown, at: string, f: (item: unknown, at: string) => unknown): unknown =>
  Array.isArray(v) ? v.map((item, i) => f(item, `${at}[${i}]`)) : v;

/**
 * `obj` with the values of the keys `map` has translated. Keys are user data: only `map`'s
 * own keys translate, and the result is built with own properties only (`__proto__`,
 * `constructor`... stay ordinary keys, for the shape reader to report as unknown).
 */
function mapKeys(obj: unknown, map: Record<string, (v: unknown, at: string) => unknown>, at: string): unknown {
  if (!isObject(obj)) return obj;
  return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, Object.hasOwn(map, k) ? map[k]!(v, at ? `${at}.${k}` : k) : v]));
}

/**
 * Translate a Container Linux Config to an Ignition config of the lowest spec that can
 * express it (usually 3.0.0), by the rules in this module's header.
 *
 * Unknown keys are warnings (dropped) unless `strict` (Cluster API's `strict`, ct's
 * `-strict`: fail on warnings), then problems naming the key path. Values of the wrong
 * type and untranslatable sections are always problems. Keys are data: `__proto__`,
 * `constructor`... are unknown keys like any other.
 */
export function readClcConfig(document: Record<string, unknown>, strict: boolean): ReadConfig {
  const problems: ConfigProblem[] = [];
  const warnings: string[] = [];
  const ctx: Ctx = { problems };
  for (const section of SERVICE_SECTIONS) {
    if (Object.hasOwn(document, section)) problems.push({ at: section, message: 'is Container Linux Config sugar for a Container Linux service with no Ignition 3 translation: write the unit or drop-in it stands for under systemd.units' });
  }
  // A CLC's `ignition` has no `version` (ct writes the spec it targets).
  if (isObject(document.ignition) && Object.hasOwn(document.ignition, 'version')) {
    if (strict) problems.push({ at: 'ignition.version', message: 'unknown key' });
    else warnings.push('ignition.version: unknown key, ignored');
  }
  const { networkd, ...rest } = Object.fromEntries(Object.entries(document).filter(([k]) => !SERVICE_SECTIONS.includes(k)));
  const translated = mapKeys(
    rest,
    {
      ignition: (ign, at) =>
        mapKeys(
          ign,
          {
            config: (c, cat) => {
              if (!isObject(c)) return c;
              const { append, ...others } = c;
              if (Object.hasOwn(others, 'replace')) problems.push({ at: `${cat}.replace`, message: 'would discard the generated config (and with it kubeadm): merge instead with append' });
              const { replace: _r, ...kept } = others;
              return { ...kept, ...(append !== undefined ? { merge: list(append, `${cat}.append`, (r, a) => sourced(r, a, ctx)) } : {}) };
            },
            security: (s, sat) =>
              mapKeys(s, { tls: (t, tat) => mapKeys(t, { certificate_authorities: (l, lat) => list(l, lat, (r, a) => sourced(r, a, ctx)) }, tat) }, sat),
          },
          at,
        ),
      storage: (st, at) =>
        mapKeys(
          st,
          {
            files: (l, lat) => list(l, lat, (f, a) => file(f, a, ctx)),
            directories: (l, lat) => list(l, lat, (d, a) => node(d, a, ctx)),
            links: (l, lat) => list(l, lat, (d, a) => node(d, a, ctx)),
            disks: (l, lat) => list(l, lat, (d, a) => mapKeys(d, { partitions: (p, pat) => list(p, pat, (x, xa) => partition(x, xa, ctx)) }, a)),
            filesystems: (l, lat) => list(l, lat, (f, a) => filesystem(f, a, ctx)),
          },
          at,
        ),
      systemd: (sd, at) =>
        mapKeys(
          sd,
          {
            units: (l, lat) =>
              list(l, lat, (u) => {
                if (!isObject(u) || !Object.hasOwn(u, 'enable')) return u;
                const { enable, ...others } = u;
                return { enabled: others.enabled ?? enable, ...others };
              }),
          },
          at,
        ),
      passwd: (pw, at) =>
        mapKeys(
          pw,
          {
            users: (l, lat) =>
              list(l, lat, (u, a) => {
                if (isObject(u) && Object.hasOwn(u, 'create')) problems.push({ at: `${a}.create`, message: 'is deprecated in CLC and has no Ignition 3 translation: use the user fields themselves' });
                return isObject(u) ? Object.fromEntries(Object.entries(u).filter(([k]) => k !== 'create')) : u;
              }),
          },
          at,
        ),
    },
    '',
  ) as Obj;

  const networkdFiles = networkdUnits(networkd, problems);
  if (networkdFiles.length) {
    const storage = isObject(translated.storage) ? translated.storage : {};
    translated.storage = { ...storage, files: [...(Array.isArray(storage.files) ? (storage.files as unknown[]) : []), ...networkdFiles] };
  }
  const config = readShape(translated, IGNITION_SHAPE, '', '', { keyName: snakeCase, strict, problems, warnings }) as Record<string, unknown>;
  const version = lowestSpecFor(config).version;
  checkDeclaredVersion(config, version, `a Container Linux Config`, problems);
  return { config, version, problems, warnings };
}

/** `networkd.units[]` `{name, contents, dropins[{name, contents}]}` → files under {@link NETWORKD_DIR} (0644, overwritten). */
function networkdUnits(networkd: unknown, problems: ConfigProblem[]): Obj[] {
  if (networkd === undefined || networkd === null) return [];
  const units = isObject(networkd) ? networkd.units : undefined;
  if (!isObject(networkd) || (units !== undefined && !Array.isArray(units))) {
    problems.push({ at: 'networkd', message: 'must be a mapping with a units list' });
    return [];
  }
  const out: Obj[] = [];
  const put = (path: string, text: unknown, at: string) => {
    if (typeof text !== 'string') {
      problems.push({ at: `${at}.contents`, message: 'must be a string' });
      return;
    }
    out.push({ path, overwrite: true, mode: 0o644, contents: dataUrlResource(Buffer.from(text, 'utf8'), { gzip: false }) });
  };
  for (const [i, u] of (units ?? []).entries()) {
    const at = `networkd.units[${i}]`;
    if (!isObject(u) || typeof u.name !== 'string' || !/^[^/]+$/.test(u.name)) {
      problems.push({ at: `${at}.name`, message: 'must be a file name such as 10-eth0.network' });
      continue;
    }
    if (u.contents !== undefined) put(`${NETWORKD_DIR}/${u.name}`, u.contents, at);
    for (const [j, d] of (Array.isArray(u.dropins) ? u.dropins : []).entries()) {
      const dat = `${at}.dropins[${j}]`;
      if (!isObject(d) || typeof d.name !== 'string' || !/^[^/]+$/.test(d.name)) problems.push({ at: `${dat}.name`, message: 'must be a file name such as 10-mtu.conf' });
      else put(`${NETWORKD_DIR}/${u.name}.d/${d.name}`, d.contents, dat);
    }
  }
  return out;
}
