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
import { documentLimits } from '../../config.js';
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { type AssemblyParts, ruleLevels } from '../../store/assemble.js';
import type { RuleLevels, ToleratedProblem } from '../../rules.js';
import type { ClusterSpec, ProfileSpec } from '../../store/resources.js';
import { resourceName, type MachineSpec, type StoredResource } from '../../store/resources.js';
import type { Store } from '../../store/store.js';
import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { cloudConfigInclude, ignitionPointer } from '../../boot/pointer.js';
import { bootstrapUrl, IGNITION_PATH, machineIncarnation, signedUrl } from '../../boot/sign.js';
import { RequestError } from '../../errors.js';
import { IGNITION_MEDIA_TYPE } from '../../render.js';
import type { KnownRequest } from '../cache.js';
import { deliveryHeaders, deliveryQuery, deliveryResponses, negotiatedRender, noneMatch, sendBootstrapData, strongEtag } from '../deliver.js';
import type { ServiceContext } from '../context.js';
import type { AssembleTask, FollowingRender } from '../../work/task.js';
import { reportUrlFor } from '../signing.js';
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

/**
 * The key of an assembled request in the render cache: the three names and revisions,
 * which never change content, and a digest of the minted token when there is one (the
 * token itself never is a key: keys reach no log, but need not hold a secret).
 */
export const partsKey = ({ machine, cluster, profile, mintedToken }: AssemblyParts) =>
  `${machine.name}@${machine.revision}\n${cluster.name}@${cluster.revision}\n${profile.name}@${profile.revision}` +
  (mintedToken === undefined ? '' : `\ntoken ${createHash('sha256').update(mintedToken).digest('hex').slice(0, 32)}`);

/**
 * A stored machine's validated request, through the request cache: on a miss,
 * assembled and validated in the worker pool (src/work/pool.ts), sized by the parts as
 * JSON (assembly validates what they hold, as a body's parse does), so small parts
 * assemble on the main thread.
 *
 * @param background an assembly nobody waits for (pre-rendering): always in a worker.
 * @param render the render the caller will ask next (its Accept and query): on a miss,
 *   made in the same trip (`known.rendered`, which {@link cachedRender} takes).
 * @throws AssemblyError (422) when the three do not make a valid NodeBootstrap; the
 *   pool's RenderOverloadedError, RenderTimeoutError (503).
 */
export function assembledRequest(ctx: ServiceContext, parts: AssemblyParts, background = false, render?: FollowingRender): Promise<KnownRequest> {
  return ctx.cache.assembled(partsKey(parts), () => {
    if (!background) ctx.prerender.noteDemand();
    const task: AssembleTask = { op: 'assemble', parts, limits: documentLimits(ctx.config), ...(render ? { render } : {}) };
    return ctx.pool.run(task, background ? Number.POSITIVE_INFINITY : JSON.stringify(parts).length);
  });
}

/**
 * What a stored machine's render is held to (src/rules.ts): `{levels}` when one of its
 * revisions was accepted under an earlier release's rules, else nothing (every rule).
 */
export function storedLevels(parts: AssemblyParts): { levels?: RuleLevels } {
  const levels = ruleLevels(parts);
  return levels ? { levels } : {};
}

/**
 * Log and count what a machine was served in spite of (src/rules.ts): a problem of a rule
 * that came in after its documents were stored. The paths and messages name fields,
 * never values that are secrets.
 */
export function noteTolerated(ctx: ServiceContext, request: FastifyRequest, machine: string, tolerated: readonly ToleratedProblem[]): void {
  for (const rule of new Set(tolerated.map((t) => t.rule))) ctx.metrics.tolerated.inc({ rule });
  request.log.warn(
    { machine, tolerated: tolerated.map((t) => ({ rule: t.rule, path: t.path })) },
    'served a machine stored before a rule that refuses it on write: it boots as before; the next write of its profile or cluster must fix it (bootwright upgrade check lists them)',
  );
}

/**
 * Send a pointer config for a machine (issue 4, "Small user data"): for Ignition, a
 * config whose `ignition.config.replace` names the signed `/ignition` URL, pinned with
 * `ignitionVersion=` to the spec negotiated here, and carries the SHA-512 of exactly the
 * bytes that URL serves (its boot report URL included: the one `/ignition` derives from
 * the same expiry), and, when that URL is https and the service knows its CA, the
 * CA in `ignition.security.tls.certificateAuthorities`; for cloud-config, an `#include-once` of the signed NoCloud
 * `user-data` URL. The signed URL expires after `signedUrlSeconds`, and the hash holds
 * while the machine, cluster and profile stay unchanged.
 */
async function sendPointer(
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  machine: StoredResource<MachineSpec>,
  known: KnownRequest,
  query: Parameters<typeof negotiatedRender>[3],
): Promise<void> {
  const incarnation = machineIncarnation(machine);
  reply.header('vary', 'Accept');
  const base = ctx.signing.baseUrl(request);
  const now = Math.floor(Date.now() / 1000);
  const exp = String(now + ctx.signing.lifetimeSeconds);
  // The pointer is what must fit a platform's limit; the data it points at need not.
  const { result } = await negotiatedRender(ctx, request, known, { ...query, platform: null, reportUrl: reportUrlFor(ctx, base, machine, exp) });
  let body: string;
  let type: string;
  if (result.format === 'ignition') {
    const version = result.ignitionVersion!;
    const url = new URL(signedUrl(base, IGNITION_PATH, machine.name, ctx.signing.key(), ctx.signing.lifetimeSeconds, now, undefined, incarnation));
    url.searchParams.set('ignitionVersion', version);
    const sha512 = createHash('sha512').update(result.body, 'utf8').digest('hex');
    // Over HTTPS with a known CA, the pointer pins it (the image need not trust it).
    body = ignitionPointer(url.href, sha512, version, url.protocol === 'https:' ? ctx.tlsCa : undefined).body;
    type = `${IGNITION_MEDIA_TYPE}; version=${version}`;
  } else {
    body = cloudConfigInclude(`${bootstrapUrl('cloud-config', base, machine.name, ctx.signing.key(), ctx.signing.lifetimeSeconds, now, undefined, incarnation)}user-data`);
    type = 'text/plain; charset=utf-8';
  }
  const etag = strongEtag(createHash('sha256').update(body).digest('hex'));
  reply.header('etag', etag).header('cache-control', 'private, no-cache');
  if (noneMatch(request.headers['if-none-match'], etag)) {
    void reply.code(304).send();
    return;
  }
  void reply.header('content-type', type).send(Buffer.from(body, 'utf8'));
}

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
          'the cluster and profile revisions it recorded: the same bytes forever. Being those bytes, it carries no boot report URL; ' +
          'with `?pointer=true` the node fetches its data from the signed firmware route, which carries one.',
        security: [{ bearer: [] }],
        params: z.object({ name: resourceName.describe('the machine name') }),
        querystring: z.object({
          revision: z.coerce.number().int().min(1).optional().describe('the machine revision to render (default: the current revisions of all three)'),
          pointer: z
            .enum(['true', 'false'])
            .optional()
            .describe(
              'true: a small pointer instead of the data (for small user data such as EC2 16 KiB): an Ignition config replacing itself with the ' +
                'signed /ignition URL and its sha512 hash, or a cloud-init #include-once of the signed NoCloud user-data URL. Not with revision.',
            ),
          ...deliveryQuery,
        }),
        headers: z.object(deliveryHeaders),
        response: {
          ...deliveryResponses,
          200: {
            ...deliveryResponses[200],
            content: {
              ...deliveryResponses[200].content,
              'text/plain; charset=utf-8': { schema: z.string().describe('with pointer=true for cloud-config: an #include-once of the signed NoCloud user-data URL') },
            },
          },
          ...problemResponses(400, 401, 403, 404, 406, 422, 429, 503),
        },
      },
    },
    async (request, reply) => {
      const pointer = request.query.pointer === 'true';
      if (pointer && request.query.revision !== undefined) {
        throw new RequestError([{ path: 'pointer', message: 'a pointer names the signed URL, which serves the current revisions only; leave out revision' }], 400);
      }
      // What the firmware gets: a minting cluster's machine shows the token its fetch serves.
      const parts = await ctx.mintedTokens.withToken(await machineParts(ctx.store, request.params.name, request.query.revision));
      const query = { ...request.query, ...storedLevels(parts) };
      const known = await assembledRequest(ctx, parts, false, pointer ? undefined : { accept: request.headers.accept, query });
      if (pointer) await sendPointer(ctx, request, reply, parts.machine, known, query);
      else await sendBootstrapData(ctx, request, reply, known, query);
      return reply;
    },
  );
  done();
};
