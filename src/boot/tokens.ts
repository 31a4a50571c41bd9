/**
 * Per-machine bootstrap tokens (issue 31): a machine whose cluster names a
 * `workloadKubeconfig` joins with a token minted for it at fetch time, in kubeadm's
 * format and Secret (src/kube/token.ts, the code the Cluster API controller uses), valid
 * for the cluster's `bootstrapTokenTTL` (default 15m), instead of the cluster's one
 * static token that nothing expires.
 *
 * - **Mint.** A join machine's first config fetch makes a token, writes its Secret to
 *   the workload cluster's `kube-system`, then claims it in the store (one per machine,
 *   the first claim winning across replicas; a loser deletes its own Secret). A fetch
 *   that finds its machine's token with more than 5/6 of its TTL left serves it without
 *   asking the workload cluster; else the Secret's expiration is extended first (CABPK's
 *   rule). A machine re-created, or moved to another cluster, gets a new token; the old
 *   one's Secret is deleted.
 * - **Refresh until joined, then delete.** The sweep ({@link MintedTokens.sweep}, every
 *   `BOOTWRIGHT_TOKEN_SWEEP_SECONDS`) extends the tokens of machines still
 *   `Provisioning` (fetched, not yet reported), deletes the Secret and record of machines
 *   `Joined`, deleted or re-created, and of tokens past their expiration. A success
 *   report deletes its machine's token at once.
 * - **Failure.** A workload cluster that cannot be reached makes the fetch a 503 with
 *   `Retry-After` (firmware and Ignition retry), never data with a token that does not
 *   exist.
 *
 * Tokens never reach logs or metrics; the Secret name (`bootstrap-token-<id>`, the
 * token's public half) may.
 */
import type { FastifyBaseLogger } from 'fastify';
import { apiErrorText, type Kube } from '../kube/client.js';
import { createTokenSecret, newToken, refreshTokenSecret, TOKEN_NAMESPACE, tokenSecretName } from '../kube/token.js';
import { WorkloadUnavailableError, type WorkloadClusters } from '../kube/workload.js';
import { type AssemblyParts, mintsToken } from '../store/assemble.js';
import { NotFoundError } from '../store/errors.js';
import { bootstrapTokenTtlMs, type ClusterSpec, type StoredResource } from '../store/resources.js';
import type { MintedToken, Store } from '../store/store.js';
import { machineIncarnation } from './sign.js';

/** RFC 3339 UTC to the second, as the token Secret's `expiration` is written. */
const rfc3339 = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Whether a token expiring at `expiresAt` has more than 5/6 of `ttlMs` left at `now` (CABPK's refresh rule). */
const fresh = (expiresAt: string, ttlMs: number, now: number) => Date.parse(expiresAt) > now + (ttlMs * 5) / 6;

/** What a sweep did, for its log line and the metric. */
export interface SweepCounts {
  refreshed: number;
  deleted: number;
  failed: number;
}

/** Counters the service exposes (src/api/metrics.ts), by outcome. */
export interface TokenMetrics {
  inc(labels: { outcome: 'minted' | 'refreshed' | 'deleted' | 'failed' }): void;
}

/** Machines' minted tokens: the fetch routes' {@link tokenFor}, the report's {@link joined}, the periodic {@link sweep}. */
export class MintedTokens {
  /** One mint at a time per machine in this process (a firmware's retries arrive together). */
  private readonly inFlight = new Map<string, Promise<string>>();

  constructor(
    private readonly store: Store,
    private readonly workloads: WorkloadClusters,
    private readonly log: FastifyBaseLogger,
    private readonly metrics: TokenMetrics,
  ) {}

  /**
   * The token the machine joins with, when its cluster mints them and it joins (not
   * `init`): its stored token when that is fresh, else extended, else a new one.
   *
   * @returns the parts with `mintedToken` set, or the parts unchanged
   * @throws WorkloadUnavailableError (a 503) when the workload cluster cannot be reached
   */
  async withToken(parts: AssemblyParts, now = Date.now()): Promise<AssemblyParts> {
    if (!mintsToken(parts.cluster.spec, parts.profile.spec.role)) return parts;
    const name = parts.machine.name;
    let running = this.inFlight.get(name);
    if (!running) {
      running = this.tokenFor(parts, now).finally(() => this.inFlight.delete(name));
      this.inFlight.set(name, running);
    }
    return { ...parts, mintedToken: await running };
  }

  private async tokenFor(parts: AssemblyParts, now: number): Promise<string> {
    const { machine, cluster } = parts;
    const incarnation = machineIncarnation(machine);
    const ttlMs = bootstrapTokenTtlMs(cluster.spec);
    const stored = await this.store.mintedToken(machine.name);
    if (stored?.incarnation === incarnation && stored.cluster === cluster.name) {
      if (fresh(stored.expiresAt, ttlMs, now)) return stored.token;
      const workload = await this.workloads.client(cluster.name, cluster.spec);
      const outcome = await this.workloadCall(cluster.name, () => refreshTokenSecret(workload, stored.token, ttlMs, new Date(now)));
      if (outcome !== 'missing') {
        if (outcome === 'refreshed') this.metrics.inc({ outcome: 'refreshed' });
        await this.store.extendMintedToken(machine.name, stored.token, rfc3339(now + ttlMs));
        return stored.token;
      }
      await this.store.forgetMintedToken(machine.name, stored.token);
    } else if (stored) {
      await this.retire(stored);
    }
    const workload = await this.workloads.client(cluster.name, cluster.spec);
    const token = newToken();
    // The Secret first: a token is never served before the API server accepts it.
    await this.workloadCall(cluster.name, () => createTokenSecret(workload, token, ttlMs, new Date(now)));
    const won = await this.store.claimMintedToken({ machine: machine.name, incarnation, cluster: cluster.name, token, expiresAt: rfc3339(now + ttlMs) });
    if (won.token !== token) {
      await this.deleteSecret(workload, token);
      return won.token;
    }
    this.metrics.inc({ outcome: 'minted' });
    this.log.info({ machine: machine.name, cluster: cluster.name, secret: `${TOKEN_NAMESPACE}/${tokenSecretName(token)}`, ttlSeconds: ttlMs / 1000 }, 'minted a bootstrap token');
    return token;
  }

  /**
   * The machine joined (a success report): its token is deleted from the workload
   * cluster and the store. Failures are logged; the sweep tries again.
   */
  async joined(machine: string): Promise<void> {
    try {
      const stored = await this.store.mintedToken(machine);
      if (stored) await this.retire(stored);
    } catch (e) {
      this.log.warn({ machine, err: errorText(e) }, "could not delete a joined machine's bootstrap token; the token sweep tries again");
    }
  }

  /**
   * One pass over every minted token, a page at a time: extend the tokens of machines
   * `Provisioning` in the incarnation and cluster they were minted for; delete the
   * tokens of machines `Joined`, deleted, re-created or moved, and of tokens past their
   * expiration; leave the others (Registered, Booting, Failed) to lapse.
   */
  async sweep(now = Date.now()): Promise<SweepCounts> {
    const counts: SweepCounts = { refreshed: 0, deleted: 0, failed: 0 };
    let after: string | undefined;
    for (;;) {
      const page = await this.store.mintedTokens({ ...(after === undefined ? {} : { after }), limit: 100 });
      if (page.length === 0) break;
      after = page[page.length - 1]!.machine;
      const statuses = await this.store.statuses(page.map((t) => t.machine));
      for (const token of page) {
        try {
          const outcome = await this.sweepOne(token, statuses.get(token.machine)?.phase, now);
          if (outcome !== 'kept') counts[outcome]++;
        } catch (e) {
          counts.failed++;
          this.metrics.inc({ outcome: 'failed' });
          this.log.warn({ machine: token.machine, cluster: token.cluster, err: errorText(e) }, 'could not refresh or delete a minted bootstrap token; the next sweep tries again');
        }
      }
    }
    return counts;
  }

  private async sweepOne(token: MintedToken, phase: string | undefined, now: number): Promise<'refreshed' | 'deleted' | 'kept'> {
    const machine = await this.store.get('Machine', token.machine).catch((e: unknown) => {
      if (e instanceof NotFoundError) return undefined;
      throw e;
    });
    const current = machine && machineIncarnation(machine) === token.incarnation && machine.spec.cluster === token.cluster;
    if (!current || phase === 'Joined' || Date.parse(token.expiresAt) <= now) {
      await this.retire(token);
      return 'deleted';
    }
    if (phase !== 'Provisioning') return 'kept';
    const cluster = await this.cluster(token.cluster);
    if (!cluster?.spec.workloadKubeconfig) {
      // The cluster no longer mints: the machine's next fetch uses its static token.
      await this.retire(token);
      return 'deleted';
    }
    const ttlMs = bootstrapTokenTtlMs(cluster.spec);
    if (fresh(token.expiresAt, ttlMs, now)) return 'kept';
    const workload = await this.workloads.client(cluster.name, cluster.spec);
    const outcome = await this.workloadCall(cluster.name, () => refreshTokenSecret(workload, token.token, ttlMs, new Date(now)));
    if (outcome === 'missing') {
      await this.store.forgetMintedToken(token.machine, token.token);
      return 'deleted';
    }
    await this.store.extendMintedToken(token.machine, token.token, rfc3339(now + ttlMs));
    this.metrics.inc({ outcome: 'refreshed' });
    return 'refreshed';
  }

  /** The cluster by name, or undefined when deleted. */
  private cluster(name: string): Promise<StoredResource<ClusterSpec> | undefined> {
    return this.store.get('Cluster', name).catch((e: unknown) => {
      if (e instanceof NotFoundError) return undefined;
      throw e;
    });
  }

  /** Delete a token's Secret (its cluster's, if the cluster still names a workload) and its record. */
  private async retire(token: MintedToken): Promise<void> {
    const cluster = await this.cluster(token.cluster);
    if (cluster?.spec.workloadKubeconfig) {
      const workload = await this.workloads.client(cluster.name, cluster.spec);
      await this.deleteSecret(workload, token.token);
    }
    await this.store.forgetMintedToken(token.machine, token.token);
    this.metrics.inc({ outcome: 'deleted' });
    this.log.info({ machine: token.machine, cluster: token.cluster, secret: `${TOKEN_NAMESPACE}/${tokenSecretName(token.token)}` }, 'deleted a bootstrap token');
  }

  private async deleteSecret(workload: Kube, token: string): Promise<void> {
    await workload.delete('v1', 'Secret', TOKEN_NAMESPACE, tokenSecretName(token));
  }

  /** A workload API call; its failure is the cluster's unavailability (a 503 for a fetch). */
  private async workloadCall<T>(cluster: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (e) {
      throw new WorkloadUnavailableError(cluster, apiErrorText(e));
    }
  }
}

const errorText = (e: unknown) => (e instanceof WorkloadUnavailableError ? e.reason : apiErrorText(e));

/**
 * {@link MintedTokens.sweep} every `intervalMs`, one pass at a time (a slow workload
 * cluster delays the next pass, never runs two), on an unreferenced timer.
 */
export class TokenSweep {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly tokens: MintedTokens,
    private readonly intervalMs: number,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Start sweeping (the first pass after one interval). */
  start(): void {
    if (this.stopped || this.timer) return;
    this.schedule();
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      this.running = this.tokens
        .sweep()
        .then((counts) => {
          if (counts.refreshed + counts.deleted + counts.failed > 0) this.log.info(counts, 'bootstrap token sweep');
        })
        .catch((e: unknown) => this.log.warn({ err: errorText(e) }, 'the bootstrap token sweep failed; it runs again'))
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) this.schedule();
        });
    }, this.intervalMs);
    this.timer.unref();
  }

  /** Stop: no new pass; a pass under way finishes. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
