/**
 * Resource documents as the HTTP API reads and writes them (DESIGN §4, issue 4):
 * `{apiVersion: bootwright.dev/v1alpha1, kind, metadata: {name, labels}, spec}`.
 *
 * Secrets are write-only: a document read back carries `"<redacted>"` in their place
 * (cluster `bootstrapToken`, `certificateKey`, `certificates.*.key`; profile
 * `provisioning.users[].passwd` and the kubeadm overrides' `token`, `tlsBootstrapToken`
 * and `certificateKey`). A replace may send `"<redacted>"` back to keep the stored value,
 * so a read-modify-write round trip works without the client ever holding the secret.
 */
import { z } from 'zod';
import type { FieldProblem } from '../errors.js';
import { formatPath } from '../request/parse.js';
import { normaliseMac, normaliseUuid } from './identity.js';
import { PHASES } from './status.js';
import {
  clusterSpecSchema,
  machineSpecSchema,
  profileSpecSchema,
  RESOURCE_API_VERSION,
  RESOURCE_KINDS,
  type ResourceKind,
  type StoredResource,
  writeMetadataSchema,
} from './resources.js';

/** What a secret reads back as. */
export const REDACTED = '<redacted>';

/** A machine spec whose MAC and UUID selectors parse (every bad one reported, by path). */
const checkedMachineSpec = machineSpecSchema.superRefine((spec, ctx) => {
  spec.selectors.mac.forEach((mac, i) => {
    if (normaliseMac(mac) === undefined) ctx.addIssue({ code: 'custom', path: ['selectors', 'mac', i], message: 'must be a MAC address such as aa:bb:cc:dd:ee:ff (colon, hyphen, Cisco-dot or bare form)' });
  });
  if (spec.selectors.uuid !== undefined && normaliseUuid(spec.selectors.uuid) === undefined) {
    ctx.addIssue({ code: 'custom', path: ['selectors', 'uuid'], message: 'must be a UUID such as 4c4c4544-0042-3510-8052-b4c04f4e3232' });
  }
});

/** A field the service sets: a write may carry it (a document read back, written again) and it is ignored. */
const setByService = (what: string) => z.unknown().optional().describe(`${what}: set by the service, ignored on write`);

/**
 * The metadata a write takes: name and labels, plus what a read answers (`revision`,
 * `createdAt`, `updatedAt`), ignored, so `get -o yaml` output can be applied again as
 * the Kubernetes API ignores `creationTimestamp` on an update. A write's precondition is
 * `If-Match`, never the body's `revision`.
 */
const writeMetadata = writeMetadataSchema.extend({ revision: setByService('the revision'), createdAt: setByService('when it was created'), updatedAt: setByService('when this revision was written') });

const writeDocument = <K extends ResourceKind, S extends z.ZodType>(kind: K, spec: S, description: string) =>
  z
    .strictObject({
      apiVersion: z.literal(RESOURCE_API_VERSION),
      kind: z.literal(kind),
      metadata: writeMetadata,
      spec,
      // As the Kubernetes API ignores status on an update of the main resource.
      status: setByService('the live status'),
    })
    .meta({ id: kind, description });

/** The documents a create or replace takes, by kind (named OpenAPI components `ClusterInput`, …). */
export const WRITE_DOCUMENTS = {
  Cluster: writeDocument('Cluster', clusterSpecSchema, 'A cluster: the `cluster` section of a NodeBootstrap, secrets included (write-only)'),
  Profile: writeDocument('Profile', profileSpecSchema, 'A profile: role, Kubernetes version, kubeadm overrides, provisioning, output defaults and iPXE boot'),
  Machine: writeDocument('Machine', checkedMachineSpec, 'A machine: hardware selectors, its cluster and profile, and per-machine values'),
} as const;

const readMetadata = z.object({
  name: z.string(),
  labels: z.record(z.string(), z.string()),
  revision: z.int().describe('1 on the first create, +1 on every change; the ETag is this number in quotes'),
  createdAt: z.string().describe('ISO 8601 UTC'),
  updatedAt: z.string().describe('ISO 8601 UTC: when this revision was written'),
});

const transitionSchema = z.object({ phase: z.enum(PHASES), time: z.string().describe('ISO 8601 UTC') });

/** What the latest config fetch served (component `ServedConfig`). */
export const servedSchema = z
  .object({
    revision: z.int().describe('the machine revision served'),
    sha256: z.string().describe('hex SHA-256 of the bytes served'),
    format: z.enum(['cloud-config', 'ignition']),
    ignitionVersion: z.string().optional().describe('the Ignition spec served'),
    rendererVersion: z.string().optional().describe('the renderer version that made the bytes (CHANGELOG.md names each); absent for what releases before v0.2.0 served'),
    time: z.string().describe('ISO 8601 UTC'),
  })
  .meta({ id: 'ServedConfig' });

/** A machine's latest boot report (component `LastBootReport`). */
export const lastReportSchema = z
  .object({
    outcome: z.enum(['success', 'failure']),
    exitCode: z.int().optional().describe("kubeadm's exit code, when the node could tell"),
    output: z.string().describe("the last lines of kubeadm's output, secrets scrubbed (at most 4096 characters)"),
    time: z.string().describe('ISO 8601 UTC'),
  })
  .meta({ id: 'LastBootReport' });

/** What iPXE reported at the `/ipxe` that started a machine's latest boot (component `FirmwareReport`). */
export const firmwareSchema = z
  .object({
    mac: z.string().optional(),
    uuid: z.string().optional(),
    serial: z.string().optional(),
    hostname: z.string().optional(),
    buildarch: z.string().optional().describe("iPXE's ${buildarch}: x86_64, i386, arm64, …"),
    platform: z.string().optional().describe("iPXE's ${platform}: pcbios or efi"),
    client: z.string().optional().describe('the address the request came from'),
  })
  .meta({ id: 'FirmwareReport', description: 'what the firmware reported at the /ipxe that started the latest boot, as reported (anyone who asks for the script reports it; repeats while Booting do not overwrite it)' });

/** A problem a stored machine is excused from (src/rules.ts `ToleratedProblem`; component `StoredMachineWarning`). */
export const warningSchema = z
  .object({
    rule: z.string().describe('the rule (CHANGELOG.md names each)'),
    path: z.string().describe('the NodeBootstrap field, e.g. spec.provisioning.preKubeadmCommands[0]'),
    message: z.string(),
    since: z.int().describe('the rules version that brought the rule'),
  })
  .meta({ id: 'StoredMachineWarning' });

/** The lifecycle part of a machine's status (src/store/status.ts). */
export const lifecycleFields = {
  phase: z.enum(PHASES).describe('Registered → Booting (/ipxe served) → Provisioning (config fetched) → Joined | Failed (boot report); Stalled: Provisioning for longer than BOOTWRIGHT_REPORT_TIMEOUT_SECONDS'),
  transitions: z.array(transitionSchema).describe('phase changes, oldest first (the last 32)'),
  served: servedSchema.optional(),
  lastReport: lastReportSchema.optional(),
  firmware: firmwareSchema.optional(),
};

const readDocument = <K extends ResourceKind>(kind: K) =>
  z
    .object({
      apiVersion: z.literal(RESOURCE_API_VERSION),
      kind: z.literal(kind),
      metadata: readMetadata,
      spec: z.record(z.string(), z.unknown()).describe(`the ${kind} spec as written, each secret replaced by "${REDACTED}"`),
      ...(kind === 'Machine'
        ? {
            status: z
              .object({
                clusterRevision: z.int(),
                profileRevision: z.int(),
                phase: lifecycleFields.phase.optional(),
                transitions: lifecycleFields.transitions.optional(),
                served: lifecycleFields.served,
                lastReport: lifecycleFields.lastReport,
                firmware: lifecycleFields.firmware,
                warnings: z
                  .array(warningSchema)
                  .optional()
                  .describe('what the machine boots in spite of: problems of rules that came in after its cluster or profile was stored, which refuse them on the next write (`bootwright upgrade check`)'),
              })
              .describe(
                'the cluster and profile revisions current when this revision was written (`?revision=` renders with them); on `GET /v1/machines/{name}` also the lifecycle: phase, transitions, served, lastReport',
              ),
          }
        : {}),
    })
    .meta({ id: `Stored${kind}`, description: `A stored ${kind} revision, secrets redacted` });

/** Documents as read back, by kind (components `StoredCluster`, …). */
export const READ_DOCUMENTS = { Cluster: readDocument('Cluster'), Profile: readDocument('Profile'), Machine: readDocument('Machine') } as const;

/** A list page, by kind (`ClusterList`, …). */
export const LIST_DOCUMENTS = {
  Cluster: listDocument('Cluster'),
  Profile: listDocument('Profile'),
  Machine: listDocument('Machine'),
} as const;

function listDocument<K extends ResourceKind>(kind: K) {
  return z
    .object({
      apiVersion: z.literal(RESOURCE_API_VERSION),
      kind: z.literal(`${kind}List`),
      metadata: z.object({ continue: z.string().optional().describe('pass as ?continue= for the next page; absent on the last page') }),
      items: z.array(READ_DOCUMENTS[kind]),
    })
    .meta({ id: `${kind}List`, description: `A page of ${RESOURCE_KINDS[kind]}, by name` });
}

/** A resource's revision history, by kind (`ClusterRevisionList`, …). */
export const REVISION_LIST_DOCUMENTS = {
  Cluster: revisionListDocument('Cluster'),
  Profile: revisionListDocument('Profile'),
  Machine: revisionListDocument('Machine'),
} as const;

function revisionListDocument<K extends ResourceKind>(kind: K) {
  return z
    .object({ apiVersion: z.literal(RESOURCE_API_VERSION), kind: z.literal(`${kind}RevisionList`), items: z.array(READ_DOCUMENTS[kind]) })
    .meta({ id: `${kind}RevisionList`, description: `Every revision of a ${kind}, oldest first, secrets redacted` });
}

/** A resource document as read back (secrets redacted). */
export interface ReadDocument {
  apiVersion: typeof RESOURCE_API_VERSION;
  kind: ResourceKind;
  metadata: { name: string; labels: Record<string, string>; revision: number; createdAt: string; updatedAt: string };
  spec: Record<string, unknown>;
  status?: { clusterRevision: number; profileRevision: number };
}

type Segment = string | number;

const KUBEADM_SECRET_KEYS = new Set(['token', 'tlsBootstrapToken', 'certificateKey']);

/** Whether the value at `path` inside a spec of `kind` is a secret. */
function isSecretPath(kind: ResourceKind, path: readonly Segment[]): boolean {
  if (kind === 'Cluster') {
    return (path.length === 1 && (path[0] === 'bootstrapToken' || path[0] === 'certificateKey')) || (path.length === 3 && path[0] === 'certificates' && path[2] === 'key');
  }
  if (kind === 'Profile') {
    if (path.length === 4 && path[0] === 'provisioning' && path[1] === 'users' && path[3] === 'passwd') return true;
    return path[0] === 'kubeadm' && path.length >= 3 && typeof path.at(-1) === 'string' && KUBEADM_SECRET_KEYS.has(path.at(-1) as string);
  }
  return false;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);

/** A deep copy of `value` with `replace` applied to every secret-path string (JSON-like values). */
function mapSecrets(kind: ResourceKind, value: unknown, replace: (secret: string, path: Segment[]) => unknown, path: Segment[] = []): unknown {
  if (typeof value === 'string' && path.length > 0 && isSecretPath(kind, path)) return replace(value, path);
  if (Array.isArray(value)) return value.map((v, i) => mapSecrets(kind, v, replace, [...path, i]));
  if (isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapSecrets(kind, v, replace, [...path, k])]));
  return value;
}

/**
 * A spec with each secret replaced by {@link REDACTED}.
 *
 * @param kind the resource kind, which decides where secrets are.
 * @param spec a stored spec (JSON values).
 * @returns a new object; `spec` is not changed.
 */
export function redactSpec(kind: ResourceKind, spec: unknown): Record<string, unknown> {
  return mapSecrets(kind, spec, () => REDACTED) as Record<string, unknown>;
}

/** The value at `path` in `value`, if any. */
function valueAt(value: unknown, path: readonly Segment[]): unknown {
  let cur = value;
  for (const seg of path) {
    if (typeof seg === 'number') cur = Array.isArray(cur) ? (cur[seg] as unknown) : undefined;
    else cur = isPlainObject(cur) ? cur[seg] : undefined;
  }
  return cur;
}

/**
 * Put stored secrets back where a written spec says {@link REDACTED}: at the same path in
 * `current` (a profile's user passwords match by user `name`, not position).
 *
 * @param kind the resource kind.
 * @param spec the spec as the client sent it (unvalidated).
 * @param current the stored spec it replaces, or undefined for a create.
 * @returns the spec to validate; a problem (`spec.…` path) for every placeholder with
 *   no stored value behind it (a placeholder is never stored as a secret); whether any
 *   stored secret was put back (the write must then be conditional on `current`).
 */
export function restoreSecrets(kind: ResourceKind, spec: unknown, current: unknown): { spec: unknown; problems: FieldProblem[]; restored: boolean } {
  const problems: FieldProblem[] = [];
  let restored = false;
  const out = mapSecrets(kind, spec, (secret, path) => {
    if (secret !== REDACTED) return secret;
    let stored: unknown;
    if (kind === 'Profile' && path[1] === 'users') {
      const name = valueAt(spec, [...path.slice(0, 3), 'name']);
      const users = valueAt(current, ['provisioning', 'users']);
      const user = Array.isArray(users) ? (users as unknown[]).find((u) => isPlainObject(u) && u.name === name) : undefined;
      stored = isPlainObject(user) ? user.passwd : undefined;
    } else stored = valueAt(current, path);
    if (typeof stored === 'string') {
      restored = true;
      return stored;
    }
    problems.push({ path: formatPath(['spec', ...path]), message: `is "${REDACTED}" but there is no stored value to keep; send the secret itself` });
    return secret;
  });
  return { spec: out, problems, restored };
}

/**
 * Make a validated spec JSON-safe for storing: a profile file whose content is binary
 * (YAML `!!binary`) is stored as base64 text with the matching `encoding`
 * (`gzip` → `gzip+base64`, none → `base64`), which renders the same bytes.
 */
export function jsonSafeSpec<S>(kind: ResourceKind, spec: S): S {
  if (kind !== 'Profile') return spec;
  const files = (spec as { provisioning?: { files?: { content: unknown; encoding?: string }[] } }).provisioning?.files;
  if (!files?.some((f) => f.content instanceof Uint8Array)) return spec;
  const copy = structuredClone(spec);
  for (const file of (copy as { provisioning: { files: { content: unknown; encoding?: string }[] } }).provisioning.files) {
    if (!(file.content instanceof Uint8Array)) continue;
    const bytes = Buffer.from(file.content);
    if (file.encoding === undefined || file.encoding === 'gzip') {
      file.content = bytes.toString('base64');
      file.encoding = file.encoding === 'gzip' ? 'gzip+base64' : 'base64';
    } else file.content = bytes.toString('latin1');
  }
  return copy;
}

/** A stored revision as the API shows it: Kubernetes-style, secrets redacted. */
export function toReadDocument(resource: StoredResource): ReadDocument {
  return {
    apiVersion: RESOURCE_API_VERSION,
    kind: resource.kind,
    metadata: { name: resource.name, labels: resource.labels, revision: resource.revision, createdAt: resource.createdAt, updatedAt: resource.updatedAt },
    spec: redactSpec(resource.kind, resource.spec),
    ...(resource.refs ? { status: { clusterRevision: resource.refs.clusterRevision, profileRevision: resource.refs.profileRevision } } : {}),
  };
}
