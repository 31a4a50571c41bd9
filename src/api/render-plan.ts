/**
 * What render a client asked for (DESIGN §4): content negotiation over a known request,
 * and the render cache key and renderer options it comes to. Pure and thread-agnostic:
 * the routes plan on the main thread, and a worker that has just parsed or assembled a
 * request plans the same render from the same inputs (src/work/task.ts), so both arrive
 * at the same key.
 */
import { LRUCache } from 'lru-cache';
import { DEFAULT_FORMAT } from '../provision/formats.js';
import { targetOs } from '../provision/plan/os.js';
import type { TargetOs } from '../provision/plan/types.js';
import { formatsServedFor } from '../provision/registry.js';
import { type RenderOptions, servedIgnitionVersion } from '../render.js';
import type { NodeBootstrap, OutputFormat, Platform } from '../request/schema.js';
import type { RuleLevels } from '../rules.js';
import { RENDERER_VERSION } from '../version.js';
import { negotiate, type Negotiated } from './negotiate.js';

/**
 * What a bootstrap-data route's query may ask (`?format=`, `?ignitionVersion=`,
 * `?platform=`); `platform: null` turns platform limits off (a pointer's target).
 */
export interface DeliveryQuery {
  format?: OutputFormat | undefined;
  ignitionVersion?: string | undefined;
  platform?: Platform | null | undefined;
  /** The machine's signed boot report URL, carried in the data (routes that serve a stored machine). */
  reportUrl?: string | undefined;
  /** The rules versions of a stored machine's documents, when any is below this release's (src/rules.ts): what they are excused from. */
  levels?: RuleLevels | undefined;
}

/**
 * Key of one render of a request: renderer version, format, the Ignition spec served for
 * the one requested (requests naming different versions that are served the same spec
 * share it: `version=3.9.0` and `3.6.0`), the platform asked by the query (`-` for none
 * asked; `null` for limits turned off), the request's canonical digest (which covers
 * `spec.output`), the boot report URL carried in the data (none for a bare render), and
 * the rules versions a stored machine is held to (none: every rule).
 * A plain string: the LRU hashes it itself.
 */
function renderKey(digest: string, format: OutputFormat, ignitionVersion: string | undefined, platform?: string | null, reportUrl?: string, levels?: RuleLevels): string {
  const version = ignitionVersion === undefined ? '' : (servedIgnitionVersion(ignitionVersion) ?? `?${ignitionVersion}`);
  const report = reportUrl === undefined ? '' : `|${reportUrl}`;
  const ratchet = levels === undefined ? '' : `|rules ${levels.cluster}.${levels.profile}.${levels.machine}`;
  return `${RENDERER_VERSION}|${format}|${version}|${platform === undefined ? '-' : String(platform)}|${digest}${report}${ratchet}`;
}

/** Accept values longer than this are negotiated afresh and never remembered (the caches hold the common few). */
const REMEMBERED_ACCEPT_LENGTH = 256;

/** Negotiation outcomes by (query format, Accept, default format, node OS): a handful of distinct clients ask the same way every time. */
const negotiated = new LRUCache<string, Negotiated>({ max: 256 });

/** The formats a node of each OS can get (registry), computed once. */
const servable: Record<TargetOs, OutputFormat[]> = { linux: formatsServedFor('linux'), windows: formatsServedFor('windows') };

function negotiateOnce(queryFormat: OutputFormat | undefined, accept: string | undefined, fallback: OutputFormat, os: TargetOs): Negotiated {
  // Long or odd headers are negotiated afresh (and never cached): the cache holds the common few.
  if (accept !== undefined && accept.length > REMEMBERED_ACCEPT_LENGTH) return negotiate(queryFormat, accept, fallback, undefined, servable[os]);
  const key = `${queryFormat ?? ''}|${fallback}|${os}|${accept ?? ''}`;
  let n = negotiated.get(key);
  if (!n) {
    n = negotiate(queryFormat, accept, fallback, undefined, servable[os]);
    negotiated.set(key, n);
  }
  return n;
}

/**
 * The Ignition spec an Ignition client's Accept asks for (its `version=`), or
 * `?ignitionVersion=`, which wins; undefined when neither names one or nothing is acceptable.
 */
export function askedIgnitionVersion(accept: string | undefined, ignitionVersion: string | undefined): string | undefined {
  if (ignitionVersion !== undefined) return ignitionVersion;
  try {
    return negotiateOnce('ignition', accept, 'ignition', 'linux').ignitionVersion;
  } catch {
    return undefined;
  }
}

/** Plans per known request (a cached, immutable object) for a query that asks nothing, by Accept. */
const plainPlans = new WeakMap<object, Map<string, RenderPlan>>();
/** Accept values remembered per known request (a few clients ask the same way every time). */
const PLANS_PER_REQUEST = 8;

/**
 * The render of a known request for what the client negotiated: the cache key and the
 * options {@link renderNodeBootstrap} takes. A plan depends on nothing but its inputs,
 * so for a query that asks nothing (`POST /v1/render` as clients send it) it is made
 * once per known request and Accept value and then reused (a cache hit's plan, issue 15).
 *
 * @throws NotAcceptableError (406) when nothing acceptable is offered.
 */
export function renderPlan(known: { req: NodeBootstrap; digest: string }, accept: string | undefined, query: DeliveryQuery): RenderPlan {
  if (query.format !== undefined || query.ignitionVersion !== undefined || query.platform !== undefined || query.reportUrl !== undefined || query.levels !== undefined || (accept !== undefined && accept.length > REMEMBERED_ACCEPT_LENGTH)) {
    return makePlan(known, accept, query);
  }
  let plans = plainPlans.get(known);
  const memo = plans?.get(accept ?? '');
  if (memo) return memo;
  const plan = makePlan(known, accept, query);
  if (!plans) plainPlans.set(known, (plans = new Map<string, RenderPlan>()));
  if (plans.size < PLANS_PER_REQUEST) plans.set(accept ?? '', plan);
  return plan;
}

function makePlan(known: { req: NodeBootstrap; digest: string }, accept: string | undefined, query: DeliveryQuery): RenderPlan {
  const n = negotiateOnce(query.format, accept, known.req.spec.output?.format ?? DEFAULT_FORMAT, targetOs(known.req).os);
  const requestedVersion = query.ignitionVersion ?? n.ignitionVersion;
  const key = renderKey(known.digest, n.format, requestedVersion, query.platform, query.reportUrl, query.levels);
  const versionField = query.ignitionVersion ? 'ignitionVersion' : 'Accept';
  return {
    n,
    key,
    shareKey: requestedVersion === undefined ? key : `${key}|${versionField}|${requestedVersion}`,
    options: {
      format: n.format,
      ...(query.reportUrl !== undefined ? { reportUrl: query.reportUrl } : {}),
      ...(query.levels !== undefined ? { levels: query.levels } : {}),
      ...(query.platform !== undefined ? { platform: query.platform, platformField: 'platform' } : {}),
      ...(requestedVersion !== undefined ? { ignitionVersion: requestedVersion, ignitionVersionField: versionField } : {}),
    },
  };
}

/** A planned render: the negotiation outcome, the render cache key and share key, and the renderer's options. */
export interface RenderPlan {
  n: Negotiated;
  key: string;
  shareKey: string;
  options: RenderOptions;
}
