/**
 * Operations routes: liveness, readiness and Prometheus metrics. Public (probes and
 * scrapers carry no token); none of them returns a secret.
 */
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ServiceContext } from '../server.js';

const status = z.object({ status: z.literal('ok') });

/** `GET /healthz`, `GET /readyz`, `GET /metrics`. */
export const healthRoutes: FastifyPluginCallbackZod<ServiceContext> = (app, ctx, done) => {
  // Liveness stays 200 under overload (a busy process is alive); readiness sheds it.
  app.get('/healthz', { config: { pressureHandler: () => undefined }, schema: { tags: ['operations'], summary: 'Liveness: the process serves HTTP', response: { 200: status } } }, () => ({ status: 'ok' as const }));
  app.get('/readyz', { schema: { tags: ['operations'], summary: 'Readiness: the service can render', response: { 200: status } } }, () => ({ status: 'ok' as const }));
  app.get(
    '/metrics',
    {
      schema: {
        tags: ['operations'],
        summary: 'Prometheus metrics',
        produces: ['text/plain'],
        response: { 200: { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: z.string() } } } },
      },
    },
    async (_request, reply) => reply.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics()),
  );
  done();
};
