/**
 * The controller's health and metrics endpoints, with controller-runtime's names so a
 * Cluster API operator's dashboards and alerts read them as they read CABPK's:
 *
 * - `GET /healthz`: 200 while the process runs its event loop;
 * - `GET /readyz`: 200 once this replica is a standby (not leading) or its watches have
 *   listed; 503 before, with what it waits for;
 * - `GET /metrics`: Prometheus text: `controller_runtime_reconcile_total{controller,
 *   result}`, `controller_runtime_reconcile_errors_total{controller}`,
 *   `controller_runtime_reconcile_time_seconds{controller}`, `workqueue_depth{name}`,
 *   `leader_election_master_status{name}`, and the process's default metrics.
 *
 * Labels never carry secrets or object names.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { QueueObserver } from './queue.js';

/** controller-runtime's name of CABPK's controller, and so of this one. */
export const CONTROLLER_NAME = 'kubeadmconfig';

/** The controller's metrics registry and the queue observer that counts into it. */
export class ControllerMetrics {
  readonly registry = new Registry();
  private readonly reconciles: Counter<'controller' | 'result'>;
  private readonly errors: Counter<'controller'>;
  private readonly durations: Histogram<'controller'>;
  private readonly leader: Gauge<'name'>;

  /**
   * @param depth read at scrape time: the work queue's depth
   * @param leaseName the leader-election Lease's name (the gauge's label)
   */
  constructor(
    depth: () => number,
    private readonly leaseName: string,
  ) {
    collectDefaultMetrics({ register: this.registry });
    this.reconciles = new Counter({ name: 'controller_runtime_reconcile_total', help: 'Total number of reconciliations per controller', labelNames: ['controller', 'result'], registers: [this.registry] });
    this.errors = new Counter({ name: 'controller_runtime_reconcile_errors_total', help: 'Total number of reconciliation errors per controller', labelNames: ['controller'], registers: [this.registry] });
    this.durations = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller',
      labelNames: ['controller'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers: [this.registry],
    });
    new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue',
      labelNames: ['name'],
      registers: [this.registry],
      collect() {
        this.set({ name: CONTROLLER_NAME }, depth());
      },
    });
    this.leader = new Gauge({ name: 'leader_election_master_status', help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master', labelNames: ['name'], registers: [this.registry] });
    this.leader.set({ name: leaseName }, 0);
  }

  /** Count this replica's leadership (1 leading, 0 standby). */
  setLeading(leading: boolean): void {
    this.leader.set({ name: this.leaseName }, leading ? 1 : 0);
  }

  /** The observer the work queue reports to. */
  observer(onError: QueueObserver['failed']): QueueObserver {
    return {
      reconciled: (result, seconds) => {
        this.reconciles.inc({ controller: CONTROLLER_NAME, result });
        if (result === 'error') this.errors.inc({ controller: CONTROLLER_NAME });
        this.durations.observe({ controller: CONTROLLER_NAME }, seconds);
      },
      failed: onError,
    };
  }
}

/**
 * Serve `/healthz`, `/readyz` and `/metrics` on `host:port` (port 0: any free one).
 *
 * @param ready undefined when ready, else what readiness waits for (the 503's body)
 * @returns the listening server (its `address()` gives the port)
 */
export async function serveHealth(host: string, port: number, metrics: ControllerMetrics, ready: () => string | undefined): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('ok\n');
    } else if (path === '/readyz') {
      const waiting = ready();
      res.writeHead(waiting === undefined ? 200 : 503, { 'content-type': 'text/plain; charset=utf-8' }).end(waiting === undefined ? 'ok\n' : `${waiting}\n`);
    } else if (path === '/metrics') {
      metrics.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
        () => res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics unavailable\n'),
      );
    } else {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
}

/** The port a server listens on. */
export const portOf = (server: Server): number => (server.address() as AddressInfo).port;
