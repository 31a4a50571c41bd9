import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { dump } from 'js-yaml';
import request from 'supertest';
import { checkIgnitionV2Rules } from '../../src/provision/ignition/v2/rules.js';
import { example, worker } from '../support/requests.js';
import { validateIgnitionSchema } from '../support/validators.js';
import { ADMIN, READER, RENDERER, testService, type TestService } from '../support/server.js';

const IGN = 'application/vnd.coreos.ignition+json';
const workerYaml = readFileSync(new URL('../../examples/worker.yaml', import.meta.url), 'utf8');

let svc: TestService;
before(async () => {
  svc = await testService({ bodyLimit: 64 * 1024 });
});
after(async () => {
  await svc.app.close();
});

const post = (path = '/v1/render', token = RENDERER) => request(svc.app.server).post(path).set('authorization', `Bearer ${token}`);
const postWorker = (accept?: string, path?: string) => {
  const r = post(path).set('content-type', 'application/yaml');
  if (accept !== undefined) r.set('accept', accept);
  return r.send(workerYaml);
};

describe('POST /v1/render negotiation', () => {
  const ignitionHeaders: [string, string][] = [
    ['3.0.0', '3.0.0'],
    ['3.3.0', '3.3.0'],
    ['3.4.0', '3.4.0'],
    ['3.6.0', '3.6.0'],
    ['3.9.0', '3.6.0'],
  ];
  for (const [asked, served] of ignitionHeaders) {
    it(`Ignition's own Accept for ${asked} gets spec ${served}`, async () => {
      const res = await postWorker(`${IGN};version=${asked}, */*;q=0.1`);
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], `${IGN}; version=${served}`);
      assert.equal(JSON.parse(res.text).ignition.version, served);
      assert.equal(res.headers.vary, 'Accept');
      assert.equal(res.headers['content-encoding'], undefined);
    });
  }

  it('no Accept and */* give cloud-config (spec.output would otherwise decide)', async () => {
    for (const accept of [undefined, '*/*', 'text/*']) {
      const res = await postWorker(accept);
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], 'text/cloud-config; charset=utf-8');
      assert.ok(res.text.startsWith('#cloud-config\n'));
    }
  });

  it('spec.output.format decides under a wildcard, Accept wins over it', async () => {
    const body = worker({ output: { format: 'ignition', ignitionVersion: '3.2.0' } });
    const wild = await post().set('accept', '*/*').send(body);
    assert.equal(wild.headers['content-type'], `${IGN}; version=3.2.0`);
    const cc = await post().set('accept', 'text/cloud-config').send(body);
    assert.equal(cc.headers['content-type'], 'text/cloud-config; charset=utf-8');
  });

  /** What Ignition v0.x (spec 2.x, Container Linux / older Flatcar) sends: `internal/resource/url.go` ConfigHeaders. */
  const v0Accept = (version: string) => `${IGN}; version=${version}, ${IGN}; version=1; q=0.5, */*; q=0.1`;

  for (const asked of ['2.3.0', '2.4.0', '2.3']) {
    it(`Ignition v0.x asking for ${asked} gets spec 2.3.0`, async () => {
      const res = await postWorker(v0Accept(asked));
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers['content-type'], `${IGN}; version=2.3.0`);
      assert.equal(res.headers['content-encoding'], undefined);
      assert.deepEqual(validateIgnitionSchema(res.text, '2.3.0'), []);
      assert.deepEqual(checkIgnitionV2Rules(JSON.parse(res.text)), []);
    });
  }

  it('Ignition v0.31–v0.34 advertises version=2.2.0 but reads 2.3.0: it gets 2.3.0', async () => {
    const res = await postWorker(v0Accept('2.2.0'));
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], `${IGN}; version=2.3.0`);
  });

  it('Ignition asking for spec 1 gets 406', async () => {
    for (const accept of [`${IGN}; version=1`, `${IGN}; version=1.0.0, */*; q=0.1`]) {
      const res = await postWorker(accept);
      assert.equal(res.status, 406, accept);
      assert.match(res.body.detail, /bootwright serves Ignition 2\.3\.0 and 3\.0\.0 to 3\.6\.0/);
    }
  });

  it('?ignitionVersion=2.3, spec.output.ignitionVersion 2.3.0 and the envelope', async () => {
    const q = await postWorker(undefined, '/v1/render?format=ignition&ignitionVersion=2.3');
    assert.equal(q.headers['content-type'], `${IGN}; version=2.3.0`);
    const req = worker({ output: { format: 'ignition', ignitionVersion: '2.3.0' } });
    const spec = await post().send(req);
    assert.equal(spec.status, 200, spec.text);
    assert.equal(spec.headers['content-type'], `${IGN}; version=2.3.0`);
    const env = await post().set('accept', 'application/json').send(req);
    assert.equal(env.body.ignitionVersion, '2.3.0');
    assert.equal(env.body.mediaType, `${IGN}; version=2.3.0`);
    assert.equal(env.body.data, spec.text);
  });

  it('a feature 2.3.0 cannot express is a 422 at the request field', async () => {
    const req = worker({ provisioning: { files: [{ path: '/usr/local/bin/tool', content: 'x', permissions: '4755' }] } });
    const res = await post().set('accept', v0Accept('2.3.0')).send(req);
    assert.equal(res.status, 422, res.text);
    assert.equal(res.body.errors[0].path, 'spec.provisioning.files[0].permissions');
    assert.match(res.body.errors[0].message, /Ignition spec 2\.3\.0 cannot express .*setuid.*needs Ignition spec 3\.6\.0/);
    const v36 = await post().set('accept', `${IGN};version=3.6.0`).send(req);
    assert.equal(v36.status, 200, v36.text);
  });

  it('honours q-values', async () => {
    const res = await postWorker(`text/cloud-config;q=0.5, ${IGN};q=0.9`);
    assert.equal(res.headers['content-type'], `${IGN}; version=3.0.0`);
    const res2 = await postWorker(`text/cloud-config;q=1, ${IGN};q=0.9`);
    assert.equal(res2.headers['content-type'], 'text/cloud-config; charset=utf-8');
    const res3 = await postWorker(`${IGN};q=0, */*`);
    assert.equal(res3.headers['content-type'], 'text/cloud-config; charset=utf-8');
  });

  it('?format= wins over Accept', async () => {
    const res = await postWorker('text/cloud-config', '/v1/render?format=ignition');
    assert.equal(res.headers['content-type'], `${IGN}; version=3.0.0`);
  });

  it('406 with the offered types when nothing is acceptable', async () => {
    for (const accept of ['text/html', `${IGN};version=1, */*;q=0.1`]) {
      const res = await postWorker(accept);
      assert.equal(res.status, 406);
      assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
      assert.equal(res.headers.vary, 'Accept');
      assert.match(res.body.detail, /offered: text\/cloud-config, application\/vnd\.coreos\.ignition\+json, application\/json$/);
    }
    // The offered types are listed once (a new user saw them twice).
    assert.equal((await postWorker('text/html')).body.detail, "the Accept header names no media type bootwright serves; offered: text/cloud-config, application/vnd.coreos.ignition+json, application/json");
  });

  it('application/json gives the envelope', async () => {
    const res = await postWorker('application/json', '/v1/render?format=ignition');
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/json');
    const env = res.body as Record<string, unknown>;
    assert.deepEqual(Object.keys(env), ['format', 'mediaType', 'data', 'sha256', 'size', 'kubeadmApiVersion', 'ignitionVersion', 'warnings']);
    assert.equal(env.format, 'ignition');
    assert.equal(env.mediaType, `${IGN}; version=3.0.0`);
    assert.equal(env.kubeadmApiVersion, 'kubeadm.k8s.io/v1beta4');
    assert.equal(env.ignitionVersion, '3.0.0');
    assert.equal(env.size, Buffer.byteLength(env.data as string));
    const raw = await postWorker(`${IGN};version=3.0.0`);
    assert.equal(env.data, raw.text);
    assert.deepEqual(env.warnings, []);
  });
});

describe('POST /v1/render caching', () => {
  it('strong ETag, If-None-Match → 304 without a body, private no-cache', async () => {
    const first = await postWorker('text/cloud-config');
    const etag = first.headers.etag!;
    assert.match(etag, /^"[A-Za-z0-9_-]{43}"$/);
    assert.equal(first.headers['cache-control'], 'private, no-cache');
    const again = await postWorker('text/cloud-config').set('if-none-match', `"other", ${etag}`);
    assert.equal(again.status, 304);
    assert.equal(again.text, '');
    assert.equal(again.headers.etag, etag);
    assert.equal(again.headers.vary, 'Accept');
    const ign = await postWorker(IGN);
    assert.notEqual(ign.headers.etag, etag);
  });

  it('equivalent requests (key order, YAML vs JSON) hit one cache entry', async () => {
    const fresh = await testService();
    try {
      const value = worker({ provisioning: { preKubeadmCommands: ['echo cache-test'] } });
      const reordered = { spec: value.spec, metadata: value.metadata, kind: value.kind, apiVersion: value.apiVersion };
      const send = (body: string, type: string) =>
        request(fresh.app.server).post('/v1/render').set('authorization', `Bearer ${RENDERER}`).set('content-type', type).send(body);
      const a = await send(JSON.stringify(value), 'application/json');
      const b = await send(JSON.stringify(reordered), 'application/json');
      const c = await send(dump(value), 'application/yaml');
      assert.equal(a.text, b.text);
      assert.equal(a.text, c.text);
      const metrics = (await request(fresh.app.server).get('/metrics')).text;
      assert.match(metrics, /^bootwright_render_cache_misses_total 1$/m);
      assert.match(metrics, /^bootwright_render_cache_hits_total 2$/m);
      assert.match(metrics, /^bootwright_render_cache_bytes [1-9]\d*$/m);
      assert.match(metrics, /^bootwright_renders_total\{format="cloud-config",version=""\} 3$/m);
      assert.match(metrics, /^http_request_duration_seconds_count\{method="POST",route="\/v1\/render",status_code="200"\} 3$/m);
    } finally {
      await fresh.app.close();
    }
  });

  it('serves the same bytes as the CLI', async () => {
    for (const format of ['cloud-config', 'ignition']) {
      const cli = execFileSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'render', '-f', 'examples/worker.yaml', '--format', format], { encoding: 'utf8' });
      const res = await postWorker(undefined, `/v1/render?format=${format}`);
      assert.equal(res.text, cli);
    }
  });
});

describe('POST /v1/render errors', () => {
  const expectProblem = (res: request.Response, status: number, type: string) => {
    assert.equal(res.status, status);
    assert.equal(res.headers['content-type'], 'application/problem+json; charset=utf-8');
    assert.equal(res.body.status, status);
    assert.equal(res.body.type, `https://bootwright.dev/problems/${type}`);
    assert.equal(typeof res.body.title, 'string');
    assert.equal(typeof res.body.detail, 'string');
  };

  it('malformed JSON and YAML: 400 with the position', async () => {
    const json = await post().set('content-type', 'application/json').send('{"apiVersion": ');
    expectProblem(json, 400, 'malformed-request');
    assert.match(json.body.errors[0].message, /^malformed JSON/);
    const yaml = await post().set('content-type', 'application/yaml').send('a: [1, 2\nb: c');
    expectProblem(yaml, 400, 'malformed-request');
    assert.match(yaml.body.errors[0].message, /^malformed YAML at line \d+ column \d+/);
  });

  it('wrong types and unknown fields: 422 naming each field', async () => {
    const res = await post().send({ ...worker(), spec: { ...(worker().spec as object), role: 'boss', colour: 1 } });
    expectProblem(res, 422, 'invalid-request');
    const errors = [...(res.body.errors as { path: string }[])].sort((a, b) => a.path.localeCompare(b.path));
    assert.deepEqual(errors, [
      { path: 'spec.colour', message: 'unknown field' },
      { path: 'spec.role', message: 'Invalid option: expected one of "init"|"control-plane"|"worker"' },
    ]);
    // A missing field reads "required", whatever its type (an enum's options named nothing missing).
    const { role: _role, kubernetesVersion: _version, ...rest } = worker().spec as Record<string, unknown>;
    const missing = await post().send({ ...worker(), spec: rest });
    expectProblem(missing, 422, 'invalid-request');
    assert.deepEqual([...(missing.body.errors as { path: string }[])].sort((a, b) => a.path.localeCompare(b.path)), [
      { path: 'spec.kubernetesVersion', message: 'required' },
      { path: 'spec.role', message: 'required' },
    ]);
  });

  it('body over the limit: 413; unsupported media type: 415', async () => {
    const big = await post().set('content-type', 'application/json').send(JSON.stringify({ pad: 'x'.repeat(70 * 1024) }));
    expectProblem(big, 413, 'payload-too-large');
    // The problem names the limit and the setting that raises it (the test service's 64 KiB).
    assert.equal(big.body.detail, "the request body is larger than this route's limit of 65536 bytes (BOOTWRIGHT_BODY_LIMIT)");
    assert.deepEqual(big.body.errors, [{ path: 'body', message: 'is over 65536 bytes (BOOTWRIGHT_BODY_LIMIT)' }]);
    const xml = await post().set('content-type', 'application/xml').send('<a/>');
    expectProblem(xml, 415, 'unsupported-media-type');
  });

  it('never echoes a secret', async () => {
    const init = example('init');
    const key = (init.spec.cluster as { certificates: { ca: { key: string } } }).certificates.ca.key;
    (init.spec.cluster as Record<string, unknown>).bootstrapToken = 'BAD.TOKEN-SECRET-VALUE';
    const res = await post().send(init);
    expectProblem(res, 422, 'invalid-request');
    assert.ok(!res.text.includes('BAD.TOKEN-SECRET-VALUE'));
    assert.ok(!res.text.includes(key.split('\n')[1]!));
  });

  it('401 without or with an unknown token, 403 without the render scope', async () => {
    const none = await request(svc.app.server).post('/v1/render').send(worker());
    expectProblem(none, 401, 'unauthorized');
    assert.equal(none.headers['www-authenticate'], 'Bearer realm="bootwright"');
    expectProblem(await post('/v1/render', 'not-a-known-token').send(worker()), 401, 'unauthorized');
    expectProblem(await post('/v1/render', READER).send(worker()), 403, 'forbidden');
    assert.equal((await post('/v1/render', ADMIN).send(worker())).status, 200);
  });

  it('an unknown route is a 404 problem', async () => {
    expectProblem(await request(svc.app.server).get('/v2/nothing'), 404, 'not-found');
  });

  it('logs carry request ids and no secrets', async () => {
    const init = example('init');
    const cluster = init.spec.cluster as { bootstrapToken: string; certificateKey: string; certificates: { ca: { key: string } } };
    const res = await post().set('x-request-id', 'req-secret-test').send(init);
    assert.equal(res.status, 200);
    const logs = svc.logs();
    assert.match(logs, /"reqId":"req-secret-test"/);
    for (const secret of [cluster.bootstrapToken, cluster.certificateKey, cluster.certificates.ca.key.split('\n')[1]!, RENDERER]) {
      assert.ok(!logs.includes(secret), 'a secret reached the logs');
    }
  });
});

describe('POST /v1/render ?platform=', () => {
  const bigWorker = () => worker({ provisioning: { files: [{ path: '/etc/motd', content: 'kubernetes node, managed by bootwright\n'.repeat(1000) }] } });
  it('serves a cloud-config over the platform limit gzip-compressed whole (application/gzip), with an ETag of those bytes', async () => {
    const res = await post('/v1/render?platform=aws').set('content-type', 'application/json').set('accept', 'text/cloud-config').buffer(true).parse((r, cb) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => cb(null, Buffer.concat(chunks)));
    }).send(JSON.stringify(bigWorker()));
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-type'], 'application/gzip');
    assert.equal(res.headers['content-encoding'], undefined, 'the payload is gzip, not the transfer');
    const body = res.body as Buffer;
    assert.ok(body.length <= 16384);
    assert.ok(gunzipSync(body).toString('utf8').startsWith('#cloud-config\n'));
    assert.equal(res.headers.etag, `"${createHash('sha256').update(body).digest('base64url')}"`);
    const env = await post('/v1/render?platform=aws').set('content-type', 'application/json').set('accept', 'application/json').send(JSON.stringify(bigWorker()));
    assert.equal(env.body.dataEncoding, 'base64');
    assert.equal(env.body.mediaType, 'application/gzip');
    assert.deepEqual(Buffer.from(env.body.data, 'base64'), body);
    assert.equal(env.body.size, body.length);
  });

  it('answers an Ignition config over the limit with 422 naming platform and the pointer config', async () => {
    const res = await post('/v1/render?platform=aws&format=ignition&ignitionVersion=3.0.0').set('content-type', 'application/json').send(JSON.stringify(bigWorker()));
    assert.equal(res.status, 422);
    assert.equal(res.body.errors[0].path, 'platform');
    assert.match(res.body.errors[0].message, /pointer=true/);
    const bad = await post('/v1/render?platform=ec2').set('content-type', 'application/json').send(JSON.stringify(bigWorker()));
    assert.equal(bad.status, 400);
  });
});

describe('POST /v1/render with an additional Ignition config', () => {
  const additionalConfig = JSON.stringify({ ignition: { version: '3.4.0' }, storage: { files: [{ path: '/etc/motd', contents: { source: 'data:,hi' } }] } });
  const body = worker({ provisioning: { ignition: { containerLinuxConfig: { additionalConfig } } } });

  it("is merged into Ignition output at the additional config's spec; the envelope warns for cloud-config", async () => {
    const ign = await post().set('accept', IGN).send(body);
    assert.equal(ign.status, 200);
    assert.equal(ign.headers['content-type'], `${IGN}; version=3.4.0`);
    assert.ok((JSON.parse(ign.text) as { storage: { files: { path: string }[] } }).storage.files.some((f) => f.path === '/etc/motd'));
    const envelope = await post().set('accept', 'application/json').query({ format: 'cloud-config' }).send(body);
    assert.equal(envelope.status, 200);
    assert.ok((envelope.body.warnings as string[]).some((w) => w.includes('containerLinuxConfig.additionalConfig is ignored')));
  });

  it('an Accept version below it is a 422 naming Accept', async () => {
    const res = await post().set('accept', `${IGN};version=3.3.0`).send(body);
    assert.equal(res.status, 422);
    assert.equal(res.body.errors[0].path, 'Accept');
    assert.match(res.body.errors[0].message, /lower than the spec of spec\.provisioning\.ignition\.containerLinuxConfig\.additionalConfig \(3\.4\.0\)/);
  });
});
