import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { cloudConfigInclude, ignitionPointer } from '../../src/boot/pointer.js';
import { bootstrapUrl } from '../../src/boot/sign.js';
import { checkIgnitionV2Rules } from '../../src/provision/ignition/v2/rules.js';
import { IGNITION_SPEC_VERSIONS } from '../../src/provision/ignition/versions.js';
import { decodeDataUrl } from '../../src/provision/ignition/dataurl.js';
import { ensureAutoTls } from '../../src/tls/auto.js';
import { ignitionValidate, ignitionValidateKnows, validateIgnitionSchema } from '../support/validators.js';
import { runPython, skipWithoutCloudInit } from './cloudinit.js';

const KEY = Buffer.alloc(32, 9);
const NOW = 1_700_000_000;
const FULL = '{"ignition":{"version":"3.3.0"},"storage":{"files":[]}}\n';
const SHA512 = createHash('sha512').update(FULL).digest('hex');

describe('ignitionPointer', () => {
  const url = bootstrapUrl('ignition', 'http://10.0.0.1:8080', 'node-1', KEY, 3600, NOW);

  it('replaces itself with the signed URL, verified by the SHA-512 of the full config', () => {
    const p = ignitionPointer(url, SHA512.toUpperCase(), '3.0.0');
    assert.deepEqual(p.config, {
      ignition: { version: '3.0.0', config: { replace: { source: url, verification: { hash: `sha512-${SHA512}` } } } },
    });
    assert.equal(p.version, '3.0.0');
    assert.equal(p.body, `${JSON.stringify(p.config)}\n`);
    assert.ok(Buffer.byteLength(p.body) < 16 * 1024);
  });

  it('is valid for every 3.x spec: JSON schema, and ignition-validate where it knows the spec', async () => {
    for (const version of IGNITION_SPEC_VERSIONS) {
      const p = ignitionPointer(url, SHA512, version);
      assert.deepEqual(validateIgnitionSchema(p.body, version), [], version);
      if (ignitionValidateKnows(version)) assert.deepEqual(await ignitionValidate(p.body), [], version);
    }
  });

  it('is valid for the legacy spec 2.3.0 (same ignition.config.replace shape)', () => {
    const p = ignitionPointer(url, SHA512, '2.3.0');
    assert.equal(p.version, '2.3.0');
    assert.deepEqual(validateIgnitionSchema(p.body, '2.3.0'), []);
    assert.deepEqual(checkIgnitionV2Rules(p.config), []);
  });

  it('refuses other versions, bad hashes and non-http URLs', () => {
    assert.throws(() => ignitionPointer(url, SHA512, '2.2.0'), TypeError);
    assert.throws(() => ignitionPointer(url, SHA512, '2.4.0'), TypeError);
    assert.throws(() => ignitionPointer(url, SHA512, '3.7.0'), TypeError);
    assert.throws(() => ignitionPointer(url, SHA512.slice(1), '3.0.0'), TypeError);
    assert.throws(() => ignitionPointer(url, 'g'.repeat(128), '3.0.0'), TypeError);
    assert.throws(() => ignitionPointer('/ignition?machine=n', SHA512, '3.0.0'), TypeError);
    assert.throws(() => ignitionPointer('s3://bucket/key', SHA512, '3.0.0'), TypeError);
  });
});

describe('cloudConfigInclude', () => {
  // The full user data of a cloud-init machine: its signed NoCloud seed plus the file name.
  const url = `${bootstrapUrl('cloud-config', 'http://10.0.0.1:8080', 'node-1', KEY, 3600, NOW)}user-data`;

  it('is an #include-once of the URL by default, #include on request', () => {
    assert.equal(cloudConfigInclude(url), `#include-once\n${url}\n`);
    assert.equal(cloudConfigInclude(url, { once: false }), `#include\n${url}\n`);
    assert.throws(() => cloudConfigInclude('http://h/a b'), TypeError);
    assert.throws(() => cloudConfigInclude('file:///etc/passwd'), TypeError);
  });
});

const PY_INCLUDE = `
import json, sys, tempfile
import cloudinit.url_helper as url_helper
url_helper.time.sleep = lambda seconds: None  # no pauses between cloud-init's retries
from cloudinit import handlers, helpers, user_data
inp = json.load(sys.stdin)
d = tempfile.mkdtemp()
paths = helpers.Paths({'cloud_dir': d, 'run_dir': d + '/run'})
def configs(doc):
    msg = user_data.UserDataProcessor(paths).process(doc)
    return [p.get_payload(decode=True).decode() for p in msg.walk() if p.get_content_type() == 'text/cloud-config']
def attempt(doc):
    try:
        return configs(doc)
    except Exception as e:
        return 'error'
out = {
    'types': [handlers.type_from_starts_with(inp['once']), handlers.type_from_starts_with(inp['plain'])],
    'once': [attempt(inp['once']), attempt(inp['once'])],
    'plain': [attempt(inp['plain']), attempt(inp['plain'])],
}
print(json.dumps(out))
`;

describe('#include-once through cloud-init itself', { skip: skipWithoutCloudInit() }, () => {
  const CONFIG = '#cloud-config\nhostname: from-include\n';
  const fetches = new Map<string, number>();
  // Serves each URL once, then 403 (an expired URL, or maxFetches used up).
  const server = http.createServer((req, res) => {
    const n = (fetches.get(req.url ?? '') ?? 0) + 1;
    fetches.set(req.url ?? '', n);
    if (n === 1) res.writeHead(200).end(CONFIG);
    else res.writeHead(403).end();
  });
  let base = '';
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('fetches once and reuses the copy on the next boot, where #include fails', async () => {
    const once = cloudConfigInclude(`${bootstrapUrl('cloud-config', base, 'node-1', KEY)}user-data`);
    const plain = cloudConfigInclude(`${bootstrapUrl('cloud-config', base, 'node-2', KEY)}user-data`, { once: false });
    const out = await runPython<{ types: string[]; once: unknown[]; plain: unknown[] }>(PY_INCLUDE, { once, plain });
    assert.deepEqual(out.types, ['text/x-include-once-url', 'text/x-include-url']);
    assert.deepEqual(out.once, [[CONFIG], [CONFIG]]);
    assert.deepEqual(out.plain, [[CONFIG], 'error']);
  });
});

describe('ignitionPointer pinning the HTTPS CA (issue 16)', () => {
  const httpsUrl = bootstrapUrl('ignition', 'https://10.0.2.100:8443', 'node-1', KEY, 3600, NOW);
  let caPem = '';
  before(async () => {
    caPem = (await ensureAutoTls(mkdtempSync(join(tmpdir(), 'bw-pointer-ca-')), ['10.0.2.100'])).caPem;
  });

  it('carries the CA inline in ignition.security.tls.certificateAuthorities, next to verification.hash', () => {
    const p = ignitionPointer(httpsUrl, SHA512, '3.3.0', caPem);
    const cas = (p.config as { ignition: { security: { tls: { certificateAuthorities: { source: string }[] } } } }).ignition.security.tls.certificateAuthorities;
    assert.equal(cas.length, 1);
    assert.ok(cas[0]!.source.startsWith('data:;base64,'));
    assert.equal(Buffer.from(decodeDataUrl(cas[0]!.source)!).toString('utf8'), caPem);
    assert.equal((p.config as { ignition: { config: { replace: { verification: { hash: string } } } } }).ignition.config.replace.verification.hash, `sha512-${SHA512}`);
    assert.throws(() => ignitionPointer(httpsUrl, SHA512, '3.3.0', 'not a certificate'), TypeError);
  });

  it('is valid for every 3.x spec and 2.3.0: JSON schemas, ignition-validate where it knows the spec', async () => {
    for (const version of IGNITION_SPEC_VERSIONS) {
      const p = ignitionPointer(httpsUrl, SHA512, version, caPem);
      assert.deepEqual(validateIgnitionSchema(p.body, version), [], version);
      if (ignitionValidateKnows(version)) assert.deepEqual(await ignitionValidate(p.body), [], version);
    }
    const legacy = ignitionPointer(httpsUrl, SHA512, '2.3.0', caPem);
    assert.deepEqual(validateIgnitionSchema(legacy.body, '2.3.0'), []);
    assert.deepEqual(checkIgnitionV2Rules(legacy.config), []);
  });
});
