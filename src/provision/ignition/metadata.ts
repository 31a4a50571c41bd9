/**
 * Metadata variables on Ignition nodes (issue 12, boot-time identity): `${NAME}` in the
 * kubeadm configuration is filled in on the node, before kubeadm runs, from a metadata
 * environment file of `NAME=value` lines: `/run/metadata/flatcar`, written by Flatcar's
 * `coreos-metadata.service` (`COREOS_EC2_HOSTNAME`, `COREOS_OPENSTACK_HOSTNAME`, …), or
 * `/run/metadata/afterburn`, written by Fedora CoreOS's `afterburn.service`
 * (`AFTERBURN_AWS_HOSTNAME`, …). See docs/boot-identity.md for each platform's names.
 *
 * The filling is a fixed script ({@link METADATA_SCRIPT_TEXT}) run with the file, the
 * configuration and the names as arguments: it takes each value from the environment, else
 * reads the file itself (no `source`: the values are never run as shell), fails naming
 * every variable that is unset or empty, and replaces exactly `${NAME}` for the names
 * given; any other `$` text stays as written.
 */
import { shellCommand } from '../shell.js';
import type { ProvisioningPlan } from '../plan/types.js';
import { METADATA_UNITS } from '../plan/bootvalues.js';

/** Where the script is written on the node. */
export const METADATA_SCRIPT = '/etc/kubeadm/metadata.sh';

/**
 * The script: `metadata.sh METADATA_FILE TARGET NAME…`. POSIX sh and awk (Flatcar and
 * Fedora CoreOS have both). Each value comes from the environment when set there (the
 * script runs in the bootstrap script's shell: a template's `EnvironmentFile=` drop-in on
 * the kubeadm unit, e.g. `/run/metadata/coreos`, and its `export NAME=…` commands come
 * first), else from the metadata file. Exit status 1, with one `bootwright:` line per
 * variable on standard error, when a name is unset or empty in both; the target is then
 * unchanged. The target keeps mode 0600 (`umask 077`: it holds the join token).
 */
export const METADATA_SCRIPT_TEXT = `#!/bin/sh
# Fill in \${NAME} metadata variables in a file, from the environment or else a
# metadata environment file (NAME=value lines). Usage: metadata.sh METADATA_FILE TARGET NAME...
umask 077
meta=$1
target=$2
shift 2
awk -v names="$*" -v meta="$meta" '
BEGIN {
  n = split(names, want, " ")
  for (k = 1; k <= n; k++) wanted[want[k]] = 1
  while ((r = (getline line < meta)) > 0) {
    i = index(line, "=")
    if (i > 1) val[substr(line, 1, i - 1)] = substr(line, i + 1)
  }
  why = r < 0 ? ", which cannot be read" : ""
  for (k = 1; k <= n; k++) {
    if (ENVIRON[want[k]] != "") val[want[k]] = ENVIRON[want[k]]
    if (!(want[k] in val) || val[want[k]] == "") { printf "bootwright: %s is not set (neither in the environment nor in %s%s)\\n", want[k], meta, why > "/dev/stderr"; bad = 1 }
  }
  if (bad) exit 1
}
{
  out = ""
  rest = $0
  while ((i = index(rest, "\${")) > 0) {
    j = index(substr(rest, i + 2), "}")
    if (j == 0) break
    name = substr(rest, i + 2, j - 1)
    if (name in wanted) { out = out substr(rest, 1, i - 1) val[name]; rest = substr(rest, i + 2 + j) }
    else { out = out substr(rest, 1, i + 1); rest = substr(rest, i + 2) }
  }
  print out rest
}' "$target" > "$target.tmp" && mv "$target.tmp" "$target"
`;

/** The distinct variable names the plan's kubeadm configuration uses, in first-use order. */
export function variableNames(plan: ProvisioningPlan): string[] {
  return [...new Set((plan.bootValues?.variables ?? []).map((v) => v.name))];
}

/**
 * The command the bootstrap script runs before kubeadm (chained with `&&`, so kubeadm
 * and the success sentinel wait for it), or undefined when the plan uses no variables.
 */
export function metadataCommand(plan: ProvisioningPlan, configPath: string): string | undefined {
  const names = variableNames(plan);
  const file = plan.bootValues?.metadataFile;
  if (names.length === 0 || file === undefined) return undefined;
  return shellCommand(['/bin/sh', METADATA_SCRIPT, file, configPath, ...names]);
}

/**
 * The unit that writes the plan's metadata file, when bootwright knows it
 * (`coreos-metadata.service`, `afterburn.service`): the bootstrap unit `Wants=` and is
 * `After=` it.
 */
export function metadataUnit(plan: ProvisioningPlan): string | undefined {
  const file = plan.bootValues?.metadataFile;
  return variableNames(plan).length > 0 && file !== undefined ? METADATA_UNITS[file] : undefined;
}
