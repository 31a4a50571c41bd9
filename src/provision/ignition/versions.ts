/**
 * Ignition config spec versions (3.0.0–3.6.0) and which config fields need which spec.
 *
 * The feature table is generic over a whole config object (not tied to what our renderer
 * emits), so a config that later merges user-supplied Ignition can be fitted the same way.
 * Sources: the published JSON schemas (coreos/ignition `config/v3_N/schema/ignition.json`,
 * fields new in each version) and coreos/ignition `docs/migrating-configs.md` and
 * `docs/release-notes.md` (behaviour new in a version without a new field).
 */

/** The Ignition spec versions bootwright emits, lowest first. */
export const IGNITION_SPEC_VERSIONS = ['3.0.0', '3.1.0', '3.2.0', '3.3.0', '3.4.0', '3.5.0', '3.6.0'] as const;

/** One of {@link IGNITION_SPEC_VERSIONS}. */
export type IgnitionSpecVersion = (typeof IGNITION_SPEC_VERSIONS)[number];

/** Whether `value` is one of {@link IGNITION_SPEC_VERSIONS}. */
export function isIgnitionSpecVersion(value: string): value is IgnitionSpecVersion {
  return (IGNITION_SPEC_VERSIONS as readonly string[]).includes(value);
}

/**
 * Compare two supported spec versions: negative when `a` is lower, 0 when equal,
 * positive when higher (their position in {@link IGNITION_SPEC_VERSIONS}).
 */
export function compareSpecs(a: IgnitionSpecVersion, b: IgnitionSpecVersion): number {
  return IGNITION_SPEC_VERSIONS.indexOf(a) - IGNITION_SPEC_VERSIONS.indexOf(b);
}

const REQUESTED = /^(\d+)\.(\d+)(?:\.(\d+))?(-experimental)?$/;

/** Each supported spec with its minor number, lowest first (every Ignition request asks {@link highestSpecAtMost}). */
const SPEC_MINORS: readonly (readonly [IgnitionSpecVersion, number])[] = IGNITION_SPEC_VERSIONS.map((v) => [v, Number(v.split('.')[1])] as const);

/**
 * The highest supported spec not above `requested` (DESIGN §4: Ignition sends the highest
 * spec it accepts, e.g. `version=3.4.0`, and gets that or lower).
 *
 * `requested` is `MAJOR.MINOR` or `MAJOR.MINOR.PATCH`, optionally with `-experimental`,
 * which Ignition orders just below the release of the same number. Only major 3 matches:
 * Ignition accepts a config only when the major versions are equal.
 *
 * Examples: `3.4.0`→`3.4.0`, `3.9.0`→`3.6.0`, `3.2`→`3.2.0`, `3.5.0-experimental`→`3.4.0`,
 * `2.3.0`→undefined, `4.0.0`→undefined, garbage→undefined.
 *
 * @returns the spec, or undefined when none is at or below `requested`
 */
export function highestSpecAtMost(requested: string): IgnitionSpecVersion | undefined {
  const m = REQUESTED.exec(requested.trim());
  if (!m || Number(m[1]) !== 3) return undefined;
  const minor = Number(m[2]);
  const patch = Number(m[3] ?? 0);
  const experimental = m[4] !== undefined;
  let best: IgnitionSpecVersion | undefined;
  for (const [v, vMinor] of SPEC_MINORS) {
    // Every supported spec is 3.N.0: it is at most the request when its minor is lower,
    // or equal and the request is not an experimental (pre-release) of that same x.y.0.
    if (vMinor < minor || (vMinor === minor && !(experimental && patch === 0))) best = v;
  }
  return best;
}

/** A config field (or a value of one) that only some spec versions can express. */
export interface IgnitionFeature {
  /** Human name used in errors, e.g. `storage.luks` or `storage.files[].mode with setuid/setgid/sticky bits`. */
  name: string;
  /** The lowest spec that has it. */
  since: IgnitionSpecVersion;
  /** Where it lives from the config root; `[]` stands for every item of a list. */
  path: string;
  /**
   * When the field being present is not enough (a value of it is new): the test on the
   * value and the object holding it. Default: any value other than `null`.
   */
  when?: (value: unknown, holder: Record<string, unknown>) => boolean;
}

/** Remote resources (`source` + options) in every 3.x spec. */
const RESOURCES_30 = [
  'ignition.config.merge[]',
  'ignition.config.replace',
  'ignition.security.tls.certificateAuthorities[]',
  'storage.files[].contents',
  'storage.files[].append[]',
] as const;
/** Resources whose `compression` is new in 3.1.0 (files had it from 3.0.0). */
const CONFIG_AND_CA_RESOURCES = RESOURCES_30.slice(0, 3);
/** Every resource; `storage.luks[].keyFile` exists from 3.2.0, so features below that miss it harmlessly. */
const RESOURCES = [...RESOURCES_30, 'storage.luks[].keyFile'] as const;

function perResource(paths: readonly string[], field: string, since: IgnitionSpecVersion, name: (p: string) => string, when?: IgnitionFeature['when']): IgnitionFeature[] {
  return paths.map((p) => ({ name: name(p), since, path: `${p}.${field}`, ...(when ? { when } : {}) }));
}

const startsWith = (prefix: string) => (v: unknown) => typeof v === 'string' && v.startsWith(prefix);
const SPECIAL_MODE_BITS = 0o7000;
const MAX_MODE = 0o7777;
/** A legal mode (0..07777) with setuid/setgid/sticky bits; an illegal mode is no feature of any spec (`./rules.ts` refuses it). */
const hasSpecialBits = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= MAX_MODE && ((v as number) & SPECIAL_MODE_BITS) !== 0;

/**
 * Every feature newer than 3.0.0, in spec order. Fields are the schema's; behaviour
 * without a new field comes from Ignition's release notes:
 * - 3.1.0 (Ignition 2.3.0): `sha256` verification hashes; `compression` of `data:` URLs
 *   ("Support compression for data URIs": older Ignition writes the gzip stream itself);
 *   `compression` of merged/replaced configs and CA bundles; `httpHeaders`; `ignition.proxy`;
 *   `filesystems[].mountOptions`.
 * - 3.2.0: `gs://` URLs, LUKS, partition `resize`, user/group `shouldExist`.
 * - 3.3.0: `kernelArguments`, filesystem format `none`.
 * - 3.4.0: `arn:` URLs, LUKS `discard`/`openOptions`, Tang `advertisement`.
 * - 3.5.0: LUKS `cex`.
 * - 3.6.0: setuid/setgid/sticky mode bits (Ignition 2.22.0: ignored with a warning up to
 *   3.5.0, applied from 3.6.0).
 */
export const IGNITION_FEATURES: readonly IgnitionFeature[] = [
  { name: 'ignition.proxy', since: '3.1.0', path: 'ignition.proxy' },
  ...perResource(RESOURCES_30, 'httpHeaders', '3.1.0', (p) => `${p}.httpHeaders`),
  ...perResource(CONFIG_AND_CA_RESOURCES, 'compression', '3.1.0', (p) => `${p}.compression`),
  ...perResource(
    ['storage.files[].contents', 'storage.files[].append[]'],
    'compression',
    '3.1.0',
    (p) => `${p}.compression of a data: URL`,
    (_v, holder) => startsWith('data:')(holder.source),
  ),
  ...perResource(RESOURCES_30, 'verification.hash', '3.1.0', (p) => `${p}.verification.hash of type sha256`, startsWith('sha256-')),
  { name: 'storage.filesystems[].mountOptions', since: '3.1.0', path: 'storage.filesystems[].mountOptions' },
  ...perResource(RESOURCES_30, 'source', '3.2.0', (p) => `${p}.source with a gs:// URL`, startsWith('gs://')),
  { name: 'storage.luks', since: '3.2.0', path: 'storage.luks' },
  { name: 'storage.disks[].partitions[].resize', since: '3.2.0', path: 'storage.disks[].partitions[].resize' },
  { name: 'passwd.users[].shouldExist', since: '3.2.0', path: 'passwd.users[].shouldExist' },
  { name: 'passwd.groups[].shouldExist', since: '3.2.0', path: 'passwd.groups[].shouldExist' },
  { name: 'kernelArguments', since: '3.3.0', path: 'kernelArguments' },
  { name: 'storage.filesystems[].format none', since: '3.3.0', path: 'storage.filesystems[].format', when: (v) => v === 'none' },
  ...perResource(RESOURCES, 'source', '3.4.0', (p) => `${p}.source with an arn: URL`, startsWith('arn:')),
  { name: 'storage.luks[].discard', since: '3.4.0', path: 'storage.luks[].discard' },
  { name: 'storage.luks[].openOptions', since: '3.4.0', path: 'storage.luks[].openOptions' },
  { name: 'storage.luks[].clevis.tang[].advertisement', since: '3.4.0', path: 'storage.luks[].clevis.tang[].advertisement' },
  { name: 'storage.luks[].cex', since: '3.5.0', path: 'storage.luks[].cex' },
  { name: 'storage.files[].mode with setuid/setgid/sticky bits', since: '3.6.0', path: 'storage.files[].mode', when: hasSpecialBits },
  { name: 'storage.directories[].mode with setuid/setgid/sticky bits', since: '3.6.0', path: 'storage.directories[].mode', when: hasSpecialBits },
];

/** One place a config uses a feature. */
export interface FeatureUse {
  feature: IgnitionFeature;
  /** Where in the config, e.g. `storage.files[3].mode`. */
  at: string;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Every `(value, holder, concrete path)` at `segments` below `node`. */
function* walk(node: unknown, segments: readonly string[], at: string): Generator<[unknown, Record<string, unknown>, string]> {
  const [head, ...rest] = segments;
  if (head === undefined || !isObject(node) || !(head in node)) return;
  const here = at ? `${at}.${head}` : head;
  const value = node[head];
  if (rest[0] === '[]') {
    if (!Array.isArray(value)) return;
    for (const [i, item] of value.entries()) {
      if (rest.length === 1) yield [item, node, `${here}[${i}]`];
      else yield* walk(item, rest.slice(1), `${here}[${i}]`);
    }
  } else if (rest.length === 0) {
    yield [value, node, here];
  } else {
    yield* walk(value, rest, here);
  }
}

const segmentsCache = new Map<string, string[]>();
function segmentsOf(path: string): string[] {
  let s = segmentsCache.get(path);
  if (!s) {
    s = path.replaceAll('[]', '.[]').split('.');
    segmentsCache.set(path, s);
  }
  return s;
}

/**
 * Every use of a feature newer than 3.0.0 in `config` (any Ignition 3.x config object,
 * whatever produced it), in table order then config order. `null` values count as unset,
 * as Ignition reads them.
 */
export function featuresUsed(config: Record<string, unknown>): FeatureUse[] {
  const uses: FeatureUse[] = [];
  for (const feature of IGNITION_FEATURES) {
    for (const [value, holder, at] of walk(config, segmentsOf(feature.path), '')) {
      if (value === null || value === undefined) continue;
      if (feature.when && !feature.when(value, holder)) continue;
      uses.push({ feature, at });
    }
  }
  return uses;
}

/** The outcome of fitting a config to the spec versions. */
export interface SpecFit {
  /** The lowest spec that can express the whole config. */
  version: IgnitionSpecVersion;
  /** The use that forces `version` (the first with the highest `since`); absent for 3.0.0. */
  because?: FeatureUse;
}

/**
 * The lowest spec that can express `config` (DESIGN §4: without a requested version,
 * "the lowest spec that can express the config").
 */
export function lowestSpecFor(config: Record<string, unknown>): SpecFit {
  let fit: SpecFit = { version: '3.0.0' };
  for (const use of featuresUsed(config)) {
    if (compareSpecs(use.feature.since, fit.version) > 0) fit = { version: use.feature.since, because: use };
  }
  return fit;
}

/**
 * What keeps `config` from being a valid `version` config: the use needing the highest
 * spec above `version` (so the error names the real minimum), or undefined when
 * `version` can express it all.
 */
export function unsupportedFeature(config: Record<string, unknown>, version: IgnitionSpecVersion): FeatureUse | undefined {
  const fit = lowestSpecFor(config);
  return compareSpecs(fit.version, version) > 0 ? fit.because : undefined;
}
