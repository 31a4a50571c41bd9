/**
 * The Kubernetes API as the controller uses it: a few verbs on objects named by
 * apiVersion, kind, namespace and name, through `@kubernetes/client-node`'s generic
 * object client (`KubernetesObjectApi`, which finds a kind's resource by discovery) and,
 * for the status subresource, its custom-objects client. Errors are the API server's
 * own (`ApiException` with the HTTP status); {@link apiErrorText} turns one into a line
 * that names the status, reason and message of the API server's `Status` and nothing
 * else (an error body never carries an object's data, but a request body might, and it
 * is never quoted).
 */
import { ApiException, CustomObjectsApi, KubeConfig, type KubernetesListObject, type KubernetesObject, KubernetesObjectApi, PatchStrategy, setHeaderOptions, type V1DeleteOptions } from '@kubernetes/client-node';

/** `metadata` as the controller reads and writes it (`meta/v1` ObjectMeta, plain JSON). */
export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  /** RFC 3339 (plain JSON from a custom resource; a `Date` once the client deserialised a core kind). */
  creationTimestamp?: string | Date;
  deletionTimestamp?: string | Date;
}

/** An object as the API server returns it (untyped beyond its metadata). */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/** The client's view of a plain object (its types are classes; the wire is JSON either way). */
const wire = (object: unknown): KubernetesObject & { metadata: { name: string; namespace?: string } } => object as KubernetesObject & { metadata: { name: string; namespace?: string } };

/** An owner reference (`metadata.ownerReferences[]`). */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** The HTTP status of an API error, or undefined for anything else (a network error, a bug). */
export function apiStatus(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

/** 404 Not Found. */
export const isNotFound = (error: unknown): boolean => apiStatus(error) === 404;
/** 409 Conflict: AlreadyExists on create, or a stale `resourceVersion` on update. */
export const isConflict = (error: unknown): boolean => apiStatus(error) === 409;

/**
 * One line for a log or a condition: `404 NotFound: secrets "x" not found` for an API
 * error (from the `Status` the API server answered), else the error's own message.
 */
export function apiErrorText(error: unknown): string {
  if (error instanceof ApiException) {
    let status: { reason?: unknown; message?: unknown } = {};
    try {
      status = (typeof error.body === 'string' ? JSON.parse(error.body) : (error.body ?? {})) as typeof status;
    } catch {
      // not a Status: only the code is said
    }
    const reason = typeof status.reason === 'string' ? ` ${status.reason}` : '';
    const message = typeof status.message === 'string' ? `: ${status.message}` : '';
    return `${error.code}${reason}${message}`;
  }
  return error instanceof Error ? error.message : String(error);
}

/** `group/version` → `[group, version]` (`v1` → `['', 'v1']`). */
function groupVersion(apiVersion: string): [string, string] {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? ['', apiVersion] : [apiVersion.slice(0, slash), apiVersion.slice(slash + 1)];
}

/** The plural resource name of the Cluster API kinds the controller writes the status of. */
const STATUS_PLURALS: Record<string, string> = { KubeadmConfig: 'kubeadmconfigs' };

/** A client for one API server. */
export class Kube {
  private readonly objects: KubernetesObjectApi;
  private readonly custom: CustomObjectsApi;

  /** @param config the kubeconfig to reach the API server with (its current context) */
  constructor(readonly config: KubeConfig) {
    this.objects = KubernetesObjectApi.makeApiClient(config);
    this.custom = config.makeApiClient(CustomObjectsApi);
  }

  /** A client from kubeconfig text (a `<cluster>-kubeconfig` Secret's `value`). */
  static fromKubeconfig(text: string): Kube {
    const config = new KubeConfig();
    config.loadFromString(text);
    return new Kube(config);
  }

  /** The object, or undefined when it does not exist. */
  async get<T extends KubeObject = KubeObject>(apiVersion: string, kind: string, namespace: string | undefined, name: string): Promise<T | undefined> {
    try {
      const answer: unknown = await this.objects.read(wire({ apiVersion, kind, metadata: { name, ...(namespace ? { namespace } : {}) } }));
      return answer as T;
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  /** The objects of a kind in a namespace (all namespaces when undefined), optionally by label selector. */
  async list<T extends KubeObject = KubeObject>(apiVersion: string, kind: string, namespace?: string, labelSelector?: string): Promise<T[]> {
    const list = await this.listRaw(apiVersion, kind, namespace, labelSelector);
    const answer: unknown = list.items;
    return answer as T[];
  }

  /** The list as the client answers it: its items and the list's `metadata.resourceVersion` (what an informer watches from). */
  listRaw(apiVersion: string, kind: string, namespace?: string, labelSelector?: string): Promise<KubernetesListObject<KubernetesObject>> {
    return this.objects.list(apiVersion, kind, namespace, undefined, undefined, undefined, undefined, labelSelector);
  }

  /** Create the object. @throws ApiException 409 when it exists */
  async create<T extends KubeObject>(object: T): Promise<T> {
    const answer: unknown = await this.objects.create(wire(object), undefined, undefined, FIELD_MANAGER);
    return answer as T;
  }

  /** Replace the object (its `metadata.resourceVersion` makes it conditional). @throws ApiException 409 on a stale version */
  async replace<T extends KubeObject>(object: T): Promise<T> {
    const answer: unknown = await this.objects.replace(wire(object), undefined, undefined, FIELD_MANAGER);
    return answer as T;
  }

  /** A JSON merge patch (RFC 7386) of the object's main resource. */
  async mergePatch<T extends KubeObject>(apiVersion: string, kind: string, namespace: string, name: string, patch: Record<string, unknown>): Promise<T> {
    const metadata = { ...(patch.metadata as Record<string, unknown> | undefined), name, namespace };
    const answer: unknown = await this.objects.patch(wire({ ...patch, apiVersion, kind, metadata }), undefined, undefined, FIELD_MANAGER, undefined, PatchStrategy.MergePatch);
    return answer as T;
  }

  /** A JSON merge patch of the object's `status` subresource (`{status: …}`). */
  async patchStatus(apiVersion: string, kind: string, namespace: string, name: string, status: Record<string, unknown>): Promise<void> {
    const [group, version] = groupVersion(apiVersion);
    const plural = STATUS_PLURALS[kind];
    if (!plural) throw new Error(`no status subresource known for ${kind}`);
    await this.custom.patchNamespacedCustomObjectStatus(
      { group, version, namespace, plural, name, body: { status }, fieldManager: FIELD_MANAGER },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  /**
   * Delete the object; true when it was deleted, false when it did not exist.
   *
   * @param uid when given, only that incarnation is deleted (a precondition: 409 if the
   *   name now belongs to another object)
   */
  async delete(apiVersion: string, kind: string, namespace: string, name: string, uid?: string): Promise<boolean> {
    try {
      const options: unknown = uid ? { preconditions: { uid } } : undefined;
      await this.objects.delete(wire({ apiVersion, kind, metadata: { name, namespace } }), undefined, undefined, undefined, undefined, undefined, options as V1DeleteOptions | undefined);
      return true;
    } catch (e) {
      if (isNotFound(e)) return false;
      throw e;
    }
  }
}

/** The field manager named in every write (`kubectl get --show-managed-fields` shows it). */
export const FIELD_MANAGER = 'bootwright';
