/**
 * The init lock: exactly one `kubeadm init` per cluster, however many control-plane
 * Machines race for it. The same object as CABPK's (`bootstrap/kubeadm/pkg/locking/
 * control_plane_init_mutex.go`), so the two providers exclude each other: a ConfigMap
 * `<cluster>-lock` in the Cluster's namespace, data `lock-information:
 * {"machineName":"<machine>"}`, label `cluster.x-k8s.io/cluster-name`, owned by the
 * Cluster. Acquiring is creating it (the API server lets one create win); its holder
 * acquires it again; a lock whose Machine is gone is deleted and taken; unlocking is
 * deleting it once the control plane is initialised.
 */
import { type Cluster, CLUSTER_NAME_LABEL, CORE_API, type Machine } from './capi.js';
import { isConflict, type Kube, type KubeObject } from '../kube/client.js';

const DATA_KEY = 'lock-information';

/** The lock's name for a cluster. */
export const lockName = (cluster: Cluster): string => `${cluster.metadata.name}-lock`;

/** The Machine named by a lock ConfigMap, or undefined when its data is not CABPK's. */
function holder(lock: KubeObject): string | undefined {
  try {
    const info = JSON.parse(String((lock.data as Record<string, string> | undefined)?.[DATA_KEY])) as { machineName?: unknown };
    return typeof info.machineName === 'string' ? info.machineName : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Take the init lock for `machine`.
 *
 * @returns true when `machine` holds the lock (taken now or before), false when another
 *   Machine that still exists holds it
 * @throws the API server's errors other than a lost create race
 */
export async function acquireInitLock(kube: Kube, cluster: Cluster, machine: Machine): Promise<boolean> {
  const namespace = cluster.metadata.namespace!;
  const name = lockName(cluster);
  for (let attempt = 0; attempt < 2; attempt++) {
    const existing = await kube.get('v1', 'ConfigMap', namespace, name);
    if (existing) {
      const owner = holder(existing);
      if (owner === machine.metadata.name) return true;
      if (owner !== undefined && (await kube.get(CORE_API, 'Machine', namespace, owner))) return false;
      // Its Machine is gone (deleted while it held the lock) or the data is unreadable: release it.
      await kube.delete('v1', 'ConfigMap', namespace, name, existing.metadata.uid);
      continue;
    }
    try {
      await kube.create({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: {
          name,
          namespace,
          labels: { [CLUSTER_NAME_LABEL]: cluster.metadata.name },
          ownerReferences: [{ apiVersion: CORE_API, kind: 'Cluster', name: cluster.metadata.name, uid: cluster.metadata.uid! }],
        },
        data: { [DATA_KEY]: JSON.stringify({ machineName: machine.metadata.name }) },
      });
      return true;
    } catch (e) {
      if (!isConflict(e)) throw e;
      // Another reconcile created it first: read who holds it.
    }
  }
  return false;
}

/** Release the init lock (once the control plane is initialised). @returns whether a lock was deleted */
export async function releaseInitLock(kube: Kube, cluster: Cluster): Promise<boolean> {
  return kube.delete('v1', 'ConfigMap', cluster.metadata.namespace!, lockName(cluster));
}
