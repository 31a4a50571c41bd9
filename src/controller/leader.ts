/**
 * Leader election on a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection`
 * package does it (the package controller-runtime's `--leader-elect` uses), so that of
 * several replicas exactly one reconciles:
 *
 * - a candidate takes the Lease when it does not exist, when it has no holder, or when
 *   its holder has not renewed it for `leaseDurationSeconds` as *this* candidate observed
 *   it (the time the candidate last saw the Lease change, on its own clock: no clock
 *   skew between replicas matters);
 * - every write is an update conditional on the `resourceVersion` read (optimistic
 *   concurrency), so two candidates never both win: the API server answers 409 to the
 *   second;
 * - the leader renews every `retryPeriod`; when it cannot renew within `renewDeadline`
 *   it stops leading (the caller stops its work) and becomes a candidate again;
 * - a leader that stops releases the Lease (`holderIdentity` emptied,
 *   `leaseDurationSeconds: 1`: client-go's `ReleaseOnCancel`), so a successor takes over
 *   at once.
 *
 * Durations are controller-runtime's defaults: lease 15 s, renew deadline 10 s, retry 2 s.
 */
import type { Logger } from 'pino';
import { apiErrorText, isConflict, type Kube, type KubeObject } from '../kube/client.js';

/** A Lease, in the fields leader election uses (times: RFC 3339 MicroTime). */
interface Lease extends KubeObject {
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string | Date;
    renewTime?: string | Date;
    leaseTransitions?: number;
  };
}

/** Leader election settings (`--leader-elect-*` flags). */
export interface LeaderElectionOptions {
  namespace: string;
  name: string;
  /** This replica's identity (client-go: `<hostname>_<uuid>`). */
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}


const LEASE_API = 'coordination.k8s.io/v1';
/** MicroTime as the API server writes it: RFC 3339 with six fractional digits. */
const microTime = (ms: number) => new Date(ms).toISOString().replace(/Z$/, '000Z');

/** Runs `lead` while this replica holds the Lease. */
export class LeaderElector {
  private leading = false;
  private stopped = false;
  /** The Lease as last seen and when this replica saw it change (its own clock). */
  private observed: { record: string; at: number } | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly kube: Kube,
    private readonly options: LeaderElectionOptions,
    private readonly log: Logger,
    private readonly onChange: (leading: boolean) => void = () => undefined,
  ) {}

  /** Whether this replica leads now (`leader_election_master_status`). */
  get isLeader(): boolean {
    return this.leading;
  }

  /**
   * Campaign, lead, and campaign again after losing the Lease, until {@link stop}.
   *
   * @param lead called on becoming the leader; the function it returns is called (and
   *   awaited) on losing the Lease or stopping, before the Lease is released
   */
  async run(lead: () => () => Promise<void>): Promise<void> {
    while (!this.stopped) {
      if (!(await this.tryAcquireOrRenew())) {
        await this.sleep(this.options.retryPeriodMs);
        continue;
      }
      this.setLeading(true);
      this.log.info({ lease: `${this.options.namespace}/${this.options.name}`, identity: this.options.identity }, 'became the leader');
      const stopLeading = lead();
      let lastRenew = Date.now();
      while (!this.stopped) {
        await this.sleep(this.options.retryPeriodMs);
        if (this.isStopped()) break;
        if (await this.tryAcquireOrRenew()) lastRenew = Date.now();
        else if (Date.now() - lastRenew >= this.options.renewDeadlineMs) break;
      }
      this.setLeading(false);
      await stopLeading();
      if (this.isStopped()) await this.release();
      else this.log.warn({ lease: `${this.options.namespace}/${this.options.name}` }, 'lost the leader Lease: stopped reconciling, campaigning again');
    }
  }

  /** Stop campaigning; a leader stops leading and releases the Lease before {@link run} resolves. */
  stop(): void {
    this.stopped = true;
    this.wake?.();
  }

  /** Read through a call: {@link stop} sets it while {@link run} awaits. */
  private isStopped(): boolean {
    return this.stopped;
  }

  private setLeading(leading: boolean): void {
    this.leading = leading;
    this.onChange(leading);
  }

  private async sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wake = undefined;
  }

  /** One attempt (client-go's `tryAcquireOrRenew`); false when another holds it or the write lost a race. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity } = this.options;
    const now = Date.now();
    const durationS = Math.ceil(this.options.leaseDurationMs / 1000);
    try {
      const lease = await this.kube.get<Lease>(LEASE_API, 'Lease', namespace, name);
      if (!lease) {
        await this.kube.create<Lease>({
          apiVersion: LEASE_API,
          kind: 'Lease',
          metadata: { name, namespace },
          spec: { holderIdentity: identity, leaseDurationSeconds: durationS, acquireTime: microTime(now), renewTime: microTime(now), leaseTransitions: 0 },
        });
        this.observed = undefined;
        return true;
      }
      const spec = lease.spec ?? {};
      const record = JSON.stringify([spec.holderIdentity, spec.renewTime, spec.leaseDurationSeconds]);
      if (this.observed?.record !== record) this.observed = { record, at: now };
      const holder = spec.holderIdentity ?? '';
      const held = holder !== '' && holder !== identity && this.observed.at + (spec.leaseDurationSeconds ?? durationS) * 1000 > now;
      if (held) return false;
      const transitions = (spec.leaseTransitions ?? 0) + (holder === identity ? 0 : 1);
      await this.kube.replace<Lease>({
        ...lease,
        spec: {
          holderIdentity: identity,
          leaseDurationSeconds: durationS,
          acquireTime: holder === identity && spec.acquireTime ? spec.acquireTime : microTime(now),
          renewTime: microTime(now),
          leaseTransitions: transitions,
        },
      });
      return true;
    } catch (e) {
      if (!isConflict(e)) this.log.warn({ lease: `${namespace}/${name}`, err: apiErrorText(e) }, 'could not read or write the leader Lease');
      return false;
    }
  }

  /** Give the Lease up (only while this replica still holds it). */
  private async release(): Promise<void> {
    const { namespace, name, identity } = this.options;
    try {
      const lease = await this.kube.get<Lease>(LEASE_API, 'Lease', namespace, name);
      if (lease?.spec?.holderIdentity !== identity) return;
      await this.kube.replace<Lease>({ ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime(Date.now()) } });
      this.log.info({ lease: `${namespace}/${name}` }, 'released the leader Lease');
    } catch (e) {
      this.log.warn({ lease: `${namespace}/${name}`, err: apiErrorText(e) }, 'could not release the leader Lease');
    }
  }
}
