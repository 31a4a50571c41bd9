/**
 * `GET /v1/fleet` (issue 14): machines counted by lifecycle phase, and the discovered
 * machines waiting to be enrolled. What `bootwright status` prints and the `/ui` page heads with.
 */
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { type FleetCounts, PHASES } from '../../store/status.js';
import { type ServiceContext, stalledBefore } from '../context.js';
import { problemResponses } from './resources.js';

/** The fleet counts document (component `Fleet`). */
export const fleetSchema = z
  .object({
    machines: z.int().describe('machines in the inventory'),
    phases: z.object(Object.fromEntries(PHASES.map((p) => [p, z.int()])) as Record<(typeof PHASES)[number], z.ZodInt>).describe('machines by phase; they add up to machines'),
    discovered: z.int().describe('entries under GET /v1/discovered not yet enrolled (no machine matches them)'),
  })
  .meta({ id: 'Fleet' });

/** The fleet counts now (a few aggregate queries of the store). */
export function fleetCounts(ctx: ServiceContext, now = new Date()): Promise<FleetCounts> {
  return ctx.store.fleet(stalledBefore(ctx.config, now));
}

/** The fleet route (scope `read`). */
export const fleetRoutes: FastifyPluginCallbackZod<ServiceContext> = (app, ctx, done) => {
  app.get(
    '/v1/fleet',
    {
      config: { scope: 'read' },
      schema: {
        tags: ['inventory'],
        security: [{ bearer: [] }],
        operationId: 'getFleet',
        summary: 'Machines by lifecycle phase',
        description:
          'Counts of the machines in each phase (Registered, Booting, Provisioning, Joined, Failed, Stalled: see `status.phase` of GET /v1/machines/{name}) and of the discovered machines.',
        response: { 200: { description: 'The fleet counts', content: { 'application/json': { schema: fleetSchema } } }, ...problemResponses(401, 403, 429, 503) },
      },
    },
    async (_request, reply) => {
      void reply.header('cache-control', 'no-store');
      return fleetCounts(ctx);
    },
  );
  done();
};
