/**
 * `GET /ca.crt` (issue 16): the CA that issued the HTTPS certificate, for images and
 * operators to trust (`curl --cacert`, `/usr/local/share/ca-certificates/`, an iPXE
 * `TRUST=` build). Public: a CA certificate is no secret. 404 when the service knows no
 * CA (plain HTTP, or an operator certificate without `BOOTWRIGHT_TLS_CA`).
 */
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { PROBLEM_MEDIA_TYPE, problemSchema } from '../problems.js';
import { type ServiceContext } from '../context.js';
import { sendProblem } from '../replies.js';

/** RFC 8555 §9.1's media type for PEM certificates. */
export const PEM_CHAIN_MEDIA_TYPE = 'application/pem-certificate-chain';

const problemContent = { content: { [PROBLEM_MEDIA_TYPE]: { schema: problemSchema } } };

/** The CA route. */
export const caRoutes: FastifyPluginCallbackZod<ServiceContext> = (app, ctx, done) => {
  app.get(
    '/ca.crt',
    {
      // Machines behind one address fetch it during a boot storm, as /boot.ipxe.
      config: { rateLimit: false },
      schema: {
        tags: ['boot'],
        security: [],
        operationId: 'getCaCertificate',
        summary: 'The CA of the HTTPS certificate (PEM)',
        description:
          'The private CA `BOOTWRIGHT_TLS=auto` generated (or `BOOTWRIGHT_TLS_CA`), which Ignition pointer configs pin in `ignition.security.tls.certificateAuthorities`. ' +
          'Fetch it once over a channel you trust, or compare its fingerprint with the one the service logs at start.',
        response: {
          200: { description: 'The CA certificate, PEM', content: { [PEM_CHAIN_MEDIA_TYPE]: { schema: z.string() } } },
          404: { description: 'The service knows no CA (plain HTTP, or an operator certificate without BOOTWRIGHT_TLS_CA)', ...problemContent },
          429: { description: 'Rate limit exceeded (Retry-After)', ...problemContent },
          503: { description: 'Overloaded (Retry-After)', ...problemContent },
        },
      },
    },
    async (_request, reply) => {
      if (ctx.tlsCa === undefined) return sendProblem(reply, 'not-found', 404, 'this service knows no CA: it serves plain HTTP, or an operator certificate without BOOTWRIGHT_TLS_CA');
      return reply.header('content-type', PEM_CHAIN_MEDIA_TYPE).header('cache-control', 'public, max-age=300').send(ctx.tlsCa);
    },
  );
  done();
};
