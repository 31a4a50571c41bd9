/**
 * Operator routes for booting machines (issue 4): a machine's audit log, the machines
 * that booted without matching a registration, and resetting a machine's fetch counter.
 */
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { resourceName } from '../../store/resources.js';
import { InvalidArgumentError } from '../../store/errors.js';
import { type DiscoveredMachine, MAX_LIST_LIMIT, type Store } from '../../store/store.js';
import type { ServiceContext } from '../context.js';
import { json, problemResponses } from './resources.js';
import { yamlResponses } from '../yaml-response.js';

const limitQuery = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).optional().describe(`at most this many rows, 1 to ${MAX_LIST_LIMIT} (default 100)`),
});

const auditEntrySchema = z
  .object({
    id: z.int().describe('increasing with each row written'),
    machine: z.string(),
    route: z.string().describe('the route fetched, e.g. /ignition, /ipxe, /nocloud/user-data'),
    client: z.string().describe('the client address as the service saw it'),
    status: z.int().describe('the HTTP status answered'),
    at: z.string().describe('ISO 8601 UTC'),
    userAgent: z.string().optional().describe('the User-Agent header (at most 256 characters)'),
    reason: z.string().optional().describe('why a refusal was answered: client-address (a bound URL fetched from another address), already-fetched (first fetch wins), else the problem detail'),
    revision: z.int().optional().describe('the machine revision served'),
    sha256: z.string().optional().describe('hex SHA-256 of the config served'),
    format: z.string().optional().describe('the format served: cloud-config or ignition'),
    ignitionVersion: z.string().optional().describe('the Ignition spec served'),
    outcome: z.string().optional().describe('a boot report\'s outcome (route /report): success or failure'),
    repeats: z
      .int()
      .min(2)
      .optional()
      .describe('how many identical answers of an unauthenticated route (/ipxe: same client, User-Agent and status, one after another) this row stands for, when more than one; at is the first one\'s time'),
    lastAt: z.string().optional().describe('with repeats: the newest identical answer\'s time, ISO 8601 UTC'),
  })
  .meta({ id: 'AuditEntry' });

const discoveredSchema = z
  .object({
    mac: z.string().optional().describe('lower-case colon form'),
    uuid: z.string().optional(),
    serial: z.string().optional(),
    hostname: z.string().optional(),
    firstSeen: z.string().describe('ISO 8601 UTC'),
    lastSeen: z.string().describe('ISO 8601 UTC'),
    count: z.int().describe('how many times it was seen'),
    id: z.string().describe('the entry\'s id, for DELETE /v1/discovered/{id} and `bootwright enroll`'),
    enrolled: z.string().optional().describe('the machine that matches this identity, once one is created or replaced; listed only with ?enrolled=true'),
    why: z.string().optional().describe('why its latest sighting matched no machine: the machines excluded by a selector that differs, or that none has its values'),
    buildarch: z.string().optional().describe("iPXE's ${buildarch} at its latest sighting (x86_64, arm64, …)"),
    platform: z.string().optional().describe("iPXE's ${platform} at its latest sighting (pcbios, efi)"),
  })
  .meta({ id: 'DiscoveredMachine' });



export const bootAdminRoutes: FastifyPluginCallbackZod<ServiceContext> = (app, ctx, done) => {
  yamlResponses(app);
  const common = { tags: ['inventory'], security: [{ bearer: [] }] };

  app.get(
    '/v1/machines/:name/audit',
    {
      config: { scope: 'read' },
      schema: {
        ...common,
        operationId: 'getMachineAudit',
        summary: "A machine's fetch audit log",
        description:
          'Every answer the firmware-facing routes gave about this machine (/ipxe, /ignition, /nocloud, /report), refusals included, newest first, ' +
          'with the user agent, the reason of a refusal, what a served config was (revision, sha256, format, Ignition spec) and a report\'s outcome.',
        params: z.object({ name: resourceName.describe('the machine name') }),
        querystring: limitQuery,
        response: { 200: json('Audit rows, newest first', z.object({ items: z.array(auditEntrySchema) })), ...problemResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (request, reply) => {
      const items = await ctx.store.audit(request.params.name, { limit: request.query.limit ?? 100 });
      // Rows outlive a deleted machine; a name with no rows and no machine is a 404.
      if (items.length === 0) await ctx.store.get('Machine', request.params.name);
      void reply.header('cache-control', 'no-store');
      return { items };
    },
  );

  app.get(
    '/v1/discovered',
    {
      config: { scope: 'read' },
      schema: {
        ...common,
        operationId: 'listDiscoveredMachines',
        summary: 'Machines that booted without matching a registration',
        description: 'Each distinct identity (MAC, UUID, serial, host name) seen at GET /ipxe that matched no machine, most recently seen first: enrol them as machines.',
        querystring: limitQuery.extend({
          enrolled: z.enum(['true', 'false']).optional().describe('`true` lists the entries a machine already matches too (with `enrolled` naming it); default `false`'),
          continue: z.string().optional().describe('the `continue` of the previous page'),
        }),
        response: {
          200: json(
            'Discovered machines, most recently seen first',
            z.object({ items: z.array(discoveredSchema), continue: z.string().optional().describe('present when the page is full: pass it as `continue` for the next page (which may be empty)') }),
          ),
          ...problemResponses(400, 401, 403, 429, 503),
        },
      },
    },
    async (request, reply) => {
      const page = await discoveredPage(ctx.store, { limit: request.query.limit ?? 100, includeEnrolled: request.query.enrolled === 'true', continue: request.query.continue });
      void reply.header('cache-control', 'no-store');
      return page;
    },
  );

  const idParams = z.object({ id: z.string().regex(/^\d{1,15}$/, 'must be the decimal id of a discovered machine').describe('the id of the discovered machine') });

  app.get(
    '/v1/discovered/:id',
    {
      config: { scope: 'read' },
      schema: {
        ...common,
        operationId: 'getDiscoveredMachine',
        summary: 'Read a discovered machine',
        description: 'One entry of GET /v1/discovered, enrolled or not.',
        params: idParams,
        response: { 200: json('The discovered machine', discoveredSchema), ...problemResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (request, reply) => {
      const item = await ctx.store.getDiscovered(request.params.id);
      void reply.header('cache-control', 'no-store');
      return item;
    },
  );

  app.delete(
    '/v1/discovered/:id',
    {
      config: { scope: 'write' },
      schema: {
        ...common,
        operationId: 'deleteDiscoveredMachine',
        summary: 'Dismiss a discovered machine',
        description: 'Removes the entry. The same hardware booting again unmatched is recorded again, as a new entry with a new id.',
        params: idParams,
        response: { 204: z.undefined().describe('Deleted'), ...problemResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (request, reply) => {
      await ctx.store.deleteDiscovered(request.params.id);
      return reply.code(204).send();
    },
  );

  app.delete(
    '/v1/machines/:name/fetches',
    {
      config: { scope: 'write' },
      schema: {
        ...common,
        operationId: 'resetMachineFetches',
        summary: "Reset a machine's fetch counter",
        description: "Sets the count of the machine's secret-bearing fetches back to 0, so a machine that reached its `maxFetches` can fetch its data again.",
        params: z.object({ name: resourceName.describe('the machine name') }),
        response: { 204: z.undefined().describe('Reset'), ...problemResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (request, reply) => {
      await ctx.store.get('Machine', request.params.name);
      await ctx.store.resetFetches(request.params.name);
      return reply.code(204).send();
    },
  );
  done();
};

/**
 * One page of discovered machines (Store.listDiscovered), with the `continue` token of
 * the next page when the page is full (the next may be empty): keyset paging on (last seen, id), so a page costs the
 * same however deep it is, and entries seen again while paging move to the front rather
 * than being repeated further on. The token is base64url of `lastSeen\nid` of the page's
 * last entry.
 *
 * @throws InvalidArgumentError naming `continue` for a token this function did not make,
 *   or `limit` as the store
 */
export async function discoveredPage(
  store: Store,
  options: { limit: number; includeEnrolled: boolean; continue?: string | undefined },
): Promise<{ items: DiscoveredMachine[]; continue?: string }> {
  let after: { lastSeen: string; id: string } | undefined;
  if (options.continue !== undefined && options.continue !== '') {
    const m = /^(\d{4}-\d{2}-\d{2}T[\d:.]+Z)\n(\d{1,15})$/.exec(Buffer.from(options.continue, 'base64url').toString('utf8'));
    if (!m) throw new InvalidArgumentError('continue', 'is not a continue token of this list');
    after = { lastSeen: m[1]!, id: m[2]! };
  }
  const items = await store.listDiscovered({ limit: options.limit, includeEnrolled: options.includeEnrolled, ...(after ? { after } : {}) });
  // A full page may be the last one: the next is then empty (as Kubernetes' `continue`).
  if (items.length < options.limit) return { items };
  const last = items.at(-1)!;
  return { items, continue: Buffer.from(`${last.lastSeen}\n${last.id}`, 'utf8').toString('base64url') };
}
