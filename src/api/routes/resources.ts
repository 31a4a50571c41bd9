/**
 * The inventory under /v1 (DESIGN §4, issue 4): clusters, profiles and machines.
 *
 * For each kind (`clusters`, `profiles`, `machines`):
 * `POST /v1/<kind>` create, `GET /v1/<kind>` list (`limit`, `continue`, `labelSelector`),
 * `GET|PUT|DELETE /v1/<kind>/{name}`, `GET /v1/<kind>/{name}/revisions`.
 *
 * Every resource has a revision, raised by one on each change and sent as the ETag
 * (`"3"`); PUT and DELETE take `If-Match` and answer 412 to a stale one. Secrets are
 * write-only: responses carry `"<redacted>"` in their place, and a PUT may send that
 * placeholder back to keep the stored secret. Bodies are JSON or YAML, validated by the
 * zod schemas of src/store/resources.ts; problems name each field (`spec.cluster`).
 * Routes only translate HTTP to store calls; errors become problems in server.ts.
 */
import type { FastifyContextConfig } from 'fastify';
import stringify from 'safe-stable-stringify';
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { PASSED, routeValidator } from '../validation.js';
import { type ZodType, z } from 'zod';
import { type FieldProblem, RequestError } from '../../errors.js';
import { zodProblems } from '../../request/parse.js';
import { jsonSafeSpec, LIST_DOCUMENTS, READ_DOCUMENTS, restoreSecrets, REVISION_LIST_DOCUMENTS, toReadDocument, WRITE_DOCUMENTS } from '../../store/documents.js';
import { NotFoundError, PreconditionFailedError } from '../../store/errors.js';
import { type ClusterSpec, type MachineSpec, type ProfileSpec, RESOURCE_API_VERSION, RESOURCE_KINDS, resourceName, type ResourceKind, type StoredResource } from '../../store/resources.js';
import { storedWarnings } from '../../compat/check.js';
import { documentLimits } from '../../config.js';
import type { ToleratedProblem } from '../../rules.js';
import { MAX_LIST_LIMIT, type ResourceInput, type SpecOf } from '../../store/store.js';
import { parseLabelSelector } from '../../store/selector.js';
import { checkWrite, type WriteCheckContext } from '../../store/writecheck.js';
import { bootPathWarnings, warningHeaders } from '../../store/write-warnings.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PROBLEM_MEDIA_TYPE, problemSchema } from '../problems.js';
import type { ServiceContext } from '../context.js';
import { noneMatch } from '../deliver.js';
import { YAML_MEDIA_TYPE, yamlResponses } from '../yaml-response.js';
import { machineStatus } from '../../store/status.js';

const problemContent = { content: { [PROBLEM_MEDIA_TYPE]: { schema: problemSchema } } };

/** Documented problem responses, by status. */
const PROBLEMS = {
  400: 'Malformed request: errors[] names the parameter or field',
  401: 'Missing or unknown bearer token',
  403: 'Token lacks the scope',
  404: 'No such resource (or revision)',
  406: 'No acceptable media type',
  409: 'Conflict: the name exists already, machines still use the resource (named in detail), or another machine has one of the hardware selectors (errors[] names the field, the message the machine)',
  412: 'If-Match does not name the current revision',
  413: 'Body over the size limit',
  415: 'Body media type not JSON or YAML',
  422: 'Invalid document, or one that could not render or boot (alone, or with a machine using it, named in the message): errors[] names each field (spec.cluster and spec.profile for missing references)',
  429: 'Rate limit exceeded (Retry-After)',
  503: 'Overloaded, or the inventory store cannot be used (disk full, I/O error, database unavailable): retry after Retry-After',
} as const;

/** The problem responses for `statuses`, as fastify response schemas. */
export function problemResponses<S extends keyof typeof PROBLEMS>(...statuses: S[]): Record<S, { description: string } & typeof problemContent> {
  return Object.fromEntries(statuses.map((s) => [s, { description: PROBLEMS[s], ...problemContent }])) as unknown as Record<S, { description: string } & typeof problemContent>;
}

/**
 * The scopes of a machine create or replace. A machine's firmware routes (`/ipxe`, then
 * its signed `/ignition` or `/nocloud` URL) serve its bootstrap data, its cluster's
 * secrets included, to whoever presents its selectors; whoever writes the machine
 * chooses them. So writing one needs the scope that may obtain that data, `render`,
 * besides `write`: otherwise `write` alone would read every cluster's secrets.
 */
const MACHINE_WRITE = {
  scope: ['write', 'render'] as const,
  scopeReason: "a machine's signed firmware URLs serve its cluster's secrets to whoever presents its selectors, so writing one needs the render scope that may obtain them",
};

/**
 * A document response with a description, its schema kept as a named component: JSON,
 * or YAML when Accept prefers it (src/api/yaml-response.ts).
 */
export const json = <S extends ZodType>(description: string, schema: S) => ({ description, content: { 'application/json': { schema }, [YAML_MEDIA_TYPE]: { schema } } });

/** An entity tag for a revision: the number in quotes (RFC 9110 §8.8.3). */
export const revisionEtag = (revision: number) => `"${revision}"`;

/**
 * Parse `If-Match` (RFC 9110 §13.1.1): `*`, or a list of entity tags, compared strongly
 * (a weak tag never matches). A bare number is read as the quoted tag.
 *
 * @returns undefined when the header is absent or `*` (no revision condition), else the
 *   revisions named (empty when no tag names one: nothing can match).
 */
export function parseIfMatch(header: string | undefined): { revisions: number[]; text: string } | undefined {
  if (header === undefined || header.trim() === '') return undefined;
  const tags = header.split(',').map((t) => t.trim());
  if (tags.includes('*')) return undefined;
  const revisions = tags.flatMap((t) => {
    const m = /^(?:"(\d{1,15})"|(\d{1,15}))$/.exec(t);
    return m ? [Number(m[1] ?? m[2])] : [];
  });
  return { revisions, text: header.trim() };
}

/**
 * The revision a write is conditional on, from `If-Match`.
 *
 * @param current the current revision, read only when the header lists several tags
 *   or names none (one tag is checked atomically by the store itself).
 * @throws PreconditionFailedError when no listed tag is the current revision.
 */
async function conditionalRevision(kind: ResourceKind, name: string, header: string | undefined, current: () => Promise<number>): Promise<number | undefined> {
  const condition = parseIfMatch(header);
  if (!condition) return undefined;
  if (condition.revisions.length === 1) return condition.revisions[0];
  const revision = await current();
  if (!condition.revisions.includes(revision)) throw new PreconditionFailedError(kind, name, condition.text, revision);
  return revision;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Validate a written document of `kind`, after putting stored secrets back where it
 * says `"<redacted>"` (replace only).
 *
 * @throws RequestError: 400 without a body; 422 naming every invalid field.
 */
function readWrite<K extends ResourceKind>(kind: K, body: unknown, current: StoredResource<SpecOf<K>> | undefined): { input: ResourceInput<SpecOf<K>>; restored: boolean } {
  if (body === undefined || body === null) throw new RequestError([{ path: '', message: `send a ${kind} document (JSON or YAML)` }], 400);
  let doc = body;
  let restored = false;
  const problems: FieldProblem[] = [];
  if (isObject(body) && body.spec !== undefined) {
    const r = restoreSecrets(kind, body.spec, current?.spec);
    doc = { ...body, spec: r.spec };
    restored = r.restored;
    problems.push(...r.problems);
  }
  const result = WRITE_DOCUMENTS[kind].safeParse(doc);
  // A placeholder's own problem says more than its format error.
  if (!result.success) problems.unshift(...zodProblems(result.error).filter((p) => !problems.some((q) => q.path === p.path)));
  if (problems.length > 0 || !result.success) throw new RequestError(problems);
  const { metadata, spec } = result.data;
  return { input: { name: metadata.name, ...(metadata.labels ? { labels: metadata.labels } : {}), spec: jsonSafeSpec(kind, spec as SpecOf<K>) }, restored };
}

/** What the write-time checks (src/store/writecheck.ts) need, for one request. */
export function writeCheckContext(ctx: ServiceContext, request: FastifyRequest): WriteCheckContext {
  return {
    store: ctx.store,
    maxMachines: ctx.config.writeCheckMaxMachines,
    baseUrl: ctx.signing.baseUrl(request),
    signingKey: ctx.signing.key(),
    signedUrlSeconds: ctx.signing.lifetimeSeconds,
    workloads: ctx.workloads,
  };
}

/**
 * Send the write-time warnings of a document as `Warning` headers (src/store/write-warnings.ts):
 * for a profile, boot references that resolve to nothing this service serves.
 */
function sendWarnings<K extends ResourceKind>(ctx: ServiceContext, request: FastifyRequest, reply: FastifyReply, kind: K, input: ResourceInput<SpecOf<K>>): void {
  if (kind !== 'Profile') return;
  const warnings = bootPathWarnings(input.spec as ProfileSpec, ctx.signing.baseUrl(request), ctx.config.assetsDir);
  if (warnings.length > 0) void reply.header('warning', warningHeaders(warnings));
}

/**
 * Whether a replace would write what is already current: the same labels and spec
 * (compared as canonical JSON, after defaults and restored secrets) and, for a machine,
 * pins that are still the current cluster and profile revisions (a replace re-pins them).
 * Such a replace writes nothing, as the Kubernetes API server skips a no-op update
 * without changing `resourceVersion`.
 */
async function unchanged<K extends ResourceKind>(ctx: ServiceContext, kind: K, input: ResourceInput<SpecOf<K>>, current: StoredResource<SpecOf<K>>): Promise<boolean> {
  if (stringify(input.labels ?? {}) !== stringify(current.labels) || stringify(input.spec) !== stringify(current.spec)) return false;
  if (kind !== 'Machine') return true;
  const spec = input.spec as SpecOf<'Machine'>;
  const refs = current.refs;
  if (!refs) return false;
  const [cluster, profile] = await Promise.all([ctx.store.get('Cluster', spec.cluster).catch(() => undefined), ctx.store.get('Profile', spec.profile).catch(() => undefined)]);
  return cluster?.revision === refs.clusterRevision && profile?.revision === refs.profileRevision;
}

/** Machines whose warnings are computed between two turns of the event loop. */
const WARNINGS_YIELD_EVERY = 20;

/**
 * The `status.warnings` of each machine ({@link storedWarnings}), by name; machines whose
 * cluster or profile is gone meanwhile have none. Each cluster and profile is read once.
 */
async function machineWarnings(ctx: ServiceContext, machines: readonly StoredResource<MachineSpec>[]): Promise<Map<string, ToleratedProblem[]>> {
  const out = new Map<string, ToleratedProblem[]>();
  const clusters = new Map<string, Promise<StoredResource<ClusterSpec> | undefined>>();
  const profiles = new Map<string, Promise<StoredResource<ProfileSpec> | undefined>>();
  const read = <S>(memo: Map<string, Promise<StoredResource<S> | undefined>>, kind: 'Cluster' | 'Profile', name: string) => {
    let p = memo.get(name);
    if (!p) {
      p = ctx.store.get(kind, name).then(
        (r) => r as StoredResource<S>,
        (e: unknown) => {
          if (e instanceof NotFoundError) return undefined;
          throw e;
        },
      );
      memo.set(name, p);
    }
    return p;
  };
  const limits = documentLimits(ctx.config);
  for (const [i, machine] of machines.entries()) {
    if (i > 0 && i % WARNINGS_YIELD_EVERY === 0) await new Promise((resolve) => setImmediate(resolve));
    const [cluster, profile] = await Promise.all([read<ClusterSpec>(clusters, 'Cluster', machine.spec.cluster), read<ProfileSpec>(profiles, 'Profile', machine.spec.profile)]);
    if (cluster && profile) out.set(machine.name, storedWarnings({ machine, cluster, profile }, limits));
  }
  return out;
}

const nameParams = z.object({ name: resourceName.describe('the resource name (a DNS-1123 label)') });

/**
 * `?dryRun=All`, as the Kubernetes API takes it: the write runs every check it makes
 * (validation, the write-time render checks, and the store's own: existence, references,
 * hardware selectors, `If-Match`) and answers what it would have stored, keeping nothing.
 */
const dryRunQuery = z.object({
  dryRun: z
    .literal('All')
    .optional()
    .describe('`All`: check the write and answer what it would store (the revision it would get included), keeping nothing, as the Kubernetes API does'),
});

/** Register the routes of one kind (generic so each kind keeps its own document types). */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- K ties the store calls, schemas and responses of one kind together
function kindRoutes<K extends ResourceKind>(app: Parameters<FastifyPluginCallbackZod<ServiceContext>>[0], ctx: ServiceContext, kind: K): void {
  const collection = RESOURCE_KINDS[kind];
  const base = `/v1/${collection}`;
  const one = kind.toLowerCase();
  const read = READ_DOCUMENTS[kind];
  const body = WRITE_DOCUMENTS[kind];
  const common = { tags: ['inventory'], security: [{ bearer: [] }] };
  const store = ctx.store;
  const writeConfig: FastifyContextConfig = kind === 'Machine' ? MACHINE_WRITE : { scope: 'write' };
  const writeScopes = kind === 'Machine' ? ' Needs the `write` and `render` scopes: ' + MACHINE_WRITE.scopeReason + '.' : '';
  /**
   * Machines as read documents with their live lifecycle in `status` (phase,
   * transitions, what was served, the last report; src/store/status.ts
   * `machineStatus`), from one read of their status rows, so a page costs one query
   * more, not one per machine. A machine never booted reads `Registered`. A machine
   * whose documents were stored before a rule that refuses them on write also carries
   * `warnings` (src/compat/check.ts `storedWarnings`, remembered per revisions; its
   * cluster and profile read once per name, the checks yielding to other requests).
   */
  const withLiveStatus = async (machines: readonly StoredResource[]) => {
    const records = await store.statuses(machines.map((m) => m.name));
    const warnings = await machineWarnings(ctx, machines as readonly StoredResource<MachineSpec>[]);
    const now = new Date();
    return machines.map((m) => {
      const document = toReadDocument(m);
      const w = warnings.get(m.name);
      return { ...document, status: { ...document.status!, ...machineStatus(records.get(m.name), now, ctx.config.reportTimeoutSeconds), ...(w && w.length > 0 ? { warnings: w } : {}) } };
    });
  };

  app.post(
    base,
    {
      config: writeConfig,
      schema: {
        ...common,
        operationId: `create${kind}`,
        summary: `Create a ${one}`,
        description:
          `Creates the ${one} at revision 1 (a name deleted before continues after its last revision). ` +
          (kind === 'Machine' ? 'The cluster and profile it names must exist (422 naming spec.cluster or spec.profile). ' : '') +
          'Answers the stored document, secrets redacted, with its revision as the ETag.' +
          writeScopes,
        consumes: ['application/json', 'application/yaml'],
        querystring: dryRunQuery,
        body,
        response: { 201: json(`The ${one} as stored (with dryRun, as it would be stored)`, read), ...problemResponses(400, 401, 403, 409, 413, 415, 422, 429, 503) },
      },
    },
    async (request, reply) => {
      const dryRun = request.query.dryRun !== undefined;
      const { input } = readWrite(kind, request.body, undefined);
      await checkWrite(kind, input, writeCheckContext(ctx, request));
      const created = await store.create(kind, input, { dryRun });
      if (kind === 'Machine' && !dryRun) ctx.prerender.enqueue([created.name]);
      sendWarnings(ctx, request, reply, kind, input);
      void reply.code(201).header('etag', revisionEtag(created.revision)).header('location', `${base}/${created.name}`).header('cache-control', 'no-store');
      return toReadDocument(created);
    },
  );

  app.get(
    base,
    {
      config: { scope: 'read' },
      schema: {
        ...common,
        operationId: `list${kind}s`,
        summary: `List ${collection}`,
        description:
          'Pages by name; pass `metadata.continue` of a page as `?continue=` for the next. Secrets redacted.' +
          (kind === 'Machine' ? ' Each machine carries its live `status` (phase, transitions, what was served, the last boot report), as a single read does.' : ''),
        querystring: z.object({
          limit: z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).optional().describe(`items per page, 1 to ${MAX_LIST_LIMIT} (default 100)`),
          continue: z.string().optional().describe('the continue token of the previous page'),
          labelSelector: z.string().optional().describe('Kubernetes label selector, every requirement holding: `key=value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key`, `!key`, separated by commas'),
        }),
        response: { 200: json(`A page of ${collection}`, LIST_DOCUMENTS[kind]), ...problemResponses(400, 401, 403, 429, 503) },
      },
    },
    async (request, reply) => {
      const { limit, labelSelector } = request.query;
      const page = await store.list(kind, {
        ...(limit !== undefined ? { limit } : {}),
        ...(request.query.continue !== undefined ? { continue: request.query.continue } : {}),
        ...(labelSelector !== undefined ? { labelSelector: parseLabelSelector(labelSelector, { maxChars: ctx.config.maxLabelSelectorChars, maxTerms: ctx.config.maxLabelSelectorTerms }) } : {}),
      });
      void reply.header('cache-control', 'no-store');
      return {
        apiVersion: RESOURCE_API_VERSION,
        kind: `${kind}List` as const,
        metadata: page.continue !== undefined ? { continue: page.continue } : {},
        // A page of machines carries each one's live lifecycle, as a single GET does
        // (one read of the page's status rows): `bootwright get machines` shows PHASE.
        items: kind === 'Machine' ? await withLiveStatus(page.items) : page.items.map(toReadDocument),
      };
    },
  );

  app.get(
    `${base}/:name`,
    {
      config: { scope: 'read' },
      schema: {
        ...common,
        operationId: `get${kind}`,
        summary: `Read a ${one}`,
        description:
          'The current revision, secrets redacted; the ETag is the revision. `If-None-Match` with it answers 304' +
          (kind === 'Machine' ? ', except for machines: their `status` carries the live lifecycle (phase, transitions, what was served, the last boot report), so they are always sent.' : '.'),
        params: nameParams,
        headers: z.object({ 'if-none-match': z.string().optional().describe('an ETag from an earlier response; a match answers 304') }),
        response: { 200: json(`The ${one}`, read), 304: z.undefined().describe('Not modified: If-None-Match names the current revision'), ...problemResponses(400, 401, 403, 404, 429, 503) },
      },
    },
    async (request, reply) => {
      const current = await store.get(kind, request.params.name);
      const etag = revisionEtag(current.revision);
      void reply.header('etag', etag);
      if (kind === 'Machine') {
        // The lifecycle changes without a new revision: a machine is never answered 304,
        // and its ETag names the spec revision only (for If-Match).
        void reply.header('cache-control', 'no-store');
        return (await withLiveStatus([current]))[0]!;
      }
      void reply.header('cache-control', 'private, no-cache');
      if (noneMatch(request.headers['if-none-match'], etag)) return reply.code(304).send();
      return toReadDocument(current);
    },
  );

  app.put(
    `${base}/:name`,
    {
      config: writeConfig,
      schema: {
        ...common,
        operationId: `replace${kind}`,
        summary: `Replace a ${one}`,
        description:
          'Replaces labels and spec, raising the revision by one. With `If-Match: "<revision>"` only when that is still current (else 412). ' +
          'A secret sent as "<redacted>" keeps the stored value. ' +
          'A document that changes nothing (the same labels and spec' +
          (kind === 'Machine' ? ', with the cluster and profile revisions it pins still current' : '') +
          ') writes no revision and answers the current one, as the Kubernetes API does for a no-op update.' +
          (kind === 'Machine' ? ' The machine then pins the current cluster and profile revisions.' : '') +
          writeScopes,
        consumes: ['application/json', 'application/yaml'],
        params: nameParams,
        querystring: dryRunQuery,
        headers: z.object({ 'if-match': z.string().optional().describe('"<revision>" (the ETag): write only if it is still current') }),
        body,
        response: { 200: json(`The ${one} as stored (with dryRun, as it would be stored)`, read), ...problemResponses(400, 401, 403, 404, 412, 413, 415, 422, 429, 503) },
      },
    },
    async (request, reply) => {
      const { name } = request.params;
      const current = await store.get(kind, name);
      let ifMatch = await conditionalRevision(kind, name, request.headers['if-match'], () => Promise.resolve(current.revision));
      if (ifMatch !== undefined && ifMatch !== current.revision) throw new PreconditionFailedError(kind, name, ifMatch, current.revision);
      const { input, restored } = readWrite(kind, request.body, current);
      if (input.name !== name) throw new RequestError([{ path: 'metadata.name', message: `must be "${name}", the name in the path (resources cannot be renamed)` }]);
      // Secrets put back from `current` must not land on top of a newer revision.
      if (restored) ifMatch = current.revision;
      sendWarnings(ctx, request, reply, kind, input);
      if (await unchanged(ctx, kind, input, current)) {
        void reply.header('etag', revisionEtag(current.revision)).header('cache-control', 'no-store');
        return toReadDocument(current);
      }
      await checkWrite(kind, input, writeCheckContext(ctx, request));
      const dryRun = request.query.dryRun !== undefined;
      const updated = await store.replace(kind, input, { dryRun, ...(ifMatch !== undefined ? { ifMatch } : {}) });
      // Its data (or that of every machine naming it) changed: render it again ahead of the boot.
      if (!dryRun) {
        if (kind === 'Machine') ctx.prerender.enqueue([updated.name]);
        else void ctx.prerender.enqueueReferencing(kind, updated.name);
      }
      void reply.header('etag', revisionEtag(updated.revision)).header('cache-control', 'no-store');
      return toReadDocument(updated);
    },
  );

  app.delete(
    `${base}/:name`,
    {
      config: { scope: 'write' },
      schema: {
        ...common,
        operationId: `delete${kind}`,
        summary: `Delete a ${one}`,
        description:
          'Deletes the resource; its revisions stay readable. With `If-Match` only when that revision is still current (else 412).' +
          (kind === 'Machine' ? '' : ` A ${one} that machines still use is not deleted: 409 naming them.`),
        params: nameParams,
        querystring: dryRunQuery,
        headers: z.object({ 'if-match': z.string().optional().describe('"<revision>" (the ETag): delete only if it is still current') }),
        response: { 204: z.undefined().describe('Deleted (with dryRun: would be deleted)'), ...problemResponses(400, 401, 403, 404, 409, 412, 429, 503) },
      },
    },
    async (request, reply) => {
      const { name } = request.params;
      const ifMatch = await conditionalRevision(kind, name, request.headers['if-match'], async () => (await store.get(kind, name)).revision);
      await store.delete(kind, name, { dryRun: request.query.dryRun !== undefined, ...(ifMatch !== undefined ? { ifMatch } : {}) });
      return reply.code(204).send();
    },
  );

  app.get(
    `${base}/:name/revisions`,
    {
      config: { scope: 'read' },
      schema: {
        ...common,
        operationId: `list${kind}Revisions`,
        summary: `List a ${one}'s revisions`,
        description: 'Every revision, oldest first, also of a deleted resource; secrets redacted.',
        params: nameParams,
        response: {
          200: json(`Revisions of the ${one}, oldest first`, REVISION_LIST_DOCUMENTS[kind]),
          ...problemResponses(400, 401, 403, 404, 429, 503),
        },
      },
    },
    async (request, reply) => {
      const history = await store.revisions(kind, request.params.name);
      void reply.header('cache-control', 'no-store');
      return { apiVersion: RESOURCE_API_VERSION, kind: `${kind}RevisionList`, items: history.map(toReadDocument) };
    },
  );
}

/** The inventory routes (scopes: `read` for GET, `write` for POST, PUT and DELETE; `write` and `render` to create or replace a machine). */
export const resourceRoutes: FastifyPluginCallbackZod<ServiceContext> = (app, ctx, done) => {
  yamlResponses(app);
  // Bodies are validated in the handler (readWrite), after secrets are put back and with
  // the NodeBootstrap's field paths; the body schema still documents them in OpenAPI.
  app.setValidatorCompiler<ZodType>((route) => (route.httpPart === 'body' ? () => PASSED : routeValidator(route)));
  for (const kind of Object.keys(RESOURCE_KINDS) as ResourceKind[]) kindRoutes(app, ctx, kind);
  done();
};
