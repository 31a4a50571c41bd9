/**
 * The boot report (issue 14): when bootstrap data is served for a stored machine, the
 * node tells the service how kubeadm went, through a signed, expiring URL
 * (src/boot/sign.ts `reportUrl`). The one rule both renderers emit, provider-neutral:
 *
 * 1. kubeadm runs as before, `<kubeadm> && echo success > <sentinel>` (the sentinel still
 *    exists only when kubeadm succeeded), inside a group whose output is copied by `tee`
 *    to {@link KUBEADM_LOG} (mode 0600: kubeadm init prints the join command, token
 *    included) and whose status — kubeadm's exit code, or the sentinel write's — goes to
 *    {@link KUBEADM_RC}: {@link reportedKubeadmLine}. Its output still reaches the
 *    console and cloud-init's log.
 * 2. {@link REPORT_SCRIPT} ({@link reportScript}) reads both, keeps the last
 *    {@link REPORT_OUTPUT_LINES} lines, scrubs anything shaped like a bootstrap token
 *    (`[a-z0-9]{6}.[a-z0-9]{16}`, kubeadm's `BootstrapTokenString`) or a certificate key
 *    (64 hex digits, `kubeadm init phase upload-certs`), keeps the last
 *    {@link REPORT_OUTPUT_BYTES} bytes and POSTs `outcome`, `exitCode` and `output` as an
 *    HTML form (`curl --data-urlencode`) with bounded retries (`--retry`, `--max-time`).
 *    It always exits 0: a report that cannot be sent never fails the boot.
 *
 * Every path is under a tree bootwright has reserved since v0.1.0 (src/provision/plan/
 * protected.ts): the script in `/etc/kubeadm` (Ignition writes /etc before the first
 * boot), kubeadm's output and status in `/run/kubeadm` (written while the node boots, and
 * gone at the next boot with the join token they hold).
 *
 * cloud-config runs the script from `runcmd` right after kubeadm; Ignition from the
 * bootstrap unit: `ExecStartPost=` on success, `ExecStopPost=` on failure (systemd runs
 * it once `ExecStart=` failed; with a report the bootstrap script exits with kubeadm's
 * status), where the script reads systemd's `$SERVICE_RESULT` and stays silent when the
 * unit merely stops at shutdown after a success.
 */
import { shellQuote } from '../shell.js';
import type { PlanFile, PlanReport } from './types.js';

/** Where kubeadm's output and status are kept while the node boots (a tmpfs: gone at the next boot). */
export const REPORT_STATE_DIR = '/run/kubeadm';
/** The report script on the node (both formats). */
export const REPORT_SCRIPT = '/etc/kubeadm/report.sh';
/** kubeadm's output, as `tee` copied it (mode 0600). */
export const KUBEADM_LOG = `${REPORT_STATE_DIR}/kubeadm.log`;
/** The kubeadm line's exit status, one decimal number. */
export const KUBEADM_RC = `${REPORT_STATE_DIR}/kubeadm.rc`;
/** Lines of kubeadm's output sent, from its end. */
export const REPORT_OUTPUT_LINES = 50;
/** Bytes of output sent at most, from its end (after scrubbing). */
export const REPORT_OUTPUT_BYTES = 4096;
/** curl `--retry`: attempts after the first, on transient errors and refused connections. */
export const REPORT_RETRIES = 5;
/** curl `--max-time` of each attempt, seconds. */
export const REPORT_MAX_TIME_SECONDS = 15;
/** curl `--retry-delay`, seconds. */
export const REPORT_RETRY_DELAY_SECONDS = 3;
/**
 * The longest a report takes, seconds: every attempt at its `--max-time` and every delay
 * between them, and half a minute more. The Ignition bootstrap unit's `TimeoutStopSec=`,
 * so systemd lets a failure report run to its end (the default, 90 s, is shorter).
 */
export const REPORT_SECONDS_AT_MOST = (REPORT_RETRIES + 1) * REPORT_MAX_TIME_SECONDS + REPORT_RETRIES * REPORT_RETRY_DELAY_SECONDS + 30;

/**
 * The kubeadm line with its output and status kept for the report: `mkdir -p` of the
 * state directory, then `{ <kubeadm> && echo success > <sentinel>; echo $? > <rc>; } 2>&1 |
 * (umask 077; exec tee <log>)`. POSIX sh (dash, busybox): `$?` after `a && b` is `a`'s
 * status when it failed, else `b`'s; the pipeline's own status is tee's, which no later
 * line reads.
 *
 * @param kubeadm the kubeadm command line as the renderer composes it (retries included)
 * @param sentinel the success sentinel's absolute path
 */
export function reportedKubeadmLine(kubeadm: string, sentinel: string): string {
  return `mkdir -p ${REPORT_STATE_DIR}; { ${kubeadm} && echo success > ${shellQuote(sentinel)}; echo $? > ${KUBEADM_RC}; } 2>&1 | (umask 077; exec tee ${KUBEADM_LOG})`;
}

/**
 * The line that runs the report script: with `success` (the Ignition unit's
 * `ExecStartPost=`), `stop` (its `ExecStopPost=`: a failure, unless systemd says the unit
 * succeeded), or nothing (cloud-config: the outcome from {@link KUBEADM_RC}).
 */
export function reportCommand(outcome?: 'success' | 'stop'): string {
  return `/bin/sh ${REPORT_SCRIPT}${outcome ? ` ${outcome}` : ''}`;
}

/**
 * The report script (POSIX sh, needs `curl`, `tail`, `sed`): see the module comment.
 * `$1` is the outcome (`success`, `failure`, or `stop`: nothing to send when systemd's
 * `$SERVICE_RESULT` is `success`, else a failure); without it, `success` exactly when
 * the recorded status is 0. An exit code that is not a decimal number is sent empty.
 *
 * @param report the plan's report target (its URL is single-quoted into the script)
 */
export function reportScript(report: PlanReport): string {
  return [
    '#!/bin/sh',
    '# bootwright: report how kubeadm went (never fails the boot)',
    `rc=$(cat ${KUBEADM_RC} 2>/dev/null)`,
    "case \"$rc\" in ''|*[!0-9]*) rc= ;; esac",
    'outcome=$1',
    'if [ "$outcome" = stop ]; then [ "$SERVICE_RESULT" = success ] && exit 0; outcome=failure; fi',
    'if [ -z "$outcome" ]; then if [ "$rc" = 0 ]; then outcome=success; else outcome=failure; fi; fi',
    "command -v curl >/dev/null 2>&1 || { echo 'bootwright: curl not found: the boot report is not sent' >&2; exit 0; }",
    `tail -n ${REPORT_OUTPUT_LINES} ${KUBEADM_LOG} 2>/dev/null |`,
    "  sed -e 's/[a-z0-9]\\{6\\}\\.[a-z0-9]\\{16\\}/<redacted>/g' -e 's/[0-9a-fA-F]\\{64\\}/<redacted>/g' |",
    `  tail -c ${REPORT_OUTPUT_BYTES} |`,
    `  curl -fsS -o /dev/null --retry ${REPORT_RETRIES} --retry-delay ${REPORT_RETRY_DELAY_SECONDS} --retry-connrefused --connect-timeout 5 --max-time ${REPORT_MAX_TIME_SECONDS} \\`,
    '    --data-urlencode "outcome=$outcome" --data-urlencode "exitCode=$rc" --data-urlencode output@- \\',
    `    ${shellQuote(report.url)} ||`,
    "  echo 'bootwright: the boot report could not be sent' >&2",
    'exit 0',
    '',
  ].join('\n');
}

/**
 * The report script as a plan file (root, 0700). Not marked secret: the URL only lets
 * this machine report its own outcome until it expires.
 */
export function reportFile(report: PlanReport): PlanFile {
  return {
    path: REPORT_SCRIPT,
    contents: Buffer.from(reportScript(report), 'utf8'),
    mode: 0o700,
    owner: { user: 'root', group: 'root' },
    append: false,
    sourceEncoding: 'plain',
    deferred: false,
    secret: false,
  };
}

/** A bootstrap token, `[a-z0-9]{6}.[a-z0-9]{16}` (kubeadm): its second half is the secret. */
const BOOTSTRAP_TOKEN = /^[a-z0-9]{6}\.([a-z0-9]{16})$/;

/** A PEM private key block, any type (`PRIVATE KEY`, `RSA PRIVATE KEY`, `EC PRIVATE KEY`). */
const PEM_PRIVATE_KEY = /-----BEGIN ([A-Z ]*)PRIVATE KEY-----[\s\S]*?(-----END \1PRIVATE KEY-----|$)/g;

/**
 * Remove what looks like a bootstrap token or a certificate key from text (the same
 * patterns the node's script scrubs, applied again by the service), any PEM private key
 * block (to its end, or to the end of the text when cut short), and any of the `known`
 * secret values verbatim; a known bootstrap token's secret half on its own too (kubeadm
 * prints it alone, e.g. in a `--token` it was given split).
 *
 * @param known secret strings to remove wherever they appear (those under 6 characters ignored)
 */
export function scrubSecrets(text: string, known: readonly string[] = []): string {
  let out = text;
  const secrets = known.flatMap((s) => [s, ...(BOOTSTRAP_TOKEN.exec(s)?.slice(1) ?? [])]);
  for (const s of secrets) if (s.length >= 6) out = out.split(s).join('<redacted>');
  return out
    .replace(PEM_PRIVATE_KEY, '<redacted>')
    .replace(/[a-z0-9]{6}\.[a-z0-9]{16}/g, '<redacted>')
    .replace(/[0-9a-fA-F]{64}/g, '<redacted>');
}
