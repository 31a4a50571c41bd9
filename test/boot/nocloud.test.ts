import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { load, YAML11_SCHEMA } from 'js-yaml';
import { provisioningArgs } from '../../src/boot/ipxe.js';
import { metaData, networkConfig, vendorData } from '../../src/boot/nocloud.js';
import { bootstrapUrl, nocloudPrefix, signedUrl, verifySignature, type Verdict } from '../../src/boot/sign.js';
import { runPython, skipWithoutCloudInit } from './cloudinit.js';

describe('metaData', () => {
  it('carries instance-id and local-hostname as YAML', () => {
    assert.equal(metaData('node-1', 'node-1.example.com'), 'instance-id: node-1\nlocal-hostname: node-1.example.com\n');
    assert.deepEqual(load(metaData('node-1', 'node-1'), { schema: YAML11_SCHEMA }), { 'instance-id': 'node-1', 'local-hostname': 'node-1' });
  });

  it('quotes values YAML 1.1 would read as something else, and omits a missing host name', () => {
    assert.deepEqual(load(metaData('0644', 'yes'), { schema: YAML11_SCHEMA }), { 'instance-id': '0644', 'local-hostname': 'yes' });
    assert.equal(metaData('node-1'), 'instance-id: node-1\n');
    assert.throws(() => metaData(' '), TypeError);
  });
});

describe('vendorData and networkConfig', () => {
  it('are empty: no vendor data, no network configuration', () => {
    assert.equal(vendorData(), '');
    assert.equal(networkConfig(undefined), '');
  });
});

const KEY = Buffer.alloc(32, 3);
const USER_DATA = '#cloud-config\nruncmd:\n  - [echo, hello]\n';

/** A stand-in for the future /nocloud route: verify the signed prefix, serve the four files. */
function nocloudServer(seen: { path: string; verdict: Verdict | 'not found' }[]): http.Server {
  return http.createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const m = /^\/nocloud\/([a-z0-9-]+)\/([^/]*)\/([^/]*)\/([a-z-]+)$/.exec(path);
    if (!m) {
      seen.push({ path, verdict: 'not found' });
      res.writeHead(404).end();
      return;
    }
    const [, id, exp, sig, file] = m as unknown as [string, string, string, string, string];
    const verdict = verifySignature(KEY, id, nocloudPrefix(id), exp, sig, Date.now() / 1000);
    seen.push({ path, verdict });
    if (verdict !== 'ok') {
      res.writeHead(403).end();
      return;
    }
    const body = { 'meta-data': metaData(id, id), 'user-data': USER_DATA, 'vendor-data': vendorData(), 'network-config': networkConfig(undefined) }[file];
    if (body === undefined) res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': 'text/plain' }).end(body);
  });
}

const PY_NOCLOUD = `
import json, sys
from cloudinit import util
from cloudinit.sources import DataSourceNoCloud as nocloud
inp = json.load(sys.stdin)
def text(b):
    return b.decode() if isinstance(b, bytes) else b
res = util.read_seeded(inp['seed'], timeout=5, retries=0)
out = {'md': res[0], 'ud': text(res[1]), 'vd': text(res[2])}
try:
    util.read_seeded(inp['forged'], timeout=5, retries=0)
    out['forged'] = 'read'
except Exception as e:
    out['forged'] = type(e).__name__
out['cmdline'] = []
for cmdline in inp['cmdlines']:
    fill = {}
    found = nocloud.load_cmdline_data(fill, cmdline)
    out['cmdline'].append({'found': found, 'fill': fill})
out['empty_network_config'] = util.load_yaml(b'')
from cloudinit import version
out['version'] = version.version_string()
print(json.dumps(out))
`;

describe('NoCloud seed through cloud-init itself', { skip: skipWithoutCloudInit() }, () => {
  const seen: { path: string; verdict: Verdict | 'not found' }[] = [];
  const server = nocloudServer(seen);
  let base = '';
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('fetches every file through the one signed prefix, reads the kernel argument back, refuses a forged prefix', async () => {
    const seed = bootstrapUrl('cloud-config', base, 'node-1', KEY);
    // node-2's signature on node-1's directory.
    const other = new URL(signedUrl(base, nocloudPrefix('node-2'), 'node-2', KEY)).pathname.split('/');
    const forged = `${base}/nocloud/node-1/${other[3]!}/${other[4]!}/`;
    const cmdlines = [`BOOT_IMAGE=/vmlinuz console=ttyS0 ${provisioningArgs('cloud-config', seed).join(' ')} quiet`, `ro ${provisioningArgs('cloud-config', seed, { nocloudDatasource: 'nocloud' }).join(' ')}`];

    const out = await runPython<{
      md: Record<string, unknown>;
      ud: string;
      vd: string;
      forged: string;
      cmdline: { found: boolean; fill: Record<string, string> }[];
      empty_network_config: unknown;
      version: string;
    }>(PY_NOCLOUD, { seed, forged, cmdlines });

    assert.deepEqual(out.md, { 'instance-id': 'node-1', 'local-hostname': 'node-1' });
    assert.equal(out.ud, USER_DATA);
    assert.equal(out.vd, '');
    assert.equal(out.forged, 'UrlError');
    // cloud-init appended the file names to the seed: every request verified.
    const prefix = new URL(seed).pathname;
    const genuine = seen.filter((s) => s.path.startsWith(prefix));
    assert.ok(genuine.length >= 3, JSON.stringify(seen));
    assert.deepEqual(
      genuine.map((s) => s.path.slice(prefix.length)).filter((f) => f !== 'network-config'),
      ['meta-data', 'user-data', 'vendor-data'],
    );
    assert.ok(genuine.every((s) => s.verdict === 'ok'), JSON.stringify(genuine));
    assert.ok(seen.filter((s) => !s.path.startsWith(prefix)).every((s) => s.verdict === 'invalid'));
    // The kernel argument parses back to the same seed, in both spellings.
    assert.equal(out.cmdline[0]!.found, true);
    assert.equal(out.cmdline[0]!.fill.seedfrom, seed);
    assert.equal(out.cmdline[1]!.found, true);
    assert.equal(out.cmdline[1]!.fill.seedfrom, seed);
    assert.equal(out.cmdline[0]!.fill.dsmode, 'net');
    // Why the default is nocloud-net: before cloud-init 24.1, ds=nocloud leaves an http
    // seed in local mode, and the network stage then exits without applying user data.
    const [major = 0, minor = 0] = out.version.split('.').map(Number);
    assert.equal(out.cmdline[1]!.fill.dsmode, major > 24 || (major === 24 && minor >= 1) ? 'net' : 'local', `cloud-init ${out.version}`);
    // An empty network-config is no network configuration at all.
    assert.equal(out.empty_network_config, null);
  });
});
