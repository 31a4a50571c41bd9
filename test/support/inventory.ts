/**
 * HTTP helpers for inventory tests: a test service on a private in-memory store, typed
 * document builders and an exact problem assertion (status, media type, `errors[]`).
 */
import assert from 'node:assert/strict';
import request from 'supertest';
import { HASH, TOKEN } from './requests.js';
import { ADMIN, testService, type TestService } from './server.js';
import type { Config } from '../../src/config.js';

export const API = 'bootwright.dev/v1alpha1';

/** A started inventory service with call helpers bound to it (admin token). */
export interface Inventory {
  svc: TestService;
  /** POST or PUT a JSON document. */
  send: (method: 'post' | 'put', path: string, body: unknown) => Promise<request.Response>;
  /** GET with optional headers (admin token unless `token` is given, '' for none). */
  get: (path: string, headers?: Record<string, string>, token?: string) => Promise<request.Response>;
  close: () => Promise<void>;
}

/** Start a service (default in-memory store) and bind helpers to it. */
export async function inventory(overrides: Partial<Config> = {}): Promise<Inventory> {
  const svc = await testService(overrides);
  const http = () => request(svc.app.server);
  return {
    svc,
    send: (method, path, body) => http()[method](path).set('authorization', `Bearer ${ADMIN}`).set('content-type', 'application/json').send(JSON.stringify(body)),
    get: (path, headers = {}, token = ADMIN) => {
      const u = new URL(path, 'http://x');
      const r = http().get(`${u.pathname}${u.search}`);
      if (token) r.set('authorization', `Bearer ${token}`);
      for (const [k, v] of Object.entries(headers)) r.set(k, v);
      return r.then((res) => res);
    },
    close: () => svc.app.close(),
  };
}

/** A resource document. */
export const doc = (kind: 'Cluster' | 'Profile' | 'Machine', name: string, spec: unknown) => ({ apiVersion: API, kind, metadata: { name }, spec });

/** A cluster a worker can join. */
export const clusterSpec = (extra: Record<string, unknown> = {}) => ({ name: 'prod', controlPlaneEndpoint: 'api.prod.example.com:6443', bootstrapToken: TOKEN, caCertHashes: [HASH], ...extra });

/** A worker profile, `extra` merged in shallowly. */
export const workerProfileSpec = (extra: Record<string, unknown> = {}) => ({ role: 'worker', kubernetesVersion: 'v1.33.2', ...extra });

/** A machine of cluster `prod` and profile `worker`, `extra` merged in shallowly. */
export const machineSpec = (mac: string, extra: Record<string, unknown> = {}) => ({ selectors: { mac: [mac] }, cluster: 'prod', profile: 'worker', ...extra });

/**
 * Assert a problem response: exactly `status`, problem+json, and `errors[].path`
 * exactly `paths` (in any order); each message matching when `messages` gives a pattern
 * for that path.
 */
export function assertProblem(res: request.Response, status: number, paths: string[], messages: Record<string, RegExp> = {}): void {
  assert.equal(res.status, status, res.text);
  assert.match(res.headers['content-type'] ?? '', /^application\/problem\+json/);
  assert.equal(res.body.status, status);
  const got = ((res.body.errors ?? []) as { path: string; message: string }[]).map((e) => e.path).sort();
  assert.deepEqual(got, [...paths].sort(), res.text);
  for (const [path, pattern] of Object.entries(messages)) {
    const e = (res.body.errors as { path: string; message: string }[]).find((x) => x.path === path);
    assert.match(e!.message, pattern, res.text);
  }
}
