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
 * problem, never a file outside the directory. A symlink is followed only when its target
 * is inside the directory too (`flatcar/current -> flatcar/4230.2.0`); one that leaves it
 * is a 404. Files are read as the service's user.
 *
 * Nothing served here runs on the service's origin (where the status page and its form
 * token live): every answer carries `X-Content-Type-Options: nosniff`,
 * `Content-Security-Policy: sandbox; default-src 'none'` (a browser that renders it anyway
 * gives it an opaque origin and no script) and `Content-Disposition: attachment`, and a
 * file is typed as what it is only for the passive types boot files have
 * ({@link PASSIVE_TYPES}); HTML, SVG, XML, JavaScript and the rest are
 * `application/octet-stream`. iPXE, curl and Ignition read the bytes and ignore all three.
 */
import { ASSETS_PREFIX } from '../../boot/ipxe.js';
import { realpathSync, statSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync } from 'fastify';
import { ConfigError } from '../../config.js';
import type { ServiceContext } from '../context.js';


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

/** Types an asset keeps (media type without parameters): nothing a browser runs. */
export const PASSIVE_TYPES = new Set(['application/octet-stream', 'text/plain', 'application/gzip', 'application/x-xz', 'application/zstd', 'application/x-bzip2', 'application/x-tar', 'application/x-cpio', 'application/x-iso9660-image', 'application/json']);

/** The headers that keep an asset inert in a browser; see the module comment. */
const INERT_HEADERS = { 'x-content-type-options': 'nosniff', 'content-security-policy': "sandbox; default-src 'none'", 'content-disposition': 'attachment' } as const;

/**
 * Whether the file a request names resolves (symlinks followed) inside the directory.
 * A name that does not exist is allowed here, so that `send` answers its 404.
 *
 * @param realRoot the directory's own real path
 */
export function staysInside(realRoot: string, root: string, pathName: string): boolean {
  let real: string;
  try {
    real = realpathSync(join(root, pathName));
  } catch {
    return true;
  }
  return real === realRoot || real.startsWith(realRoot + sep);
}

/** Register `GET|HEAD /assets/*` when `assetsDir` is configured. */
export const assetRoutes: FastifyPluginAsync<ServiceContext> = async (app, ctx) => {
  if (ctx.config.assetsDir === undefined) return;
  const root = assetsRoot(ctx.config.assetsDir);
  const realRoot = realpathSync(root);
  await app.register(fastifyStatic, {
    root,
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
    allowedPath: (pathName) => !pathName.includes('\0') && staysInside(realRoot, root, pathName),
    setHeaders: (reply) => {
      const type = String(reply.getHeader('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
      if (!PASSIVE_TYPES.has(type)) void reply.header('content-type', 'application/octet-stream');
      void reply.headers(INERT_HEADERS);
    },
  });
};
