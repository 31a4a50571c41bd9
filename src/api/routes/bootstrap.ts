/**
 * `GET /v1/machines/{name}/bootstrap` (DESIGN §4, issue 4): a stored machine's bootstrap
 * data. The machine, its cluster and its profile are assembled into a NodeBootstrap
 * (src/store/assemble.ts) and served exactly as `POST /v1/render` serves one: the same
 * negotiation, render cache, ETag and 304 (src/api/deliver.ts).
 *
 * `?revision=N` pins: machine revision N with the cluster and profile revisions it
 * recorded when written, so the bytes never change however the three change later.
 * Without it: the machine's, cluster's and profile's current revisions.
 */
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { type AssemblyParts, machineNodeBootstrap } from '../../store/assemble.js';
import type { ClusterSpec, ProfileSpec } from '../../store/resources.js';
import { resourceName, type StoredResource } from '../../store/resources.js';
import type { Store } from '../../store/store.js';
import { deliveryHeaders, deliveryQuery, deliveryResponses, sendBootstrapData } from '../deliver.js';
import type { ServiceContext } from '../server.js';
import { problemResponses } from './resources.js';

/**
 * The three revisions a machine's bootstrap data comes from.
 *
 * @param revision the machine revision to pin, or undefined for the current revisions.
 * @throws NotFoundError when the machine does not exist (a deleted machine is not
 *   served, pinned or not) or has no such revision.
 */
export async function machineParts(store: Store, name: string, revision: number | undefined): Promise<AssemblyParts> {
  const current = await store.get('Machine', name);
  if (revision === undefined) {
    const [cluster, profile] = await Promise.all([store.get('Cluster', current.spec.cluster), store.get('Profile', current.spec.profile)]);
    return { machine: current, cluster, profile };
  }
  const machine = revision === current.revision ? current : await store.getRevision('Machine', name, revision);
  const refs = machine.refs!;
  const [cluster, profile]: [StoredResource<ClusterSpec>, StoredResource<ProfileSpec>] = await Promise.all([
    store.getRevision('Cluster', machine.spec.cluster, refs.clusterRevision),
    store.getRevision('Profile', machine.spec.profile, refs.profileRevision),
  ]);
  return { machine, cluster, profile };
}

/** The key of an assembled request in the render cache: the three names and revisions, which never change content. */
const partsKey = ({ machine, cluster, profile }: AssemblyParts) => `${machine.name}@${machine.revision}\n${cluster.name}@${cluster.revision}\n${profile.name}@${profile.revision}`;

/** The stored-machine bootstrap route. Needs the `render` scope (the data carries the cluster's secrets). */
export const bootstrapRoutes: FastifyPluginCallbackZod<ServiceContext> = (app, ctx, done) => {
  app.get(
    '/v1/machines/:name/bootstrap',
    {
      config: { scope: 'render' },
      schema: {
        tags: ['inventory'],
        operationId: 'getMachineBootstrap',
        summary: "Render a stored machine's bootstrap data",
        description:
          'The NodeBootstrap assembled from the machine, its cluster and its profile, rendered as POST /v1/render renders it ' +
          '(`?format=`, then `Accept`, then the profile\'s `output.format`, then cloud-config). `?revision=N` pins machine revision N with ' +
          'the cluster and profile revisions it recorded: the same bytes forever.',
        security: [{ bearer: [] }],
        params: z.object({ name: resourceName.describe('the machine name') }),
        querystring: z.object({
          revision: z.coerce.number().int().min(1).optional().describe('the machine revision to render (default: the current revisions of all three)'),
          ...deliveryQuery,
        }),
        headers: z.object(deliveryHeaders),
        response: {
          ...deliveryResponses,
          ...problemResponses(400, 401, 403, 404, 406, 422, 429, 503),
        },
      },
    },
    async (request, reply) => {
      const parts = await machineParts(ctx.store, request.params.name, request.query.revision);
      const known = ctx.cache.assembled(partsKey(parts), () => machineNodeBootstrap(parts));
      sendBootstrapData(ctx, request, reply, known, request.query);
      return reply;
    },
  );
  done();
};
