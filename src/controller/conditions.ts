/**
 * A KubeadmConfig's v1beta2 conditions (metav1.Condition), with the types and reasons
 * CABPK uses (`api/bootstrap/kubeadm/v1beta2/kubeadmconfig_types.go`): `Ready` summarises
 * `DataSecretAvailable` and `CertificatesAvailable`; `Paused` says whether the config is
 * reconciled. Cluster API mirrors `Ready` into the Machine's `BootstrapConfigReady`.
 */
import type { Condition } from './capi.js';

export const READY = 'Ready';
export const DATA_SECRET_AVAILABLE = 'DataSecretAvailable';
export const CERTIFICATES_AVAILABLE = 'CertificatesAvailable';
export const PAUSED = 'Paused';

/** Reasons (Cluster API `AvailableReason`, `NotAvailableReason`, `InternalErrorReason`, …). */
export const REASON = {
  available: 'Available',
  notAvailable: 'NotAvailable',
  internalError: 'InternalError',
  ready: 'Ready',
  notReady: 'NotReady',
  paused: 'Paused',
  notPaused: 'NotPaused',
} as const;

/** A condition to set: everything but `lastTransitionTime` and `observedGeneration`. */
export type ConditionInput = Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;

/**
 * The conditions after setting `updates` over `current`: a condition keeps its
 * `lastTransitionTime` unless its status changes (metav1 `SetStatusCondition`); each
 * carries `observedGeneration`. `Ready` is recomputed from the two it summarises when
 * `summarise` is set: True when both are True, else False (Unknown while either is
 * unknown) with the first not-True condition's message.
 */
export function setConditions(current: readonly Condition[] | undefined, updates: readonly ConditionInput[], generation: number | undefined, now: Date, summarise = true): Condition[] {
  const byType = new Map((current ?? []).map((c) => [c.type, c]));
  const put = (u: ConditionInput) => {
    const old = byType.get(u.type);
    byType.set(u.type, {
      type: u.type,
      status: u.status,
      reason: u.reason,
      message: u.message ?? '',
      lastTransitionTime: old?.status === u.status ? old.lastTransitionTime : now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
      ...(generation !== undefined ? { observedGeneration: generation } : {}),
    });
  };
  updates.forEach(put);
  if (summarise) {
    const parts = [DATA_SECRET_AVAILABLE, CERTIFICATES_AVAILABLE].map((t) => byType.get(t));
    const notTrue = parts.find((c) => c?.status !== 'True');
    if (!notTrue) put({ type: READY, status: 'True', reason: REASON.ready });
    else put({ type: READY, status: notTrue.status === 'False' ? 'False' : 'Unknown', reason: notTrue.status === 'False' ? REASON.notReady : 'ReadyUnknown', message: notTrue.message ?? '' });
  }
  return [...byType.values()].sort((a, b) => a.type.localeCompare(b.type));
}

/** A Cluster API v1beta1 condition (`status.deprecated.v1beta1.conditions[]`). */
export interface V1beta1Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  severity?: 'Error' | 'Warning' | 'Info';
  lastTransitionTime: string;
  reason?: string;
  message?: string;
}

/**
 * The v1beta1 conditions CABPK still writes beside the v1beta2 ones
 * (`status.deprecated.v1beta1.conditions`: `Ready`, `CertificatesAvailable`,
 * `DataSecretAvailable`), for clients that read KubeadmConfigs as v1beta1: a True
 * condition has only its type, status and time; a False one its reason, message and a
 * severity (`Error` for a config that cannot render, `Warning` while it waits).
 */
export function v1beta1Conditions(conditions: readonly Condition[]): V1beta1Condition[] {
  return conditions
    .filter((c) => c.type === READY || c.type === DATA_SECRET_AVAILABLE || c.type === CERTIFICATES_AVAILABLE)
    .map((c) => {
      if (c.status === 'True') return { type: c.type, status: c.status, lastTransitionTime: c.lastTransitionTime };
      const severity = c.message?.includes('cannot render') ? 'Error' : 'Warning';
      return { type: c.type, status: c.status, severity, lastTransitionTime: c.lastTransitionTime, reason: c.reason, ...(c.message ? { message: c.message } : {}) };
    });
}
