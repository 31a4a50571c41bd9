/**
 * The KubeadmConfig controller's event loop: watches on KubeadmConfigs, Machines,
 * MachinePools and Clusters (client-node informers: list, then watch from the list's
 * resourceVersion, relist on 410 Gone) feed a {@link WorkQueue} of KubeadmConfig keys
 * (`namespace/name`) that {@link Reconciler.reconcile} works through, as CABPK's
 * `SetupWithManager` wires it:
 *
 * - a KubeadmConfig event queues that config;
 * - a Machine or MachinePool event queues the KubeadmConfig its `bootstrap.configRef`
 *   names (CABPK's `MachineToBootstrapMapFunc`, `MachinePoolToBootstrapMapFunc`);
 * - a Cluster event queues every KubeadmConfig of the cluster's Machines and
 *   MachinePools, and those labelled `cluster.x-k8s.io/cluster-name` with it (CABPK's
 *   `ClusterToKubeadmConfigs`);
 * - with `--watch-filter`, every watch selects `cluster.x-k8s.io/watch-filter=<value>`
 *   on the API server (Cluster API's `ResourceHasFilterLabel`), and with `--namespace`
 *   every watch is of that namespace.
 *
 * A watch that fails (the API server restarted, a network error) is started again after
 * a pause; the informers' caches serve only the mapping, the reconciler reads what it
 * acts on from the API server.
 */
import { type KubernetesObject, makeInformer, type Informer, type ObjectCache } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { BOOTSTRAP_API, CLUSTER_NAME_LABEL, type ContractReference, CORE_API, type Machine, type MachinePool, WATCH_FILTER_LABEL } from './capi.js';
import { apiErrorText, type Kube, type KubeObject } from '../kube/client.js';
import { WorkQueue, type QueueObserver } from './queue.js';
import type { Reconciler } from './reconcile.js';

/** How long a failed watch waits before it lists and watches again, milliseconds. */
export const WATCH_RESTART_MS = 5_000;

/** What the manager watches and how hard it works. */
export interface ManagerOptions {
  /** `--namespace`: watch this namespace only (all when undefined). */
  namespace?: string;
  /** `--watch-filter`: only objects labelled `cluster.x-k8s.io/watch-filter=<value>`. */
  watchFilter?: string;
  /** `--kubeadmconfig-concurrency`: KubeadmConfigs reconciled at once. */
  concurrency: number;
}

/** The watched kinds: API path segment, kind, plural. */
const WATCHED = [
  { apiVersion: BOOTSTRAP_API, kind: 'KubeadmConfig', plural: 'kubeadmconfigs' },
  { apiVersion: CORE_API, kind: 'Machine', plural: 'machines' },
  { apiVersion: CORE_API, kind: 'MachinePool', plural: 'machinepools' },
  { apiVersion: CORE_API, kind: 'Cluster', plural: 'clusters' },
] as const;

type WatchedKind = (typeof WATCHED)[number]['kind'];

/** The API path of a kind's collection (`/apis/<group>/<version>[/namespaces/<ns>]/<plural>`). */
function collectionPath(apiVersion: string, plural: string, namespace?: string): string {
  return `/apis/${apiVersion}${namespace ? `/namespaces/${encodeURIComponent(namespace)}` : ''}/${plural}`;
}

/** The KubeadmConfig a bootstrap configRef names, if it names one. */
function configRefName(ref: ContractReference | undefined): string | undefined {
  return ref?.kind === 'KubeadmConfig' && ref.apiGroup === 'bootstrap.cluster.x-k8s.io' ? ref.name : undefined;
}

/** Watches, queue and reconciler of one management cluster. */
export class Manager {
  readonly queue: WorkQueue;
  private readonly informers = new Map<WatchedKind, Informer<KubernetesObject> & ObjectCache<KubernetesObject>>();
  private readonly restarts = new Set<NodeJS.Timeout>();
  private started = false;
  private stopped = false;
  private syncedCount = 0;

  constructor(
    private readonly kube: Kube,
    private readonly reconciler: Reconciler,
    private readonly options: ManagerOptions,
    private readonly log: Logger,
    observer: QueueObserver,
  ) {
    this.queue = new WorkQueue(
      (key) => {
        const slash = key.indexOf('/');
        return this.reconciler.reconcile(key.slice(0, slash), key.slice(slash + 1));
      },
      options.concurrency,
      observer,
    );
  }

  /** Whether every watch listed once (then the queue holds every config there is). */
  get synced(): boolean {
    return this.syncedCount === WATCHED.length;
  }

  /**
   * Start the watches; resolves once each listed once, or rejects with the first list's
   * error (a missing CRD, a forbidden list: the operator's to fix; the watch keeps retrying).
   */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    const selector = this.options.watchFilter !== undefined ? `${WATCH_FILTER_LABEL}=${this.options.watchFilter}` : undefined;
    const starts: Promise<void>[] = [];
    for (const w of WATCHED) {
      const informer = makeInformer(
        this.kube.config,
        collectionPath(w.apiVersion, w.plural, this.options.namespace),
        () => this.kube.listRaw(w.apiVersion, w.kind, this.options.namespace, selector),
        selector,
      );
      this.informers.set(w.kind, informer);
      const onEvent = (o: KubernetesObject) => {
        this.enqueueFor(w.kind, o as KubeObject);
      };
      informer.on('add', onEvent);
      informer.on('update', onEvent);
      informer.on('delete', onEvent);
      informer.on('error', (e: unknown) => {
        if (this.stopped) return; // the watch request aborted by stop()
        this.log.warn({ kind: w.kind, err: apiErrorText(e) }, 'the watch failed: listing and watching again');
        this.restart(informer);
      });
      let counted = false;
      starts.push(
        informer.start().then(
          () => {
            if (!counted) this.syncedCount++;
            counted = true;
          },
          (e: unknown) => {
            this.log.warn({ kind: w.kind, err: apiErrorText(e) }, 'could not watch: trying again');
            this.restart(informer, () => {
              if (!counted) this.syncedCount++;
              counted = true;
            });
            throw e;
          },
        ),
      );
    }
    await Promise.all(starts);
  }

  /** Stop the watches and the queue; resolves once the reconciles under way finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.restarts) clearTimeout(t);
    this.restarts.clear();
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
    await this.queue.stop();
  }

  /** Start a failed watch again after {@link WATCH_RESTART_MS}, until it starts or the manager stops. */
  private restart(informer: Informer<KubernetesObject>, started?: () => void): void {
    if (this.stopped) return;
    const timer = setTimeout(() => {
      this.restarts.delete(timer);
      if (this.stopped) return;
      informer.start().then(started, (e: unknown) => {
        this.log.warn({ err: apiErrorText(e) }, 'could not watch: trying again');
        this.restart(informer, started);
      });
    }, WATCH_RESTART_MS);
    this.restarts.add(timer);
  }

  /** Queue the KubeadmConfigs an event of `kind` concerns. */
  private enqueueFor(kind: WatchedKind, object: KubeObject): void {
    const ns = object.metadata.namespace;
    if (!ns) return;
    const add = (name: string | undefined) => {
      if (name) this.queue.add(`${ns}/${name}`);
    };
    switch (kind) {
      case 'KubeadmConfig':
        add(object.metadata.name);
        break;
      case 'Machine':
        add(configRefName((object as Machine).spec.bootstrap.configRef));
        break;
      case 'MachinePool':
        add(configRefName((object as MachinePool).spec.template.spec.bootstrap.configRef));
        break;
      case 'Cluster':
        for (const name of this.configsOfCluster(ns, object.metadata.name)) add(name);
        break;
    }
  }

  /** The KubeadmConfigs of a cluster, from the caches. */
  private configsOfCluster(namespace: string, cluster: string): Set<string> {
    const names = new Set<string>();
    for (const m of this.cached('Machine', namespace) as readonly Machine[]) if (m.spec.clusterName === cluster) names.add(configRefName(m.spec.bootstrap.configRef) ?? '');
    for (const p of this.cached('MachinePool', namespace) as readonly MachinePool[]) if (p.spec.clusterName === cluster) names.add(configRefName(p.spec.template.spec.bootstrap.configRef) ?? '');
    for (const c of this.cached('KubeadmConfig', namespace)) if (c.metadata.labels?.[CLUSTER_NAME_LABEL] === cluster) names.add(c.metadata.name);
    names.delete('');
    return names;
  }

  private cached(kind: WatchedKind, namespace: string): readonly KubeObject[] {
    const objects: readonly unknown[] = this.informers.get(kind)?.list(namespace) ?? [];
    return objects as readonly KubeObject[];
  }
}
