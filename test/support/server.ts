/**
 * A service instance for HTTP tests: real fastify, real routes, in-process, with known
 * tokens and captured logs.
 */
import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../src/api/server.js';
import { type Config, loadConfig } from '../../src/config.js';

export const ADMIN = 'admin-token-0123456789abcdef';
export const RENDERER = 'render-token-0123456789abcdef';
export const READER = 'read-token-0123456789abcdef';

/** A started test service and everything it logged. */
export interface TestService {
  app: FastifyInstance;
  logs: () => string;
}

/** Build a service with three tokens (admin, render, read) and the given config overrides. */
export async function testService(overrides: Partial<Config> = {}): Promise<TestService> {
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
      tokens: [
        { name: 'admin', token: ADMIN, scopes: ['admin'] },
        { name: 'renderer', token: RENDERER, scopes: ['render'] },
        { name: 'reader', token: READER, scopes: ['read'] },
      ],
      ...overrides,
    },
  );
  const app = await buildServer({ config, logStream: stream });
  await app.ready();
  return { app, logs: () => Buffer.concat(chunks).toString('utf8') };
}
