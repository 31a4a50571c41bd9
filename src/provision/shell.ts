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

/** Join argv into one sh command line, quoting each word as needed. */
export function shellCommand(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}
