/**
 * Platform user data budgets: a cloud-config over the limit is delivered gzip-compressed
 * whole (and decompresses to the exact document); one that cannot fit, or an Ignition
 * config over the limit, is a 422 at the field that named the platform, suggesting the
 * pointer config.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { gunzipSync } from 'node:zlib';
import { describe, it } from 'node:test';
import { fitUserData, USER_DATA_LIMITS } from '../src/platform.js';
import { renderNodeBootstrap } from '../src/render.js';
import { validateNodeBootstrap } from '../src/request/parse.js';
import { worker } from './support/requests.js';
import { cloudInitSchema } from './support/validators.js';
import { problemsOf } from './support/errors.js';

/** A worker with `bytes` of compressible text in a file. */
const big = (bytes: number, spec: Record<string, unknown> = {}) =>
  worker({ provisioning: { files: [{ path: '/etc/motd', content: 'kubernetes node, managed by bootwright\n'.repeat(Math.ceil(bytes / 39)) }] }, ...spec });
/** A worker with `bytes` of incompressible (random base64) text in a file. */
const random = (bytes: number) => worker({ provisioning: { files: [{ path: '/etc/noise', content: randomBytes(bytes).toString('base64') }] } });

describe('platform user data budgets', () => {
  it('limits are the platforms\' own, in bytes', () => {
    assert.deepEqual(Object.fromEntries(Object.entries(USER_DATA_LIMITS).map(([k, v]) => [k, v.bytes])), { aws: 16384, azure: 65535, gcp: 262144, openstack: 49149, vsphere: 65536 });
  });

  it('leaves a payload within the limit alone, to the byte', () => {
    const req = validateNodeBootstrap(big(10_000));
    const plain = renderNodeBootstrap(req);
    const aws = renderNodeBootstrap(req, { platform: 'aws' });
    assert.ok(plain.size > 10_000 && plain.size <= 16384);
    assert.deepEqual({ ...aws }, { ...plain });
  });

  it('gzips a cloud-config over the limit whole, deterministically, with a warning; it decompresses to the document', async () => {
    const req = validateNodeBootstrap(big(40_000));
    const plain = renderNodeBootstrap(req);
    const out = renderNodeBootstrap(req, { platform: 'aws' });
    assert.ok(plain.size > 16384);
    assert.equal(out.mediaType, 'application/gzip');
    assert.deepEqual([...out.gzip!.subarray(0, 2)], [0x1f, 0x8b], 'the gzip magic cloud-init looks for');
    assert.equal(gunzipSync(out.gzip!).toString('utf8'), plain.body);
    assert.equal(out.size, out.gzip!.length);
    assert.ok(out.size <= 16384);
    assert.deepEqual(Buffer.from(renderNodeBootstrap(req, { platform: 'aws' }).gzip!), Buffer.from(out.gzip!), 'same bytes every time');
    assert.match(out.warnings.at(-1)!, /^the cloud-config is \d+ bytes, over the 16384-byte user data limit of aws \(Amazon EC2\): delivered gzip-compressed whole \(\d+ bytes\)/);
    // Azure's 64 KiB holds it uncompressed.
    assert.equal(renderNodeBootstrap(req, { platform: 'azure' }).gzip, undefined);
    assert.deepEqual(await cloudInitSchema(plain.body), []);
  });

  it('refuses a cloud-config that does not fit even compressed, suggesting the pointer config', () => {
    const req = validateNodeBootstrap(random(20_000));
    const [p] = problemsOf(() => renderNodeBootstrap(req, { platform: 'aws', platformField: 'platform' }));
    assert.equal(p!.path, 'platform');
    assert.match(p!.message, /^the cloud-config is \d+ bytes \(\d+ gzip-compressed\), over the 16384-byte user data limit of aws \(Amazon EC2\) even compressed: give the machine a pointer config instead \(GET \/v1\/machines\/\{name\}\/bootstrap\?pointer=true/);
  });

  it('refuses an Ignition config over the limit (no compressed user data there), naming spec.output.platform when that set it', () => {
    const req = validateNodeBootstrap(big(40_000, { output: { platform: 'aws' } }));
    const [p] = problemsOf(() => renderNodeBootstrap(req, { format: 'ignition', ignitionVersion: '3.0.0' }));
    assert.equal(p!.path, 'spec.output.platform');
    assert.match(p!.message, /^the Ignition config is \d+ bytes, over the 16384-byte user data limit of aws \(Amazon EC2\), and Ignition reads no compressed user data: give the machine a pointer config/);
    // The profile/request field applies to cloud-config too, and null turns it off.
    assert.ok(renderNodeBootstrap(req).gzip);
    assert.equal(renderNodeBootstrap(req, { format: 'ignition', platform: null }).gzip, undefined);
    // Incompressible contents do not fit even at 3.1.0.
    const noise = validateNodeBootstrap({ ...random(20_000), spec: { ...(random(20_000).spec as object), output: { platform: 'aws' } } });
    assert.equal(problemsOf(() => renderNodeBootstrap(noise, { format: 'ignition' }))[0]!.path, 'spec.output.platform');
  });

  it('with no spec asked, raises an Ignition config over the limit to 3.1.0, whose data: URLs may be gzipped, before refusing', () => {
    const req = validateNodeBootstrap(big(25_000));
    assert.equal(renderNodeBootstrap(req, { format: 'ignition' }).ignitionVersion, '3.0.0');
    const out = renderNodeBootstrap(req, { format: 'ignition', platform: 'aws' });
    assert.equal(out.ignitionVersion, '3.1.0');
    assert.ok(out.size <= 16384, String(out.size));
    // An asked-for spec is kept, and refused when it cannot fit.
    assert.equal(problemsOf(() => renderNodeBootstrap(req, { format: 'ignition', ignitionVersion: '3.0.0', platform: 'aws' }))[0]!.path, 'platform');
  });

  it('fitUserData measures UTF-8 bytes, not characters', () => {
    const text = 'é'.repeat(9000); // 18,000 bytes
    assert.ok(fitUserData('cloud-config', text, 'aws', 'platform').gzip);
    assert.deepEqual(fitUserData('cloud-config', text, 'azure', 'platform'), { warnings: [] });
  });

  it('the CLI takes --platform and writes the gzip bytes; a bad platform names the flag', () => {
    const cli = ['--import', 'tsx', new URL('../src/cli.ts', import.meta.url).pathname, 'render', '-f', '-'];
    const input = JSON.stringify(big(40_000));
    const res = spawnSync(process.execPath, [...cli, '--platform', 'aws'], { input });
    assert.equal(res.status, 0, res.stderr.toString());
    assert.equal(gunzipSync(res.stdout).toString('utf8'), renderNodeBootstrap(validateNodeBootstrap(big(40_000))).body);
    assert.match(res.stderr.toString(), /^warning: the cloud-config is \d+ bytes, over the 16384-byte/m);
    const bad = spawnSync(process.execPath, [...cli, '--platform', 'ec2'], { input, encoding: 'utf8' });
    assert.equal(bad.status, 2);
    assert.equal(bad.stderr, '--platform: must be one of aws, azure, gcp, openstack, vsphere\n');
  });
});
