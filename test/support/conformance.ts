/**
 * Where the published schemas the outputs are checked against live. They are not part
 * of this repository (they are other projects' files, under their own licences), so a
 * clone finds them, in this order:
 *
 * 1. `$BOOTWRIGHT_CONFORMANCE_DIR` (a directory holding `ignition/ignition-v3_N.schema.json`,
 *    `ignition/ignition-v2_3.schema.json` and `cloud-init/schema-cloud-config-v1.json`);
 * 2. `../shared/conformance` beside the repository root, where the project's CI lays it.
 *
 * The copy of cloud-init's schema that Debian's `cloud-init` package installs
 * (`/usr/lib/python3/dist-packages/cloudinit/config/schemas/`, cloud-init 22.4) is not
 * a stand-in for the published one: it allows unknown top-level keys and takes only
 * integer partition types in `disk_setup.*.layout` (the published schema takes `'8e'`
 * and GUIDs), so checks written against the published schema would pass or fail for
 * the wrong reasons. It is still applied, by the real `cloud-init schema` (see
 * validators.ts), wherever cloud-init is installed.
 *
 * A schema found nowhere is never an import-time failure: the checks that need it skip
 * with one loud line per process (see {@link missingDependency}), and fail when `CI` is set.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inCI, missingDependency } from './missing.js';

/** The repository root (this file is `test/support/conformance.ts`). */
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The conformance directories to look in, first match wins. */
function candidateDirs(): string[] {
  const dirs: string[] = [];
  if (process.env.BOOTWRIGHT_CONFORMANCE_DIR) dirs.push(path.resolve(process.env.BOOTWRIGHT_CONFORMANCE_DIR));
  dirs.push(path.resolve(repoRoot, '../shared/conformance'));
  return dirs;
}


const where = (): string => `looked in ${candidateDirs().join(', ')}; set BOOTWRIGHT_CONFORMANCE_DIR to the conformance data`;

/**
 * The file of Ignition's published JSON schema (draft-04) for a spec version.
 *
 * @param version `2.3.0` or `3.0.0`–`3.6.0`
 * @returns an absolute path, or undefined when no conformance directory holds it
 */
export function ignitionSchemaFile(version: string): string | undefined {
  const m = /^(\d+)\.(\d+)\.0$/.exec(version);
  if (!m) return undefined;
  const name = `ignition-v${m[1]!}_${m[2]!}.schema.json`;
  return candidateDirs()
    .map((d) => path.join(d, 'ignition', name))
    .find((f) => existsSync(f));
}

/**
 * The file of cloud-init's published cloud-config JSON schema.
 *
 * @returns an absolute path, or undefined when no conformance directory holds it
 */
export function cloudConfigSchemaFile(): string | undefined {
  return candidateDirs()
    .map((d) => path.join(d, 'cloud-init', 'schema-cloud-config-v1.json'))
    .find((f) => existsSync(f));
}

/**
 * Read the Ignition schema of `version` as JSON.
 *
 * @throws AssertionError naming where it looked, when the schema is not found (callers
 *   outside CI check {@link ignitionSchemasSkip} first)
 */
export function readIgnitionSchema(version: string): Record<string, unknown> {
  const file = ignitionSchemaFile(version);
  assert.ok(file, `no Ignition ${version} schema: ${where()}`);
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

/**
 * The `skip` option for tests that read the published Ignition schemas directly: false
 * when every spec's schema (`2.3.0`, `3.0.0`–`3.6.0`) is found, or under CI.
 */
export function ignitionSchemasSkip(versions: readonly string[]): string | false {
  const missing = versions.filter((v) => !ignitionSchemaFile(v));
  return missing.length === 0 ? false : missingDependency(`Ignition JSON schemas ${missing.join(', ')} not found (${where()})`);
}

/** The `skip` option for tests of the cloud-config schema check itself: false when the schema is found, or under CI. */
export function cloudConfigSchemaSkip(): string | false {
  return cloudConfigSchemaFile() ? false : missingDependency(`cloud-init's published cloud-config schema not found (${where()})`);
}

/**
 * Outside CI, warn once that a schema is missing and say so to the caller, which then
 * skips that check (returns no problems). Under CI, fail with where it looked.
 *
 * @param what e.g. `the cloud-config schema`
 * @returns true when the caller should skip the check
 * @throws AssertionError under CI
 */
export function schemaMissing(what: string): true {
  assert.ok(!inCI, `${what} is required in CI: ${where()}`);
  missingDependency(`${what} not found, outputs are NOT checked against it (${where()})`);
  return true;
}
