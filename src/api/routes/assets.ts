/**
 * `GET /assets/*` (issue 14): kernels, initrds and images from `BOOTWRIGHT_ASSETS_DIR`,
 * for the `boot.kernel` and `boot.initrd` of profiles that name them by a relative
 * path (`/assets/flatcar/vmlinuz` resolves against the public URL, src/boot/ipxe.ts).
 *
 * Served by @fastify/static (the `send` module): `Range` requests answer 206 with
 * `Content-Range` (RFC 9110 §14), `If-None-Match`/`If-Modified-Since` 304, HEAD too.
 * No token, like the other firmware routes: assets must hold nothing secret. A path
 * that leaves the directory (`..`, an encoded `%2e%2e`, a NUL) is refused, dotfiles
 * are not served, directories are never listed: each is a 404 (403 for a traversal)
 * problem, never a file outside the directory. Files are read as the service's user.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';
import { ConfigError } from '../../config.js';
import type { ServiceContext } from '../context.js';

/** The URL prefix assets are served under. */
export const ASSETS_PREFIX = '/assets/';

/**
 * The assets directory, absolute.
 *
 * @throws ConfigError naming BOOTWRIGHT_ASSETS_DIR when it is not a readable directory
 *   (checked at start, not at the first boot).
 */
export function assetsRoot(dir: string): string {
  const root = resolve(dir);
  let isDir: boolean;
  try {
    isDir = statSync(root).isDirectory();
  } catch (e) {
    throw new ConfigError(`assetsDir (BOOTWRIGHT_ASSETS_DIR): ${root}: ${(e as NodeJS.ErrnoException).code ?? 'cannot read'}`);
  }
  if (!isDir) throw new ConfigError(`assetsDir (BOOTWRIGHT_ASSETS_DIR): ${root} is not a directory`);
  return root;
}

/** Register `GET|HEAD /assets/*` when `assetsDir` is configured. */
export const assetRoutes: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  if (ctx.config.assetsDir === undefined) return;
  await app.register(fastifyStatic, {
    root: assetsRoot(ctx.config.assetsDir),
    prefix: ASSETS_PREFIX,
    // swagger-ui decorates the reply with sendFile already; this plugin needs none.
    decorateReply: false,
    index: false,
    list: false,
    dotfiles: 'deny',
    acceptRanges: true,
    etag: true,
    lastModified: true,
    // Kernels change when an operator replaces them: revalidate (ETag) on every boot.
    cacheControl: true,
    maxAge: 0,
    allowedPath: (pathName) => !pathName.includes('\0'),
  });
};
