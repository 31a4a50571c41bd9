/**
 * `bootwright` on PATH: after `npm install -g .` (here into a throwaway prefix) and
 * through `npx bootwright` in the clone. Both run the built CLI (`dist/cli.js`, the
 * package's `bin`), so they need `npm run build` first: without it they skip loudly,
 * and fail when `CI` is set (CI builds before it tests).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { missingDependency } from '../support/missing.js';

const ROOT = resolve(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string; bin: Record<string, string> };
const built = existsSync(join(ROOT, pkg.bin.bootwright!));

describe('bootwright on PATH', { skip: built ? false : missingDependency('dist/ is not built (npm run build): the installed bootwright command is NOT checked') }, () => {
  it('npm install -g . puts bootwright on PATH, and it runs', () => {
    const prefix = mkdtempSync(join(tmpdir(), 'bootwright-global-'));
    const install = spawnSync('npm', ['install', '-g', '.', '--prefix', prefix, '--no-audit', '--no-fund', '--offline'], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
    assert.equal(install.status, 0, install.stderr);
    const r = spawnSync('bootwright', ['--version'], { encoding: 'utf8', env: { ...process.env, PATH: `${join(prefix, 'bin')}:${process.env.PATH ?? ''}` } });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `bootwright ${pkg.version}\n`);
  });

  it('npx bootwright runs the clone\'s own CLI', () => {
    // npm 11 links a project's own bin into its npx cache the first time it is asked,
    // and never again: asked before `npm run build` (no dist/cli.js yet), that cache
    // keeps a package without its bin, and every later `npx bootwright` is "not found".
    // So a cache of its own, and offline: nothing may come from the registry.
    const cache = mkdtempSync(join(tmpdir(), 'bootwright-npx-cache-'));
    const r = spawnSync('npx', ['--offline', 'bootwright', 'render', 'examples/worker.yaml', '--format', 'ignition'], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, npm_config_cache: cache },
    });
    rmSync(cache, { recursive: true, force: true });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^\{"ignition":\{"version":"3\.0\.0"\}/);
  });
});
