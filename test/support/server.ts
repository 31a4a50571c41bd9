/**
 * A service instance for HTTP tests: real fastify, real routes, in-process, with known
 * tokens and captured logs.
 */
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../src/api/server.js';
import { type Config, loadConfig } from '../../src/config.js';
import type { Store } from '../../src/store/store.js';

export const ADMIN = 'admin-token-0123456789abcdef';
export const RENDERER = 'render-token-0123456789abcdef';
export const READER = 'read-token-0123456789abcdef';

/** A started test service and everything it logged. */
export interface TestService {
  app: FastifyInstance;
  logs: () => string;
}

/** A token with only the write scope. */
export const WRITER = 'write-token-0123456789abcdef';

/**
 * Build a service with four tokens (admin, render, read, write) and the given config
 * overrides; `options.store` is the inventory (default a private in-memory one; the
 * caller closes a store it passes, after the service).
 */
export async function testService(overrides: Partial<Config> = {}, options: { store?: Store } = {}): Promise<TestService> {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  const config = loadConfig(
    {},
    {
      logLevel: 'info',
      rateLimitMax: 0,
      // Tests block the event loop on purpose (synchronous child processes); shedding is
      // tested on its own with this turned on.
      maxEventLoopDelayMs: 0,
      // One render worker, and every miss renders in it (no input is small enough to stay
      // inline), so the tests cross threads where a service would for larger inputs; each
      // test service starts one thread, not one per core.
      renderWorkers: 1,
      renderInlineBytes: 0,
      tokens: [
        { name: 'admin', token: ADMIN, scopes: ['admin'] },
        { name: 'renderer', token: RENDERER, scopes: ['render'] },
        { name: 'reader', token: READER, scopes: ['read'] },
        { name: 'writer', token: WRITER, scopes: ['write'] },
      ],
      ...overrides,
    },
  );
  const app = await buildServer({ config, logStream: stream, ...(options.store ? { store: options.store } : {}) });
  await app.ready();
  return { app, logs: () => Buffer.concat(chunks).toString('utf8') };
}
