/**
 * Choosing the kubeadm configuration API version for a Kubernetes version.
 *
 * kubeadm history: v1beta3 arrived in 1.22 and is the only one until 1.30; v1beta4
 * arrived in 1.31 (v1beta3 still read, deprecated); kubeadm 1.36 still reads v1beta3 with a
 * deprecation warning and 1.37 no longer does ("uses an old API spec ... Please use kubeadm
 * v1.36 instead"), both seen with the reference kubeadm (tools/reference). bootwright's
 * contract refuses a v1beta3 pin from 1.36, where kubeadm deprecated it for removal.
 */
import { fieldError } from '../../errors.js';
import type { KUBEADM_API_VERSIONS } from '../../request/schema.js';

export type KubeadmApiVersion = (typeof KUBEADM_API_VERSIONS)[number];

/** A parsed Kubernetes version: major and minor (patch and pre-release do not matter here). */
export interface KubeVersion {
  major: number;
  minor: number;
  /** Normalised with a leading `v`, as kubeadm prints it: `v1.33.2`. */
  text: string;
}

/** Parse `v1.33.2` or `1.33.2` (already format-checked by the request schema). */
export function parseKubeVersion(version: string): KubeVersion {
  const text = version.startsWith('v') ? version : `v${version}`;
  const [major, minor] = text.slice(1).split('.').map(Number);
  return { major: major!, minor: minor!, text };
}

/**
 * Pick the kubeadm API version: v1beta3 for 1.22–1.30, v1beta4 from 1.31; a pin is
 * honoured when kubeadm of that version reads it.
 *
 * @param version Kubernetes version from `spec.kubernetesVersion`.
 * @param pinned `spec.kubeadm.apiVersion`, if the request pins one.
 * @throws RequestError for Kubernetes below 1.22 (no supported kubeadm API), for a
 *   v1beta4 pin below 1.31 (kubeadm does not know it yet) and a v1beta3 pin from 1.36
 *   (kubeadm deprecated it there and removed it in 1.37).
 */
export function selectKubeadmApiVersion(version: KubeVersion, pinned?: KubeadmApiVersion): KubeadmApiVersion {
  const { major, minor, text } = version;
  if (major !== 1 || minor < 22) {
    fieldError('spec.kubernetesVersion', `${text} is not supported: bootwright needs Kubernetes 1.22 or later (kubeadm.k8s.io/v1beta3)`);
  }
  if (pinned === 'kubeadm.k8s.io/v1beta3' && minor >= 36) {
    fieldError('spec.kubeadm.apiVersion', `kubeadm.k8s.io/v1beta3 is not written for kubeadm ${text}: kubeadm deprecated it in 1.36 and removed it in 1.37; use kubeadm.k8s.io/v1beta4`);
  }
  if (pinned === 'kubeadm.k8s.io/v1beta4' && minor < 31) {
    fieldError('spec.kubeadm.apiVersion', `kubeadm ${text} does not read kubeadm.k8s.io/v1beta4 (added in 1.31); use kubeadm.k8s.io/v1beta3`);
  }
  return pinned ?? (minor >= 31 ? 'kubeadm.k8s.io/v1beta4' : 'kubeadm.k8s.io/v1beta3');
}
