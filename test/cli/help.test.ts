/**
 * The command line explains itself, as kubectl does: help for every command, versions,
 * and usage errors that name the flag or command and point to --help (exit 2).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { RULES_VERSION } from '../../src/rules.js';
import { RENDERER_VERSION } from '../../src/version.js';

/** Run the CLI from source, as `node dist/cli.js` would run. */
function cli(args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
const COMMANDS = ['render', 'validate', 'serve', 'controller', 'version', 'help'];

describe('CLI help and versions', () => {
  it('--version prints the package version; version adds the renderer and Node.js', () => {
    const short = cli(['--version']);
    assert.equal(short.code, 0);
    assert.equal(short.stdout, `bootwright ${pkg.version}\n`);
    const long = cli(['version']);
    assert.equal(long.code, 0);
    assert.equal(long.stdout, `bootwright ${pkg.version}\nrenderer: ${RENDERER_VERSION}\nrules: ${RULES_VERSION}\nnode: ${process.version}\n`);
  });

  it('no arguments, --help, -h and help list every command, exit 0', () => {
    for (const args of [[], ['--help'], ['-h'], ['help']]) {
      const r = cli(args);
      assert.equal(r.code, 0, args.join(' '));
      assert.equal(r.stderr, '');
      for (const c of COMMANDS) assert.match(r.stdout, new RegExp(`^  ${c} +\\S`, 'm'), `${args.join(' ')}: ${c}`);
    }
  });

  it("every command's --help, -h and help COMMAND print its own usage and every flag, exit 0", () => {
    const flags: Record<string, string[]> = {
      render: ['--file', '--format', '--ignition-version', '--platform', '--output', '--help'],
      validate: ['--file', '--format', '--help'],
      serve: ['--host', '--port', '--data-dir', '--config', '--detach', '--help'],
      controller: ['--kubeconfig', '--namespace', '--watch-filter', '--bootstrap-token-ttl', '--ignition-version', '--kubeadmconfig-concurrency', '--leader-elect', '--leader-elect-namespace', '--leader-elect-lease-duration', '--leader-elect-renew-deadline', '--leader-elect-retry-period', '--health-addr', '--help'],
      version: ['--help'],
      help: ['--help'],
    };
    for (const c of COMMANDS) {
      const own = cli([c, '--help']);
      assert.equal(own.code, 0, c);
      assert.equal(own.stderr, '');
      assert.match(own.stdout, new RegExp(`^Usage:\\n  bootwright ${c}`, 'm'), c);
      for (const f of flags[c]!) assert.match(own.stdout, new RegExp(`^  (-\\w, |    )${f}\\b`, 'm'), `${c} ${f}`);
      assert.equal(cli([c, '-h']).stdout, own.stdout, c);
      assert.equal(cli(['help', c]).stdout, own.stdout, c);
    }
  });

  it('an unknown flag is named, with a pointer to the command help, exit 2', () => {
    const r = cli(['render', 'examples/worker.yaml', '--fromat', 'ignition']);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr, "error: unknown flag: --fromat\nSee 'bootwright render --help' for usage.\n");
    assert.equal(cli(['serve', '-x']).stderr, "error: unknown flag: -x\nSee 'bootwright serve --help' for usage.\n");
    assert.equal(cli(['--verbose']).stderr, "error: unknown flag: --verbose\nSee 'bootwright --help' for usage.\n");
    const missing = cli(['serve', '--port']);
    assert.equal(missing.code, 2);
    assert.equal(missing.stderr, "error: flag needs a value: --port\nSee 'bootwright serve --help' for usage.\n");
  });

  it('an unknown command is named, with a suggestion, exit 2', () => {
    const r = cli(['rendr']);
    assert.equal(r.code, 2);
    assert.equal(r.stderr, 'error: unknown command "rendr" for "bootwright"\n\nDid you mean this?\n  render\nSee \'bootwright --help\' for usage.\n');
    const help = cli(['help', 'frobnicate']);
    assert.equal(help.code, 2);
    assert.match(help.stderr, /^error: unknown command "frobnicate" for "bootwright"\n/);
  });
});
