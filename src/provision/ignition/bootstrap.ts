/**
 * The command phases as scripts run by systemd units (DESIGN §3: "kubeadm run by a
 * oneshot systemd unit (`Wants=` and `After=` `network-online.target`) that runs once;
 * the same sentinel, written only on success"; "put commands in a script file, not in
 * `ExecStart=`").
 *
 * Layout on the node (all under /etc: Ignition writes before the first boot and /run is
 * a tmpfs mounted over it later):
 * - `/etc/kubeadm/<configFile.name>` (0600): the kubeadm configuration;
 * - `/etc/kubeadm/bootstrap.sh` (0700): pre commands, kubeadm, post commands, run once
 *   by `kubeadm-bootstrap.service`;
 * - `/etc/kubeadm/bootcmd.sh` (0700): boot commands, run on every boot by
 *   `kubeadm-bootcmd.service`, ordered before the kubeadm unit;
 * - `/etc/kubeadm/metadata.sh` (0700), when the kubeadm configuration uses metadata
 *   variables: fills them in before kubeadm runs (`./metadata.ts`).
 *
 * Cluster API input (`plan.layout: 'cluster-api'`) gets CABPK's names instead
 * (`bootstrap/kubeadm/internal/ignition/clc/clc.go`), so templates' commands
 * (`envsubst < /etc/kubeadm.yml > /etc/kubeadm.yml.tmp && mv …`) and their drop-ins for
 * `kubeadm.service` find what they name: the configuration at `/etc/kubeadm.yml`, the
 * once-only script at `/etc/kubeadm.sh`, run by `kubeadm.service`. The unit keeps
 * bootwright's semantics (run once by stamp, the sentinel only on success).
 */
import { retriedCommand, shellCommand, shellQuote } from '../shell.js';
import { BOOTSTRAP_STAMP } from '../plan/protected.js';
import { KUBEADM_RC, REPORT_SECONDS_AT_MOST, reportCommand, reportedKubeadmLine } from '../plan/report.js';
import type { CommandList, ProvisioningPlan } from '../plan/types.js';
import { GENERATED, type IgnitionFile, type IgnitionUnit, type Sourced } from './config.js';
import type { EncodeOptions } from './dataurl.js';
import { generatedFile } from './files.js';
import { escapeSpecifiers, unitValueProblem } from './systemd.js';
import { METADATA_SCRIPT, METADATA_SCRIPT_TEXT, metadataCommand, metadataUnit } from './metadata.js';
import type { PlanLayout } from '../plan/types.js';

/** Directory of the files below. */
export const KUBEADM_DIR = '/etc/kubeadm';
/** The once-only script: pre commands, kubeadm, post commands. */
export const BOOTSTRAP_SCRIPT = `${KUBEADM_DIR}/bootstrap.sh`;
/** The every-boot script: boot commands. */
export const BOOTCMD_SCRIPT = `${KUBEADM_DIR}/bootcmd.sh`;
/** The oneshot unit that runs {@link BOOTSTRAP_SCRIPT} once. */
export const BOOTSTRAP_UNIT = 'kubeadm-bootstrap.service';
/** The oneshot unit that runs {@link BOOTCMD_SCRIPT} on every boot. */
export const BOOTCMD_UNIT = 'kubeadm-bootcmd.service';
/**
 * `StateDirectory=` of the bootstrap unit: systemd makes `/var/lib/bootwright`
 * (`BOOTSTRAP_STATE_DIR` of src/provision/plan/protected.ts), which holds the stamp
 * (`BOOTSTRAP_STAMP`), written when the bootstrap script has finished, whatever its
 * outcome; while it exists the unit is skipped (`ConditionPathExists=!`), so kubeadm runs
 * once per machine, as cloud-init's per-instance runcmd does.
 */
const STATE_DIRECTORY = 'bootwright';

/** CABPK's names (Cluster API input): the kubeadm configuration, the once-only script and its unit. */
export const CAPI_KUBEADM_CONFIG = '/etc/kubeadm.yml';
export const CAPI_BOOTSTRAP_SCRIPT = '/etc/kubeadm.sh';
export const CAPI_BOOTSTRAP_UNIT = 'kubeadm.service';

/** The configuration path (for a config file name), script and unit of a layout. */
export function layoutNames(layout: PlanLayout | undefined, configName: string): { config: string; script: string; unit: string } {
  return layout === 'cluster-api'
    ? { config: CAPI_KUBEADM_CONFIG, script: CAPI_BOOTSTRAP_SCRIPT, unit: CAPI_BOOTSTRAP_UNIT }
    : { config: `${KUBEADM_DIR}/${configName}`, script: BOOTSTRAP_SCRIPT, unit: BOOTSTRAP_UNIT };
}

const SCRIPT_MODE = 0o700;
const KUBEADM_CONFIG_MODE = 0o600;
const FILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

/** `#!/bin/sh` then each command as one line, exactly as given (cloud-init runcmd). */
function script(lines: CommandList): string {
  return `#!/bin/sh\n${lines.map((l) => `${l}\n`).join('')}`;
}

/**
 * The once-only script. Cloud-init runcmd semantics: every command is one line of a
 * `sh` script, byte for byte, with no `set -e` (a failing line does not stop the next).
 * Pre commands, then `mkdir -p <sentinel dir>` and
 * `<argv> --config <path> && echo success > <sentinel>` (words quoted only when needed),
 * so the sentinel exists only when kubeadm succeeded, then post commands. With metadata
 * variables, the kubeadm line starts with the filling (`./metadata.ts`) and `&&`: an
 * unset variable fails it, naming the variable, and kubeadm does not run. It runs after
 * the pre commands, so a template's own `envsubst` over the file goes first.
 * With a boot report (src/provision/plan/report.ts) the kubeadm line keeps its output and
 * status, and the script ends with that status, so the unit's `ExecStartPost=` (success)
 * or `ExecStopPost=` (failure) sends the report. With users in groups, it starts with
 * the groups script (`./groups.ts`).
 *
 * @param configPath where the kubeadm configuration is written
 * @param groupsScript the groups script to run first, when the plan has one
 */
export function bootstrapScript(plan: ProvisioningPlan, configPath: string, groupsScript?: string): string {
  const { pre, main, post } = plan.commands;
  const sentinel = plan.successSentinel;
  const command = shellCommand([...main.argv, '--config', configPath]);
  const fill = metadataCommand(plan, configPath);
  const run = `${fill ? `${fill} && ` : ''}${main.retry ? retriedCommand(command, main.retry) : command}`;
  const kubeadm = plan.report ? reportedKubeadmLine(run, sentinel) : `${run} && echo success > ${shellQuote(sentinel)}`;
  const sentinelDir = sentinel.slice(0, sentinel.lastIndexOf('/')) || '/';
  const status = plan.report ? [`exit "$(cat ${KUBEADM_RC} 2>/dev/null || echo 1)"`] : [];
  const groups = groupsScript !== undefined ? [`/bin/sh ${groupsScript}`] : [];
  return script([...groups, ...pre, `mkdir -p ${shellQuote(sentinelDir)}`, kubeadm, ...post, ...status]);
}

/** The every-boot script: the boot commands as lines of a `sh` script (cloud-init bootcmd). */
export function bootcmdScript(boot: CommandList): string {
  return script(boot);
}

/**
 * `kubeadm-bootstrap.service`. Runs the script with `/bin/sh` (no exec bit needed on
 * /etc, e.g. under SELinux) after the network is online, the boot commands and a
 * container runtime that may be there (`After=` a unit that does not exist is a no-op).
 * The stamp is written by `ExecStartPost=` on success and by `ExecStopPost=` (which
 * systemd also runs when `ExecStart=` failed), so a failed bootstrap is not retried on
 * the next boot either. `StateDirectory=` creates /var/lib/bootwright. No user value
 * reaches the unit but the node name (`%` escaped; left out if it cannot be a setting).
 * With metadata variables, it `Wants=` and is `After=` the unit writing the metadata
 * file, when known (`coreos-metadata.service`, `afterburn.service`).
 * With a boot report: an `ExecStartPost=-` running the report script with `success`, and
 * an `ExecStopPost=-` running it with `stop` (systemd runs it at once when `ExecStart=`
 * failed, and at shutdown after a success, when the script sends nothing), the `-`
 * ignoring their status (the script exits 0 anyway), and `TimeoutStopSec=` long enough
 * for a report's retries (`REPORT_SECONDS_AT_MOST`).
 *
 * @param script the once-only script the unit runs (its layout's)
 */
export function bootstrapUnit(plan: ProvisioningPlan, withBootcmd: boolean, script = BOOTSTRAP_SCRIPT): string {
  const node = plan.nodeName && !unitValueProblem(plan.nodeName) ? ` ${plan.nodeName}` : '';
  const metadata = metadataUnit(plan);
  return runOnceUnit(
    [
      `Description=${escapeSpecifiers(`Bootstrap Kubernetes node${node} with kubeadm (once)`)}`,
      'Wants=network-online.target',
      'After=network-online.target',
      'After=containerd.service crio.service docker.service',
      ...(withBootcmd ? [`After=${BOOTCMD_UNIT}`] : []),
      ...(metadata ? [`Wants=${metadata}`, `After=${metadata}`] : []),
    ],
    script,
    BOOTSTRAP_STAMP,
    plan.report ? { afterStart: [`-${reportCommand('success')}`], afterStop: [`-${reportCommand('stop')}`], service: [`TimeoutStopSec=${REPORT_SECONDS_AT_MOST}`] } : {},
  );
}

/**
 * A oneshot unit that runs `script` with `/bin/sh` once: skipped while `stamp` exists,
 * which `ExecStartPost=` writes on success and `ExecStopPost=` also after a failure (so
 * it is not retried on later boots); `StateDirectory=` creates the stamp's directory.
 *
 * @param unitLines the `[Unit]` settings before the stamp condition (description, ordering)
 * @param more `afterStart`: more `ExecStartPost=` command lines, run after the stamp is
 *   written; `afterStop`: more `ExecStopPost=` lines, likewise; `service`: more
 *   `[Service]` settings
 */
export function runOnceUnit(unitLines: readonly string[], script: string, stamp: string, more: { afterStart?: readonly string[]; afterStop?: readonly string[]; service?: readonly string[] } = {}): string {
  return [
    '[Unit]',
    ...unitLines,
    `ConditionPathExists=!${stamp}`,
    '',
    '[Service]',
    'Type=oneshot',
    'RemainAfterExit=yes',
    `StateDirectory=${STATE_DIRECTORY}`,
    `ExecStart=/bin/sh ${script}`,
    `ExecStartPost=touch ${stamp}`,
    ...(more.afterStart ?? []).map((c) => `ExecStartPost=${c}`),
    `ExecStopPost=touch ${stamp}`,
    ...(more.afterStop ?? []).map((c) => `ExecStopPost=${c}`),
    ...(more.service ?? []),
    'StandardOutput=journal+console',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
}

/** `kubeadm-bootcmd.service`: the boot commands on every boot, before the kubeadm unit. */
export function bootcmdUnit(bootstrapUnit = BOOTSTRAP_UNIT): string {
  return [
    '[Unit]',
    'Description=Run the node boot commands (every boot)',
    `Before=${bootstrapUnit}`,
    '',
    '[Service]',
    'Type=oneshot',
    'RemainAfterExit=yes',
    `ExecStart=/bin/sh ${BOOTCMD_SCRIPT}`,
    'StandardOutput=journal+console',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
}

/**
 * The bootstrap files and units of a plan: the kubeadm configuration (0600), the
 * scripts (0700) and their units (enabled), at the names of the plan's layout
 * ({@link layoutNames}). The boot script and unit only when there are boot commands;
 * the metadata script only when the configuration uses metadata variables.
 *
 * @throws Error when `plan.commands.main.configFile.name` is not a plain file name (a
 *   builder bug, not a request problem)
 */
export function bootstrapEntries(plan: ProvisioningPlan, encoding: EncodeOptions, groupsScript?: string): { files: Sourced<IgnitionFile>[]; units: Sourced<IgnitionUnit>[] } {
  const { configFile } = plan.commands.main;
  if (!FILE_NAME.test(configFile.name)) throw new Error(`kubeadm config file name ${JSON.stringify(configFile.name)} is not a plain file name`);
  const names = layoutNames(plan.layout, configFile.name);
  const withBootcmd = plan.commands.boot.length > 0;
  const withMetadata = metadataCommand(plan, names.config) !== undefined;
  const files = [
    generatedFile(names.config, configFile.contents, KUBEADM_CONFIG_MODE, encoding),
    ...(withBootcmd ? [generatedFile(BOOTCMD_SCRIPT, bootcmdScript(plan.commands.boot), SCRIPT_MODE, encoding)] : []),
    ...(withMetadata ? [generatedFile(METADATA_SCRIPT, METADATA_SCRIPT_TEXT, SCRIPT_MODE, encoding)] : []),
    generatedFile(names.script, bootstrapScript(plan, names.config, groupsScript), SCRIPT_MODE, encoding),
  ];
  const units: Sourced<IgnitionUnit>[] = [
    ...(withBootcmd ? [{ entry: { name: BOOTCMD_UNIT, enabled: true, contents: bootcmdUnit(names.unit) }, origin: GENERATED }] : []),
    { entry: { name: names.unit, enabled: true, contents: bootstrapUnit(plan, withBootcmd, names.script) }, origin: GENERATED },
  ];
  return { files, units };
}
