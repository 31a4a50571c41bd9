/**
 * The optional plain-HTTP listener of an HTTPS service (issue 16, `BOOTWRIGHT_HTTP_PORT`):
 * for firmware that cannot do TLS, or does not trust the CA. It answers through the same
 * fastify instance (`app.routing`: same hooks, limits, metrics, audit), but only the iPXE
 * routes and the assets they boot ({@link PLAIN_ROUTES}); every other route is a 404 problem there (server.ts), so a
 * token or a secret-bearing URL never has a plain-HTTP answer.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { answerClientError } from './replies.js';

/** Whether a request's connection is TLS (the main listener of an HTTPS service), not the plain listener. */
export function isEncrypted(socket: Socket): boolean {
  return (socket as { encrypted?: unknown }).encrypted === true;
}

/** Requests that came in through the plain listener (a request injected in-process, such as `serve --detach`'s readiness probe, did not). */
const plainRequests = new WeakSet<IncomingMessage>();

/** Whether the request came in through the plain listener of an HTTPS service. */
export function cameInPlain(request: IncomingMessage): boolean {
  return plainRequests.has(request) && !isEncrypted(request.socket);
}

/**
 * The routes the plain listener serves: the chain script, the per-machine script, and
 * `/assets/`, where the scripts it serves point iPXE's kernel and initrd fetches (public
 * files, no token).
 */
export const PLAIN_ROUTES: ReadonlySet<string> = new Set(['/boot.ipxe', '/ipxe', '/assets/*']);

/**
 * Listen on `config.host`:`port` with plain HTTP/1.1 (keep-alive, the same header limit,
 * request timeout and client-error answers as the main listener), handing requests to
 * `app`. The caller closes it before `app` ({@link closePlain}).
 *
 * @returns the listening server
 * @throws Error when the address cannot be bound (`EADDRINUSE`)
 */
export async function listenPlain(app: FastifyInstance, config: Config, port: number): Promise<Server> {
  const server = createServer(
    {
      maxHeaderSize: config.maxHeaderBytes,
      requestTimeout: Math.round(config.requestTimeoutSeconds * 1000),
      connectionsCheckingInterval: Math.min(1000, Math.max(100, Math.round((config.requestTimeoutSeconds * 1000) / 4))),
    },
    (req, res) => {
      plainRequests.add(req);
      app.routing(req, res);
    },
  );
  server.keepAliveTimeout = app.server.keepAliveTimeout;
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { address, port: bound } = server.address() as AddressInfo;
  app.log.info({ address, port: bound, routes: [...PLAIN_ROUTES] }, `plain HTTP (iPXE routes and assets only) on ${address.includes(':') ? `[${address}]` : address}:${bound}`);
  return server;
}

/** Stop accepting on the plain listener and close its idle keep-alive connections (busy ones close after their answer, which says `Connection: close`). */
export function closePlain(server: Server): void {
  server.close();
  server.closeIdleConnections();
}
