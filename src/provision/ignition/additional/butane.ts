/**
 * Butane configs (coreos/butane `docs/specs.md`, `docs/config-fcos-v1_*.md`,
 * `docs/config-flatcar-v1_*.md`) translated to Ignition 3.x, for the fields Butane shares
 * with Ignition (snake_case → camelCase: `ssh_authorized_keys` → `sshAuthorizedKeys`,
 * `password_hash` → `passwordHash`) plus `inline` contents. Sugar that needs a files
 * directory (`local`, `trees`, `contents_local`) or expands to a whole layout
 * (`boot_device`, `grub`, `with_mount_unit`) is refused with a message naming the key.
 */
import { compareSpecs, type IgnitionSpecVersion } from '../versions.js';
import { dataUrlResource } from '../dataurl.js';
import { checkDeclaredVersion, type ReadConfig } from './ignition.js';
import { type ConfigProblem, IGNITION_SHAPE, isObject, type Leaf, readShape, snakeCase } from './shape.js';

/**
 * Butane spec → the Ignition spec it produces (coreos/butane `docs/specs.md` "Butane
 * specifications and Ignition specifications"; fcos 1.3.0 added only sugar, so it still
 * targets 3.2.0). Experimental specs are not accepted.
 */
export const BUTANE_TARGETS: Readonly<Record<string, Readonly<Record<string, IgnitionSpecVersion>>>> = {
  fcos: { '1.0.0': '3.0.0', '1.1.0': '3.1.0', '1.2.0': '3.2.0', '1.3.0': '3.2.0', '1.4.0': '3.3.0', '1.5.0': '3.4.0', '1.6.0': '3.5.0', '1.7.0': '3.6.0' },
  flatcar: { '1.0.0': '3.3.0', '1.1.0': '3.4.0' },
};

const NO_FILES_DIR = 'needs a Butane files-dir, which bootwright does not have: give the contents inline or as a source URL';
const SUGAR = 'is Butane sugar bootwright does not translate: write the Ignition fields it stands for';

/** Butane keys bootwright knows but does not translate, by pattern. */
const UNTRANSLATED: Readonly<Record<string, string>> = {
  'storage.trees': NO_FILES_DIR,
  'systemd.units[].contents_local': NO_FILES_DIR,
  'systemd.units[].dropins[].contents_local': NO_FILES_DIR,
  boot_device: SUGAR,
  grub: SUGAR,
  'storage.filesystems[].with_mount_unit': SUGAR,
};

/** Strings go-yaml v3 decodes into a Go `bool` (YAML 1.1 booleans, kept for typed bools). */
const GO_YAML_BOOLEANS: ReadonlyMap<string, boolean> = new Map([
  ...['y', 'Y', 'yes', 'Yes', 'YES', 'on', 'On', 'ON'].map((s) => [s, true] as const),
  ...['n', 'N', 'no', 'No', 'NO', 'off', 'Off', 'OFF'].map((s) => [s, false] as const),
]);
/** A YAML 1.2 octal integer, which go-yaml v3 resolves (`0o644`, `-0o1`). */
const YAML12_OCTAL = /^(-?)0o([0-7]+)$/;

/**
 * A scalar as Butane's reader (go-yaml v3) decodes it into a field of type `leaf`: for a
 * boolean field `yes`/`no`/`on`/`off`/`y`/`n` (and their capitalised forms) are booleans;
 * for an integer field `0o644` is octal (420). Other values, and strings for string
 * fields, are returned as they are (a string field keeps `yes`).
 */
export function butaneScalar(value: unknown, leaf: Leaf): unknown {
  if (typeof value !== 'string') return value;
  if (leaf === 'boolean') return GO_YAML_BOOLEANS.get(value) ?? value;
  if (leaf === 'integer') {
    const m = YAML12_OCTAL.exec(value);
    if (m) return (m[1] ? -1 : 1) * Number.parseInt(m[2]!, 8);
  }
  return value;
}

/**
 * Translate a Butane config to an Ignition config of the spec its variant and version
 * target.
 *
 * - `variant` `fcos` (1.0.0–1.6.0) or `flatcar` (1.0.0–1.1.0), see {@link BUTANE_TARGETS};
 *   `version` must be one of them.
 * - Fields: every Ignition field under its snake_case name (storage files, directories,
 *   links, disks, raid, luks, filesystems; systemd units with dropins; passwd users and
 *   groups; ignition config merge/replace, timeouts, tls, proxy; kernel_arguments).
 * - Resources: `inline` → a `data:` URL (`../dataurl.ts`: percent-encoded or base64,
 *   gzip where smaller from Ignition 3.1.0), `source` as given; `local` is refused;
 *   `inline` with `source` or with `compression` is refused (Butane refuses both).
 * - Unknown keys: problems naming the key path (`storage.files[0].contnts: unknown key`)
 *   when `strict` (the default for Butane), warnings (key dropped) with `strict: false`.
 * - Scalars as go-yaml v3 reads them into typed fields (see {@link butaneScalar}).
 * - Keys are data: `__proto__`, `constructor`... are unknown keys like any other.
 * - A field the target spec does not have (e.g. `luks` in fcos 1.1.0) is a problem.
 */
export function readButaneConfig(document: Record<string, unknown>, strict: boolean): ReadConfig {
  const problems: ConfigProblem[] = [];
  const warnings: string[] = [];
  const { variant, version, ...rest } = document;
  const targets = typeof variant === 'string' && Object.hasOwn(BUTANE_TARGETS, variant) ? BUTANE_TARGETS[variant] : undefined;
  if (!targets) {
    problems.push({ at: 'variant', message: `must be ${Object.keys(BUTANE_TARGETS).join(' or ')} (Butane variants bootwright translates)` });
    return { config: {}, version: '3.0.0', problems, warnings };
  }
  const target = typeof version === 'string' && Object.hasOwn(targets, version) ? targets[version] : undefined;
  if (!target) {
    problems.push({ at: 'version', message: `must be one of ${Object.keys(targets).join(', ')} for variant ${String(variant)}` });
    return { config: {}, version: '3.0.0', problems, warnings };
  }
  // Butane's `ignition` has no `version`: the Butane version decides the spec.
  if (isObject(rest.ignition) && Object.hasOwn(rest.ignition, 'version')) {
    if (strict) problems.push({ at: 'ignition.version', message: 'unknown key' });
    else warnings.push('ignition.version: unknown key, ignored');
  }
  const gzip = compareSpecs(target, '3.1.0') >= 0;
  const config = readShape(rest, IGNITION_SHAPE, '', '', {
    keyName: snakeCase,
    strict,
    problems,
    warnings,
    untranslated: (pattern) => (Object.hasOwn(UNTRANSLATED, pattern) ? UNTRANSLATED[pattern] : undefined),
    scalar: butaneScalar,
    resource: (value, at) => {
      if (Object.hasOwn(value, 'local')) {
        problems.push({ at: `${at}.local`, message: NO_FILES_DIR });
        return undefined;
      }
      if (!Object.hasOwn(value, 'inline') || value.inline === null) return value;
      const { inline, ...others } = value;
      if (typeof inline !== 'string') {
        problems.push({ at: `${at}.inline`, message: 'must be a string' });
        return undefined;
      }
      if (others.source !== undefined && others.source !== null) {
        problems.push({ at: `${at}.inline`, message: 'give one of inline, local or source' });
        return undefined;
      }
      if (others.compression !== undefined && others.compression !== null) {
        problems.push({ at: `${at}.compression`, message: 'applies to source only: Butane compresses inline contents itself' });
        return undefined;
      }
      return { ...others, ...dataUrlResource(Buffer.from(inline, 'utf8'), { gzip }) };
    },
  }) as Record<string, unknown>;
  checkDeclaredVersion(config, target, `Butane ${variant as string} ${version as string} (Ignition ${target})`, problems);
  return { config, version: target, problems, warnings };
}
