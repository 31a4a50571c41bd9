/**
 * The work a render worker does (issue 15): parse and validate a request body, assemble
 * a stored machine's request, or render a validated request with given options
 * ({@link renderNodeBootstrap}); a parse or an assembly may render its request in the
 * same trip ({@link FollowingRender}). One function, {@link runTask}, runs a task wherever it
 * is called: in a worker thread (src/work/worker.ts), or inline on the calling thread
 * (the CLI, small requests, a pool of 0 workers), so the bytes are the same whichever
 * thread renders.
 *
 * Tasks and outcomes cross threads by the structured clone algorithm (HTML §2.7): plain
 * objects, strings and Uint8Array survive it; class instances and WeakMap entries do
 * not. So a Cluster API request's field-path rewrite (which lives in a WeakMap keyed by
 * the request object, src/request/capi/convert.ts) travels beside the request, and
 * errors travel as {@link TaskFailure} and are rebuilt into their classes by
 * {@link rebuildError}.
 */
import { createHash } from 'node:crypto';
import stringify from 'safe-stable-stringify';
import { type FieldProblem, RequestError } from '../errors.js';
import { UserDataLimitError } from '../platform.js';
import { renderNodeBootstrap, type RenderOptions, type RenderResult } from '../render.js';
import type { DocumentLimits } from '../request/bounds.js';
import { clusterApiOrigin, type PathRewrite, rememberClusterApiOrigin } from '../request/capi/convert.js';
import { parseNodeBootstrap, type RequestSyntax } from '../request/parse.js';
import type { NodeBootstrap } from '../request/schema.js';
import { AssemblyError, type AssemblyParts, machineNodeBootstrap } from '../store/assemble.js';
import { type DeliveryQuery, renderPlan } from '../api/render-plan.js';

/** A validated request as it crosses threads: the request and its Cluster API origin, if any. */
export interface PortableRequest {
  req: NodeBootstrap;
  /** Where a Cluster API request's fields came from ({@link clusterApiOrigin}). */
  origin?: PathRewrite;
}

/** A validated request, its canonical digest and its size (what the request cache keeps). */
export interface ValidatedRequest extends PortableRequest {
  /** base64url SHA-256 of the canonical JSON (keys sorted, binary as `{base64}`). */
  digest: string;
  /** Bytes charged against the request cache: the body's UTF-8 length, or the assembled request's JSON length. */
  bytes: number;
  /** The render a task's `render` asked for (absent when it could not be made: the caller's own render then reports why). */
  rendered?: FollowedRender;
}

/** A render made in the trip of a parse or an assembly, under its render-cache key. */
export interface FollowedRender {
  key: string;
  result: RenderResult;
}

/**
 * The render a client will ask of the request a parse or an assembly yields, given as
 * what it negotiates with ({@link renderPlan}): made in the same trip, so a miss costs
 * one worker round trip, not two.
 */
export interface FollowingRender {
  accept: string | undefined;
  query: DeliveryQuery;
}

/** Parse and validate a request body (`parseNodeBootstrap`); then, if asked, render it. */
export interface ParseTask {
  op: 'parse';
  text: string;
  syntax: RequestSyntax;
  limits: DocumentLimits;
  render?: FollowingRender;
}

/** Assemble and validate a stored machine's request (`machineNodeBootstrap`); then, if asked, render it. */
export interface AssembleTask {
  op: 'assemble';
  parts: AssemblyParts;
  limits: DocumentLimits;
  render?: FollowingRender;
}

/** Render a validated request with these options (`renderNodeBootstrap`). */
export interface RenderTask {
  op: 'render';
  request: PortableRequest;
  options: RenderOptions;
}

/** Any task. */
export type Task = ParseTask | AssembleTask | RenderTask;

/** What each task returns. */
export type TaskValue<T extends Task> = T extends RenderTask ? RenderResult : ValidatedRequest;

/** An error as it crosses threads. */
export interface TaskFailure {
  failed: true;
  /** `RequestError`, `UserDataLimitError`, `AssemblyError`, or another error's name. */
  name: string;
  message: string;
  problems?: FieldProblem[];
  status?: 400 | 413 | 422;
  stack?: string;
}

/**
 * Digest of a validated request's canonical JSON: keys sorted, so key order and YAML
 * versus JSON do not matter; binary contents as `{base64}`. The render cache's key input.
 *
 * @returns base64url SHA-256 (43 characters).
 */
export function requestDigest(req: NodeBootstrap): string {
  const canonical = stringify(req, (_key, value: unknown) => (value instanceof Uint8Array ? { base64: Buffer.from(value).toString('base64') } : value));
  return createHash('sha256')
    .update(canonical ?? '')
    .digest('base64url');
}

/** The request object a receiving thread works with: the cloned request, its origin remembered again. */
export function adoptRequest(request: PortableRequest): NodeBootstrap {
  if (request.origin) rememberClusterApiOrigin(request.req, request.origin);
  return request.req;
}

/** A request ready to cross threads. */
export function portable(req: NodeBootstrap): PortableRequest {
  const origin = clusterApiOrigin(req);
  return origin ? { req, origin } : { req };
}

function validated(req: NodeBootstrap, bytes: number, then: FollowingRender | undefined): ValidatedRequest {
  const v: ValidatedRequest = { ...portable(req), digest: requestDigest(req), bytes };
  if (!then) return v;
  try {
    // The plan the routes make from the same inputs, so the key is theirs (src/api/render-plan.ts).
    const plan = renderPlan(v, then.accept, then.query);
    return { ...v, rendered: { key: plan.key, result: renderNodeBootstrap(req, plan.options) } };
  } catch {
    // Not acceptable, or not renderable: the request itself is valid, and the caller's
    // own negotiation and render report the problem as they would without this.
    return v;
  }
}

/**
 * Run one task on this thread.
 *
 * @throws RequestError (400, 413, 422 naming the field) for input that cannot be
 *   parsed, validated or rendered; AssemblyError (422) for a stored machine that does not
 *   assemble; UserDataLimitError (422) for a payload over a platform's limit.
 */
export function runTask<T extends Task>(task: T): TaskValue<T> {
  switch (task.op) {
    case 'parse':
      return validated(parseNodeBootstrap(task.text, task.syntax, task.limits), Buffer.byteLength(task.text), task.render) as TaskValue<T>;
    case 'assemble': {
      const req = machineNodeBootstrap(task.parts, task.limits);
      // Stored specs are JSON values (no binary), so their JSON size is the charge.
      return validated(req, Buffer.byteLength(JSON.stringify(req)), task.render) as TaskValue<T>;
    }
    case 'render':
      return renderNodeBootstrap(adoptRequest(task.request), task.options) as TaskValue<T>;
  }
  throw new Error(`unknown task ${(task as { op: string }).op}`);
}

/** An error made ready to cross threads. */
export function failure(e: unknown): TaskFailure {
  const error = e instanceof Error ? e : new Error(String(e));
  return {
    failed: true,
    name: error.name,
    message: error.message,
    ...(error instanceof RequestError ? { problems: error.problems, status: error.status } : {}),
    ...(error.stack !== undefined ? { stack: error.stack } : {}),
  };
}

/**
 * The error a {@link TaskFailure} stands for, in its own class, so the routes and the
 * error handler treat it exactly as if the task had run on their thread.
 *
 * @param task the task that failed (an AssemblyError's detail names its parts' revisions).
 */
export function rebuildError(f: TaskFailure, task: Task): Error {
  if (f.problems && f.status !== undefined) {
    if (f.name === 'AssemblyError' && task.op === 'assemble') return new AssemblyError(f.problems, task.parts);
    if (f.name === 'UserDataLimitError' && f.problems.length === 1) return new UserDataLimitError(f.problems[0]!.path, f.problems[0]!.message);
    return new RequestError(f.problems, f.status);
  }
  const error = new Error(f.message);
  error.name = f.name;
  if (f.stack !== undefined) error.stack = f.stack;
  return error;
}
