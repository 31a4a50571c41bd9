/**
 * One running controller: the health and metrics server, leader election (when asked
 * for), and, while this replica leads, the watches and the work queue. This is what
 * `bootwright controller` starts; it has no HTTP API and no store: it calls the renderer
 * in-process, as the service does.
 */
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { DEFAULT_LEASE_NAME } from './defaults.js';
import { EventRecorder } from './events.js';
import { apiErrorText, type Kube } from '../kube/client.js';
import { LeaderElector, type LeaderElectionOptions } from './leader.js';
import { Manager, type ManagerOptions } from './manager.js';
import { ControllerMetrics, serveHealth } from './metrics.js';
import { Reconciler, type ReconcilerOptions } from './reconcile.js';

/** Everything `bootwright controller` was asked for. */
export interface ControllerOptions extends ReconcilerOptions, ManagerOptions {
  /** Leader election, or undefined to reconcile at once (a single replica). */
  leaderElection?: LeaderElectionOptions;
  /** This replica's name in events (`reportingInstance`) and the Lease. */
  identity: string;
  /** `--health-addr`: where `/healthz`, `/readyz` and `/metrics` listen. */
  health: { host: string; port: number };
}

/** A started controller. */
export interface RunningController {
  health: Server;
  /** Whether this replica reconciles now (always, without leader election). */
  isLeader(): boolean;
  /** Stop: the queue drains, a leader releases its Lease, the health server closes. */
  stop(): Promise<void>;
}


/**
 * Start the controller against the management cluster `kube`.
 *
 * @returns once the health server listens; the watches start when this replica leads
 *   (at once without leader election), and a watch that cannot start yet (no CRDs, no
 *   permission) is retried while `/readyz` answers 503 naming it
 * @throws the health server's listen error (`EADDRINUSE`)
 */
export async function startController(kube: Kube, options: ControllerOptions, log: Logger): Promise<RunningController> {
  const reconciler = new Reconciler(kube, options, new EventRecorder(kube, log, options.identity), log);
  let manager: Manager | undefined;
  let leading = options.leaderElection === undefined;
  const metrics = new ControllerMetrics(() => manager?.queue.depth ?? 0, options.leaderElection?.name ?? DEFAULT_LEASE_NAME);
  const observer = metrics.observer((key, error, retryInMs) => {
    log.warn({ config: key, err: apiErrorText(error), retryInMs }, 'reconcile failed: retrying');
  });

  /** Start the manager; the function it returns stops it. */
  const lead = () => {
    const current = new Manager(kube, reconciler, options, log, observer);
    manager = current;
    current.start().catch((e: unknown) => {
      log.error({ err: apiErrorText(e) }, 'could not start the watches (are the Cluster API CRDs installed, and may this service account list them?): retrying');
    });
    return async () => {
      await current.stop();
      if (manager === current) manager = undefined;
    };
  };

  const ready = () => {
    if (!leading) return undefined;
    return manager?.synced ? undefined : 'waiting for the watches to list KubeadmConfigs, Machines, MachinePools and Clusters';
  };
  const health = await serveHealth(options.health.host, options.health.port, metrics, ready);

  let elector: LeaderElector | undefined;
  let running: Promise<void> | undefined;
  let stopLeading: (() => Promise<void>) | undefined;
  if (options.leaderElection) {
    elector = new LeaderElector(kube, options.leaderElection, log, (now) => {
      leading = now;
      metrics.setLeading(now);
    });
    running = elector.run(lead);
  } else {
    metrics.setLeading(true);
    stopLeading = lead();
  }

  return {
    health,
    isLeader: () => leading,
    async stop() {
      elector?.stop();
      await running;
      await stopLeading?.();
      await new Promise<void>((resolve) => {
        health.close(() => resolve());
        health.closeAllConnections();
      });
    },
  };
}
