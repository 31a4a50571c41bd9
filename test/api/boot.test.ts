/**
 * The firmware-facing routes (issue 4) over real HTTP on a SQLite file store:
 * /boot.ipxe and /ipxe scripts (every URL parses), the MAC spelling matrix, selector
 * precedence and ties, unknown machines under /v1/discovered, signed URLs (expiry,
 * tampering, cross-machine reuse), the audit log, maxFetches and its reset, NoCloud seed
 * files through one signed prefix, and pointer configs whose hash matches what /ignition
 * serves.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import request from 'supertest';
import { IGNITION_PATH, loadOrCreateKey, signedUrl } from '../../src/boot/sign.js';
import { openSqliteStore, SQLITE_FILE, type SqliteStore } from '../../src/store/sqlite.js';
import { example } from '../support/requests.js';
import { ADMIN, READER, RENDERER, testService, type TestService, WRITER } from '../support/server.js';
import { haveIgnitionValidate, ignitionValidate, validateIgnitionSchema } from '../support/validators.js';

const API = 'bootwright.dev/v1alpha1';
const IGN = 'application/vnd.coreos.ignition+json';

const dir = mkdtempSync(join(tmpdir(), 'bootwright-boot-'));
let store: SqliteStore;
let svc: TestService;

const CLUSTER = (example('init').spec as { cluster: Record<string, unknown> }).cluster;
const BOOT = { kernel: 'http://images.example.com/vmlinuz', initrd: ['http://images.example.com/initrd.img'], args: ['console=ttyS0'] };

const http = () => request(svc.app.server);
const create = async (kind: string, collection: string, name: string, spec: unknown) => {
  const res = await http()
    .post(`/v1/${collection}`)
    .set('authorization', `Bearer ${ADMIN}`)
    .set('content-type', 'application/json')
    .send(JSON.stringify({ apiVersion: API, kind, metadata: { name }, spec }));
  assert.equal(res.status, 201, res.text);
};
const machine = (name: string, selectors: Record<string, unknown>, profile = 'ign', extra: Record<string, unknown> = {}) =>
  create('Machine', 'machines', name, { selectors, cluster: 'prod', profile, ...extra });

/** GET a path (or the path and query of an absolute URL) without a token. */
/** GET a URL the service handed out, with its Host, as a real client sends it (supertest listens on a new port per request). */
const fetchPath = (url: string, headers: Record<string, string> = {}) => {
  const u = new URL(url, 'http://x');
  const r = http().get(`${u.pathname}${u.search}`);
  if (u.host !== 'x') r.set('host', u.host);
  for (const [k, v] of Object.entries(headers)) r.set(k, v);
  return r;
};
const ipxe = async (query: string) => {
  const res = await http().get(`/ipxe?${query}`);
  assert.equal(res.status, 200, res.text);
  assert.match(res.headers['content-type'] ?? '', /^text\/plain; charset=utf-8/);
  return res.text;
};
/** Every http(s) URL in a script parses. */
const assertUrlsParse = (script: string) => {
  const urls = script.match(/https?:\/\/\S+/g) ?? [];
  assert.ok(urls.length > 0, script);
  for (const u of urls) assert.doesNotThrow(() => new URL(u), u);
};
const ignitionUrl = (script: string) => /ignition\.config\.url=(\S+)/.exec(script)?.[1];
const nocloudSeed = (script: string) => /ds=nocloud(?:-net)?;s=(\S+)/.exec(script)?.[1];
/** Which machine a boot script is for (from its signed URL). */
const scriptMachine = (script: string) => {
  const ign = ignitionUrl(script);
  if (ign) return new URL(ign).searchParams.get('machine');
  const seed = nocloudSeed(script);
  return seed ? new URL(seed).pathname.split('/')[2] : undefined;
};
const hex = (s: string) => Buffer.from(s, 'utf8').toString('hex');
const auditRows = async (name: string) => {
  const res = await http().get(`/v1/machines/${name}/audit`).set('authorization', `Bearer ${READER}`);
  assert.equal(res.status, 200, res.text);
  return res.body.items as { route: string; status: number; client: string; machine: string; at: string }[];
};

before(async () => {
  store = await openSqliteStore(join(dir, SQLITE_FILE));
  // Every refusal audited: identical refusals are not sampled here (test/hostile/store-bounds.test.ts tests sampling).
  // These tests fetch one signed URL several times (negotiation, maxFetches): first fetch
  // wins, on by default, is turned off here and tested in test/api/binding.test.ts.
  svc = await testService({ dataDir: dir, refusedAuditIntervalSeconds: 0, firstFetchWins: false }, { store });
  await create('Cluster', 'clusters', 'prod', { ...CLUSTER, name: 'prod' });
  const profile = { role: 'worker', kubernetesVersion: 'v1.33.2' };
  await create('Profile', 'profiles', 'ign', { ...profile, output: { format: 'ignition' }, boot: BOOT });
  await create('Profile', 'profiles', 'cc', { ...profile, boot: BOOT });
  await create('Profile', 'profiles', 'noboot', profile);
  await machine('m1', { mac: ['52:54:00:ab:cd:01'], uuid: '0E5A3C2B-1111-4222-8333-944455556601' });
  await machine('m2', { mac: ['52:54:00:ab:cd:02'] }, 'cc');
  await machine('m3', { mac: ['52:54:00:ab:cd:03'] });
  await machine('pa', { mac: ['52:54:00:ab:cd:10'] });
  // Hardware selectors (MAC, UUID, serial) are unique across machines; host names are not.
  await machine('pb', { uuid: '0e5a3c2b-1111-4222-8333-944455556610', hostname: 'pb.example.com' });
  await machine('tb', { hostname: 'SN 42/A&B' });
  await machine('ta', { hostname: 'SN 42/A&B' });
  await machine('nb', { mac: ['52:54:00:ab:cd:20'] }, 'noboot');
  await machine('lim', { mac: ['52:54:00:ab:cd:30'] }, 'ign', { maxFetches: 2 });
});
after(async () => {
  await svc.app.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('boot scripts', () => {
  it('a Host that is no host name or address is a 400 naming headers.host, for every format (never a 500)', async () => {
    // m1 boots Ignition, m2 cloud-config (whose NoCloud seed a ";" would split).
    for (const mac of ['52-54-00-ab-cd-01', '52-54-00-ab-cd-02']) {
      for (const host of ['a;b', 'a b', 'a"b', "a'b", 'exa_mple.com', 'a..b', '-a.example', `${'a'.repeat(64)}.example`, 'a:99999', '[zz::1]', 'host:8080:1']) {
        const res = await http().get(`/ipxe?mac=${mac}`).set('host', host);
        assert.equal(res.status, 400, `${host}: ${res.status} ${res.text}`);
        assert.match(res.headers['content-type'] ?? '', /^application\/problem\+json/);
        assert.deepEqual((JSON.parse(res.text) as { errors: { path: string }[] }).errors.map((e) => e.path), ['headers.host'], host);
      }
      for (const host of ['bootwright.example.com:8080', '192.0.2.5', '[2001:db8::5]:8080', 'pxe']) {
        const res = await http().get(`/ipxe?mac=${mac}`).set('host', host);
        assert.equal(res.status, 200, `${host}: ${res.text}`);
        assertUrlsParse(res.text);
      }
    }
  });

  it('/boot.ipxe is a #!ipxe script whose URLs parse, chaining /ipxe, with no token', async () => {
    const res = await http().get('/boot.ipxe');
    assert.equal(res.status, 200, res.text);
    assert.match(res.headers['content-type'] ?? '', /^text\/plain; charset=utf-8/);
    assert.ok(res.text.startsWith('#!ipxe\n'), res.text);
    assert.match(res.text, /\/ipxe\?/);
    assertUrlsParse(res.text);
  });

  it('every MAC spelling reaches the same machine; its script carries a signed Ignition URL', async () => {
    for (const mac of ['52:54:00:ab:cd:01', '52-54-00-ab-cd-01', '5254.00ab.cd01', '525400abcd01', '52:54:00:AB:CD:01', '52-54-00-AB-CD-01']) {
      const script = await ipxe(`mac=${encodeURIComponent(mac)}`);
      assert.ok(script.startsWith('#!ipxe\n'), script);
      assert.equal(scriptMachine(script), 'm1', `${mac}: ${script}`);
      assert.match(script, /^kernel http:\/\/images\.example\.com\/vmlinuz /m);
      assertUrlsParse(script);
    }
    // UUIDs any case.
    assert.equal(scriptMachine(await ipxe('uuid=0e5a3c2b-1111-4222-8333-944455556601')), 'm1');
  });

  it('most selectors matched wins; a tie goes to the more specific machine, then the lower name', async () => {
    assert.equal(scriptMachine(await ipxe(`mac=52-54-00-ab-cd-10&uuid=0e5a3c2b-1111-4222-8333-944455556610&hostname_hex=${hex('pb.example.com')}`)), 'pb');
    // pa and pb match one selector each: pb defines more.
    assert.equal(scriptMachine(await ipxe('mac=52-54-00-ab-cd-10&uuid=0e5a3c2b-1111-4222-8333-944455556610')), 'pb');
    assert.equal(scriptMachine(await ipxe('mac=52-54-00-ab-cd-10')), 'pa');
    // ta and tb define the same host name only; ${hostname:hex} survives the & in it.
    assert.equal(scriptMachine(await ipxe(`hostname_hex=${hex('SN 42/A&B')}`)), 'ta');
  });

  it('a configured default machine answers for an identity nothing else matches', async () => {
    const withDefault = await testService({ dataDir: dir, defaultMachine: 'pb' }, { store });
    try {
      const res = await request(withDefault.app.server).get('/ipxe?mac=52-54-00-ee-ee-01');
      assert.equal(res.status, 200);
      assert.equal(scriptMachine(res.text), 'pb');
      // a registered machine still wins over the default
      const own = await request(withDefault.app.server).get(`/ipxe?hostname_hex=${hex('SN 42/A&B')}`);
      assert.equal(scriptMachine(own.text), 'ta');
    } finally {
      await withDefault.app.close();
    }
  });

  it('a profile without boot section gets a script saying so, which retries', async () => {
    const script = await ipxe('mac=52-54-00-ab-cd-20');
    assert.ok(script.startsWith('#!ipxe\n'));
    assert.match(script, /no boot section in profile noboot/);
    assert.match(script, /chain .*\/boot\.ipxe/);
    assertUrlsParse(script);
  });

  it('an unknown machine gets a retry script and appears under /v1/discovered with first and last seen', async () => {
    const script = await ipxe('mac=52-54-00-FF-FF-01&uuid=0E5A3C2B-1111-4222-8333-9444555566FF');
    assert.ok(script.startsWith('#!ipxe\n'));
    assert.match(script, /no registered machine matches/);
    assertUrlsParse(script);
    await ipxe('mac=52-54-00-FF-FF-01&uuid=0E5A3C2B-1111-4222-8333-9444555566FF');
    assert.equal((await http().get('/v1/discovered')).status, 401);
    const res = await http().get('/v1/discovered?limit=10').set('authorization', `Bearer ${READER}`);
    assert.equal(res.status, 200, res.text);
    const row = (res.body.items as Record<string, unknown>[]).find((r) => r.mac === '52:54:00:ff:ff:01');
    assert.ok(row, res.text);
    assert.equal(row.uuid, '0e5a3c2b-1111-4222-8333-9444555566ff');
    assert.equal(row.count, 2);
    assert.ok(typeof row.firstSeen === 'string' && typeof row.lastSeen === 'string' && row.firstSeen <= row.lastSeen, res.text);
  });
});

describe('signed URLs', () => {
  it('/ignition serves the config at the version Ignition asks for; expired, tampered and cross-machine signatures are 403, all audited', async () => {
    const url = ignitionUrl(await ipxe('mac=52:54:00:ab:cd:01'))!;
    assert.ok(url, 'script has an Ignition URL');
    const ok = await fetchPath(url, { accept: `${IGN};version=3.4.0, */*;q=0.1`, 'accept-encoding': 'gzip' });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.headers['content-type'], `${IGN}; version=3.4.0`);
    assert.equal(ok.headers['content-encoding'], undefined);
    assert.equal(JSON.parse(ok.text).ignition.version, '3.4.0');
    // Ignition v0.x (older Flatcar) sends its own header and gets spec 2.3.0.
    const v0 = await fetchPath(url, { accept: `${IGN}; version=2.3.0, ${IGN}; version=1; q=0.5, */*; q=0.1`, 'accept-encoding': 'identity' });
    assert.equal(v0.status, 200, v0.text);
    assert.equal(v0.headers['content-type'], `${IGN}; version=2.3.0`);
    assert.deepEqual(validateIgnitionSchema(v0.text, '2.3.0'), []);

    const u = new URL(url);
    const sig = u.searchParams.get('sig')!;
    const tampered = new URL(u);
    tampered.searchParams.set('sig', `${sig.startsWith('A') ? 'B' : 'A'}${sig.slice(1)}`);
    const bumped = new URL(u);
    bumped.searchParams.set('exp', String(Number(u.searchParams.get('exp')) + 1));
    const other = new URL(u);
    other.searchParams.set('machine', 'm3');
    // A URL cut short (no sig): 400 naming the missing parameter.
    const cut = new URL(u);
    cut.searchParams.delete('sig');
    const short = await fetchPath(cut.href);
    assert.equal(short.status, 400);
    const problem = JSON.parse(short.text) as { detail: string; errors: unknown };
    assert.equal(problem.detail, 'the query string is not valid');
    assert.deepEqual(problem.errors, [{ path: 'querystring.sig', message: 'required' }]);
    const { key } = loadOrCreateKey(dir);
    const expired = signedUrl('http://127.0.0.1', IGNITION_PATH, 'm1', key, 60, Date.now() / 1000 - 3600);
    for (const [what, bad, detail] of [
      ['tampered signature', tampered.href, /not valid/],
      ['changed expiry', bumped.href, /not valid/],
      ['another machine', other.href, /not valid/],
      ['expired', expired, /expired/],
    ] as const) {
      const res = await fetchPath(bad);
      assert.equal(res.status, 403, `${what}: ${res.text}`);
      assert.match(res.headers['content-type'] ?? '', /^application\/problem\+json/);
      assert.match(res.body.detail, detail);
    }
    const rows = await auditRows('m1');
    const ignition = rows.filter((r) => r.route === '/ignition');
    // Newest first: expired, tampered, changed expiry (m1's), then the success.
    assert.deepEqual(
      ignition.slice(0, 4).map((r) => r.status),
      [403, 403, 403, 200],
    );
    assert.ok(rows.some((r) => r.route === '/ipxe' && r.status === 200));
    assert.ok(rows.every((r) => r.machine === 'm1' && r.client !== ''));
    assert.equal((await auditRows('m3')).filter((r) => r.route === '/ignition' && r.status === 403).length, 1);
    assert.equal((await http().get('/v1/machines/nope/audit').set('authorization', `Bearer ${READER}`)).status, 404);
  });

  it('maxFetches: N fetches, then 403 until an operator resets the counter', async () => {
    const url = ignitionUrl(await ipxe('mac=52:54:00:ab:cd:30'))!;
    assert.equal((await fetchPath(url)).status, 200);
    // A fetch that serves nothing (Ignition spec 1, which bootwright does not render: 422) uses up no fetch (an attacker pass saw it counted).
    assert.equal((await fetchPath(url, { accept: `${IGN};version=1.0.0` })).status, 422);
    assert.equal((await fetchPath(url)).status, 200);
    const refused = await fetchPath(url);
    assert.equal(refused.status, 403);
    assert.match(refused.body.detail, /fetch limit reached/);
    assert.equal((await http().delete('/v1/machines/lim/fetches').set('authorization', `Bearer ${READER}`)).status, 403);
    assert.equal((await http().delete('/v1/machines/lim/fetches').set('authorization', `Bearer ${WRITER}`)).status, 204);
    assert.equal((await fetchPath(url)).status, 200);
    const statuses = (await auditRows('lim')).filter((r) => r.route === '/ignition').map((r) => r.status);
    assert.deepEqual(statuses, [200, 403, 200, 422, 200]);
    assert.equal((await http().delete('/v1/machines/nope/fetches').set('authorization', `Bearer ${WRITER}`)).status, 404);
  });

  it('logs never hold a signature (a signed URL is a credential until it expires)', async () => {
    const seed = nocloudSeed(await ipxe('mac=52:54:00:ab:cd:02'))!;
    const ign = ignitionUrl(await ipxe(`uuid=0e5a3c2b-1111-4222-8333-944455556610&hostname_hex=${hex('pb.example.com')}`))!;
    assert.equal((await fetchPath(`${seed}meta-data`)).status, 200);
    assert.equal((await fetchPath(ign)).status, 200);
    const logs = svc.logs();
    for (const sig of [new URL(seed).pathname.split('/')[4]!, new URL(ign).searchParams.get('sig')!]) {
      assert.ok(sig.length >= 40);
      assert.ok(!logs.includes(sig), 'a signature reached the logs');
    }
    assert.match(logs, /"url":"\/nocloud\/m2\/\d+\.[0-9a-f]{16}\/\[redacted\]\/meta-data"/);
    assert.match(logs, /"url":"\/ignition\?machine=pb&inc=[0-9a-f]{16}&exp=\d+&sig=\[redacted\]/);
  });

  it('NoCloud: every seed file through one signed prefix; another machine\'s prefix signature is 403', async () => {
    const found = nocloudSeed(await ipxe('mac=52:54:00:ab:cd:02'));
    assert.ok(found?.endsWith('/'), found);
    const seed = found ?? '';
    const meta = await fetchPath(`${seed}meta-data`);
    assert.equal(meta.status, 200, meta.text);
    assert.match(meta.text, /instance-id: m2/);
    assert.match(meta.text, /local-hostname: m2/);
    const user = await fetchPath(`${seed}user-data`);
    assert.equal(user.status, 200, user.text);
    assert.ok(user.text.startsWith('#cloud-config\n'), user.text.slice(0, 40));
    for (const file of ['vendor-data', 'network-config']) {
      const res = await fetchPath(`${seed}${file}`);
      assert.equal(res.status, 200);
      assert.equal(res.text, '');
    }
    const unknownFile = await fetchPath(`${seed}secrets`);
    assert.equal(unknownFile.status, 400);
    assert.equal((JSON.parse(unknownFile.text) as { detail: string }).detail, 'the path parameters are not valid');
    const stolen = new URL(seed);
    stolen.pathname = stolen.pathname.replace('/nocloud/m2/', '/nocloud/m3/');
    assert.equal((await fetchPath(`${stolen.href}user-data`)).status, 403);
    const routes = (await auditRows('m2')).map((r) => `${r.route} ${r.status}`);
    for (const r of ['/nocloud/meta-data 200', '/nocloud/user-data 200', '/nocloud/vendor-data 200', '/nocloud/network-config 200']) assert.ok(routes.includes(r), routes.join(', '));
  });
});

describe('overload', () => {
  it('firmware routes are not rate limited per address (machines share NAT addresses; iPXE does not retry a 429)', async () => {
    const limited = await testService({ dataDir: dir, rateLimitMax: 2 }, { store });
    try {
      for (let i = 0; i < 5; i++) {
        assert.equal((await request(limited.app.server).get('/boot.ipxe')).status, 200);
        assert.equal((await request(limited.app.server).get('/ipxe?mac=52-54-00-ab-cd-10')).status, 200);
      }
      const operator = () => request(limited.app.server).get('/v1/discovered').set('authorization', `Bearer ${READER}`);
      assert.equal((await operator()).status, 200);
      assert.equal((await operator()).status, 200);
      assert.equal((await operator()).status, 429);
    } finally {
      await limited.app.close();
    }
  });

  it('/boot.ipxe and /ipxe are shed like every route: 503 with Retry-After (iPXE retries only then)', async () => {
    const busy = await testService({ dataDir: dir, maxEventLoopDelayMs: 50, retryAfterSeconds: 7 }, { store });
    try {
      const end = Date.now() + 600;
      while (Date.now() < end); // block the loop well past the limit
      await new Promise((resolve) => setTimeout(resolve, 30)); // let under-pressure take its sample
      const [boot, machineScript] = await Promise.all([request(busy.app.server).get('/boot.ipxe'), request(busy.app.server).get('/ipxe?mac=52:54:00:ab:cd:01')]);
      for (const res of [boot, machineScript]) {
        assert.equal(res.status, 503, res.text);
        assert.equal(res.headers['retry-after'], '7');
      }
    } finally {
      await busy.app.close();
    }
  });
});

describe('pointer configs', () => {
  it('Ignition: a valid config whose verification.hash is the sha512 of what /ignition serves', async () => {
    for (const version of ['3.3.0', '3.4.0', '2.3.0']) {
      const res = await http().get('/v1/machines/m1/bootstrap?pointer=true').set('authorization', `Bearer ${RENDERER}`).set('accept', `${IGN};version=${version}`);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers['content-type'], `${IGN}; version=${version}`);
      assert.deepEqual(validateIgnitionSchema(res.text, version), []);
      if (haveIgnitionValidate && version === '3.3.0') assert.deepEqual(await ignitionValidate(res.text), []);
      const replace = JSON.parse(res.text).ignition.config.replace as { source: string; verification: { hash: string } };
      // Ignition fetches it with its own Accept header; the URL pins the version.
      const full = await fetchPath(replace.source, { accept: `${IGN};version=3.6.0, */*;q=0.1` });
      assert.equal(full.status, 200, full.text);
      assert.equal(JSON.parse(full.text).ignition.version, version);
      assert.equal(replace.verification.hash, `sha512-${createHash('sha512').update(full.text).digest('hex')}`);
    }
  });

  it('cloud-config: an #include-once of the signed NoCloud user-data URL', async () => {
    const res = await http().get('/v1/machines/m2/bootstrap?pointer=true').set('authorization', `Bearer ${RENDERER}`);
    assert.equal(res.status, 200, res.text);
    const [first, url] = res.text.split('\n');
    assert.equal(first, '#include-once');
    assert.match(url!, /\/nocloud\/m2\/\d+\.[0-9a-f]{16}\/[A-Za-z0-9_-]{43}\/user-data$/);
    const user = await fetchPath(url!);
    assert.equal(user.status, 200);
    assert.ok(user.text.startsWith('#cloud-config\n'));
  });

  it('pointer with a pinned revision is a 400', async () => {
    const res = await http().get('/v1/machines/m1/bootstrap?pointer=true&revision=1').set('authorization', `Bearer ${RENDERER}`);
    assert.equal(res.status, 400, res.text);
  });
});
