/**
 * The workload clusters bootwright mints join tokens in (src/boot/tokens.ts): a stored
 * cluster's `workloadKubeconfig` names a kubeconfig file in
 * `BOOTWRIGHT_WORKLOAD_KUBECONFIG_DIR`, or a Secret in the management cluster (Cluster
 * API's `<cluster>-kubeconfig`, key `value`), read through
 * `BOOTWRIGHT_MANAGEMENT_KUBECONFIG` or, in a pod, its service account
 * (`KubeConfig.loadFromCluster`, as controllers do).
 *
 * Clients are kept for a minute, so a rotated kubeconfig (a file replaced, Cluster API
 * rotating the Secret) is picked up without a restart, and a boot storm reads each once.
 * A kubeconfig's content is a secret: errors name the file or Secret, never the text.
 */
import { readFile } from 'node:fs/promises';
import { statSync } from 'node:fs';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { FieldProblem } from '../errors.js';
import type { ClusterSpec } from '../store/resources.js';
import { apiErrorText, Kube } from './client.js';

/** Largest kubeconfig read, bytes (a kubeconfig with embedded certificates is a few KiB). */
export const MAX_KUBECONFIG_BYTES = 1024 * 1024;
/** How long a client is reused before its kubeconfig is read again, milliseconds. */
const CLIENT_TTL_MS = 60_000;
/** Where a pod's service account is mounted (client-node's `loadFromCluster` reads it there). */
const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** The service's settings that say where workload kubeconfigs are. */
export interface WorkloadSettings {
  /** `BOOTWRIGHT_WORKLOAD_KUBECONFIG_DIR`. */
  workloadKubeconfigDir?: string | undefined;
  /** `BOOTWRIGHT_MANAGEMENT_KUBECONFIG`. */
  managementKubeconfig?: string | undefined;
}

/** The workload cluster cannot be reached, or its kubeconfig read: the fetch may be retried (503). */
export class WorkloadUnavailableError extends Error {
  /** What a client is told: the cluster, not the reason (which names files, Secrets and API errors: the log's). */
  readonly detail: string;

  constructor(
    readonly cluster: string,
    readonly reason: string,
  ) {
    super(`the workload cluster of cluster "${cluster}" cannot mint a bootstrap token now: ${reason}`);
    this.name = 'WorkloadUnavailableError';
    this.detail = `the workload cluster of cluster "${cluster}" cannot mint a bootstrap token now (the service log says why)`;
  }
}

/** Whether this process runs in a Kubernetes pod with a service account. */
function inPod(): boolean {
  if (!process.env.KUBERNETES_SERVICE_HOST) return false;
  try {
    return statSync(SERVICE_ACCOUNT_TOKEN).isFile();
  } catch {
    return false;
  }
}

/** A kubeconfig's text as a client config. @throws Error naming `what` when it does not parse or names no server */
function parseKubeconfig(text: string, what: string): KubeConfig {
  const config = new KubeConfig();
  try {
    config.loadFromString(text);
  } catch {
    throw new Error(`${what} is not a kubeconfig`);
  }
  if (!config.getCurrentCluster()?.server) throw new Error(`${what} has no current context with a cluster server`);
  return config;
}

/** Read a file of at most {@link MAX_KUBECONFIG_BYTES}. @throws Error naming the file */
async function readKubeconfigFile(file: string): Promise<string> {
  const text = await readFile(file, 'utf8').catch((e: unknown) => {
    throw new Error(`${file} cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  });
  if (Buffer.byteLength(text) > MAX_KUBECONFIG_BYTES) throw new Error(`${file} is larger than ${MAX_KUBECONFIG_BYTES} bytes`);
  return text;
}

/** Clients of the workload clusters stored clusters name, kept for a minute each. */
export class WorkloadClusters {
  private readonly clients = new Map<string, { at: number; kube: Promise<Kube> }>();
  private management: Promise<Kube> | undefined;

  constructor(private readonly settings: WorkloadSettings) {}

  /**
   * Problems with a cluster's `workloadKubeconfig` under this service's settings, at
   * `spec.workloadKubeconfig...` paths: a file with no directory set, missing, or not a
   * kubeconfig; a Secret with no way to read the management cluster. A Secret's content
   * is not read at write (Cluster API writes it when the control plane is up).
   */
  async problems(spec: Pick<ClusterSpec, 'workloadKubeconfig'>): Promise<FieldProblem[]> {
    const where = spec.workloadKubeconfig;
    if (!where) return [];
    if ('file' in where) {
      const dir = this.settings.workloadKubeconfigDir;
      if (!dir) return [{ path: 'spec.workloadKubeconfig.file', message: 'names a file, but the service has no BOOTWRIGHT_WORKLOAD_KUBECONFIG_DIR to find it in' }];
      try {
        parseKubeconfig(await readKubeconfigFile(path.join(dir, where.file)), `${where.file} in BOOTWRIGHT_WORKLOAD_KUBECONFIG_DIR`);
        return [];
      } catch (e) {
        return [{ path: 'spec.workloadKubeconfig.file', message: (e as Error).message.replace(path.join(dir, where.file), `${where.file} in BOOTWRIGHT_WORKLOAD_KUBECONFIG_DIR`) }];
      }
    }
    if (!this.settings.managementKubeconfig && !inPod()) {
      return [{ path: 'spec.workloadKubeconfig.secretRef', message: 'names a Secret, but the service has no BOOTWRIGHT_MANAGEMENT_KUBECONFIG and does not run in a pod to read it with' }];
    }
    return [];
  }

  /**
   * A client of the cluster's workload API server.
   *
   * @throws WorkloadUnavailableError when its kubeconfig cannot be had (file or Secret
   *   missing or bad, management cluster unreachable)
   */
  async client(name: string, spec: Pick<ClusterSpec, 'workloadKubeconfig'>, now = Date.now()): Promise<Kube> {
    const where = spec.workloadKubeconfig;
    if (!where) throw new WorkloadUnavailableError(name, 'it names no workloadKubeconfig');
    const key = 'file' in where ? `file\n${where.file}` : `secret\n${where.secretRef.namespace}\n${where.secretRef.name}\n${where.secretRef.key}`;
    const kept = this.clients.get(key);
    if (kept && now - kept.at < CLIENT_TTL_MS) return kept.kube;
    const kube = this.load(where).catch((e: unknown) => {
      this.clients.delete(key);
      throw new WorkloadUnavailableError(name, e instanceof Error ? e.message : String(e));
    });
    this.clients.set(key, { at: now, kube });
    return kube;
  }

  /** A client from the kubeconfig `where` names. */
  private async load(where: NonNullable<ClusterSpec['workloadKubeconfig']>): Promise<Kube> {
    if ('file' in where) {
      const dir = this.settings.workloadKubeconfigDir;
      if (!dir) throw new Error('the service has no BOOTWRIGHT_WORKLOAD_KUBECONFIG_DIR');
      const text = await readKubeconfigFile(path.join(dir, where.file)).catch(() => {
        throw new Error(`${where.file} in BOOTWRIGHT_WORKLOAD_KUBECONFIG_DIR cannot be read`);
      });
      return new Kube(parseKubeconfig(text, `${where.file} in BOOTWRIGHT_WORKLOAD_KUBECONFIG_DIR`));
    }
    const { namespace, name, key } = where.secretRef;
    const what = `Secret ${namespace}/${name} key ${key}`;
    let secret;
    try {
      secret = await (await this.managementClient()).get('v1', 'Secret', namespace, name);
    } catch (e) {
      throw new Error(`${what} cannot be read: ${apiErrorText(e)}`, { cause: e });
    }
    const data = (secret?.data as Record<string, string> | undefined)?.[key];
    if (data === undefined) throw new Error(secret ? `${what} has no such key` : `${what} does not exist`);
    const text = Buffer.from(data, 'base64').toString('utf8');
    if (Buffer.byteLength(text) > MAX_KUBECONFIG_BYTES) throw new Error(`${what} is larger than ${MAX_KUBECONFIG_BYTES} bytes`);
    return new Kube(parseKubeconfig(text, what));
  }

  /** The management cluster's client: `BOOTWRIGHT_MANAGEMENT_KUBECONFIG`, else the pod's service account. */
  private managementClient(): Promise<Kube> {
    this.management ??= (async () => {
      const file = this.settings.managementKubeconfig;
      if (file) return new Kube(parseKubeconfig(await readKubeconfigFile(file), `BOOTWRIGHT_MANAGEMENT_KUBECONFIG (${file})`));
      if (!inPod()) throw new Error('the service has no BOOTWRIGHT_MANAGEMENT_KUBECONFIG and does not run in a pod');
      const config = new KubeConfig();
      config.loadFromCluster();
      return new Kube(config);
    })().catch((e: unknown) => {
      this.management = undefined;
      throw e;
    });
    return this.management;
  }
}
