/**
 * A raw Ignition 3.x config given as additional config: its version, its fields read
 * against the 3.x field tree, and the fields its declared spec has (coreos/ignition
 * `docs/specs.md`; a config may only use what its own `ignition.version` defines).
 */
import { type IgnitionSpecVersion, isIgnitionSpecVersion, unsupportedFeature } from '../versions.js';
import { type ConfigProblem, IGNITION_SHAPE, isObject, readShape } from './shape.js';

/** A config read from user input, in Ignition 3.x terms. */
export interface ReadConfig {
  /** The config (Ignition field names, `ignition.version` removed: the merge sets it). */
  config: Record<string, unknown>;
  /** The spec the input is written for: the output is at least this. */
  version: IgnitionSpecVersion;
  problems: ConfigProblem[];
  warnings: string[];
}

/**
 * Push a problem for the first field `config` uses that spec `version` does not have
 * (versions.ts feature table), naming the spec that has it.
 *
 * @param declared how the input declared its version, for the message (e.g. `Butane fcos 1.1.0 (Ignition 3.1.0)`)
 */
export function checkDeclaredVersion(config: Record<string, unknown>, version: IgnitionSpecVersion, declared: string, problems: ConfigProblem[]): void {
  const use = unsupportedFeature({ ...config, ignition: { ...(isObject(config.ignition) ? config.ignition : {}), version } }, version);
  if (use) problems.push({ at: use.at, message: `${use.feature.name} needs Ignition spec ${use.feature.since}, but the config is ${declared}` });
}

/** `config` without `ignition.version` (and without an `ignition` left empty by that). */
export function withoutVersion(config: Record<string, unknown>): Record<string, unknown> {
  if (!isObject(config.ignition)) return config;
  const { version: _version, ...ignition } = config.ignition;
  const { ignition: _ignition, ...rest } = config;
  return Object.keys(ignition).length ? { ignition, ...rest } : rest;
}

/**
 * Read a raw Ignition config (`ignition.version` 3.0.0–3.6.0).
 *
 * Refused, with a problem at `ignition.version`: spec 1.x/2.x (Ignition 2.x configs
 * cannot be merged into a 3.x config; translate them first, e.g. with
 * `ign-converter`), experimental and unknown versions. Unknown keys are problems when
 * `strict`, else warnings (dropped). Field types as in the spec; a field newer than the
 * declared version is a problem.
 */
export function readIgnitionConfig(document: Record<string, unknown>, strict: boolean): ReadConfig {
  const problems: ConfigProblem[] = [];
  const warnings: string[] = [];
  const declared = isObject(document.ignition) ? document.ignition.version : undefined;
  if (typeof declared !== 'string' || !isIgnitionSpecVersion(declared)) {
    const v = typeof declared === 'string' ? declared : '';
    const message = /^[12]\./.test(v)
      ? `Ignition spec ${v} is not accepted: give an Ignition 3.x config (3.0.0 to 3.6.0); a 2.x config can be translated with ign-converter`
      : typeof declared === 'string'
        ? `Ignition spec ${v} is not supported: give 3.0.0 to 3.6.0`
        : 'must be a string such as "3.4.0"';
    return { config: {}, version: '3.0.0', problems: [{ at: 'ignition.version', message }], warnings };
  }
  const config = readShape(document, IGNITION_SHAPE, '', '', { keyName: (f) => f, strict, problems, warnings }) as Record<string, unknown>;
  checkDeclaredVersion(config, declared, `Ignition spec ${declared}`, problems);
  return { config: withoutVersion(config), version: declared, problems, warnings };
}
