/**
 * The committed OpenAPI document is usable by a generated client:
 *
 * 1. openapi-typescript turns it into types, and a small openapi-fetch client written
 *    against them type-checks (tsc, strict, library checks on), including the call
 *    shape for POST /v1/render and refusals of wrong queries;
 * 2. openapi-fetch talks to the real service listening on 127.0.0.1 and gets an Ignition
 *    config and the JSON envelope back.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { load } from 'js-yaml';
import createClient from 'openapi-fetch';
import { RENDERER, testService, type TestService } from '../support/server.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = (name: string) => join(root, 'node_modules', '.bin', name);

/** Run a local tool; fail the test with its output when it fails. */
function run(command: string, args: string[], cwd: string): void {
  const r = spawnSync(command, args, { cwd, encoding: 'utf8', timeout: 60_000, env: { ...process.env, NO_COLOR: '1' } });
  assert.equal(r.error, undefined, `${command} did not run: ${String(r.error)}`);
  assert.equal(r.status, 0, `${command} ${args.join(' ')} exited ${String(r.status)}:\n${r.stdout}${r.stderr}`);
}

/** A client written against the generated types: it must compile. */
const CLIENT = `import createClient from 'openapi-fetch';
import type { components, paths } from './schema.js';

type NodeBootstrap = components['schemas']['NodeBootstrapInput'];
type Envelope = components['schemas']['RenderEnvelope'];
type Problem = components['schemas']['Problem'];

const client = createClient<paths>({ baseUrl: 'http://127.0.0.1:8080', headers: { authorization: 'Bearer token' } });

const body: NodeBootstrap = {
  apiVersion: 'bootwright.dev/v1alpha1',
  kind: 'NodeBootstrap',
  metadata: { name: 'worker-a' },
  spec: { role: 'worker', kubernetesVersion: 'v1.33.2', cluster: { name: 'prod' } },
};

export async function renderIgnition(): Promise<string | undefined> {
  const { data, error, response } = await client.POST('/v1/render', { body, params: { query: { format: 'ignition' } }, parseAs: 'text' });
  const status: number = response.status;
  const problem: Problem | undefined = error;
  void status;
  void problem;
  const text: string | undefined = data;
  return text;
}

// Restricted to application/json responses: the 200 body is the envelope.
const jsonClient = createClient<paths, 'application/json'>({ baseUrl: 'http://127.0.0.1:8080' });

export async function renderEnvelope(): Promise<Envelope | undefined> {
  const { data } = await jsonClient.POST('/v1/render', {
    body,
    params: { query: { ignitionVersion: '3.4' }, header: { accept: 'application/json' } },
  });
  if (data === undefined) return undefined;
  const sha256: string = data.sha256;
  const format: 'cloud-config' | 'ignition' = data.format;
  void sha256;
  void format;
  return data;
}

export async function operations(): Promise<string> {
  const health = await client.GET('/healthz');
  const status: 'ok' | undefined = health.data?.status;
  const metrics = await client.GET('/metrics', { parseAs: 'text' });
  return \`\${status ?? ''}\${metrics.data ?? ''}\`;
}

export function refusals(): void {
  // @ts-expect-error: not an output format
  void client.POST('/v1/render', { body, params: { query: { format: 'yaml' } } });
  // @ts-expect-error: not a route
  void client.POST('/v1/renders', { body });
  // @ts-expect-error: the body is required
  void client.POST('/v1/render', {});
  // @ts-expect-error: spec.role is one of init, control-plane, worker
  void client.POST('/v1/render', { body: { ...body, spec: { ...body.spec, role: 'master' } } });
}
`;

const TSCONFIG = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    lib: ['ES2023', 'DOM'],
    types: [],
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    skipLibCheck: false,
    noEmit: true,
  },
  files: ['schema.d.ts', 'client.ts'],
};

describe('generated client types', () => {
  it('openapi-typescript output and a client using it type-check', () => {
    // Inside the repository (under the git- and eslint-ignored .tmp/) so that
    // 'openapi-fetch' resolves from node_modules and the ESM package.json applies.
    mkdirSync(join(root, '.tmp'), { recursive: true });
    const dir = mkdtempSync(join(root, '.tmp', 'openapi-client-'));
    try {
      run(bin('openapi-typescript'), [join(root, 'openapi', 'openapi.json'), '-o', join(dir, 'schema.d.ts')], root);
      writeFileSync(join(dir, 'client.ts'), CLIENT);
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));
      run(bin('tsc'), ['-p', join(dir, 'tsconfig.json')], dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * At run time the client is used without the generated types (they exist only in the
 * step above): this is the slice of the document's `paths` the calls below need.
 */
interface RuntimePaths {
  '/v1/render': {
    post: {
      parameters: { query?: { format?: 'cloud-config' | 'ignition' }; header?: never; path?: never; cookie?: never };
      requestBody: { content: { 'application/json': Record<string, unknown> } };
      responses: {
        200: { headers: Record<string, unknown>; content: { 'application/json': Record<string, unknown> } };
        default: { headers: Record<string, unknown>; content: { 'application/problem+json': Record<string, unknown> } };
      };
    };
  };
}

describe('openapi-fetch against the running service', () => {
  let svc: TestService;
  let baseUrl: string;
  const worker = load(readFileSync(join(root, 'examples', 'worker.yaml'), 'utf8')) as Record<string, unknown>;

  before(async () => {
    svc = await testService({ logLevel: 'silent', maxEventLoopDelayMs: 0 });
    await svc.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = svc.app.server.address() as AddressInfo;
    baseUrl = `http://127.0.0.1:${port}`;
  });
  after(async () => {
    await svc.app.close();
  });

  const client = () => createClient<RuntimePaths>({ baseUrl, headers: { authorization: `Bearer ${RENDERER}` } });

  it('gets an Ignition 3.4.0 config for examples/worker.yaml', async () => {
    const { data, error, response } = await client().POST('/v1/render', {
      body: worker,
      headers: { accept: 'application/vnd.coreos.ignition+json;version=3.4.0' },
    });
    assert.equal(response.status, 200, JSON.stringify(error));
    assert.equal(response.headers.get('content-type'), 'application/vnd.coreos.ignition+json; version=3.4.0');
    assert.equal((data as { ignition: { version: string } }).ignition.version, '3.4.0');
  });

  it('gets the JSON envelope, whose sha256 is that of data', async () => {
    const { data, error, response } = await client().POST('/v1/render', {
      body: worker,
      params: { query: { format: 'ignition' } },
      headers: { accept: 'application/json' },
    });
    assert.equal(response.status, 200, JSON.stringify(error));
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    const envelope = data as { format: string; mediaType: string; data: string; sha256: string; size: number };
    assert.equal(envelope.format, 'ignition');
    assert.equal(envelope.sha256, createHash('sha256').update(envelope.data, 'utf8').digest('hex'));
    assert.equal(envelope.size, Buffer.byteLength(envelope.data, 'utf8'));
    assert.equal((JSON.parse(envelope.data) as { ignition: { version: string } }).ignition.version, envelope.mediaType.split('version=')[1]);
  });

  it('gets a problem document without a token', async () => {
    const { data, error, response } = await createClient<RuntimePaths>({ baseUrl }).POST('/v1/render', { body: worker });
    assert.equal(response.status, 401);
    assert.equal(data, undefined);
    assert.equal(response.headers.get('content-type'), 'application/problem+json; charset=utf-8');
    assert.equal((error as { status: number }).status, 401);
  });
});
