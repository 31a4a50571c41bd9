/**
 * Durations as Go's `time.ParseDuration` writes them and Kubernetes tools take them
 * (`15m`, `1h30m`, `90s`, `500ms`): kubeadm's `BootstrapToken.ttl`, Cluster API's
 * `--bootstrap-token-ttl` and leader-election flags. Only the units those use: `ms`, `s`,
 * `m`, `h`; no sign, no `us`/`ns`. And ages as kubectl prints them ({@link age}).
 */
const UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** The pattern of a duration: one or more `<number><unit>` terms. */
export const DURATION = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/;

/**
 * A duration in milliseconds, or undefined when `text` is not one ({@link DURATION}) or is
 * not positive.
 */
export function durationMs(text: string): number | undefined {
  if (!DURATION.test(text)) return undefined;
  const ms = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)].reduce((sum, [, n, unit]) => sum + Number(n) * UNITS_MS[unit!]!, 0);
  return ms > 0 ? ms : undefined;
}

/**
 * A duration as kubectl's `HumanDuration` prints ages (k8s.io/apimachinery duration.go):
 * seconds below 2 minutes, minutes below 3 hours (with seconds below 10), hours below
 * 2 days (with minutes below 8 hours), days below 2 years (with hours below 8 days).
 */
export function age(fromIso: string, now: Date = new Date()): string {
  const s = Math.max(0, Math.floor((now.getTime() - Date.parse(fromIso)) / 1000));
  if (!Number.isFinite(s)) return '<unknown>';
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (d < 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 730) return `${d}d`;
  return `${Math.floor(d / 365)}y`;
}
