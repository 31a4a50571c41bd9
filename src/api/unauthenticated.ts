/**
 * Bounded unauthenticated writes (issue 11): the firmware routes take no token, yet
 * some of their answers write to the store — a sighting of an unknown machine at
 * `/ipxe` (`/v1/discovered`) and the audit row of a refusal (a forged or expired
 * signature, any machine name). This module decides, per request and in memory, which
 * of those writes are made:
 *
 * - **per client address**: at most `unauthenticatedWritesPerMinute` in each minute
 *   (a fixed window per address);
 * - **sampling**: an identical refusal (same machine, route, address, status and
 *   reason) is recorded once per `refusedAuditIntervalSeconds`.
 *
 * The store bounds the rest (the discovered cap and both retentions, src/store/store.ts
 * `DiscoveredBounds`, `AuditBounds`). Every write not made is counted in
 * `bootwright_unauthenticated_writes_dropped_total{table, reason}`. The answers
 * themselves never change. Rows of answers that serve are not decided here: they are
 * always written (or the answer is a 503).
 *
 * Memory is bounded too: at most {@link MAX_TRACKED} addresses and refusal keys are
 * remembered, the least recently used forgotten first.
 */
import type { Config } from '../config.js';
import type { Metrics } from './metrics.js';

/** Most addresses, and most refusal keys, remembered at once. */
export const MAX_TRACKED = 65_536;

const MINUTE_MS = 60_000;

/** Why a write was not made (the `reason` label). */
export type DropReason = 'rate-limited' | 'sampled' | 'full' | 'storage-fault';

/** Put `key` last in a Map's (insertion) order, dropping the first entries beyond {@link MAX_TRACKED}. */
function touch<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > MAX_TRACKED) map.delete(map.keys().next().value!);
}

/** The admission of unauthenticated writes for one service instance. */
export class UnauthenticatedWrites {
  private readonly windows = new Map<string, { start: number; count: number }>();
  private readonly refusals = new Map<string, number>();

  /**
   * @param config `unauthenticatedWritesPerMinute` and `refusedAuditIntervalSeconds`.
   * @param metrics where dropped writes are counted.
   * @param now the clock, milliseconds (tests); default `Date.now`.
   */
  constructor(
    private readonly config: Pick<Config, 'unauthenticatedWritesPerMinute' | 'refusedAuditIntervalSeconds'>,
    private readonly metrics: Pick<Metrics, 'droppedWrites'>,
    private readonly now: () => number = Date.now,
  ) {}

  /** Count a write not made. */
  dropped(table: 'discovered' | 'audit', reason: DropReason): void {
    this.metrics.droppedWrites.inc({ table, reason });
  }

  /** Take one write from `client`'s budget of this minute; false (and counted) when it is spent. */
  private admit(table: 'discovered' | 'audit', client: string): boolean {
    const limit = this.config.unauthenticatedWritesPerMinute;
    if (limit === 0) return true;
    const t = this.now();
    const current = this.windows.get(client);
    const window = current && t - current.start < MINUTE_MS ? current : { start: t, count: 0 };
    touch(this.windows, client, window);
    if (window.count >= limit) {
      this.dropped(table, 'rate-limited');
      return false;
    }
    window.count += 1;
    return true;
  }

  /** Whether a sighting of an unknown machine from `client` may be written. */
  admitDiscovered(client: string): boolean {
    return this.admit('discovered', client);
  }

  /**
   * Whether the audit row of a refusal may be written: not when an identical refusal
   * (same machine, route, address, status and reason) was recorded within the sampling
   * interval (counted as sampled), nor beyond the client's budget (counted as
   * rate-limited). The reason is part of what makes two refusals identical: a copied
   * URL refused at another address must not hide behind a forged one refused first.
   */
  admitRefusal(row: { machine: string; route: string; client: string; status: number; reason?: string }): boolean {
    const interval = this.config.refusedAuditIntervalSeconds * 1000;
    const key = `${row.machine}\n${row.route}\n${row.client}\n${row.status}\n${row.reason ?? ''}`;
    const t = this.now();
    if (interval > 0) {
      const last = this.refusals.get(key);
      if (last !== undefined && t - last < interval) {
        this.dropped('audit', 'sampled');
        return false;
      }
    }
    if (!this.admit('audit', row.client)) return false;
    if (interval > 0) touch(this.refusals, key, t);
    return true;
  }
}
