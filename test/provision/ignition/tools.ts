/**
 * Checks every Ignition renderer test can run on an output: the published JSON schema of
 * its version (ajv, draft-04), bootwright's rules, the real `ignition-validate` (specs
 * 3.0.0–3.3.0), and the systemd and Ignition tools where installed (`systemd-escape`,
 * `systemd-analyze verify`, Ignition's own `ignition-apply` writing into a temp root).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { IgnitionRender } from '../../../src/provision/ignition/render.js';
import { checkIgnitionRules } from '../../../src/provision/ignition/rules.js';
import { ignitionValidate, ignitionValidateKnows, validateIgnitionSchema } from '../../support/validators.js';

/**
 * Assert that a render is a valid config of its version: `body` is the config serialised
 * plus a newline, the JSON schema and {@link checkIgnitionRules} find nothing, and
 * ignition-validate (when it knows the version) prints nothing.
 */
export async function assertValid(out: IgnitionRender): Promise<void> {
  assert.equal(out.body, `${JSON.stringify(out.config)}\n`);
  assert.equal((out.config.ignition as { version: string }).version, out.version);
  assert.deepEqual(validateIgnitionSchema(out.body, out.version), []);
  assert.deepEqual(checkIgnitionRules(out.config), []);
  if (ignitionValidateKnows(out.version)) assert.deepEqual(await ignitionValidate(out.body), []);
}

function have(file: string): boolean {
  return existsSync(file);
}

/** Whether `systemd-escape` and `systemd-analyze` are installed. */
export const haveSystemd = have('/usr/bin/systemd-escape') && have('/usr/bin/systemd-analyze');

/** `systemd-escape --path <p>` (the reference for unit names from paths). */
export function systemdEscapePath(p: string): string {
  return execFileSync('/usr/bin/systemd-escape', ['--path', '--', p], { encoding: 'utf8' }).trimEnd();
}

/**
 * Run `systemd-analyze verify` on units (name → contents) written to a temp directory.
 *
 * @returns everything it printed (warnings included) with its exit status; `[]` when clean
 */
export function systemdVerify(units: Record<string, string>): string[] {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bootwright-units-'));
  try {
    const files = Object.entries(units).map(([name, text]) => {
      writeFileSync(path.join(dir, name), text);
      return `./${name}`;
    });
    const r = spawnSync('/usr/bin/systemd-analyze', ['verify', '--man=no', ...files], { cwd: dir, encoding: 'utf8' });
    const lines = `${r.stdout}\n${r.stderr}`.split('\n').map((l) => l.trim()).filter(Boolean);
    return r.status === 0 && lines.length === 0 ? [] : [`exit ${String(r.status)}`, ...lines];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Debian ships Ignition itself as a dracut module; called `ignition-apply` it applies a
 * config to a directory tree (files, links, units; no disks or users).
 */
const IGNITION_BINARY = '/usr/lib/dracut/modules.d/30ignition/ignition';
/** Whether Ignition's apply mode is available (it knows specs up to 3.3.0, like ignition-validate). */
export const haveIgnitionApply = have(IGNITION_BINARY) && process.getuid?.() === 0;

/**
 * Apply a config with Ignition's `ignition-apply --offline --ignore-unsupported` into a
 * fresh temp root holding `/etc/passwd` and `/etc/group` with root and `users` (so owner
 * names resolve), then hand the root to `check` and remove it.
 */
export function withAppliedRoot(body: string, users: readonly string[], check: (root: string) => void): void {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bootwright-apply-'));
  try {
    const root = path.join(dir, 'root');
    mkdirSync(path.join(root, 'etc'), { recursive: true });
    const extra = users.map((u, i) => ({ name: u, id: 1000 + i }));
    writeFileSync(path.join(root, 'etc/passwd'), ['root:x:0:0:root:/root:/bin/sh', ...extra.map((u) => `${u.name}:x:${u.id}:${u.id}::/home/${u.name}:/bin/sh`)].join('\n') + '\n');
    writeFileSync(path.join(root, 'etc/group'), ['root:x:0:', ...extra.map((u) => `${u.name}:x:${u.id}:`)].join('\n') + '\n');
    const apply = path.join(dir, 'ignition-apply');
    symlinkSync(IGNITION_BINARY, apply);
    const config = path.join(dir, 'config.ign');
    writeFileSync(config, body);
    const r = spawnSync(apply, ['--root', root, '--offline', '--ignore-unsupported', config], { encoding: 'utf8' });
    assert.equal(r.status, 0, `ignition-apply failed:\n${r.stdout}\n${r.stderr}`);
    check(root);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
