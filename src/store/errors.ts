/**
 * Typed store errors. Every {@link Store} implementation throws these and only these for
 * the caller's mistakes; the HTTP layer maps each to one status in one place
 * (src/api/server.ts). Messages name resources and fields, never a spec's values, so
 * they can be logged and sent.
 */
import type { ResourceKind } from './resources.js';

/** Base class of the caller's store mistakes (everything else is a fault of the store). */
export abstract class StoreError extends Error {}

/** The resource (or the revision of it) does not exist. HTTP 404. */
export class NotFoundError extends StoreError {
  constructor(
    readonly kind: ResourceKind,
    readonly resourceName: string,
    readonly revision?: number,
  ) {
    super(revision === undefined ? `${kind} "${resourceName}" does not exist` : `${kind} "${resourceName}" has no revision ${revision}`);
    this.name = 'NotFoundError';
  }
}

/** No discovered machine has this id. HTTP 404. */
export class DiscoveredNotFoundError extends StoreError {
  constructor(readonly id: string) {
    super(`discovered machine "${id.slice(0, 40)}" does not exist`);
    this.name = 'DiscoveredNotFoundError';
  }
}

/** A create named a resource that already exists. HTTP 409. */
export class AlreadyExistsError extends StoreError {
  constructor(
    readonly kind: ResourceKind,
    readonly resourceName: string,
  ) {
    super(`${kind} "${resourceName}" already exists`);
    this.name = 'AlreadyExistsError';
  }
}

/** A write's `ifMatch` revision is not the current one. HTTP 412. */
export class PreconditionFailedError extends StoreError {
  constructor(
    readonly kind: ResourceKind,
    readonly resourceName: string,
    /** The revision asked for (or, from HTTP, the If-Match value when it names no revision). */
    readonly expected: number | string,
    readonly actual: number,
  ) {
    super(`${kind} "${resourceName}" is at revision ${actual}, not ${typeof expected === 'number' ? expected : JSON.stringify(expected)}`);
    this.name = 'PreconditionFailedError';
  }
}

/** Deleting a cluster or profile that machines still name. HTTP 409. */
export class ReferencedError extends StoreError {
  constructor(
    readonly kind: 'Cluster' | 'Profile',
    readonly resourceName: string,
    /** The machines naming it, sorted. */
    readonly machines: string[],
  ) {
    const shown = machines.slice(0, 20).join(', ');
    const more = machines.length > 20 ? ` and ${machines.length - 20} more` : '';
    super(`${kind} "${resourceName}" is used by ${machines.length} machine${machines.length === 1 ? '' : 's'}: ${shown}${more}`);
    this.name = 'ReferencedError';
  }
}

/** One reference a machine makes to a missing resource. */
export interface MissingReference {
  /** The machine field naming it: `spec.cluster` or `spec.profile`. */
  path: 'spec.cluster' | 'spec.profile';
  kind: 'Cluster' | 'Profile';
  name: string;
}

/**
 * A machine names a cluster or profile that does not exist. HTTP 422, `errors[]` naming
 * each field, then `others`: the problems of the machine's own fields found meanwhile
 * (node labels, taints), so one answer names everything the write must fix.
 */
export class MissingReferenceError extends StoreError {
  constructor(
    readonly missing: MissingReference[],
    readonly others: readonly { path: string; message: string }[] = [],
  ) {
    super(missing.map((m) => `${m.path}: ${m.kind.toLowerCase()} "${m.name}" does not exist`).join('; '));
    this.name = 'MissingReferenceError';
  }
}

/**
 * A machine's hardware selector (a MAC address in any spelling, the UUID, the serial) is
 * already another machine's: the two would race for one machine's boot. HTTP 409,
 * `errors[]` naming the field.
 */
export class DuplicateSelectorError extends StoreError {
  constructor(
    /** The field of the machine being written, e.g. `spec.selectors.mac[1]`. */
    readonly field: string,
    /** The machine that has it already. */
    readonly machine: string,
  ) {
    super(`${field} is already a selector of machine "${machine}"`);
    this.name = 'DuplicateSelectorError';
  }
}

/** An argument the store cannot use (a bad `limit`, `continue` token or MAC address). HTTP 400. */
export class InvalidArgumentError extends StoreError {
  constructor(
    /** The argument or field, e.g. `continue`, `spec.selectors.mac[0]`. */
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${field}: ${reason}`);
    this.name = 'InvalidArgumentError';
  }
}
