/**
 * The firmware-facing routes (DESIGN §4–§5, issue 4): no `/v1`, no bearer token.
 *
 * - `GET /boot.ipxe`: the static chain script (ipxe.ts `bootScript`).
 * - `GET /ipxe?mac=…&uuid=…&serial_hex=…`: the matched machine's boot script, whose
 *   kernel arguments carry a signed Ignition or NoCloud URL; an unknown machine gets a
 *   script that prints why and retries, and is recorded under `GET /v1/discovered`.
 * - `GET /ignition?machine=ID&exp=…&sig=…`: the machine's Ignition config, spec version
 *   from Ignition's Accept header (or `?ignitionVersion=`, which pointer configs pin).
 * - `GET /nocloud/{id}/{exp}/{sig}/{file}`: cloud-init NoCloud seed files.
 *
 * The secret-bearing routes (/ignition, /nocloud) verify the signature (sign.ts): an
 * expired, forged or another machine's signature is a 403. A machine's `maxFetches`
 * limits its secret-bearing fetches (Ignition, NoCloud user-data); beyond it 403 until an
 * operator resets the counter. Every answer about a known machine (/ipxe matched,
 * /ignition, /nocloud) is written to the audit log with its status, refusals included.
 * Overload shedding (under-pressure, server.ts) applies here like everywhere: 503 with
 * Retry-After, which iPXE and Ignition retry. The writes unauthenticated requests cause
 * (sightings, refusal rows) are bounded (src/api/unauthenticated.ts); a served answer
 * whose audit row cannot be written becomes a 503.
 *
 * /ignition and /nocloud user-data are what pointer configs point at, fetched over HTTP:
 * the profile's `output.platform` user data limit never refuses them ({@link sendTarget}).
 */
import { RENDERER_VERSION } from '../../version.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginCallbackZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { machineIdentity } from '../../boot/identity.js';
import { bootFormat, bootScript, DEFAULT_RETRY_SECONDS, echoSafe, unknownMachineScript } from '../../boot/ipxe.js';
import { storedMachineScript } from '../../boot/machine.js';
import { matchMachine, whyUnmatched } from '../../boot/match.js';
import { metaData, networkConfig, vendorData } from '../../boot/nocloud.js';
import { bindableClient, bootstrapUrl, IGNITION_PATH, machineIncarnation, NOCLOUD_FILES, nocloudPrefix, REPORT_PATH, routeUrl, splitExpiry, type Verdict, verifySignature } from '../../boot/sign.js';
import { createHash } from 'node:crypto';
import { scrubSecrets } from '../../provision/plan/report.js';
import { RequestError } from '../../errors.js';
import { FORM_MEDIA_TYPE, registerFormParser } from '../body.js';
import { UserDataLimitError } from '../../platform.js';
import { machineNetwork } from '../../store/assemble.js';
import { NotFoundError } from '../../store/errors.js';
import { storageFault } from '../../store/faults.js';
import type { RenderResult } from '../../render.js';
import type { StatusEvent } from '../../store/status.js';
import { type AuditInput, isRefusal, type UrlClaim } from '../../store/store.js';
import { resourceName, type MachineSpec, type StoredResource } from '../../store/resources.js';
import type { KnownRequest } from '../cache.js';
import { deliveryResponses, sendBootstrapData } from '../deliver.js';
import { askedIgnitionVersion, type DeliveryQuery } from '../render-plan.js';
import { PROBLEM_MEDIA_TYPE, problemSchema } from '../problems.js';
import { type ServiceContext } from '../context.js';
import { replaceWithProblem, sendProblem, storageUnavailable } from '../replies.js';
import { isHostHeader, reportUrlFor } from '../signing.js';
import { UnauthenticatedWrites } from '../unauthenticated.js';
import { cameInPlain } from '../plain.js';
import { assembledRequest, noteTolerated, storedLevels } from './bootstrap.js';

/** Media type of iPXE scripts and the small NoCloud documents. */
export const SCRIPT_MEDIA_TYPE = 'text/plain; charset=utf-8';

const problemContent = { content: { [PROBLEM_MEDIA_TYPE]: { schema: problemSchema } } };
const problem = (description: string) => ({ description, ...problemContent });
const text = (description: string) => ({ description, content: { 'text/plain': { schema: z.string() } } });

const FIRMWARE_PROBLEMS = {
  400: problem('Malformed request: errors[] names the parameter'),
  429: problem('Rate limit exceeded (Retry-After)'),
  503: problem('Overloaded, or the inventory store cannot write the audit row (disk full, database unavailable): Retry-After; iPXE and Ignition retry'),
};
const SIGNED_PROBLEMS = {
  ...FIRMWARE_PROBLEMS,
  403: problem("Signature expired, forged or another machine's, or the machine's fetch limit (maxFetches) is reached"),
  404: problem('The machine no longer exists'),
  406: problem('No acceptable media type'),
  422: problem("The machine's bootstrap data cannot be rendered: errors[] names each field"),
};

const signatureQuery = {
  exp: z
    .string()
    .describe('expiry, unix seconds (from the signed URL); in a NoCloud path, <exp>.<inc> (the machine incarnation), then ~<client> when the URL is bound to a client address'),
  sig: z.string().describe('HMAC-SHA256 signature, base64url (from the signed URL)'),
};

/** The 403 detail (and audit reason) of a fetch beyond `maxFetches`. */
const FETCH_LIMIT = 'fetch limit reached; an operator can reset it';

/** Why a signature was refused, for the 403 detail (and the audit row). */
export const REFUSAL: Record<Exclude<Verdict, 'ok'>, string> = {
  expired: 'the signed URL has expired; boot again for a fresh one',
  invalid: 'the signature is not valid for this machine and route',
  elsewhere: 'this signed URL is bound to the address that fetched /ipxe, and this request comes from another one',
};

/** The `inc` query parameter: the machine incarnation a signed URL is bound to (sign.ts `machineIncarnation`). */
const incarnationQuery = z.string().optional().describe('the machine incarnation the URL is bound to (16 hex digits), signed with it; absent only in URLs issued by releases up to 0.2.0');

/** The 403 detail of a genuine URL issued for another incarnation of the machine. */
const OTHER_INCARNATION = 'this signed URL was issued for an earlier incarnation of this machine (deleted and re-created, or moved to another cluster); boot again for a fresh one';

/** The 403 detail of a second fetch of a signed URL under first fetch wins. */
const ALREADY_FETCHED = 'this signed URL was fetched before, and first fetch wins (BOOTWRIGHT_FIRST_FETCH_WINS); boot again for a fresh one';

/** Why a genuine signed URL was refused (the audit row's `reason` and the metric's label). */
type SignedRefusal = 'client-address' | 'already-fetched' | 'incarnation';

/**
 * Send a machine's bootstrap data from a signed route: as `sendBootstrapData`, with the
 * profile's platform limit applied (so a cloud-config that gzip fits is delivered as
 * before), but when the payload cannot fit that limit it is served whole instead of
 * refused: this is the target of a pointer config, which exists for exactly that case,
 * and the machine fetches it over HTTP, not as user data.
 *
 * @throws as `sendBootstrapData`, except the platform's UserDataLimitError
 */
async function sendTarget(
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  known: KnownRequest,
  query: DeliveryQuery,
  beforeSend: (result: RenderResult) => void,
  admit: () => Promise<boolean>,
): Promise<void> {
  try {
    await sendBootstrapData(ctx, request, reply, known, query, beforeSend, admit);
  } catch (e) {
    if (!(e instanceof UserDataLimitError)) throw e;
    await sendBootstrapData(ctx, request, reply, known, { ...query, platform: null }, beforeSend, admit);
  }
}

/** What an answer is audited with: the row's details and the lifecycle event a served answer causes. */
interface Audited {
  machine: string;
  route: string;
  details?: Pick<AuditInput, 'reason' | 'revision' | 'sha256' | 'format' | 'ignitionVersion' | 'outcome'>;
  event?: StatusEvent;
  /** The signed URL a served answer claims, with its audit row (first fetch wins). */
  claim?: UrlClaim;
}

/** The audit details and lifecycle event of a served config. */
function servedAs(machineRevision: number, result: RenderResult): Pick<Audited, 'details' | 'event'> {
  const served = { revision: machineRevision, sha256: result.sha256, format: result.format, ...(result.ignitionVersion ? { ignitionVersion: result.ignitionVersion } : {}) };
  return { details: served, event: { kind: 'served', served: { ...served, rendererVersion: RENDERER_VERSION } } };
}

/** A script that prints `lines` (already echo-safe) and starts over from /boot.ipxe after a pause. */
function retryScript(lines: string[], baseUrl: string): string {
  const restart = routeUrl(baseUrl, '/boot.ipxe').href;
  return [
    '#!ipxe',
    ...lines.map((l) => `echo bootwright: ${l}`),
    ':bootwright_retry',
    `echo bootwright: retrying in ${DEFAULT_RETRY_SECONDS} seconds`,
    `sleep ${DEFAULT_RETRY_SECONDS}`,
    `chain --replace --autofree ${restart} || goto bootwright_retry`,
    '',
  ].join('\n');
}

function sendScript(reply: FastifyReply, script: string, cacheControl: string): FastifyReply {
  return reply.header('content-type', SCRIPT_MEDIA_TYPE).header('cache-control', cacheControl).send(script);
}

/**
 * A boot report as the node's script sends it (src/provision/plan/report.ts): form
 * fields or JSON. `exitCode` may be empty (the node could not tell).
 */
export const bootReportSchema = z
  .object({
    outcome: z.enum(['success', 'failure']).describe('whether kubeadm succeeded'),
    exitCode: z
      .union([z.int().min(0).max(2147483647), z.string().regex(/^(|0|[1-9][0-9]{0,9})$/, 'must be a decimal exit code or empty')])
      .optional()
      .describe("kubeadm's exit code (decimal; empty when unknown)"),
    output: z.string().default('').describe("the last lines of kubeadm's output (the service keeps at most 4096 characters, secrets scrubbed)"),
  })
  .meta({ id: 'BootReport' });

/** The firmware-facing routes. */
export const bootRoutes: FastifyPluginCallbackZod<ServiceContext> = (app, ctx, done) => {
  // Boot reports arrive as HTML forms (curl --data-urlencode); only POST /report takes a body here.
  registerFormParser(app);
  /** The machine and route an answer is audited under (set by the handler before it answers). */
  const audited = new WeakMap<FastifyRequest, Audited>();
  const writes = new UnauthenticatedWrites(ctx.config, ctx.metrics);
  const auditBounds = { maxRefused: ctx.config.refusedAuditMax, retentionSeconds: ctx.config.unauthenticatedRetentionSeconds };
  const servedBounds = { maxServedPerMachine: ctx.config.servedAuditMaxPerMachine };
  const discoveredBounds = { max: ctx.config.discoveredMax, retentionSeconds: ctx.config.unauthenticatedRetentionSeconds };
  // onSend runs for every answer of these routes, error replies included, before the
  // bytes leave: the audit row exists by the time the client has its response. An
  // answer that serves (2xx, 304: a script with a signed URL, a config) is acknowledged
  // only with its audit row: when the row cannot be written the answer becomes a 503
  // with Retry-After, which iPXE, Ignition and cloud-init retry. A refusal (4xx, 5xx)
  // is answered whether or not its row is written (a lost refusal row is counted).
  // Refusal rows are bounded (src/api/unauthenticated.ts): sampled, limited per address,
  // capped and expired by the store.
  app.addHook('onSend', async (request, reply, payload) => {
    const a = audited.get(request);
    if (!a) return payload;
    audited.delete(request);
    const row: AuditInput = { machine: a.machine, route: a.route, client: request.ip, status: reply.statusCode, ...a.details };
    const userAgent = request.headers['user-agent'];
    if (userAgent !== undefined) row.userAgent = userAgent;
    const refusal = isRefusal(row.status);
    ctx.metrics.firmwareFetches.inc({ route: a.route, status: String(row.status) });
    if (refusal && !writes.admitRefusal(row)) return payload;
    try {
      // A served answer moves the machine's lifecycle (a 304 too: the machine has the
      // data) and claims its URL under first fetch wins, in the audit row's transaction:
      // one commit acknowledges the answer, and an answer not acknowledged claims nothing.
      if (refusal) await ctx.store.recordAudit(row, auditBounds);
      else if (!(await ctx.store.recordAudit(row, servedBounds, a.event, a.claim))) {
        // A concurrent fetch of the same URL committed its claim first: this one serves nothing.
        countSignedRefusal(request, a.machine, a.route, 'already-fetched');
        const { revision: _r, sha256: _s, format: _f, ignitionVersion: _i, ...unserved } = row;
        const refused: AuditInput = { ...unserved, status: 403, reason: 'already-fetched' };
        await ctx.store.recordAudit(refused, auditBounds).catch(() => writes.dropped('audit', 'storage-fault'));
        return replaceWithProblem(reply, 'forbidden', 403, ALREADY_FETCHED);
      }
    } catch (e) {
      const fault = storageFault(e);
      if (!refusal) return storageUnavailable(ctx, request, reply, fault ?? 'unknown');
      if (fault) writes.dropped('audit', 'storage-fault');
      request.log.warn({ fault: fault ?? 'unknown' }, 'the audit row of a refusal could not be written');
    }
    return payload;
  });

  /**
   * The plain-HTTP base URL of a request that came over the plain listener of an HTTPS
   * service (src/api/plain.ts): its own scheme and Host, which is where this firmware
   * reached the service. Undefined over TLS, or when the service is plain HTTP.
   */
  const plainBase = (request: FastifyRequest): string | undefined => {
    if (!ctx.https || !cameInPlain(request.raw)) return undefined;
    if (isHostHeader(request.host)) return `http://${request.host}`;
    throw new RequestError([{ path: 'headers.host', message: 'the Host header does not name a host' }], 400);
  };

  /** Count a secret-bearing fetch against the machine's maxFetches; false when used up. */
  const takeFetch = (machine: StoredResource<MachineSpec>) =>
    machine.spec.maxFetches === undefined ? Promise.resolve(true) : ctx.store.takeFetch(machine.name, machine.spec.maxFetches);
  /** Answer 403 with `reason`, which the audit row keeps. */
  const refuse = (entry: Audited, reply: FastifyReply, reason: string) => {
    entry.details = { reason };
    return sendProblem(reply, 'forbidden', 403, reason);
  };

  /** Count and log a genuine signed URL refused (never the URL itself). */
  const countSignedRefusal = (request: FastifyRequest, machine: string | undefined, route: string, reason: SignedRefusal) => {
    ctx.metrics.signedUrlRefused.inc({ route, reason });
    request.log.warn({ machine, route, reason }, 'a genuine signed URL was refused: someone else may hold it');
  };

  /**
   * Refuse a genuine signed URL (issue 16): audited with the reason, counted in
   * `bootwright_signed_url_refused_total`, logged without the URL.
   */
  const refuseSigned = (request: FastifyRequest, reply: FastifyReply, route: string, reason: SignedRefusal, detail: string) => {
    const a = audited.get(request);
    if (a) a.details = { ...a.details, reason };
    countSignedRefusal(request, a?.machine, route, reason);
    return sendProblem(reply, 'forbidden', 403, detail);
  };

  /** A signature's verdict answered: undefined when it may be served, else the reply sent. */
  const refuseVerdict = (request: FastifyRequest, reply: FastifyReply, route: string, verdict: Verdict) => {
    if (verdict === 'ok') return undefined;
    if (verdict === 'elsewhere') return refuseSigned(request, reply, route, 'client-address', REFUSAL.elsewhere);
    const entry = audited.get(request);
    return entry ? refuse(entry, reply, REFUSAL[verdict]) : sendProblem(reply, 'forbidden', 403, REFUSAL[verdict]);
  };

  /**
   * Refuse a genuine URL bound to another incarnation of the machine than the stored one
   * (a delete and re-create, or a move to another cluster, since it was handed out):
   * true when refused. URLs without an incarnation (releases up to 0.2.0) pass.
   */
  const otherIncarnation = (request: FastifyRequest, reply: FastifyReply, route: string, machine: StoredResource<MachineSpec>, incarnation: string | undefined): boolean => {
    if (incarnation === undefined || incarnation === machineIncarnation(machine)) return false;
    refuseSigned(request, reply, route, 'incarnation', OTHER_INCARNATION);
    return true;
  };

  /** The key a signed URL is claimed under (route + signature, hashed), when first fetch wins. */
  const claimKey = (route: string, sig: string): string | undefined => (ctx.config.firstFetchWins ? createHash('sha256').update(`${route}\n${sig}`).digest('hex') : undefined);

  /**
   * The machine, its cluster and profile, and whether the URL was claimed: one read
   * ({@link Store.fetchParts}).
   */
  const readFetch = (name: string, route: string, sig: string) => ctx.store.fetchParts(name, claimKey(route, sig));

  /**
   * First fetch wins (issue 16, `firstFetchWins`, on by default): false (refused,
   * audited, counted) when the URL was claimed before (`claimed`, read with the machine),
   * by this replica or another, before or after a restart; else the answer claims it
   * with its audit row (onSend), so only an answer that is acknowledged uses the URL up
   * (and of two at once, the one whose row commits first).
   */
  const firstFetch = (request: FastifyRequest, reply: FastifyReply, entry: Audited, route: string, exp: string, sig: string, claimed: boolean): boolean => {
    const key = claimKey(route, sig);
    if (key === undefined) return true;
    if (!claimed) {
      entry.claim = { key, expiresAt: Number(exp) };
      return true;
    }
    refuseSigned(request, reply, route, 'already-fetched', ALREADY_FETCHED);
    return false;
  };

  /**
   * A secret-bearing fetch's limits, asked once its data is rendered (so a negotiation
   * or render refused with a 406 or 422, which serves nothing, uses up neither): first
   * fetch wins, then the machine's maxFetches. False when a refusal (403) was sent.
   */
  const claimFetch = async (request: FastifyRequest, reply: FastifyReply, entry: Audited, machine: StoredResource<MachineSpec>, route: string, exp: string, sig: string, claimed: boolean): Promise<boolean> => {
    if (!firstFetch(request, reply, entry, route, exp, sig, claimed)) return false;
    if (await takeFetch(machine)) return true;
    refuse(entry, reply, FETCH_LIMIT);
    return false;
  };

  /**
   * Send a secret-bearing fetch's data ({@link sendTarget}): audited with what was
   * served, its limits claimed ({@link claimFetch}) once the data is rendered.
   */
  const sendSigned = (request: FastifyRequest, reply: FastifyReply, entry: Audited, machine: StoredResource<MachineSpec>, known: KnownRequest, query: DeliveryQuery, route: string, exp: string, sig: string, claimed: boolean) =>
    sendTarget(
      ctx,
      request,
      reply,
      known,
      query,
      (result) => {
        Object.assign(entry, servedAs(machine.revision, result));
        if (result.tolerated) noteTolerated(ctx, request, machine.name, result.tolerated);
      },
      () => claimFetch(request, reply, entry, machine, route, exp, sig, claimed),
    );

  app.get(
    '/boot.ipxe',
    {
      // Machines behind one address (NAT, a boot storm) must not hit a per-address limit:
      // iPXE retries only a 503, so a 429 would strand them. Overload shedding still applies.
      config: { rateLimit: false },
      schema: {
        tags: ['boot'],
        security: [],
        operationId: 'getBootScript',
        summary: 'The iPXE chain script',
        description:
          'A static `#!ipxe` script: `dhcp` (only when the boot interface has no address) and `chain` in a retry loop, chainloading `/ipxe` with the machine\'s MAC, UUID, serial, host name, ' +
          'build architecture and platform. Point DHCP (or a PXE-chainloaded iPXE) at it.',
        response: { 200: text('The iPXE script'), ...FIRMWARE_PROBLEMS },
      },
    },
    async (request, reply) => sendScript(reply, bootScript(ctx.signing.baseUrl(request), DEFAULT_RETRY_SECONDS, plainBase(request)), 'no-cache'),
  );

  app.get(
    '/ipxe',
    {
      // Machines behind one address (NAT, a boot storm) must not hit a per-address limit:
      // iPXE retries only a 503, so a 429 would strand them. Overload shedding still applies.
      config: { rateLimit: false },
      schema: {
        tags: ['boot'],
        security: [],
        operationId: 'getMachineBootScript',
        summary: "A booting machine's iPXE script",
        description:
          'Matches the reported identity against the registered machines (conflicting selectors exclude, most selectors matched wins, ' +
          'then the more specific registration, then the lower name) and answers the profile\'s kernel, initrds and args, plus a signed ' +
          '`ignition.config.url=` or `ds=nocloud;s=` URL for that machine. An unknown machine gets a script that prints why and retries; ' +
          'it is recorded under `GET /v1/discovered`. Every other query parameter is a free label.',
        querystring: z.looseObject({
          mac: z.string().optional().describe('MAC address: colon, hyphen, Cisco-dot or bare 12-hex form, any case'),
          uuid: z.string().optional().describe('SMBIOS system UUID, any case'),
          serial: z.string().optional().describe('SMBIOS serial number, as text'),
          serial_hex: z.string().optional().describe('SMBIOS serial number, hex of its bytes (iPXE ${serial:hex}); wins over serial'),
          hostname: z.string().optional().describe('host name, as text'),
          hostname_hex: z.string().optional().describe('host name, hex of its bytes; wins over hostname'),
          buildarch: z.string().optional().describe('iPXE ${buildarch}'),
          platform: z.string().optional().describe('iPXE ${platform}'),
        }),
        response: { 200: text('The iPXE script'), ...FIRMWARE_PROBLEMS },
      },
    },
    async (request, reply) => {
      const identity = machineIdentity(request.query);
      // The OS fetches its bootstrap data from `base` (HTTPS when the service is); iPXE's
      // own fetches (kernel, initrds, the retry chain) go where this script came from.
      const base = ctx.signing.baseUrl(request);
      const scriptBase = plainBase(request) ?? base;
      // The default machine is a candidate too: matchMachine picks it only when nothing else
      // matches. The candidates and their profiles in one read.
      const fallback = ctx.config.defaultMachine;
      const { machines: candidates, profiles } = await ctx.store.bootCandidates(identity, fallback);
      const match = matchMachine(identity, candidates, fallback !== undefined ? { defaultMachine: fallback } : {});
      const machine = match ? candidates.find((m) => m.name === match.machine) : undefined;
      if (!machine) {
        const { mac, uuid, serial, hostname } = identity;
        if (mac !== undefined || uuid !== undefined || serial !== undefined || hostname !== undefined) {
          // A sighting is an observation, not an acknowledged write: the retry script is
          // served whether or not it is recorded (bounded: per address, capped, expired).
          if (writes.admitDiscovered(request.ip)) {
            try {
              const recorded = await ctx.store.recordDiscovered(
                {
                  ...(mac !== undefined ? { mac } : {}),
                  ...(uuid !== undefined ? { uuid } : {}),
                  ...(serial !== undefined ? { serial } : {}),
                  ...(hostname !== undefined ? { hostname } : {}),
                },
                discoveredBounds,
                {
                  why: whyUnmatched(identity, candidates),
                  ...(identity.buildarch !== undefined ? { buildarch: identity.buildarch } : {}),
                  ...(identity.platform !== undefined ? { platform: identity.platform } : {}),
                },
              );
              if (!recorded) writes.dropped('discovered', 'full');
            } catch (e) {
              const fault = storageFault(e);
              if (!fault) throw e;
              writes.dropped('discovered', 'storage-fault');
              request.log.warn({ fault }, 'an unknown machine could not be recorded');
            }
          }
        }
        return sendScript(reply, unknownMachineScript(identity, DEFAULT_RETRY_SECONDS, scriptBase), 'no-store');
      }
      const { mac, uuid, serial, hostname, buildarch, platform } = identity;
      const firmware = Object.fromEntries(Object.entries({ mac, uuid, serial, hostname, buildarch, platform, client: request.ip }).filter(([, v]) => v !== undefined));
      audited.set(request, { machine: machine.name, route: '/ipxe', event: { kind: 'booting', firmware } });
      const profile = profiles.get(machine.spec.profile);
      if (!profile) throw new NotFoundError('Profile', machine.spec.profile);
      const boot = profile.spec.boot;
      if (!boot) return sendScript(reply, retryScript([`no boot section in profile ${echoSafe(profile.name)}`], scriptBase), 'no-store');
      const format = bootFormat(profile.spec.output?.format);
      // Bound to the address that fetched this script, when configured (issue 16).
      const client = ctx.config.bindClientAddress && bindableClient(request.ip) ? request.ip : undefined;
      const url = bootstrapUrl(format, base, machine.name, ctx.signing.key(), ctx.signing.lifetimeSeconds, Date.now() / 1000, client, machineIncarnation(machine));
      let script: string;
      try {
        script = storedMachineScript({ ...profile.spec, boot }, machine, url, base, scriptBase);
      } catch (e) {
        if (!(e instanceof RequestError)) throw e;
        const lines = [`profile ${echoSafe(profile.name)} cannot be booted:`, ...e.problems.map((p) => `${echoSafe(p.path)} ${echoSafe(p.message)}`)];
        script = retryScript(lines, scriptBase);
      }
      // The script carries a signed URL: never stored by a cache.
      return sendScript(reply, script, 'no-store');
    },
  );

  app.get(
    IGNITION_PATH,
    {
      // Machines behind one address (NAT, a boot storm) must not hit a per-address limit:
      // iPXE retries only a 503, so a 429 would strand them. Overload shedding still applies.
      config: { rateLimit: false },
      schema: {
        tags: ['boot'],
        security: [],
        operationId: 'getIgnitionConfig',
        summary: "A machine's Ignition config (signed URL)",
        description:
          'The URL the iPXE script puts in `ignition.config.url=`. The spec version comes from Ignition\'s Accept header ' +
          '(`application/vnd.coreos.ignition+json;version=3.4.0`; Ignition v0.x on older Flatcar sends `version=2.2.0` or `2.4.0` and gets spec 2.3.0), or `?ignitionVersion=` (pointer configs pin it so the hash matches). ' +
          "Expired, forged or another machine's signatures are refused (403), as are fetches beyond the machine's `maxFetches`. Every fetch is audited.",
        querystring: z.object({
          machine: resourceName.describe('the machine id'),
          inc: incarnationQuery,
          exp: signatureQuery.exp,
          client: z.string().optional().describe('the client address the URL is bound to (bindClientAddress), signed with it'),
          sig: signatureQuery.sig,
          ignitionVersion: z
            .string()
            .regex(/^\d+\.\d+(\.\d+)?$/)
            .optional()
            .describe('Ignition spec to serve (highest supported 3.x not above it; 2.3.0 for 2.3 and later 2.x); wins over Accept'),
        }),
        response: { 200: deliveryResponses[200], 304: deliveryResponses[304], ...SIGNED_PROBLEMS },
      },
    },
    async (request, reply) => {
      const { machine: name, inc, exp, client, sig, ignitionVersion } = request.query;
      const entry: Audited = { machine: name, route: IGNITION_PATH };
      audited.set(request, entry);
      const verdict = verifySignature(ctx.signing.key(), name, IGNITION_PATH, exp, sig, Date.now() / 1000, client === undefined ? undefined : { client, from: request.ip }, inc);
      const refused = refuseVerdict(request, reply, IGNITION_PATH, verdict);
      if (refused) return refused;
      const { claimed, ...stored } = await readFetch(name, IGNITION_PATH, sig);
      if (otherIncarnation(request, reply, IGNITION_PATH, stored.machine, inc)) return reply;
      const parts = await ctx.mintedTokens.withToken(stored);
      const query = { format: 'ignition' as const, ignitionVersion, reportUrl: reportUrlFor(ctx, ctx.signing.baseUrl(request), parts.machine, exp), ...storedLevels(parts) };
      const known = await assembledRequest(ctx, parts, false, { accept: request.headers.accept, query });
      // Signed, so a real machine's Ignition: later pre-renders render the spec it asked for.
      ctx.prerender.noteIgnitionVersion(askedIgnitionVersion(request.headers.accept, ignitionVersion));
      await sendSigned(request, reply, entry, parts.machine, known, query, IGNITION_PATH, exp, sig, claimed);
      return reply;
    },
  );

  app.get(
    '/nocloud/:id/:exp/:sig/:file',
    {
      // Machines behind one address (NAT, a boot storm) must not hit a per-address limit:
      // iPXE retries only a 503, so a 429 would strand them. Overload shedding still applies.
      config: { rateLimit: false },
      schema: {
        tags: ['boot'],
        security: [],
        operationId: 'getNocloudFile',
        summary: 'A cloud-init NoCloud seed file (signed URL)',
        description:
          'The seed the iPXE script puts in `ds=nocloud;s=<base>/nocloud/ID/EXP/SIG/`: cloud-init appends the file name. `meta-data` carries ' +
          '`instance-id` and `local-hostname`, `user-data` the cloud-config (counted against `maxFetches`), `vendor-data` and `network-config` are empty. ' +
          "Expired, forged or another machine's signatures are refused (403). Every fetch is audited.",
        params: z.object({
          id: resourceName.describe('the machine id'),
          ...signatureQuery,
          file: z.enum(NOCLOUD_FILES).describe('the seed file'),
        }),
        response: {
          200: {
            description: 'The seed file',
            content: { 'text/plain': { schema: z.string().describe('meta-data YAML, or an empty document') }, ...deliveryResponses[200].content },
          },
          304: deliveryResponses[304],
          ...SIGNED_PROBLEMS,
        },
      },
    },
    async (request, reply) => {
      const { id, sig, file } = request.params;
      const { exp, client, incarnation } = splitExpiry(request.params.exp);
      const route = `/nocloud/${file}`;
      const entry: Audited = { machine: id, route };
      audited.set(request, entry);
      const verdict = verifySignature(ctx.signing.key(), id, nocloudPrefix(id), exp, sig, Date.now() / 1000, client === undefined ? undefined : { client, from: request.ip }, incarnation);
      const refused = refuseVerdict(request, reply, route, verdict);
      if (refused) return refused;
      if (file === 'user-data') {
        const { claimed, ...stored } = await readFetch(id, route, sig);
        if (otherIncarnation(request, reply, route, stored.machine, incarnation)) return reply;
        const parts = await ctx.mintedTokens.withToken(stored);
        const query = { format: 'cloud-config' as const, reportUrl: reportUrlFor(ctx, ctx.signing.baseUrl(request), parts.machine, exp), ...storedLevels(parts) };
        const known = await assembledRequest(ctx, parts, false, { accept: request.headers.accept, query });
        await sendSigned(request, reply, entry, parts.machine, known, query, route, exp, sig, claimed);
        return reply;
      }
      const machine = await ctx.store.get('Machine', id);
      if (otherIncarnation(request, reply, route, machine, incarnation)) return reply;
      const network = file === 'network-config' ? machineNetwork(machine.spec, machine.spec.network ? {} : (await ctx.store.get('Profile', machine.spec.profile)).spec) : undefined;
      const body = file === 'meta-data' ? metaData(machine.name, machine.spec.nodeName ?? machine.name) : file === 'vendor-data' ? vendorData() : networkConfig(network);
      return sendScript(reply, body, 'private, no-cache');
    },
  );
  app.post(
    REPORT_PATH,
    {
      config: { rateLimit: false },
      bodyLimit: ctx.config.maxReportBytes,
      schema: {
        tags: ['boot'],
        security: [],
        operationId: 'postBootReport',
        summary: "A booting machine's kubeadm outcome (signed URL)",
        description:
          'The URL carried in the bootstrap data served for a machine (`/etc/kubeadm/report.sh` on the node, run from cloud-config `runcmd` or the Ignition ' +
          'bootstrap unit). Moves the machine to `Joined` (success) or `Failed`, keeps the exit code and the output tail (secrets scrubbed). ' +
          `At most BOOTWRIGHT_REPORTS_PER_FETCH reports per config fetch (then 429); bodies up to BOOTWRIGHT_MAX_REPORT_BYTES. Audited.`,
        consumes: [FORM_MEDIA_TYPE, 'application/json'],
        querystring: z.object({ machine: resourceName.describe('the machine id'), inc: incarnationQuery, ...signatureQuery }),
        body: bootReportSchema,
        response: {
          204: z.undefined().describe('Recorded'),
          ...SIGNED_PROBLEMS,
          413: problem('The report is larger than BOOTWRIGHT_MAX_REPORT_BYTES'),
          429: problem('More reports than BOOTWRIGHT_REPORTS_PER_FETCH since the latest config fetch'),
        },
      },
    },
    async (request, reply) => {
      const { machine: name, inc, exp, sig } = request.query;
      const entry: Audited = { machine: name, route: REPORT_PATH };
      audited.set(request, entry);
      const verdict = verifySignature(ctx.signing.key(), name, REPORT_PATH, exp, sig, Date.now() / 1000, undefined, inc);
      if (verdict !== 'ok') return refuse(entry, reply, verdict === 'expired' ? 'the report URL has expired' : REFUSAL.invalid);
      const machine = await ctx.store.get('Machine', name);
      if (otherIncarnation(request, reply, REPORT_PATH, machine, inc)) return reply;
      const cluster = await ctx.store.get('Cluster', machine.spec.cluster).catch((e: unknown) => {
        if (e instanceof NotFoundError) return undefined;
        throw e;
      });
      const body = request.body;
      const minted = await ctx.store.mintedToken(name);
      const known = [cluster?.spec.bootstrapToken, cluster?.spec.certificateKey, minted?.token].filter((v): v is string => typeof v === 'string');
      const exitCode = body.exitCode === undefined || body.exitCode === '' ? undefined : Number(body.exitCode);
      const report = { outcome: body.outcome, ...(exitCode !== undefined ? { exitCode } : {}), output: scrubSecrets(body.output, known) };
      entry.details = { outcome: body.outcome };
      if (!(await ctx.store.updateStatus(name, { kind: 'report', report, maxReports: ctx.config.reportsPerFetch }))) {
        entry.details = { outcome: body.outcome, reason: 'too many reports since the latest config fetch' };
        return sendProblem(reply, 'too-many-requests', 429, `more than ${ctx.config.reportsPerFetch} reports since the latest config fetch (BOOTWRIGHT_REPORTS_PER_FETCH)`);
      }
      ctx.metrics.bootReports.inc({ outcome: body.outcome });
      // A joined node needs its bootstrap token no more (kubelet has its own credentials).
      if (body.outcome === 'success' && minted) void ctx.mintedTokens.joined(name);
      void reply.header('cache-control', 'no-store');
      return reply.code(204).send();
    },
  );
  done();
};
