/**
 * `bootwright controller`: the Cluster API bootstrap provider. Reconciles CABPK's
 * KubeadmConfigs on the management cluster the kubeconfig names (docs/cluster-api.md),
 * with Cluster API's own flag names where CABPK has the flag.
 */
import { existsSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import { DEFAULT_LEASE_NAME, LEADER_ELECTION_DEFAULTS } from '../controller/defaults.js';
import type { ControllerOptions } from '../controller/run.js';
import { EXIT, UsageError, type Command, type Parsed } from './commands.js';
import { durationMs } from '../kube/duration.js';

/** `bootwright controller`. */
export const CONTROLLER: Command = {
  name: 'controller',
  summary: 'Run the Cluster API bootstrap provider (reconciles KubeadmConfigs)',
  usage: ['controller [--kubeconfig FILE] [--namespace NS] [--watch-filter VALUE] [--leader-elect] [--ignition-version VERSION]'],
  positionals: 0,
  flags: [
    { name: 'kubeconfig', type: 'string', value: 'FILE', help: 'the management cluster (default: $KUBECONFIG, ~/.kube/config, or the Pod\'s service account in a cluster)' },
    { name: 'namespace', type: 'string', value: 'NS', help: 'watch this namespace only (default or empty: all)' },
    { name: 'watch-filter', type: 'string', value: 'VALUE', help: 'only objects labelled cluster.x-k8s.io/watch-filter=VALUE, to run beside CABPK (default or empty: all)' },
    { name: 'bootstrap-token-ttl', type: 'string', value: 'DURATION', help: 'lifetime of the join tokens, refreshed until the node joins (default 15m)' },
    { name: 'ignition-version', type: 'string', value: 'VERSION', help: 'Ignition spec of format: ignition without the bootstrap.bootwright.dev/ignition-version annotation: 2.3 (CABPK\'s; default), 3 (the lowest 3.x that expresses the config) or 3.x.y' },
    { name: 'kubeadmconfig-concurrency', type: 'string', value: 'N', help: 'KubeadmConfigs reconciled at once (default 10)' },
    { name: 'leader-elect', type: 'boolean', help: 'elect a leader on a Lease: of several replicas, one reconciles' },
    { name: 'leader-elect-namespace', type: 'string', value: 'NS', help: 'namespace of the Lease (default: $POD_NAMESPACE, the service account\'s namespace, else default)' },
    { name: 'leader-elect-lease-duration', type: 'string', value: 'DURATION', help: 'how long a standby waits before taking over an unrenewed Lease (default 15s)' },
    { name: 'leader-elect-renew-deadline', type: 'string', value: 'DURATION', help: 'how long the leader tries to renew before it stops leading (default 10s)' },
    { name: 'leader-elect-retry-period', type: 'string', value: 'DURATION', help: 'how often to try to take or renew the Lease (default 2s)' },
    { name: 'health-addr', type: 'string', value: 'ADDR', help: 'where /healthz, /readyz and /metrics listen, HOST:PORT or :PORT (default 127.0.0.1:9440)' },
  ],
  details: `Runs until SIGTERM or SIGINT; then reconciles under way finish and a leader releases its Lease.
A KubeadmConfig chooses Ignition v3 with the annotation bootstrap.bootwright.dev/ignition-version
(3.4.0, or 3 for the lowest that expresses it). docs/cluster-api.md explains installing and moving
a cluster to bootwright.`,
};

const SERVICE_ACCOUNT_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/**
 * A duration as Go's `time.ParseDuration` writes them and Cluster API's flags take them
 * (`15m`, `1h30m`, `90s`, `500ms`), in milliseconds.
 *
 * @throws UsageError naming the flag when it does not parse or is not positive
 */
export function parseDuration(flag: string, text: string): number {
  const ms = durationMs(text);
  if (ms === undefined) throw new UsageError(`--${flag}: "${text}" is not a positive duration (e.g. 15m, 90s, 1h30m)`, 'controller');
  return ms;
}

/** `HOST:PORT`, `[V6]:PORT` or `:PORT` (all addresses). @throws UsageError naming the flag */
export function parseAddress(flag: string, text: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(text);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new UsageError(`--${flag}: "${text}" is not HOST:PORT or :PORT`, 'controller');
  return { host: m[1] ?? (m[2] === '' ? '0.0.0.0' : m[2]!), port };
}

/** `--ignition-version`: 2.3, 2.3.0, 3 or 3.x.y. @throws UsageError */
function ignitionVersionFlag(text: string | undefined): string {
  if (text === undefined) return '2.3';
  if (!/^(?:2\.3(?:\.0)?|3|3\.\d+\.\d+)$/.test(text)) throw new UsageError(`--ignition-version: "${text}" is not 2.3, 3 or a 3.x.y Ignition spec version`, 'controller');
  return text;
}

/** A positive integer flag. @throws UsageError */
function countFlag(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  if (!/^[1-9]\d{0,3}$/.test(text)) throw new UsageError(`--${flag}: "${text}" is not a whole number from 1 to 9999`, 'controller');
  return Number(text);
}

/** The Lease's namespace when no flag names it. */
function defaultLeaseNamespace(): string {
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  if (existsSync(SERVICE_ACCOUNT_NAMESPACE)) return readFileSync(SERVICE_ACCOUNT_NAMESPACE, 'utf8').trim();
  return 'default';
}

/** The controller's options from its flags. @throws UsageError naming a bad flag */
export function controllerOptions(parsed: Parsed): ControllerOptions {
  const v = parsed.values as Record<string, string | undefined> & { 'leader-elect'?: boolean };
  const identity = `${hostname()}_${randomUUID()}`;
  const ttl = v['bootstrap-token-ttl'];
  const options: ControllerOptions = {
    tokenTtlMs: ttl === undefined ? 15 * 60_000 : parseDuration('bootstrap-token-ttl', ttl),
    ignitionVersion: ignitionVersionFlag(v['ignition-version']),
    concurrency: countFlag('kubeadmconfig-concurrency', v['kubeadmconfig-concurrency'], 10),
    identity,
    health: parseAddress('health-addr', v['health-addr'] ?? '127.0.0.1:9440'),
    // Empty is unset, as Cluster API reads an empty --watch-filter (and clusterctl's
    // `${VAR:=}` writes one).
    ...(v.namespace ? { namespace: v.namespace } : {}),
    ...(v['watch-filter'] ? { watchFilter: v['watch-filter'] } : {}),
  };
  if (v['leader-elect'] === true) {
    const duration = (flag: string, fallback: number) => (v[flag] === undefined ? fallback : parseDuration(flag, v[flag]));
    options.leaderElection = {
      namespace: v['leader-elect-namespace'] ?? defaultLeaseNamespace(),
      name: DEFAULT_LEASE_NAME,
      identity,
      leaseDurationMs: duration('leader-elect-lease-duration', LEADER_ELECTION_DEFAULTS.leaseDurationMs),
      renewDeadlineMs: duration('leader-elect-renew-deadline', LEADER_ELECTION_DEFAULTS.renewDeadlineMs),
      retryPeriodMs: duration('leader-elect-retry-period', LEADER_ELECTION_DEFAULTS.retryPeriodMs),
    };
    const { leaseDurationMs, renewDeadlineMs, retryPeriodMs } = options.leaderElection;
    // client-go's own checks (leaderelection.NewLeaderElector).
    if (!(leaseDurationMs > renewDeadlineMs)) throw new UsageError('--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline', 'controller');
    if (!(renewDeadlineMs > retryPeriodMs * 1.2)) throw new UsageError('--leader-elect-renew-deadline must be greater than 1.2 × --leader-elect-retry-period', 'controller');
  }
  return options;
}

/** The management cluster's kubeconfig: the flag's file, else client-node's default search. @throws UsageError */
async function loadKubeconfig(file: string | undefined): Promise<KubeConfig> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const config = new KubeConfig();
  try {
    if (file !== undefined) config.loadFromFile(file);
    else config.loadFromDefault();
  } catch (e) {
    throw new UsageError(`--kubeconfig: cannot load ${file ?? 'the default kubeconfig'}: ${(e as Error).message}`, 'controller');
  }
  if (!config.getCurrentCluster()) throw new UsageError(`--kubeconfig: ${file ?? 'no kubeconfig found ($KUBECONFIG, ~/.kube/config, in-cluster)'}${file ? ' has no current cluster' : ''}`, 'controller');
  return config;
}

/**
 * Run `controller`.
 *
 * @returns 0 once started (the process then runs until a signal), 1 when the health
 *   server cannot listen
 * @throws UsageError naming a bad flag or an unreadable kubeconfig
 */
export async function runController(parsed: Parsed, err: NodeJS.WritableStream): Promise<number> {
  const options = controllerOptions(parsed);
  // Loaded here, not with the command table: the other commands never load the Kubernetes client.
  const [{ Kube }, { startController }, { portOf }] = await Promise.all([import('../kube/client.js'), import('../controller/run.js'), import('../controller/metrics.js')]);
  const kube = new Kube(await loadKubeconfig(parsed.values.kubeconfig as string | undefined));
  const log = pino({ name: 'bootwright-controller' });
  let running;
  try {
    running = await startController(kube, options, log);
  } catch (e) {
    err.write(`cannot start: ${(e as Error).message}\n`);
    return EXIT.failure;
  }
  log.info({ health: `${options.health.host}:${String(portOf(running.health))}`, namespace: options.namespace ?? '(all)', watchFilter: options.watchFilter, leaderElect: options.leaderElection !== undefined, identity: options.identity }, 'the controller started');
  const shutdown = (signal: NodeJS.Signals) => {
    log.info({ signal }, 'stopping');
    void running.stop().then(() => process.exit(0));
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
  return EXIT.ok;
}
