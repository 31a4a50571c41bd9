/**
 * fstab(5) field encoding, provider-neutral: a mount's device and mount point as they
 * must appear in one whitespace-separated fstab field.
 */

/**
 * A value as one fstab field: space, tab, line feed and backslash written as the octal
 * escapes `\040`, `\011`, `\012`, `\134`, which libmount and systemd-fstab-generator
 * decode (fstab(5): "spaces or tabs ... are to be written as \040 and \011"), so
 * `/mnt/my disk` → `/mnt/my\040disk`. Other bytes are kept.
 */
export function fstabEscape(value: string): string {
  return value.replace(/[ \t\n\\]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
}

/** True when {@link fstabEscape} changes `value`. */
export function needsFstabEscape(value: string): boolean {
  return /[ \t\n\\]/.test(value);
}
