/**
 * Durations as Go's `time.ParseDuration` writes them and Kubernetes tools take them
 * (`15m`, `1h30m`, `90s`, `500ms`): kubeadm's `BootstrapToken.ttl`, Cluster API's
 * `--bootstrap-token-ttl` and leader-election flags. Only the units those use: `ms`, `s`,
 * `m`, `h`; no sign, no `us`/`ns`.
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
