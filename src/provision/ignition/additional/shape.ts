/**
 * The field tree of an Ignition 3.x config (the union of specs 3.0.0–3.6.0, coreos/ignition
 * `docs/configuration-v3_6.md`; fields newer than a spec are caught by the feature table
 * in `../versions.ts`), and one walker that reads a user-supplied config against it:
 * types checked, unknown keys reported, `null` (Ignition's "unset") dropped, keys
 * renamed from the input's naming (camelCase for Ignition, snake_case for Butane).
 */

/** A leaf's JSON type. */
export type Leaf = 'string' | 'integer' | 'boolean';
/** An object's fields by their Ignition name. */
export interface ShapeObject {
  readonly [field: string]: Shape;
}
/** A leaf, a list of one shape, or an object. */
export type Shape = Leaf | readonly [Shape] | ShapeObject;

const OWNER: ShapeObject = { id: 'integer', name: 'string' };

/** `resource`: where Ignition fetches bytes from (a URL, often a `data:` URL). */
export const RESOURCE: ShapeObject = {
  source: 'string',
  compression: 'string',
  httpHeaders: [{ name: 'string', value: 'string' }],
  verification: { hash: 'string' },
};

/** Every field of Ignition 3.0.0–3.6.0 configs, by Ignition's names. */
export const IGNITION_SHAPE: ShapeObject = {
  ignition: {
    version: 'string',
    config: { merge: [RESOURCE], replace: RESOURCE },
    timeouts: { httpResponseHeaders: 'integer', httpTotal: 'integer' },
    security: { tls: { certificateAuthorities: [RESOURCE] } },
    proxy: { httpProxy: 'string', httpsProxy: 'string', noProxy: ['string'] },
  },
  storage: {
    disks: [
      {
        device: 'string',
        wipeTable: 'boolean',
        partitions: [
          {
            label: 'string',
            number: 'integer',
            sizeMiB: 'integer',
            startMiB: 'integer',
            typeGuid: 'string',
            guid: 'string',
            wipePartitionEntry: 'boolean',
            shouldExist: 'boolean',
            resize: 'boolean',
          },
        ],
      },
    ],
    raid: [{ name: 'string', level: 'string', spares: 'integer', devices: ['string'], options: ['string'] }],
    luks: [
      {
        name: 'string',
        label: 'string',
        uuid: 'string',
        device: 'string',
        keyFile: RESOURCE,
        wipeVolume: 'boolean',
        clevis: {
          custom: { pin: 'string', config: 'string', needsNetwork: 'boolean' },
          tpm2: 'boolean',
          tang: [{ url: 'string', thumbprint: 'string', advertisement: 'string' }],
          threshold: 'integer',
        },
        cex: { enabled: 'boolean' },
        options: ['string'],
        discard: 'boolean',
        openOptions: ['string'],
      },
    ],
    filesystems: [
      {
        path: 'string',
        device: 'string',
        format: 'string',
        options: ['string'],
        mountOptions: ['string'],
        wipeFilesystem: 'boolean',
        label: 'string',
        uuid: 'string',
      },
    ],
    files: [{ path: 'string', overwrite: 'boolean', user: OWNER, group: OWNER, mode: 'integer', contents: RESOURCE, append: [RESOURCE] }],
    directories: [{ path: 'string', overwrite: 'boolean', user: OWNER, group: OWNER, mode: 'integer' }],
    links: [{ path: 'string', overwrite: 'boolean', user: OWNER, group: OWNER, target: 'string', hard: 'boolean' }],
  },
  systemd: {
    units: [{ name: 'string', enabled: 'boolean', mask: 'boolean', contents: 'string', dropins: [{ name: 'string', contents: 'string' }] }],
  },
  passwd: {
    users: [
      {
        name: 'string',
        passwordHash: 'string',
        sshAuthorizedKeys: ['string'],
        uid: 'integer',
        gecos: 'string',
        homeDir: 'string',
        noCreateHome: 'boolean',
        primaryGroup: 'string',
        groups: ['string'],
        noUserGroup: 'boolean',
        system: 'boolean',
        noLogInit: 'boolean',
        shell: 'string',
        shouldExist: 'boolean',
      },
    ],
    groups: [{ name: 'string', gid: 'integer', passwordHash: 'string', system: 'boolean', shouldExist: 'boolean' }],
  },
  kernelArguments: { shouldExist: ['string'], shouldNotExist: ['string'] },
};

/** A problem in the user's config: `at` is the key path in the input's own naming. */
export interface ConfigProblem {
  at: string;
  message: string;
}

/** How {@link readShape} reads one input format. */
export interface ReadOptions {
  /** The input's name for an Ignition field (identity for Ignition, snake_case for Butane). */
  keyName: (field: string) => string;
  /** Unknown keys are problems (true) or warnings, the key dropped (false). */
  strict: boolean;
  /** Errors, in input order. */
  problems: ConfigProblem[];
  /** Warnings (unknown keys when not strict), as `<path>: <message>`. */
  warnings: string[];
  /**
   * Keys the format knows but bootwright does not translate, by pattern (`[]` for list
   * items, input naming): the message for the key, or undefined.
   */
  untranslated?: (pattern: string) => string | undefined;
  /**
   * Rewrites a resource object in the input (e.g. Butane `inline` → a `data:` URL
   * `source`) before its fields are read; returns the object to read, or undefined
   * after recording a problem.
   */
  resource?: (value: Record<string, unknown>, at: string) => Record<string, unknown> | undefined;
  /**
   * Reads a scalar for a leaf of type `leaf` the way the input format's parser would
   * (e.g. Butane's go-yaml v3: `yes` for a boolean, `0o644` for an integer); returns the
   * value to check, `value` itself when it has no other reading.
   */
  scalar?: (value: unknown, leaf: Leaf) => unknown;
}

/** Whether `v` is a plain object (not null, not a list). */
export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

const join = (at: string, key: string) => (at ? `${at}.${key}` : key);

/** `snake_case` for a camelCase Ignition field (`sshAuthorizedKeys` → `ssh_authorized_keys`, `sizeMiB` → `size_mib`). */
export function snakeCase(field: string): string {
  return field.replace(/MiB$/, 'Mib').replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/**
 * Read `value` against `shape`: the result uses Ignition's field names, in the shape's
 * field order (so output is deterministic whatever the input's key order); `null` and
 * absent fields are left out. Problems: a wrong JSON type (`must be a string`, ...), an
 * unknown key (`unknown key`, or a warning when not strict), a key listed by
 * `options.untranslated`. Values are never quoted in messages (they may be secrets).
 *
 * @param at the path of `value` in the input (`''` for the root), input naming
 * @param pattern the same with `[]` for list indexes, for `options.untranslated`
 * @returns the Ignition-named value, or undefined when absent, null or wrong
 */
export function readShape(value: unknown, shape: Shape, at: string, pattern: string, options: ReadOptions): unknown {
  if (value === null || value === undefined) return undefined;
  if (typeof shape === 'string') {
    if (options.scalar) value = options.scalar(value, shape);
    const ok = shape === 'string' ? typeof value === 'string' : shape === 'boolean' ? typeof value === 'boolean' : Number.isSafeInteger(value);
    if (!ok) {
      options.problems.push({ at, message: `must be ${shape === 'integer' ? 'an integer' : `a ${shape}`}` });
      return undefined;
    }
    return value;
  }
  if (Array.isArray(shape)) {
    if (!Array.isArray(value)) {
      options.problems.push({ at, message: 'must be a list' });
      return undefined;
    }
    const item = shape[0] as Shape;
    const out: unknown[] = [];
    for (const [i, v] of value.entries()) {
      const r = readShape(v, item, `${at}[${i}]`, `${pattern}[]`, options);
      if (r !== undefined) out.push(r);
    }
    return out;
  }
  if (!isObject(value)) {
    options.problems.push({ at, message: 'must be a mapping' });
    return undefined;
  }
  let input: Record<string, unknown> | undefined = value;
  if (shape === RESOURCE && options.resource) {
    input = options.resource(value, at);
    if (!input) return undefined;
  }
  const obj = shape as ShapeObject;
  // Input keys are user data (`__proto__`, `constructor`...): only own keys, through a Map.
  const byInputName = new Map(Object.keys(obj).map((f) => [options.keyName(f), f]));
  for (const key of Object.keys(input)) {
    if (byInputName.has(key)) continue;
    const why = options.untranslated?.(join(pattern, key));
    if (why) options.problems.push({ at: join(at, key), message: why });
    else if (options.strict) options.problems.push({ at: join(at, key), message: 'unknown key' });
    else options.warnings.push(`${join(at, key)}: unknown key, ignored`);
  }
  const out: Record<string, unknown> = {};
  for (const [field, sub] of Object.entries(obj)) {
    const key = options.keyName(field);
    if (!Object.hasOwn(input, key)) continue;
    const r = readShape(input[key], sub, join(at, key), join(pattern, key), options);
    if (r !== undefined) out[field] = r;
  }
  return out;
}

/**
 * Fields an Ignition config must give, by the object holding them (the published
 * schemas' `required`, 3.0.0–3.6.0, plus what Ignition's validation requires where a
 * later schema dropped it: a link's `target`, a raid's `level` and `devices`, the
 * `source` of merged or replacing configs and CA bundles).
 */
export const REQUIRED_FIELDS: Readonly<Record<string, readonly string[]>> = {
  'ignition.config.merge[]': ['source'],
  'ignition.config.replace': ['source'],
  'ignition.security.tls.certificateAuthorities[]': ['source'],
  'storage.disks[]': ['device'],
  'storage.raid[]': ['name', 'level', 'devices'],
  'storage.luks[]': ['name'],
  'storage.filesystems[]': ['device'],
  'storage.files[]': ['path'],
  'storage.directories[]': ['path'],
  'storage.links[]': ['path', 'target'],
  'systemd.units[]': ['name'],
  'systemd.units[].dropins[]': ['name'],
  'passwd.users[]': ['name'],
  'passwd.groups[]': ['name'],
};

/** Every object at `pattern` (`a.b[].c`) below `node`, with its concrete path. */
function objectsAt(node: unknown, segments: readonly string[], at: string): [Record<string, unknown>, string][] {
  if (segments.length === 0) return isObject(node) ? [[node, at]] : [];
  const [head, ...rest] = segments;
  if (head === '[]') return Array.isArray(node) ? node.flatMap((item, i) => objectsAt(item, rest, `${at}[${i}]`)) : [];
  return isObject(node) ? objectsAt(node[head!], rest, at ? `${at}.${head!}` : head!) : [];
}

/**
 * The required fields (see {@link REQUIRED_FIELDS}, plus a `name` for every
 * `httpHeaders[]` entry) missing from a config read by {@link readShape}; paths use
 * Ignition's names.
 */
export function missingRequired(config: Record<string, unknown>): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const check = (pattern: string, fields: readonly string[]) => {
    for (const [obj, at] of objectsAt(config, pattern.replaceAll('[]', '.[]').split('.'), '')) {
      for (const f of fields) if (obj[f] === undefined) problems.push({ at: `${at}.${f}`, message: 'required' });
      for (const [header, hat] of objectsAt(obj.httpHeaders, ['[]'], `${at}.httpHeaders`)) if (header.name === undefined) problems.push({ at: `${hat}.name`, message: 'required' });
    }
  };
  for (const [pattern, fields] of Object.entries(REQUIRED_FIELDS)) check(pattern, fields);
  for (const resource of ['storage.files[].contents', 'storage.files[].append[]', 'storage.luks[].keyFile']) check(resource, []);
  return problems;
}

const RESOURCE_PATTERNS = [
  'ignition.config.merge[]',
  'ignition.config.replace',
  'ignition.security.tls.certificateAuthorities[]',
  'storage.files[].contents',
  'storage.files[].append[]',
  'storage.luks[].keyFile',
];
/** Filesystem formats Ignition 3.x creates (`none` from 3.3.0, checked by the feature table). */
const FORMATS = ['ext4', 'btrfs', 'xfs', 'vfat', 'swap', 'none'];
/** The highest legal file mode (Ignition `validateMode`: permission and setuid/setgid/sticky bits). */
const MAX_MODE = 0o7777;
const HASH = /^(sha512-[0-9a-f]{128}|sha256-[0-9a-f]{64})$/;

/**
 * Values Ignition's validation refuses that the schema lets through (coreos/ignition
 * `config/v3_*\/types`: resource `compression` is `gzip` or empty, `verification.hash` is
 * `sha512-<128 hex>` or `sha256-<64 hex>`, a filesystem `format` is one Ignition knows,
 * a file or directory `mode` is 0..07777 at any spec: "illegal file mode"). Every such
 * value is reported. Paths use Ignition's names; values are not quoted.
 */
export function invalidValues(config: Record<string, unknown>): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const pattern of RESOURCE_PATTERNS) {
    for (const [res, at] of objectsAt(config, pattern.replaceAll('[]', '.[]').split('.'), '')) {
      if (res.compression !== undefined && res.compression !== '' && res.compression !== 'gzip') problems.push({ at: `${at}.compression`, message: 'must be gzip or empty' });
      const hash = isObject(res.verification) ? res.verification.hash : undefined;
      if (typeof hash === 'string' && !HASH.test(hash)) problems.push({ at: `${at}.verification.hash`, message: 'must be sha512-<128 hex digits> or sha256-<64 hex digits>' });
    }
  }
  for (const [fs, at] of objectsAt(config, ['storage', 'filesystems', '[]'], '')) {
    if (typeof fs.format === 'string' && fs.format !== '' && !FORMATS.includes(fs.format)) problems.push({ at: `${at}.format`, message: `must be one of ${FORMATS.join(', ')}` });
  }
  for (const kind of ['files', 'directories']) {
    for (const [node, at] of objectsAt(config, ['storage', kind, '[]'], '')) {
      if (typeof node.mode === 'number' && !(Number.isSafeInteger(node.mode) && node.mode >= 0 && node.mode <= MAX_MODE)) problems.push({ at: `${at}.mode`, message: 'illegal file mode' });
    }
  }
  return problems;
}
