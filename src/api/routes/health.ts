/**
 * Operations routes: liveness, readiness and Prometheus metrics. Public (probes and
 * scrapers carry no token); none of them returns a secret.
 */
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { PROBLEM_MEDIA_TYPE, problemSchema } from '../problems.js';
import { type ServiceContext } from '../context.js';
import { sendProblem } from '../replies.js';

const status = z.object({ status: z.literal('ok') });

const problemContent = { content: { [PROBLEM_MEDIA_TYPE]: { schema: problemSchema } } };
/** Rate limiting (when on) covers every route, probes included. */
const rateLimited = { description: 'Rate limit exceeded (Retry-After)', ...problemContent };
const overloaded = { description: 'Overloaded (Retry-After)', ...problemContent };
const unavailable = { description: 'Overloaded (Retry-After), or the store does not answer', ...problemContent };

/** `GET /healthz`, `GET /readyz`, `GET /metrics`. */
export const healthRoutes: FastifyPluginCallbackZod<ServiceContext> = (app, ctx, done) => {
  // Liveness stays 200 under overload (a busy process is alive); readiness sheds it.
  app.get(
    '/healthz',
    {
      config: { pressureHandler: () => undefined },
      schema: {
        tags: ['operations'],
        operationId: 'getHealthz',
        summary: 'Liveness: the process serves HTTP',
        description: 'Public. Stays 200 while the service is overloaded.',
        security: [],
        response: { 200: status.describe('The process is alive'), 429: rateLimited },
      },
    },
    () => ({ status: 'ok' as const }),
  );
  app.get(
    '/readyz',
    {
      schema: {
        tags: ['operations'],
        operationId: 'getReadyz',
        summary: 'Readiness: the service can render and its store answers',
        description: 'Public. 503 while the service is overloaded, its render workers are still loading (just after start), or the store does not answer.',
        security: [],
        response: { 200: status.describe('The service is ready'), 429: rateLimited, 503: unavailable },
      },
    },
    async (request, reply) => {
      // Just after start the render workers load the pipeline (seconds on a busy machine):
      // traffic sent meanwhile would queue behind them, so a load balancer waits.
      if (ctx.pool.starting) return sendProblem(reply, 'unavailable', 503, 'the render workers are starting');
      try {
        await ctx.store.ping();
      } catch (e) {
        request.log.error({ err: { type: (e as Error).name, message: (e as Error).message } }, 'readiness: the store does not answer');
        return sendProblem(reply, 'unavailable', 503, 'the store does not answer');
      }
      return { status: 'ok' as const };
    },
  );
  app.get(
    '/metrics',
    {
      schema: {
        tags: ['operations'],
        operationId: 'getMetrics',
        summary: 'Prometheus metrics',
        description: 'Public. No metric carries a secret.',
        security: [],
        produces: ['text/plain'],
        response: {
          200: { description: 'Prometheus text exposition format', content: { 'text/plain': { schema: z.string() } } },
          429: rateLimited,
          503: overloaded,
        },
      },
    },
    async (_request, reply) => reply.type(ctx.metrics.registry.contentType).send(await ctx.metrics.registry.metrics()),
  );
  done();
};
