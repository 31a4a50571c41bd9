/**
 * The HTTPS listener (issue 16) with real clients: curl with `--cacert`, Node's fetch
 * through an undici Agent trusting the CA, cloud-init's own URL helper
 * (`cloudinit.url_helper.readurl` with `ssl_details`), Node's https agent for keep-alive.
 * TLS 1.2 and later only; the certificate reloads on a file change and on SIGHUP while an
 * open keep-alive connection keeps working; an expired certificate is refused at start;
 * the plain-HTTP listener serves the iPXE routes and nothing else.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Server as TlsServer, TLSSocket } from 'node:tls';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { Agent, fetch as undiciFetch } from 'undici';
import { closePlain, listenPlain } from '../../src/api/plain.js';
import { serve } from '../../src/api/serve.js';
import { buildServer } from '../../src/api/server.js';
import { loadConfig } from '../../src/config.js';
import { ensureAutoTls, TLS_DIR } from '../../src/tls/auto.js';
import { readCredentials, TlsCredentialsError, watchCredentials } from '../../src/tls/credentials.js';
import { missingDependency } from '../support/missing.js';
import { example } from '../support/requests.js';
import { haveIgnitionValidate, ignitionValidate, validateIgnitionSchema } from '../support/validators.js';

const run = promisify(execFile);
const TOKEN = 'https-test-admin-token-0123456789';
const CLOUD_INIT_PYTHON = '/usr/bin/python3';

async function hasCloudInit(): Promise<boolean> {
  try {
    await run(CLOUD_INIT_PYTHON, ['-c', 'import cloudinit.url_helper']);
    return true;
  } catch {
    return false;
  }
}

/** GET over one keep-alive agent; the peer certificate's fingerprint and whether the socket was reused. */
function get(agent: HttpsAgent, port: number, path: string): Promise<{ status: number; body: string; fingerprint: string; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest({ host: '127.0.0.1', port, path, agent }, (res) => {
      const fingerprint = res.socket instanceof TLSSocket ? res.socket.getPeerCertificate().fingerprint256 : '';
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body, fingerprint, reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.end();
  });
}

const CLOUD_INIT = await hasCloudInit();

describe('HTTPS listener', () => {
  let dir: string;
  let app: FastifyInstance;
  let port: number;
  let plainPort: number;
  let caFile: string;
  let certFile: string;
  let keyFile: string;
  let plain: Awaited<ReturnType<typeof listenPlain>>;
  const logs: string[] = [];
  let watch: ReturnType<typeof watchCredentials>;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bw-https-'));
    const auto = await ensureAutoTls(join(dir, 'gen'), ['127.0.0.1', 'localhost']);
    // Operator-style files the test can replace.
    caFile = auto.caFile;
    certFile = join(dir, 'tls.crt');
    keyFile = join(dir, 'tls.key');
    copyFileSync(auto.certFile, certFile);
    copyFileSync(auto.keyFile, keyFile);
    const config = loadConfig({}, { dataDir: dir, tokens: [{ name: 'admin', token: TOKEN, scopes: ['admin'] }], maxEventLoopDelayMs: 0, rateLimitMax: 0, logLevel: 'silent', tlsCert: certFile, tlsKey: keyFile, publicUrl: 'https://127.0.0.1:8443' });
    const credentials = readCredentials(certFile, keyFile);
    app = await buildServer({ config, tls: { cert: credentials.cert, key: credentials.key, ca: auto.caPem } });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as AddressInfo).port;
    plain = await listenPlain(app, config, 0);
    plainPort = (plain.address() as AddressInfo).port;
    const log = { info: (_o: object, m: string) => logs.push(`info ${m}`), warn: (_o: object, m: string) => logs.push(`warn ${m}`), error: (o: object, m: string) => logs.push(`error ${m} ${JSON.stringify(o)}`) };
    watch = watchCredentials(app.server as unknown as TlsServer, certFile, keyFile, credentials, log);
  });
  after(async () => {
    watch.stop();
    closePlain(plain);
    await app.close();
  });

  it('curl --cacert: TLS 1.2+ only, HTTP/1.1, the CA at /ca.crt is the one that verifies the server', async () => {
    const { stdout } = await run('curl', ['-sS', '--http1.1', '--cacert', caFile, '-w', '\n%{http_code} %{http_version} %{ssl_verify_result}', `https://127.0.0.1:${port}/ca.crt`]);
    const [body, status] = [stdout.slice(0, stdout.lastIndexOf('\n')), stdout.slice(stdout.lastIndexOf('\n') + 1)];
    assert.equal(status, '200 1.1 0');
    assert.equal(body, readFileSync(caFile, 'utf8'));
    // TLS 1.1 at most: the handshake fails.
    await assert.rejects(run('curl', ['-sS', '--tls-max', '1.1', '--cacert', caFile, `https://127.0.0.1:${port}/healthz`]), (e: Error & { code?: number }) => e.code === 35);
    // Without the CA, curl refuses the certificate (60: peer certificate cannot be authenticated).
    await assert.rejects(run('curl', ['-sS', `https://127.0.0.1:${port}/healthz`]), (e: Error & { code?: number }) => e.code === 60);
  });

  it("Node's fetch through an undici Agent with the CA", async () => {
    const dispatcher = new Agent({ connect: { ca: readFileSync(caFile, 'utf8') } });
    try {
      const r = await undiciFetch(`https://localhost:${port}/v1/clusters`, { dispatcher, headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(r.status, 200);
      assert.deepEqual(((await r.json()) as { items: unknown[] }).items, []);
      const ipxe = await undiciFetch(`https://localhost:${port}/boot.ipxe`, { dispatcher });
      assert.match(await ipxe.text(), /chain --replace --autofree https:\/\/127\.0\.0\.1:8443\/ipxe\?/);
    } finally {
      await dispatcher.close();
    }
    // An agent without the CA refuses it.
    await assert.rejects(undiciFetch(`https://localhost:${port}/healthz`), (e: Error & { cause?: { code?: string } }) => e.cause?.code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' || e.cause?.code === 'SELF_SIGNED_CERT_IN_CHAIN');
  });

  it("cloud-init's URL helper fetches with the CA (ssl_details ca_certs), and refuses without it", { skip: !CLOUD_INIT && missingDependency('cloud-init (python3-cloudinit) is not installed: its URL helper over HTTPS is NOT checked') }, async () => {
    const script = 'import sys; from cloudinit import url_helper as u; r = u.readurl(sys.argv[1], ssl_details={"ca_certs": sys.argv[2]} if sys.argv[2] else None, retries=0); print(r.code); sys.stdout.write(str(r))';
    const { stdout } = await run(CLOUD_INIT_PYTHON, ['-c', script, `https://127.0.0.1:${port}/ca.crt`, caFile]);
    assert.equal(stdout, `200\n${readFileSync(caFile, 'utf8')}`);
    await assert.rejects(run(CLOUD_INIT_PYTHON, ['-c', script, `https://127.0.0.1:${port}/ca.crt`, '']), /CERTIFICATE_VERIFY_FAILED/);
  });

  it('the plain-HTTP listener serves /boot.ipxe and /ipxe only', async () => {
    const boot = await fetch(`http://127.0.0.1:${plainPort}/boot.ipxe`);
    assert.equal(boot.status, 200);
    const script = await boot.text();
    // HTTPS first; the plain listener when iPXE cannot (no HTTPS in the build, or it does not trust the CA).
    assert.match(script, new RegExp(`chain --replace --autofree https://127\\.0\\.0\\.1:8443/ipxe\\?\\S+ \\|\\| chain --replace --autofree http://127\\.0\\.0\\.1:${plainPort}/ipxe\\?\\S+ \\|\\| goto bootwright_wait`));
    assert.equal((await fetch(`http://127.0.0.1:${plainPort}/ipxe?mac=52-54-00-00-00-01`)).status, 200);
    for (const path of ['/v1/clusters', '/ca.crt', '/ignition?machine=a&exp=1&sig=x', '/healthz', '/metrics']) {
      const r = await fetch(`http://127.0.0.1:${plainPort}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(r.status, 404, path);
      assert.match(((await r.json()) as { detail: string }).detail, /use https/);
    }
  });

  it('the plain listener serves /assets/ too, where its /ipxe scripts point kernels and initrds', async () => {
    const assets = join(dir, 'assets');
    mkdirSync(assets, { recursive: true });
    writeFileSync(join(assets, 'vmlinuz'), 'kernel bytes');
    const config = loadConfig({}, { dataDir: dir, tokens: [{ name: 'admin', token: TOKEN, scopes: ['admin'] }], maxEventLoopDelayMs: 0, rateLimitMax: 0, logLevel: 'silent', publicUrl: 'https://127.0.0.1:8443', assetsDir: assets });
    const credentials = readCredentials(certFile, keyFile);
    const withAssets = await buildServer({ config, tls: { cert: credentials.cert, key: credentials.key } });
    await withAssets.listen({ host: '127.0.0.1', port: 0 });
    const plainAssets = await listenPlain(withAssets, config, 0);
    try {
      const r = await fetch(`http://127.0.0.1:${String((plainAssets.address() as AddressInfo).port)}/assets/vmlinuz`);
      assert.equal(r.status, 200);
      assert.equal(await r.text(), 'kernel bytes');
      assert.equal((await fetch(`http://127.0.0.1:${String((plainAssets.address() as AddressInfo).port)}/ca.crt`)).status, 404, 'still nothing else');
    } finally {
      closePlain(plainAssets);
      await withAssets.close();
    }
  });

  it('a machine booting through the plain listener: iPXE fetches over plain HTTP, the OS over https; the pointer pins the CA', async () => {
    const dispatcher = new Agent({ connect: { ca: readFileSync(caFile, 'utf8') } });
    try {
      const post = async (collection: string, kind: string, name: string, spec: unknown) => {
        const r = await undiciFetch(`https://127.0.0.1:${port}/v1/${collection}`, {
          dispatcher,
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ apiVersion: 'bootwright.dev/v1alpha1', kind, metadata: { name }, spec }),
        });
        assert.equal(r.status, 201, await r.text());
      };
      await post('clusters', 'Cluster', 'prod', (example('worker').spec as { cluster: unknown }).cluster);
      await post('profiles', 'Profile', 'ign', { role: 'worker', kubernetesVersion: 'v1.33.2', output: { format: 'ignition' }, boot: { kernel: 'assets/vmlinuz', initrd: ['assets/initrd.img'], args: [] } });
      await post('machines', 'Machine', 'node-1', { cluster: 'prod', profile: 'ign', selectors: { mac: ['52:54:00:00:00:11'] } });
      const script = await (await fetch(`http://127.0.0.1:${plainPort}/ipxe?mac=52-54-00-00-00-11`)).text();
      // iPXE's own fetches go where the script came from; the OS's signed URL is https.
      assert.match(script, new RegExp(`^kernel http://127\\.0\\.0\\.1:${plainPort}/assets/vmlinuz .*ignition\\.config\\.url=https://127\\.0\\.0\\.1:8443/ignition\\?machine=node-1&`, 'm'));
      assert.match(script, new RegExp(`^initrd --name initrd0 http://127\\.0\\.0\\.1:${plainPort}/assets/initrd\\.img `, 'm'));
      assert.match(script, new RegExp(`chain --replace --autofree http://127\\.0\\.0\\.1:${plainPort}/boot\\.ipxe`));
      // Over https the same route answers with https everywhere.
      const overTls = await (await undiciFetch(`https://127.0.0.1:${port}/ipxe?mac=52-54-00-00-00-11`, { dispatcher })).text();
      assert.match(overTls, /^kernel https:\/\/127\.0\.0\.1:8443\/assets\/vmlinuz /m);
      // The pointer: https source, the CA inline, valid for ignition-validate.
      const r = await undiciFetch(`https://127.0.0.1:${port}/v1/machines/node-1/bootstrap?pointer=true&ignitionVersion=3.3.0`, { dispatcher, headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(r.status, 200);
      const pointer = await r.text();
      const parsed = JSON.parse(pointer) as { ignition: { config: { replace: { source: string } }; security: { tls: { certificateAuthorities: { source: string }[] } } } };
      assert.ok(parsed.ignition.config.replace.source.startsWith('https://127.0.0.1:8443/ignition?machine=node-1&'));
      assert.equal(Buffer.from(parsed.ignition.security.tls.certificateAuthorities[0]!.source.slice('data:;base64,'.length), 'base64').toString('utf8'), readFileSync(caFile, 'utf8'));
      if (haveIgnitionValidate) assert.deepEqual(await ignitionValidate(pointer), []);
      else missingDependency('ignition-validate is not installed: the HTTPS pointer is NOT validated by it');
      assert.deepEqual(validateIgnitionSchema(pointer, '3.3.0'), []);
    } finally {
      await dispatcher.close();
    }
  });

  it('reloads a replaced certificate on file change and on SIGHUP; an open keep-alive connection survives', async () => {
    const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1, ca: readFileSync(caFile, 'utf8') });
    try {
      const first = await get(agent, port, '/healthz');
      assert.equal(first.status, 200);
      const old = first.fingerprint;
      // A new pair from the same CA, written as cert-manager does: new files renamed over the old.
      rmSync(join(dir, 'gen', TLS_DIR, 'server.crt'));
      const next = await ensureAutoTls(join(dir, 'gen'), ['127.0.0.1', 'localhost']);
      assert.equal(next.created.serving, true);
      copyFileSync(next.keyFile, `${keyFile}.new`);
      copyFileSync(next.certFile, `${certFile}.new`);
      await run('mv', [`${keyFile}.new`, keyFile]);
      await run('mv', [`${certFile}.new`, certFile]);
      const deadline = Date.now() + 10_000;
      while (!logs.some((l) => l === 'info TLS certificate reloaded') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      assert.ok(logs.includes('info TLS certificate reloaded'), logs.join('\n'));
      // The old connection is still open and answers, with the old certificate.
      const again = await get(agent, port, '/healthz');
      assert.deepEqual([again.status, again.reused, again.fingerprint], [200, true, old]);
      // A new connection gets the new certificate.
      const fresh = await get(new HttpsAgent({ ca: readFileSync(caFile, 'utf8') }), port, '/healthz');
      assert.equal(fresh.fingerprint, readCredentials(certFile, keyFile).fingerprint);
      assert.notEqual(fresh.fingerprint, old);

      // SIGHUP: the same, when the file's change is not seen (e.g. same mtime).
      rmSync(join(dir, 'gen', TLS_DIR, 'server.crt'));
      const third = await ensureAutoTls(join(dir, 'gen'), ['127.0.0.1', 'localhost']);
      const mtime = statSync(certFile).mtime;
      copyFileSync(third.keyFile, keyFile);
      copyFileSync(third.certFile, certFile);
      utimesSync(certFile, mtime, mtime);
      utimesSync(keyFile, mtime, mtime);
      const before = logs.length;
      process.kill(process.pid, 'SIGHUP');
      const hupDeadline = Date.now() + 5000;
      while (!logs.slice(before).includes('info TLS certificate reloaded') && Date.now() < hupDeadline) await new Promise((r) => setTimeout(r, 50));
      const afterHup = await get(new HttpsAgent({ ca: readFileSync(caFile, 'utf8') }), port, '/healthz');
      assert.equal(afterHup.fingerprint, readCredentials(certFile, keyFile).fingerprint);
      const still = await get(agent, port, '/healthz');
      assert.deepEqual([still.status, still.reused, still.fingerprint], [200, true, old], 'the keep-alive connection from before both reloads still works');
    } finally {
      agent.destroy();
    }
  });

  it('a broken replacement is not loaded: the running certificate stays and the error is logged', async () => {
    const current = readCredentials(certFile, keyFile).fingerprint;
    const other = await ensureAutoTls(join(dir, 'other'), ['127.0.0.1']);
    const before = logs.length;
    copyFileSync(other.keyFile, keyFile); // a key that is not the certificate's
    process.kill(process.pid, 'SIGHUP');
    const deadline = Date.now() + 5000;
    while (!logs.slice(before).some((l) => l.startsWith('error TLS certificate not reloaded')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const line = logs.slice(before).find((l) => l.startsWith('error TLS certificate not reloaded'));
    assert.ok(line, logs.slice(before).join('\n'));
    assert.match(line, /is not the key of certificate/);
    assert.doesNotMatch(line, /PRIVATE KEY/);
    const r = await get(new HttpsAgent({ ca: readFileSync(caFile, 'utf8') }), port, '/healthz');
    assert.equal(r.fingerprint, current);
  });
});

describe('HTTPS certificate checks at start', () => {
  it('an expired certificate is refused at start, naming the file and the date', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bw-https-expired-'));
    // Issued 400 days ago for 365 days: expired 35 days ago.
    const auto = await ensureAutoTls(dir, ['127.0.0.1'], new Date(Date.now() - 400 * 86_400_000));
    assert.throws(() => readCredentials(auto.certFile, auto.keyFile), (e: Error) => e instanceof TlsCredentialsError && e.message.includes(auto.certFile) && /expired at \d{4}-\d\d-\d\dT/.test(e.message));
    const config = loadConfig({}, { dataDir: dir, tokens: [{ name: 'a', token: TOKEN, scopes: ['admin'] }], logLevel: 'silent', port: 0, tlsCert: auto.certFile, tlsKey: auto.keyFile });
    await assert.rejects(serve(config), /expired at/);
  });

  it('a certificate expiring within 14 days loads, marked to warn', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bw-https-soon-'));
    const auto = await ensureAutoTls(dir, ['127.0.0.1'], new Date(Date.now() - 360 * 86_400_000));
    assert.equal(readCredentials(auto.certFile, auto.keyFile).expiresSoon, true);
  });

  it('only one of tlsCert and tlsKey is a configuration error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bw-https-half-'));
    const config = loadConfig({}, { dataDir: dir, tokens: [{ name: 'a', token: TOKEN, scopes: ['admin'] }], logLevel: 'silent', port: 0, tlsCert: join(dir, 'x.crt') });
    await assert.rejects(serve(config), /BOOTWRIGHT_TLS_CERT.*BOOTWRIGHT_TLS_KEY.*both or neither/);
  });
});
