/**
 * Boot-time identity (issue 12): values a template cannot know, read by the node at boot
 * the way each provisioner does it, found once in the request for every format.
 *
 * - cloud-init instance-data Jinja (`{{ ds.meta_data.local_hostname }}`): Cluster API
 *   input uses it as CABPK's cloud-config does, in kubeadm values, commands and
 *   plain-text file contents (`../cloudinit/jinja.ts` says what is accepted);
 * - metadata variables (`${COREOS_EC2_HOSTNAME}`, `${AFTERBURN_AWS_HOSTNAME}`): Flatcar's
 *   `coreos-metadata.service` writes `COREOS_*` to `/run/metadata/flatcar`, Fedora
 *   CoreOS's `afterburn.service` writes `AFTERBURN_*` to `/run/metadata/afterburn`; in
 *   kubeadm values, the Ignition output fills them in before kubeadm runs;
 * - native requests name the node from metadata through `spec.nodeName.fromMetadata`,
 *   never through Jinja or variables in `spec.kubeadm`.
 */
import { type FieldProblem, RequestError } from '../../errors.js';
import type { Ratchet } from '../../rules.js';
import type { NodeBootstrap, OutputFormat, Platform } from '../../request/schema.js';
import { scanJinja } from '../cloudinit/jinja.js';
import type { BootValueUse, PlanBootValues } from './types.js';

/** A metadata variable reference `${NAME}` whose name the metadata agents write (`COREOS_`, `AFTERBURN_`). */
const METADATA_VARIABLE = /\$\{((?:COREOS|AFTERBURN)_[A-Z0-9_]{1,64})\}/g;

/** The metadata environment file of each variable prefix. */
export const METADATA_FILES: Readonly<Record<string, string>> = {
  COREOS_: '/run/metadata/flatcar',
  AFTERBURN_: '/run/metadata/afterburn',
};

/** The systemd unit that writes each metadata file (Flatcar's coreos-metadata, Fedora CoreOS's afterburn). */
export const METADATA_UNITS: Readonly<Record<string, string>> = {
  '/run/metadata/flatcar': 'coreos-metadata.service',
  '/run/metadata/afterburn': 'afterburn.service',
};

/** The cloud-init instance-data key a native request's node name defaults to: `v1.local_hostname`, which every datasource sets. */
export const DEFAULT_INSTANCE_DATA = 'v1.local_hostname';

/** Where each metadata variable in `text` is: `${NAME}` and NAME. */
export function metadataVariables(text: string): { source: string; name: string }[] {
  return [...text.matchAll(METADATA_VARIABLE)].map((m) => ({ source: m[0], name: m[1]! }));
}

type Walked = { path: string; text: string };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);

/** Every string under `value`, with its field path. */
function strings(value: unknown, at: string, out: Walked[]): Walked[] {
  if (typeof value === 'string') out.push({ path: at, text: value });
  else if (Array.isArray(value)) value.forEach((v, i) => strings(v, `${at}[${i}]`, out));
  else if (isObject(value)) for (const [k, v] of Object.entries(value)) strings(v, `${at}.${k}`, out);
  return out;
}

/** The request's kubeadm values, commands and plain-text file contents, with their fields. */
function requestTexts(req: NodeBootstrap): { kubeadm: Walked[]; other: Walked[] } {
  const kubeadm = strings(req.spec.kubeadm ?? {}, 'spec.kubeadm', []);
  const prov = req.spec.provisioning ?? {};
  const other: Walked[] = [];
  for (const key of ['bootCommands', 'preKubeadmCommands', 'postKubeadmCommands'] as const) {
    prov[key]?.forEach((text, i) => other.push({ path: `spec.provisioning.${key}[${i}]`, text }));
  }
  prov.files?.forEach((f, i) => {
    if (f.encoding === undefined && typeof f.content === 'string') other.push({ path: `spec.provisioning.files[${i}].content`, text: f.content });
  });
  return { kubeadm, other };
}

/** What the node name of a native request is, for the format being rendered, when it comes from metadata. */
export interface MetadataNodeName {
  /** The value written as `nodeRegistration.name`: `{{ v1.local_hostname }}` or `${COREOS_EC2_HOSTNAME}`. */
  value: string;
  use: BootValueUse;
  /** The variable's name (Ignition). */
  variable?: string;
}

/**
 * The node name a native request reads from metadata (`spec.nodeName.fromMetadata`), as
 * the format expresses it: cloud-config, a Jinja expression of `instanceData` (default
 * {@link DEFAULT_INSTANCE_DATA}); Ignition, `${variable}`.
 *
 * @returns undefined when the request names its node itself (`metadata.name`)
 * @throws RequestError at `spec.nodeName.fromMetadata.variable` for Ignition without one
 */
export function metadataNodeName(req: NodeBootstrap, format: OutputFormat): MetadataNodeName | undefined {
  const from = req.spec.nodeName?.fromMetadata;
  if (!from) return undefined;
  if (format === 'ignition') {
    const path = 'spec.nodeName.fromMetadata.variable';
    if (from.variable === undefined) {
      throw new RequestError([{ path, message: 'is needed for Ignition output: the metadata variable holding the node name, such as COREOS_EC2_HOSTNAME (Flatcar on EC2) or AFTERBURN_AWS_HOSTNAME (Fedora CoreOS); see docs/boot-identity.md' }]);
    }
    const value = `\${${from.variable}}`;
    return { value, variable: from.variable, use: { path, source: value } };
  }
  const value = `{{ ${from.instanceData ?? DEFAULT_INSTANCE_DATA} }}`;
  return { value, use: { path: 'spec.nodeName.fromMetadata.instanceData', source: value } };
}

const jinjaProblem = (path: string, p: { line: number; column: number; message: string }): FieldProblem => ({ path, message: `line ${p.line}, column ${p.column}: ${p.message}` });

/**
 * Find the boot-time values of a request.
 *
 * Cluster API input (`clusterApi`): instance-data Jinja in kubeadm values, commands and
 * plain-text file contents is used (`jinja: 'request'`); a Jinja statement that reads
 * instance data, or any statement once the request uses expressions, or whitespace
 * control, is refused with line and column; `${COREOS_*}` and `${AFTERBURN_*}` in
 * kubeadm values are metadata variables. Native input: Jinja and metadata variables in
 * `spec.kubeadm` are refused (the way is `spec.nodeName.fromMetadata`), and commands and
 * files are literal; the node name from metadata is {@link metadataNodeName}'s.
 *
 * The metadata file: `spec.output.metadataFile`, else the one of the variables' prefix
 * ({@link METADATA_FILES}); variables of both prefixes without a file are refused.
 *
 * @param ratchet what a stored machine is excused from (a native kubeadm value with
 *   Jinja or a variable, rule `boot-value`: it reaches the node as written, as before)
 * @throws RequestError listing every problem not excused, at the request's fields
 */
export function findBootValues(req: NodeBootstrap, clusterApi: boolean, nodeName?: MetadataNodeName, ratchet?: Ratchet): PlanBootValues {
  const { kubeadm, other } = requestTexts(req);
  const problems: FieldProblem[] = [];
  const jinjaUses: BootValueUse[] = [];
  const variables: (BootValueUse & { name: string })[] = [];
  const texts = clusterApi ? [...kubeadm, ...other] : kubeadm;
  const scans = texts.map((t) => ({ ...t, scan: scanJinja(t.text) }));
  const usesJinja = clusterApi && scans.some((s) => s.scan.expressions.length > 0);
  for (const { path, text, scan } of scans) {
    const final = usesJinja ? scanJinja(text, true) : scan;
    if (clusterApi) {
      for (const e of final.expressions) jinjaUses.push({ path, source: e.source });
      for (const p of final.problems) problems.push(jinjaProblem(path, p));
    } else if (final.expressions.length > 0 || final.problems.length > 0) {
      problems.push({ path, message: 'uses cloud-init Jinja in a kubeadm value, which would reach the node as written: name the node from metadata with spec.nodeName.fromMetadata (see docs/boot-identity.md)', rule: 'boot-value' });
    }
  }
  for (const { path, text } of kubeadm) {
    for (const v of metadataVariables(text)) {
      if (clusterApi) variables.push({ path, ...v });
      else problems.push({ path, message: `uses the metadata variable ${v.source} in a kubeadm value, which would reach the node as written: name the node from metadata with spec.nodeName.fromMetadata.variable (see docs/boot-identity.md)`, rule: 'boot-value' });
    }
  }
  if (nodeName?.variable !== undefined) variables.push({ ...nodeName.use, name: nodeName.variable });
  else if (nodeName) jinjaUses.push(nodeName.use);
  let metadataFile = req.spec.output?.metadataFile;
  if (metadataFile === undefined && variables.length > 0) {
    const files = new Set(variables.map((v) => Object.entries(METADATA_FILES).find(([prefix]) => v.name.startsWith(prefix))![1]));
    if (files.size > 1) problems.push({ path: variables[0]!.path, message: `mixes COREOS_ and AFTERBURN_ variables (${variables.map((v) => v.name).join(', ')}), which two metadata files hold: give spec.output.metadataFile` });
    metadataFile = [...files][0];
  }
  const refused = ratchet ? ratchet.refuse(problems) : problems;
  if (refused.length > 0) throw new RequestError(refused);
  return {
    ...(usesJinja ? { jinja: 'request' as const } : nodeName && nodeName.variable === undefined ? { jinja: 'kubeadm' as const } : {}),
    jinjaUses,
    variables,
    ...(metadataFile !== undefined ? { metadataFile } : {}),
  };
}

/**
 * The variable prefixes of each platform's metadata agent (afterburn's attribute lists,
 * `docs/usage/attributes.md`; Flatcar's `COREOS_` names, `docs/usage/legacy-attributes.md`).
 * vSphere has none (templates write their own `COREOS_CUSTOM_*` file).
 */
const PLATFORM_PREFIXES: Readonly<Record<Platform, readonly string[]>> = {
  aws: ['COREOS_EC2_', 'AFTERBURN_AWS_'],
  azure: ['COREOS_AZURE_', 'AFTERBURN_AZURE_'],
  gcp: ['COREOS_GCE_', 'AFTERBURN_GCP_'],
  openstack: ['COREOS_OPENSTACK_', 'AFTERBURN_OPENSTACK_'],
  vsphere: [],
};

/**
 * Metadata variables that belong to another platform than the one named (`?platform=`,
 * `spec.output.platform`): `${COREOS_EC2_HOSTNAME}` on OpenStack is never set, so the node
 * could never join. Variables of no known platform (`COREOS_CUSTOM_*`, other clouds) pass.
 *
 * @param field the field or flag that named the platform
 */
export function platformVariableProblems(values: PlanBootValues | undefined, platform: Platform, field: string): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const v of values?.variables ?? []) {
    const owner = (Object.entries(PLATFORM_PREFIXES) as [Platform, readonly string[]][]).find(([, prefixes]) => prefixes.some((p) => v.name.startsWith(p)))?.[0];
    if (owner !== undefined && owner !== platform) {
      problems.push({ path: v.path, message: `uses ${v.source}, which the metadata agent writes on ${owner}, but ${field} is ${platform}: the variable would never be set and the node would not join` });
    }
  }
  return problems;
}
