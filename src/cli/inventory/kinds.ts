/**
 * What the inventory commands know of each kind: the names a user may type for it
 * (`machine`, `machines`, as kubectl takes singular and plural), its collection under
 * /v1, and the columns `get` prints; plus kubectl's table layout and ages.
 */
import { RESOURCE_KINDS, type ResourceKind } from '../../store/resources.js';
import { UsageError } from '../commands.js';
import { dumpYaml } from '../../yaml/dump.js';
import type { DiscoveredMachine } from '../../store/store.js';
import { age } from '../../kube/duration.js';

/** A resource document as the service answers it (the fields the CLI reads). */
export interface ResourceDocument {
  apiVersion: string;
  kind: ResourceKind;
  metadata: { name: string; labels?: Record<string, string>; revision: number; createdAt: string; updatedAt: string };
  spec: Record<string, unknown>;
  status?: Record<string, unknown>;
}

/** A discovered machine as `GET /v1/discovered` answers it: the store's entry (src/store/store.ts). */
export type DiscoveredDocument = DiscoveredMachine;

/** A kind the commands take: a resource kind, or the discovered machines. */
export type CliKind = ResourceKind | 'Discovered';

/** The names each kind answers to on the command line. */
const NAMES: Record<string, CliKind> = {
  cluster: 'Cluster',
  clusters: 'Cluster',
  profile: 'Profile',
  profiles: 'Profile',
  machine: 'Machine',
  machines: 'Machine',
  discovered: 'Discovered',
};

/** Every kind name, for help and errors. */
export const KIND_NAMES = 'clusters|profiles|machines|discovered';

/** The kind a name means. @throws UsageError naming the accepted names. */
export function kindOf(name: string | undefined, command: string): CliKind {
  if (name === undefined) throw new UsageError(`a KIND is required: ${KIND_NAMES}`, command);
  const kind = NAMES[name.toLowerCase()];
  if (!kind) throw new UsageError(`unknown kind "${name}": use ${KIND_NAMES}`, command);
  return kind;
}

/** The collection path segment of a kind (`machines`, `discovered`). */
export const collectionOf = (kind: CliKind): string => (kind === 'Discovered' ? 'discovered' : RESOURCE_KINDS[kind]);

/** `kind/name` as kubectl prints it (`machine/node-1`). */
/** `kind/name`, as kubectl prints a reference; the name {@link printable}. */
export const ref = (kind: CliKind, name: string): string => `${kind.toLowerCase()}/${printable(name)}`;

/** Characters a terminal acts on: C0 controls (line feed and tab too), DEL, C1 controls, and the Unicode line separators and bidirectional overrides. */
const TERMINAL_CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` safe to print on an operator's terminal: every control character written as
 * `\xHH` (`\uHHHH` above U+00FF). Values come from machines as well as operators (a
 * host name sent to `/ipxe` by any client on the boot network, a boot report's output),
 * and an escape sequence printed raw clears the screen, retitles the window or forges
 * table rows.
 */
export function printable(text: string): string {
  return text.replace(TERMINAL_CONTROLS, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** What {@link terminalJson} escapes beyond what JSON.stringify does (it escapes C0 itself). */
const JSON_UNESCAPED_CONTROLS = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * `value` as indented JSON with every terminal control written as a `\uHHHH` escape:
 * the same JSON value (it parses back equal), nothing a terminal acts on.
 */
export function terminalJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2).replace(JSON_UNESCAPED_CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}\n`;
}

/** Whether text holds a character a terminal acts on, line feeds aside. */
export const hasTerminalControls = (text: string): boolean => /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/.test(text);

/**
 * `value` as YAML (bootwright's serializer) when that holds no terminal control but line
 * feeds, else as {@link terminalJson} (JSON is YAML: the same value, its controls escaped).
 */
export function terminalYaml(value: unknown): string {
  const yaml = dumpYaml(value);
  return hasTerminalControls(yaml) ? terminalJson(value) : yaml;
}

/** Lines of a table: columns left-aligned, three spaces apart (kubectl's tabwriter padding), each cell {@link printable}. */
export function table(header: string[], rawRows: string[][]): string {
  const rows = rawRows.map((r) => r.map(printable));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('   ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n') + '\n';
}

/** `<none>` for an absent value, as kubectl prints one. */
export const orNone = (v: unknown): string => (v === undefined || v === null || v === '' ? '<none>' : typeof v === 'string' ? v : JSON.stringify(v));

/** A machine's phase as the service reports it (`status.phase`), `<none>` when it reports none. */
export const phaseOf = (doc: ResourceDocument): string => orNone(doc.status?.phase);

/**
 * How many problems a machine boots in spite of (`status.warnings`: rules that came in
 * after its documents were stored), `0` for none.
 */
export const warningsOf = (doc: ResourceDocument): string => String((doc.status?.warnings as unknown[] | undefined)?.length ?? 0);

/** `k=v,k2=v2` of a document's labels, in key order, `<none>` for none (kubectl's LABELS column). */
const labelsOf = (doc: ResourceDocument): string =>
  orNone(
    Object.entries(doc.metadata.labels ?? {})
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
  );

/**
 * The header and a row of `get`'s table for a kind. `wide` (`-o wide`, as kubectl's)
 * appends: for machines their MACs and labels, for clusters and profiles their labels,
 * for discovered machines iPXE's architecture and platform and why the entry matched no
 * machine.
 */
export function columns(kind: CliKind, now: Date = new Date(), wide = false): { header: string[]; row: (item: never) => string[] } {
  const base = narrowColumns(kind, now);
  if (!wide) return base;
  const extra: { header: string[]; row: (item: never) => string[] } =
    kind === 'Discovered'
      ? { header: ['ARCH', 'PLATFORM', 'WHY'], row: (d: DiscoveredDocument) => [orNone(d.buildarch), orNone(d.platform), orNone(d.why)] }
      : kind === 'Machine'
        ? { header: ['MAC', 'LABELS'], row: (m: ResourceDocument) => [orNone(((m.spec.selectors as { mac?: string[] } | undefined)?.mac ?? []).join(',')), labelsOf(m)] }
        : { header: ['LABELS'], row: (r: ResourceDocument) => [labelsOf(r)] };
  return { header: [...base.header, ...extra.header], row: (item: never) => [...base.row(item), ...extra.row(item)] };
}

function narrowColumns(kind: CliKind, now: Date): { header: string[]; row: (item: never) => string[] } {
  switch (kind) {
    case 'Cluster':
      return {
        header: ['NAME', 'ENDPOINT', 'REVISION', 'AGE'],
        row: (c: ResourceDocument) => [c.metadata.name, orNone(c.spec.controlPlaneEndpoint), String(c.metadata.revision), age(c.metadata.createdAt, now)],
      };
    case 'Profile':
      return {
        header: ['NAME', 'ROLE', 'VERSION', 'FORMAT', 'REVISION', 'AGE'],
        row: (p: ResourceDocument) => [
          p.metadata.name,
          orNone(p.spec.role),
          orNone(p.spec.kubernetesVersion),
          orNone((p.spec.output as { format?: string } | undefined)?.format),
          String(p.metadata.revision),
          age(p.metadata.createdAt, now),
        ],
      };
    case 'Machine':
      return {
        header: ['NAME', 'CLUSTER', 'PROFILE', 'PHASE', 'WARNINGS', 'REVISION', 'AGE'],
        row: (m: ResourceDocument) => [m.metadata.name, orNone(m.spec.cluster), orNone(m.spec.profile), phaseOf(m), warningsOf(m), String(m.metadata.revision), age(m.metadata.createdAt, now)],
      };
    default:
      return {
        header: ['ID', 'MAC', 'UUID', 'SERIAL', 'HOSTNAME', 'SEEN', 'LAST SEEN', 'ENROLLED'],
        row: (d: DiscoveredDocument) => [d.id, orNone(d.mac), orNone(d.uuid), orNone(d.serial), orNone(d.hostname), String(d.count), age(d.lastSeen, now), orNone(d.enrolled)],
      };
  }
}
