/**
 * Kubernetes Events about a KubeadmConfig (core/v1 `Event`, as client-go's recorder
 * writes them): what `kubectl describe kubeadmconfig` shows. An Event never carries a
 * secret (a token, a key, a Secret's content): messages name objects and fields only.
 * Writing one is best effort: a failure is logged, never fails the reconcile.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { apiErrorText, type Kube, type KubeObject } from '../kube/client.js';

/** The component events are reported by (`source.component`, `reportingController`). */
export const COMPONENT = 'bootwright-controller';

/** Records events. */
export class EventRecorder {
  constructor(
    private readonly kube: Kube,
    private readonly log: Logger,
    private readonly instance: string,
  ) {}

  /** Record `reason` (CamelCase) with `message` about `object`. */
  async record(object: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const now = new Date().toISOString();
    const namespace = object.metadata.namespace ?? 'default';
    try {
      await this.kube.create({
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: `${object.metadata.name}.${randomBytes(8).toString('hex')}`, namespace },
        involvedObject: { apiVersion: object.apiVersion, kind: object.kind, name: object.metadata.name, namespace, uid: object.metadata.uid, resourceVersion: object.metadata.resourceVersion },
        reason,
        message,
        type,
        source: { component: COMPONENT },
        reportingComponent: COMPONENT,
        reportingInstance: this.instance,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      });
    } catch (e) {
      this.log.warn({ reason, object: `${namespace}/${object.metadata.name}`, err: apiErrorText(e) }, 'could not record an event');
    }
  }
}
