import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { dump } from 'js-yaml';
import { worker } from './support/requests.js';

/** Run the CLI from source, as `node dist/cli.js` would run. */
function cli(args: string[], input?: string) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { encoding: 'utf8', input });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const dir = mkdtempSync(join(tmpdir(), 'bootwright-cli-'));

describe('CLI', () => {
  it('render prints Ignition for the example worker, at the requested spec', () => {
    const r = cli(['render', '-f', 'examples/worker.yaml', '--format', 'ignition', '--ignition-version', '3.4.0']);
    assert.equal(r.code, 0, r.stderr);
    const config = JSON.parse(r.stdout) as { ignition: { version: string }; systemd: { units: { name: string }[] } };
    assert.equal(config.ignition.version, '3.4.0');
    assert.ok(config.systemd.units.some((u) => u.name === 'kubeadm-bootstrap.service'));
  });

  it('render --ignition-version 2.3.0 prints an Ignition spec 2.3.0 config (older Flatcar)', () => {
    const r = cli(['render', '-f', 'examples/worker.yaml', '--format', 'ignition', '--ignition-version', '2.3.0']);
    assert.equal(r.code, 0, r.stderr);
    const config = JSON.parse(r.stdout) as { ignition: { version: string }; storage: { files: { filesystem: string }[] }; systemd: { units: { name: string }[] } };
    assert.equal(config.ignition.version, '2.3.0');
    assert.ok(config.storage.files.every((f) => f.filesystem === 'root'));
    assert.ok(config.systemd.units.some((u) => u.name === 'kubeadm-bootstrap.service'));
    const short = cli(['render', '-f', 'examples/worker.yaml', '--format', 'ignition', '--ignition-version', '2.3']);
    assert.equal(short.stdout, r.stdout);
  });

  it('render writes -o atomically; reads JSON from stdin', () => {
    const out = join(dir, 'user-data');
    const r = cli(['render', '-f', '-', '-o', out], JSON.stringify(worker()));
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, '');
    assert.ok(readFileSync(out, 'utf8').startsWith('#cloud-config\n'));
  });

  it('bad input: exit 2, one line per problem naming the field, nothing written', () => {
    const file = join(dir, 'bad.yaml');
    const bad = worker({ provisioning: { files: [{ path: 'relative' }] } });
    (bad.spec as { cluster: Record<string, unknown> }).cluster.bootstrapToken = 'SECRET-not-a-token';
    writeFileSync(file, dump(bad));
    const out = join(dir, 'never-written');
    const r = cli(['render', '-f', file, '-o', out]);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, '');
    assert.deepEqual(r.stderr.trimEnd().split('\n'), [
      'spec.cluster.bootstrapToken: must match [a-z0-9]{6}.[a-z0-9]{16}',
      'spec.provisioning.files[0].path: must be absolute (start with /)',
    ]);
    assert.ok(!existsSync(out));
    assert.ok(!r.stderr.includes('SECRET'));
  });

  it('an unsupported --ignition-version and an unknown --format are field errors', () => {
    const v = cli(['render', '-f', 'examples/worker.yaml', '--format', 'ignition', '--ignition-version', '1.0.0']);
    assert.equal(v.code, 2);
    assert.equal(v.stderr, '--ignition-version: Ignition spec 1.0.0 is not supported; bootwright emits 2.3.0 and 3.0.0 to 3.6.0\n');
    const f = cli(['render', '-f', 'examples/worker.yaml', '--format', 'xml']);
    assert.equal(f.code, 2);
    assert.equal(f.stderr, '--format: must be one of cloud-config, ignition\n');
  });

  it('validate checks that the request renders, in its format or --format', () => {
    const ok = cli(['validate', '-f', 'examples/init.yaml']);
    assert.equal(ok.code, 0);
    assert.equal(ok.stdout, '');
    assert.equal(ok.stderr, 'examples/init.yaml: valid (cloud-config)\n');
    const ign = cli(['validate', '-f', 'examples/worker.yaml', '--format', 'ignition']);
    assert.equal(ign.stderr, 'examples/worker.yaml: valid (ignition 3.0.0)\n');
    // Schema-valid, but Ignition cannot express an MBR table: render refuses it, so validate does.
    const mbr = join(dir, 'mbr.yaml');
    writeFileSync(mbr, dump(worker({ provisioning: { diskSetup: { partitions: [{ device: '/dev/sdb', layout: true, tableType: 'mbr' }] } }, output: { format: 'ignition' } })));
    const refused = cli(['validate', '-f', mbr]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /^spec\.provisioning\.diskSetup\.partitions\[0\]\.tableType: /);
    const missing = cli(['validate', '-f', join(dir, 'nope.yaml')]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^error: cannot read .*nope\.yaml: ENOENT\nSee 'bootwright validate --help' for usage\.\n$/);
  });

  it('render and validate take FILE as an argument as well as with -f, not both', () => {
    const byFlag = cli(['render', '-f', 'examples/worker.yaml', '--format', 'ignition']);
    const byArg = cli(['render', 'examples/worker.yaml', '--format', 'ignition']);
    assert.equal(byArg.code, 0, byArg.stderr);
    assert.equal(byArg.stdout, byFlag.stdout);
    assert.equal(cli(['validate', 'examples/init.yaml']).stderr, 'examples/init.yaml: valid (cloud-config)\n');
    const both = cli(['render', 'examples/worker.yaml', '-f', 'examples/init.yaml']);
    assert.equal(both.code, 2);
    assert.equal(both.stderr, "error: give FILE either as an argument or with -f, not both\nSee 'bootwright render --help' for usage.\n");
    const none = cli(['render']);
    assert.equal(none.code, 2);
    assert.equal(none.stderr, "error: a request FILE is required\nSee 'bootwright render --help' for usage.\n");
    const extra = cli(['render', 'examples/worker.yaml', 'examples/init.yaml']);
    assert.equal(extra.code, 2);
    assert.equal(extra.stderr, "error: unexpected argument: examples/init.yaml\nSee 'bootwright render --help' for usage.\n");
  });
});
