/**
 * Write the service's OpenAPI document to `openapi/openapi.json` (`npm run openapi`).
 *
 * The document is what `GET /openapi.json` serves: the real server is built (not
 * listening) with a throwaway admin token, logging silenced and the rate limiter and
 * overload shedding off (neither adds routes), and `app.swagger()` is serialised with
 * two-space indentation and a trailing newline. It holds no timestamps or secrets, so
 * the same source always gives the same bytes; test/openapi/drift.test.ts fails when
 * the committed file is stale.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildServer } from '../src/api/server.js';
import { loadConfig } from '../src/config.js';

/** Where the committed document lives. */
export const OPENAPI_PATH = fileURLToPath(new URL('../openapi/openapi.json', import.meta.url));

/** The command that regenerates {@link OPENAPI_PATH}. */
export const REGENERATE_COMMAND = 'npm run openapi';

/** The OpenAPI document exactly as it is committed: pretty JSON, 2 spaces, trailing newline. */
export async function generateOpenApi(): Promise<string> {
  const config = loadConfig(
    {},
    {
      logLevel: 'silent',
      rateLimitMax: 0,
      maxEventLoopDelayMs: 0,
      tokens: [{ name: 'admin', token: randomBytes(24).toString('hex'), scopes: ['admin'] }],
    },
  );
  const app = await buildServer({ config });
  try {
    await app.ready();
    return `${JSON.stringify(app.swagger(), null, 2)}\n`;
  } finally {
    await app.close();
  }
}

async function main(): Promise<void> {
  const text = await generateOpenApi();
  mkdirSync(dirname(OPENAPI_PATH), { recursive: true });
  writeFileSync(OPENAPI_PATH, text);
  process.stdout.write(`wrote ${relative(process.cwd(), OPENAPI_PATH)} (${Buffer.byteLength(text)} bytes)\n`);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
