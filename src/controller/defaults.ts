/**
 * The controller's defaults, in a module with no imports, so that the command line reads
 * them (flags, help) without loading the Kubernetes client: `bootwright render` and the
 * other commands never pay for the controller.
 */

/** Leader election durations: controller-runtime's defaults (lease 15 s, renew deadline 10 s, retry 2 s). */
export const LEADER_ELECTION_DEFAULTS = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;

/** The Lease name when `--leader-elect` is on (CABPK's is `kubeadm-bootstrap-manager-leader-election-capi`). */
export const DEFAULT_LEASE_NAME = 'bootwright-controller-leader-election';
