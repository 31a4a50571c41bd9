/**
 * POSIX sh quoting for the one command line bootwright itself composes (the kubeadm
 * invocation). User commands are never re-quoted: they are written as given.
 */

/** Characters that never need quoting in a POSIX sh word. */
const SAFE_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/**
 * Quote one word for POSIX sh: unchanged when it holds only safe characters, otherwise
 * single-quoted with each `'` written as `'\''` (POSIX.1-2017 XCU §2.2.3).
 */
export function shellQuote(word: string): string {
  return SAFE_WORD.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/** How a command is retried (Cluster API v1beta1 `useExperimentalRetryJoin`). */
export interface Retry {
  /** Attempts in all, at least 1. */
  attempts: number;
  /** Pause between attempts, in seconds. */
  delaySeconds: number;
  /** A command line run after each failed attempt (e.g. `kubeadm reset --force`). */
  cleanup: string;
}

/**
 * Wrap a command line in a bounded retry loop, run in a subshell so its `exit` ends
 * only the loop: the result succeeds as soon as one attempt does, and fails after
 * `retry.attempts` failures, so a following `&&` still sees the real outcome.
 */
export function retriedCommand(command: string, retry: Retry): string {
  return `(n=0; until ${command}; do n=$((n+1)); [ "$n" -ge ${retry.attempts} ] && exit 1; ${retry.cleanup}; sleep ${retry.delaySeconds}; done)`;
}

/** Join argv into one sh command line, quoting each word as needed. */
export function shellCommand(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}
