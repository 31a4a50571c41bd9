/**
 * The status page at `/ui` (issue 14, DESIGN §4 "fleet status page (read scope)"):
 * server-rendered HTML (src/ui/pages.ts) that works without JavaScript, with a small
 * script polling `/ui/state.json` for live phases.
 *
 * - Access: the same bearer tokens. `POST /ui/login` takes a token from a form and sets
 *   a session for it (src/api/session.ts: signed, naming the token, never holding it,
 *   lasting `uiSessionSeconds`) as the cookie {@link COOKIE} (HttpOnly, SameSite=Strict,
 *   Path=/ui, Secure when the request came over HTTPS); an `Authorization: Bearer` header
 *   works too. Reading needs
 *   `read`; enrolling a discovered machine needs `write` and `render`, as creating the
 *   Machine through the API does; resetting a machine's fetches needs `write`, as
 *   `DELETE /v1/machines/NAME/fetches` does.
 * - CSRF: besides SameSite=Strict, every POST must carry no `Origin` or this service's
 *   own, and the forms that act (enrol, reset fetches, sign out) carry a form token: HMAC-SHA256 of the
 *   session id under the URL-signing key (a new one at every sign-in), checked in
 *   constant time.
 * - Every response carries a Content-Security-Policy with a per-response nonce for the
 *   inline style sheet and script (no external assets), `X-Content-Type-Options:
 *   nosniff`, `Referrer-Policy: same-origin` (with `no-referrer` browsers send `Origin: null`, and
 *   the Origin check would refuse the page's own forms), `Cache-Control: no-store`.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Scope } from '../../config.js';
import { type FieldProblem, RequestError } from '../../errors.js';
import { zodProblems } from '../../request/parse.js';
import { jsonSafeSpec, WRITE_DOCUMENTS } from '../../store/documents.js';
import { AlreadyExistsError, DiscoveredNotFoundError, DuplicateSelectorError, InvalidArgumentError, MissingReferenceError, NotFoundError } from '../../store/errors.js';
import { type MachineSpec, RESOURCE_API_VERSION, resourceName, type StoredResource } from '../../store/resources.js';
import { machineStatus, PHASES } from '../../store/status.js';
import { parseLabelSelector } from '../../store/selector.js';
import { checkWrite } from '../../store/writecheck.js';
import { writeCheckContext } from './resources.js';
import { fleetBody, type Filters, loginBody, machineBody, type MachineRow, messageBody, notFoundBody, page } from '../../ui/pages.js';
import { enrolmentSelectors } from '../../boot/match.js';
import { hasScope } from '../auth.js';
import { bearerSession, issueSession, type Session, verifySession } from '../session.js';
import type { ServiceContext } from '../context.js';
import { registerFormParser } from '../body.js';
import { discoveredPage } from './boot-admin.js';
import { fleetCounts } from './fleet.js';

/** The session cookie's name. */
export const COOKIE = 'bootwright_ui';
/** Largest form body the page takes, bytes (the form parser's and each form route's `bodyLimit`, which a 413 names). */
const FORM_LIMIT = 16 * 1024;
/** Machines, discovered entries, clusters and profiles shown per page. */
const PAGE_ROWS = 100;

const filterQuery = z.object({
  phase: z.union([z.enum(PHASES), z.literal('')]).optional().describe('only machines in this phase'),
  label: z.string().optional().describe('a label selector (key=value terms)'),
  cluster: z.union([resourceName, z.literal('')]).optional().describe('only machines of this cluster'),
  continue: z.string().optional().describe('the next page of machines'),
  discovered: z.string().optional().describe('the next page of discovered machines'),
});

/** The session cookie's value, if the request carries one. */
function sessionCookie(request: FastifyRequest): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [name, ...rest] = part.trim().split('=');
    if (name === COOKIE) return rest.join('=');
  }
  return undefined;
}

/**
 * The session a request presents: by its bearer header, else by its session cookie.
 * `presented` says whether it presented either (an ended session is not a first visit).
 */
function sessionOf(ctx: ServiceContext, request: FastifyRequest): { session?: Session; presented: boolean } {
  const bearer = /^Bearer[ \t]+([\x21-\x7e]+)[ \t]*$/i.exec(request.headers.authorization ?? '')?.[1];
  if (bearer) {
    const principal = ctx.tokens.authenticate(`Bearer ${bearer}`);
    return { ...(principal ? { session: bearerSession(principal, bearer) } : {}), presented: true };
  }
  const cookie = sessionCookie(request);
  if (cookie === undefined || cookie === '') return { presented: false };
  const session = verifySession(ctx.signing.key(), ctx.tokens, cookie);
  return { ...(session ? { session } : {}), presented: true };
}

/** The form token of a session: base64url HMAC-SHA256 of `ui-csrf\n<session id>` under the URL-signing key. */
function formToken(ctx: ServiceContext, session: Session): string {
  return createHmac('sha256', ctx.signing.key()).update(`ui-csrf\n${session.sid}`, 'utf8').digest('base64url');
}

/** Whether a form carried the session's form token (compared in constant time). */
function formTokenMatches(ctx: ServiceContext, session: Session, given: string | undefined): boolean {
  const expected = Buffer.from(formToken(ctx, session));
  const got = Buffer.from(given ?? '');
  return got.length === expected.length && timingSafeEqual(got, expected);
}

/** Whether a POST comes from this page: no `Origin`, or this service's own (scheme and host as the request names them). */
function sameOrigin(request: FastifyRequest): boolean {
  const origin = request.headers.origin;
  return origin === undefined || origin === `${request.protocol}://${request.host}`;
}

/** The UI routes. */
export const uiRoutes: FastifyPluginCallbackZod<ServiceContext> = (app, ctx, done) => {
  registerFormParser(app, FORM_LIMIT);

  const nonces = new WeakMap<FastifyRequest, string>();
  app.addHook('onRequest', (request, reply, next) => {
    const nonce = randomBytes(16).toString('base64');
    nonces.set(request, nonce);
    void reply
      .header(
        'content-security-policy',
        `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; connect-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`,
      )
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'same-origin')
      .header('cache-control', 'no-store');
    next();
  });

  const send = (request: FastifyRequest, reply: FastifyReply, status: number, title: string, body: Parameters<typeof page>[2], options: Parameters<typeof page>[3] = {}) =>
    reply.code(status).type('text/html; charset=utf-8').send(page(title, nonces.get(request) ?? '', body, options));

  /** The session, or a sign-in page sent (401) / a 403 page sent. */
  const session = (request: FastifyRequest, reply: FastifyReply, scopes: readonly Scope[]): Session | undefined => {
    const { session: s, presented } = sessionOf(ctx, request);
    if (!s) {
      void send(request, reply, 401, 'Sign in', loginBody(presented ? 'That session has ended, or its token is not known: sign in again.' : undefined));
      return undefined;
    }
    const missing = scopes.filter((scope) => !hasScope(s.principal, scope));
    if (missing.length > 0) {
      void send(request, reply, 403, 'Not allowed', messageBody(`The token lacks the ${missing.join(' and ')} scope.`), { signedIn: true, csrf: formToken(ctx, s) });
      return undefined;
    }
    return s;
  };

  const hidden = { hide: true } as const;

  /** The fleet's state for the filters: counts and the page's rows. */
  const fleetState = async (filters: Filters & { continue?: string }) => {
    const list = await ctx.store.list('Machine', {
      limit: PAGE_ROWS,
      ...(filters.continue ? { continue: filters.continue } : {}),
      ...(filters.label ? { labelSelector: parseLabelSelector(filters.label, { maxChars: ctx.config.maxLabelSelectorChars, maxTerms: ctx.config.maxLabelSelectorTerms }) } : {}),
    });
    const records = await ctx.store.statuses(list.items.map((m) => m.name));
    const now = new Date();
    const rows: MachineRow[] = list.items
      .filter((m) => !filters.cluster || m.spec.cluster === filters.cluster)
      .map((machine) => ({ machine, status: machineStatus(records.get(machine.name), now, ctx.config.reportTimeoutSeconds) }))
      .filter((r) => !filters.phase || r.status.phase === filters.phase);
    return { fleet: await fleetCounts(ctx, now), rows, next: list.continue };
  };

  const filtersOf = (q: z.infer<typeof filterQuery>): Filters & { continue?: string } => ({
    ...(q.phase ? { phase: q.phase } : {}),
    ...(q.label ? { label: q.label } : {}),
    ...(q.cluster ? { cluster: q.cluster } : {}),
    ...(q.continue ? { continue: q.continue } : {}),
  });

  app.get('/', { schema: { ...hidden, querystring: filterQuery } }, async (request, reply) => {
    const s = session(request, reply, ['read']);
    if (!s) return reply;
    const filters = filtersOf(request.query);
    const { fleet, rows, next } = await fleetState(filters);
    const [clusters, profiles, discovered] = await Promise.all([
      ctx.store.list('Cluster', { limit: PAGE_ROWS }),
      ctx.store.list('Profile', { limit: PAGE_ROWS }),
      discoveredPage(ctx.store, { limit: PAGE_ROWS, includeEnrolled: false, continue: request.query.discovered }),
    ]);
    const nextQuery = next ? `/ui?${new URLSearchParams({ ...(filters.phase ? { phase: filters.phase } : {}), ...(filters.label ? { label: filters.label } : {}), ...(filters.cluster ? { cluster: filters.cluster } : {}), continue: next }).toString()}` : undefined;
    const csrf = formToken(ctx, s);
    return send(
      request,
      reply,
      200,
      'Fleet',
      fleetBody({
        fleet,
        rows,
        filters,
        clusters: clusters.items.map((c) => c.name),
        profiles: profiles.items.map((p) => p.name),
        discovered: discovered.items,
        ...(discovered.continue ? { discoveredNext: `/ui?${new URLSearchParams({ discovered: discovered.continue }).toString()}` } : {}),
        canEnrol: hasScope(s.principal, 'write') && hasScope(s.principal, 'render'),
        canWrite: hasScope(s.principal, 'write'),
        now: new Date(),
        csrf,
        ...(nextQuery ? { next: nextQuery } : {}),
      }),
      { signedIn: true, script: true, csrf },
    );
  });

  app.get('/state.json', { schema: { ...hidden, querystring: filterQuery } }, async (request, reply) => {
    const { session: s } = sessionOf(ctx, request);
    if (!s || !hasScope(s.principal, 'read')) return reply.code(401).type('application/json').send('{"error":"sign in"}');
    const { fleet, rows } = await fleetState(filtersOf(request.query));
    return reply.type('application/json').send(JSON.stringify({ machines: fleet.machines, phases: fleet.phases, rows: Object.fromEntries(rows.map((r) => [r.machine.name, r.status.phase])) }));
  });

  /** A machine, or (none of that name) an HTML 404 page sent and undefined. */
  const machineOr404 = async (request: FastifyRequest, reply: FastifyReply, s: Session, name: string) => {
    try {
      return await ctx.store.get('Machine', name);
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw e;
      void send(request, reply, 404, 'Not found', notFoundBody(`No machine is named ${name}.`), { signedIn: true, csrf: formToken(ctx, s) });
      return undefined;
    }
  };

  /** Whether a POST came from this page with the session's form token; else a 403 page sent. */
  const fromThisPage = (request: FastifyRequest, csrf: string | undefined, reply: FastifyReply, s: Session): boolean => {
    if (sameOrigin(request) && formTokenMatches(ctx, s, csrf)) return true;
    void send(request, reply, 403, 'Not allowed', messageBody('The form was not sent from this page (its form token does not match): reload the page and try again.'), { signedIn: true, csrf: formToken(ctx, s) });
    return false;
  };

  // Any other path under /ui: a page, not a problem document.
  app.setNotFoundHandler((request, reply) => {
    const { session: s } = sessionOf(ctx, request);
    return send(request, reply, 404, 'Not found', notFoundBody(`There is no page at ${request.url.split('?')[0]!}.`), s ? { signedIn: true, csrf: formToken(ctx, s) } : {});
  });

  app.get('/machines/:name', { schema: { ...hidden, params: z.object({ name: resourceName }) } }, async (request, reply) => {
    const s = session(request, reply, ['read']);
    if (!s) return reply;
    const machine = await machineOr404(request, reply, s, request.params.name);
    if (!machine) return reply;
    const [records, audit, revisions, fetchCount] = await Promise.all([
      ctx.store.statuses([machine.name]),
      ctx.store.audit(machine.name, { limit: PAGE_ROWS }),
      ctx.store.revisions('Machine', machine.name),
      ctx.store.fetchCount(machine.name),
    ]);
    const status = machineStatus(records.get(machine.name), new Date(), ctx.config.reportTimeoutSeconds);
    const csrf = formToken(ctx, s);
    const body = machineBody(machine, status, audit, revisions, { csrf, canWrite: hasScope(s.principal, 'write'), fetchCount, now: new Date() });
    return send(request, reply, 200, `Machine ${machine.name}`, body, { signedIn: true, script: true, csrf });
  });

  // DELETE /v1/machines/NAME/fetches from the machine's page: the write scope, as the API.
  app.post(
    '/machines/:name/reset-fetches',
    { bodyLimit: FORM_LIMIT, schema: { ...hidden, params: z.object({ name: resourceName }), body: z.object({ csrf: z.string() }) } },
    async (request, reply) => {
      const s = session(request, reply, ['write']);
      if (!s || !fromThisPage(request, request.body.csrf, reply, s)) return reply;
      const machine = await machineOr404(request, reply, s, request.params.name);
      if (!machine) return reply;
      await ctx.store.resetFetches(machine.name);
      request.log.info({ machine: machine.name, principal: s.principal.name }, 'machine fetches reset from the status page');
      return reply.code(303).header('location', `/ui/machines/${machine.name}`).send();
    },
  );

  // DELETE /v1/machines/NAME from the machine's page: the write scope, as the API; the form's box must be ticked.
  app.post(
    '/machines/:name/delete',
    { bodyLimit: FORM_LIMIT, schema: { ...hidden, params: z.object({ name: resourceName }), body: z.object({ csrf: z.string(), confirm: z.string().optional() }) } },
    async (request, reply) => {
      const s = session(request, reply, ['write']);
      if (!s || !fromThisPage(request, request.body.csrf, reply, s)) return reply;
      if (request.body.confirm !== 'yes') return send(request, reply, 422, 'Delete', messageBody('Tick the box to confirm the delete.'), { signedIn: true, csrf: formToken(ctx, s) });
      const machine = await machineOr404(request, reply, s, request.params.name);
      if (!machine) return reply;
      await ctx.store.delete('Machine', machine.name);
      request.log.info({ machine: machine.name, principal: s.principal.name }, 'machine deleted from the status page');
      return reply.code(303).header('location', '/ui').send();
    },
  );

  // DELETE /v1/discovered/ID from the fleet page: the write scope, as the API.
  app.post(
    '/discovered/:id/dismiss',
    { bodyLimit: FORM_LIMIT, schema: { ...hidden, params: z.object({ id: z.string().regex(/^\d{1,15}$/) }), body: z.object({ csrf: z.string() }) } },
    async (request, reply) => {
      const s = session(request, reply, ['write']);
      if (!s || !fromThisPage(request, request.body.csrf, reply, s)) return reply;
      try {
        await ctx.store.deleteDiscovered(request.params.id);
      } catch (e) {
        if (!(e instanceof DiscoveredNotFoundError)) throw e;
        return send(request, reply, 404, 'Not found', notFoundBody(`No discovered machine has the id ${request.params.id} (dismissed already?).`), { signedIn: true, csrf: formToken(ctx, s) });
      }
      request.log.info({ discovered: request.params.id, principal: s.principal.name }, 'discovered machine dismissed from the status page');
      return reply.code(303).header('location', '/ui').send();
    },
  );

  app.post('/login', { bodyLimit: FORM_LIMIT, schema: { ...hidden, body: z.object({ token: z.string().max(4096) }) } }, async (request, reply) => {
    if (!sameOrigin(request)) return send(request, reply, 403, 'Not allowed', messageBody('The form was not sent from this page.'));
    const token = request.body.token.trim();
    const principal = /^[\x21-\x7e]+$/.test(token) ? ctx.tokens.authenticate(`Bearer ${token}`) : undefined;
    if (!principal || !hasScope(principal, 'read')) return send(request, reply, 401, 'Sign in', loginBody('That token is not known, or lacks the read scope.'));
    const secure = request.protocol === 'https' ? '; Secure' : '';
    const value = issueSession(ctx.signing.key(), ctx.tokens, principal, ctx.config.uiSessionSeconds);
    void reply.header('set-cookie', `${COOKIE}=${value}; Path=/ui; Max-Age=${ctx.config.uiSessionSeconds}; HttpOnly; SameSite=Strict${secure}`);
    return reply.code(303).header('location', '/ui').send();
  });

  app.post('/logout', { bodyLimit: FORM_LIMIT, schema: { ...hidden, body: z.object({ csrf: z.string().optional() }) } }, async (request, reply) => {
    // Signed in, the form token must match too (another site must not sign an operator out).
    const { session: s } = sessionOf(ctx, request);
    if (!sameOrigin(request) || (s !== undefined && !formTokenMatches(ctx, s, request.body.csrf))) return send(request, reply, 403, 'Not allowed', messageBody('The form was not sent from this page.'));
    void reply.header('set-cookie', `${COOKIE}=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0`);
    return reply.code(303).header('location', '/ui').send();
  });

  app.post(
    '/enrol',
    {
      bodyLimit: FORM_LIMIT,
      schema: {
        ...hidden,
        body: z.object({
          csrf: z.string(),
          name: z.string(),
          cluster: z.string(),
          profile: z.string(),
          mac: z.string().optional(),
          uuid: z.string().optional(),
          serial: z.string().optional(),
          hostname: z.string().optional(),
        }),
      },
    },
    async (request, reply) => {
      const s = session(request, reply, ['write', 'render']);
      if (!s || !fromThisPage(request, request.body.csrf, reply, s)) return reply;
      const { name, cluster, profile, mac, uuid, serial, hostname } = request.body;
      // An empty form field is a selector not given.
      const filled = (v: string | undefined) => (v === '' ? undefined : v);
      // The ordinary Machine create, as POST /v1/machines does it: the same document, checks and store call.
      const doc = {
        apiVersion: RESOURCE_API_VERSION,
        kind: 'Machine',
        metadata: { name },
        spec: { selectors: enrolmentSelectors({ mac: filled(mac), uuid: filled(uuid), serial: filled(serial), hostname: filled(hostname) }), cluster, profile },
      };
      const parsed = WRITE_DOCUMENTS.Machine.safeParse(doc);
      const problem = (status: number, message: string, problems: FieldProblem[] = []) => send(request, reply, status, 'Enrol', messageBody(message, problems), { signedIn: true, csrf: formToken(ctx, s) });
      if (!parsed.success) return problem(422, 'The machine is not valid.', zodProblems(parsed.error));
      const input = { name: parsed.data.metadata.name, spec: jsonSafeSpec('Machine', parsed.data.spec) };
      let created: StoredResource<MachineSpec>;
      try {
        await checkWrite('Machine', input, writeCheckContext(ctx, request));
        created = await ctx.store.create('Machine', input);
      } catch (e) {
        if (e instanceof RequestError) return problem(422, 'The machine could not boot as written.', e.problems);
        if (e instanceof MissingReferenceError) return problem(422, 'The cluster or profile does not exist.', e.missing.map((m) => ({ path: m.path, message: `${m.kind} ${m.name} does not exist` })));
        if (e instanceof AlreadyExistsError) return problem(409, `A machine named ${name} exists already.`);
        if (e instanceof DuplicateSelectorError) return problem(409, `${e.message}.`, [{ path: e.field, message: `is already a selector of machine ${e.machine}` }]);
        if (e instanceof InvalidArgumentError) return problem(422, `${e.field} is not valid.`, [{ path: e.field, message: e.reason }]);
        throw e;
      }
      request.log.info({ machine: created.name, principal: s.principal.name }, 'machine enrolled from the status page');
      return reply.code(303).header('location', `/ui/machines/${created.name}`).send();
    },
  );
  done();
};
