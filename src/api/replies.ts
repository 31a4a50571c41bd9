/**
 * Answers every route shares: an RFC 9457 problem document, the 503 of a failed store,
 * and the answer to an HTTP request Node could not parse (before fastify has a request).
 */
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { RequestError } from '../errors.js';
import type { Metrics } from './metrics.js';
import { problem, PROBLEM_MEDIA_TYPE, type ProblemKind } from './problems.js';

/** Send a problem document. */
export function sendProblem(reply: FastifyReply, kind: ProblemKind, status: number, detail: string, errors?: RequestError['problems']): FastifyReply {
  return reply.code(status).type(PROBLEM_MEDIA_TYPE).header('cache-control', 'no-store').send(problem(kind, status, detail, errors));
}

/** Client errors Node's HTTP parser reports before a request exists, and their answers. */
const CLIENT_ERRORS: Record<string, [ProblemKind, number, string, string]> = {
  HPE_HEADER_OVERFLOW: ['malformed-request', 431, 'Request Header Fields Too Large', 'the request line and headers are larger than the limit (BOOTWRIGHT_MAX_HEADER_BYTES)'],
  ERR_HTTP_REQUEST_TIMEOUT: ['malformed-request', 408, 'Request Timeout', 'the request was not received in time (BOOTWRIGHT_REQUEST_TIMEOUT_SECONDS)'],
};

/**
 * fastify's `clientErrorHandler`: errors Node's HTTP parser raises on a connection (no
 * request object yet) get an RFC 9457 problem where one fits (431 for headers over
 * `maxHeaderBytes`, 408 for a request not received within `requestTimeoutSeconds`),
 * else a bare 400; always with `Connection: close`, and the socket is closed after.
 */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable || (error.code === 'ECONNRESET' || error.code === 'EPIPE')) {
    socket.destroy();
    return;
  }
  const known = error.code ? CLIENT_ERRORS[error.code] : undefined;
  const [kind, status, reason, detail] = known ?? (['malformed-request', 400, 'Bad Request', 'the request could not be parsed as HTTP/1.1'] as const);
  const body = JSON.stringify(problem(kind, status, detail));
  // Node's HTTP sockets allow half-open connections: end() alone would leave a client
  // that keeps sending holding the socket, so destroy it once the answer is written.
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: ${PROBLEM_MEDIA_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}

/**
 * Answer `503` because the store failed (a storage fault, src/store/faults.ts): a
 * problem with `Retry-After`, replacing whatever the reply was about to carry (its
 * entity headers described another body). Counted in `bootwright_storage_faults_total`.
 *
 * @returns the problem document, serialized, for an `onSend` hook to return as the
 *   payload (a route handler may send it too).
 */
export function storageUnavailable(ctx: { config: Config; metrics: Metrics }, request: FastifyRequest, reply: FastifyReply, code: string): string {
  ctx.metrics.storageFaults.inc({ code });
  request.log.warn({ fault: code }, 'the store failed: answering 503');
  void reply.header('retry-after', String(ctx.config.retryAfterSeconds));
  return replaceWithProblem(reply, 'unavailable', 503, `the inventory store cannot be used right now (${code}); retry after the time in Retry-After`);
}

/**
 * Turn an answer into an RFC 9457 problem from an `onSend` hook, before its bytes leave:
 * the status and media type are set, the headers of the body it replaces (ETag, Vary,
 * Content-Encoding, Content-Length, Last-Modified) dropped, and the problem returned as
 * the payload to send instead.
 */
export function replaceWithProblem(reply: FastifyReply, kind: ProblemKind, status: number, detail: string): string {
  for (const name of ['etag', 'vary', 'content-encoding', 'content-length', 'last-modified']) reply.removeHeader(name);
  void reply.code(status).type(PROBLEM_MEDIA_TYPE).header('cache-control', 'no-store');
  return JSON.stringify(problem(kind, status, detail));
}
