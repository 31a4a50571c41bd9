/**
 * The committed OpenAPI document lints clean under redocly.yaml: no errors, no warnings.
 * Runs the local redocly CLI with telemetry and the update check off, so it never
 * touches the network.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { it } from 'node:test';

const root = fileURLToPath(new URL('../../', import.meta.url));
const redocly = fileURLToPath(new URL('../../node_modules/.bin/redocly', import.meta.url));

interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: { ruleId: string; severity: string; message: string; location?: { pointer?: string }[] }[];
}

it('redocly lint openapi/openapi.json --config redocly.yaml is clean', () => {
  const run = spawnSync(redocly, ['lint', 'openapi/openapi.json', '--config', 'redocly.yaml', '--format', 'json'], {
    cwd: root,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
  });
  assert.equal(run.error, undefined, `redocly did not run: ${String(run.error)}`);
  assert.equal(run.signal, null, 'redocly timed out');
  const report = JSON.parse(run.stdout) as LintReport;
  const problems = report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location?.[0]?.pointer ?? '?'}: ${p.message}`).join('\n');
  assert.deepEqual(report.totals, { errors: 0, warnings: 0, ignored: 0 }, `redocly lint found problems:\n${problems}`);
  assert.equal(run.status, 0, `redocly exited ${String(run.status)}:\n${run.stderr}`);
});
