/**
 * The documents that `apply`, `delete -f` and `diff` read, as kubectl reads `-f`: a file,
 * a directory of `.yaml`, `.yml` and `.json` files (`-R`: with its subdirectories), or
 * `-` for standard input; multi-document YAML, JSON, and `List` documents (`List`,
 * `ClusterList`, `ProfileList`, `MachineList`, as `get -o yaml` prints them) whose items
 * are read in order.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { RequestError, type FieldProblem } from '../../errors.js';
import { decodeUtf8, parseDocuments, syntaxForFile } from '../../request/parse.js';
import { RESOURCE_API_VERSION, RESOURCE_KINDS, type ResourceKind } from '../../store/resources.js';
import { UsageError, type Flag, type Parsed } from '../commands.js';
import type { ResourceDocument } from './kinds.js';

/** The `-f` and `-R` flags. */
export const FILE_FLAGS: Flag[] = [
  { name: 'filename', short: 'f', type: 'string', multiple: true, value: 'FILE', help: 'a file, a directory of .yaml, .yml and .json files, or - for standard input (again for more)' },
  { name: 'recursive', short: 'R', type: 'boolean', help: 'with a directory, also the files of its subdirectories' },
];

/** The `--dry-run` flag, as kubectl's: `none` (the default) or `server`. */
export const DRY_RUN_FLAG: Flag = {
  name: 'dry-run',
  type: 'string',
  value: 'none|server',
  help: 'server: the service checks every write as it would make it (validation, render checks, conflicts) and keeps nothing',
};

/**
 * Whether `--dry-run=server` was given.
 *
 * @throws UsageError for another value than none or server (a client-side dry run would
 *   check less than the service does, so it is not offered).
 */
export function dryRunOf(parsed: Parsed, command: string): boolean {
  const v = parsed.values['dry-run'] as string | undefined;
  if (v === undefined || v === 'none') return false;
  if (v === 'server') return true;
  if (v === 'client') throw new UsageError('--dry-run=client is not offered: use --dry-run=server, which runs every check the service makes and keeps nothing', command);
  throw new UsageError(`--dry-run: must be none or server, not "${v}"`, command);
}

/** One document, and where it came from (`file (document 2) items[0]`, for messages). */
export interface Manifest {
  doc: ResourceDocument;
  source: string;
}

/** The kinds of `List` documents whose items are read. */
const LIST_KINDS = new Set(['List', ...Object.keys(RESOURCE_KINDS).map((k) => `${k}List`)]);

/** The order documents are written in: what a machine needs first. Deletes go the other way. */
export const APPLY_ORDER: Record<ResourceKind, number> = { Cluster: 0, Profile: 1, Machine: 2 };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The files `-f` names: itself, or a directory's manifest files in path order (with `recursive`, its subdirectories' too). */
function files(path: string, recursive: boolean): string[] {
  if (path === '-') return ['-'];
  let dir: boolean;
  try {
    dir = statSync(path).isDirectory();
  } catch (e) {
    throw new RequestError([{ path, message: `cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}` }], 400);
  }
  if (!dir) return [path];
  const found: string[] = [];
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (entry.isDirectory() && recursive) walk(join(d, entry.name));
      else if (entry.isFile() && /\.(ya?ml|json)$/i.test(entry.name)) found.push(join(d, entry.name));
    }
  };
  walk(path);
  if (found.length === 0) throw new RequestError([{ path, message: `has no .yaml, .yml or .json files${recursive ? '' : ' (-R reads subdirectories)'}` }], 400);
  return found;
}

/**
 * The manifests of one file's text: each document (or each item of a `List`) checked
 * for an apiVersion, a kind bootwright stores and a name; the service checks the rest.
 * Every problem of the file is collected (`problems`), not only the first.
 */
function manifestsOf(text: string, file: string, problems: FieldProblem[]): Manifest[] {
  const out: Manifest[] = [];
  const docs = parseDocuments(text, file === '-' ? 'yaml' : syntaxForFile(file));
  docs.forEach((value, i) => {
    const where = `${file === '-' ? 'stdin' : file} (document ${i + 1})`;
    const list = isObject(value) && typeof value.kind === 'string' && LIST_KINDS.has(value.kind);
    if (list && !Array.isArray(value.items)) return void problems.push({ path: `${where} items`, message: `a ${String(value.kind)} must have a list of items` });
    const items: unknown[] = list ? (value.items as unknown[]) : [value];
    items.forEach((item: unknown, j) => {
      const at = list ? `${where} items[${j}]` : where;
      if (!isObject(item)) return void problems.push({ path: at, message: 'must be a mapping with apiVersion, kind, metadata and spec' });
      if (item.apiVersion !== RESOURCE_API_VERSION) problems.push({ path: `${at} apiVersion`, message: `must be ${RESOURCE_API_VERSION}` });
      if (typeof item.kind !== 'string' || !Object.hasOwn(RESOURCE_KINDS, item.kind)) {
        return void problems.push({ path: `${at} kind`, message: `must be ${Object.keys(RESOURCE_KINDS).join(', ')}, or List, ${Object.keys(RESOURCE_KINDS).map((k) => `${k}List`).join(', ')}` });
      }
      const name = isObject(item.metadata) ? item.metadata.name : undefined;
      if (typeof name !== 'string' || name === '') return void problems.push({ path: `${at} metadata.name`, message: 'is required' });
      out.push({ doc: item as unknown as ResourceDocument, source: at });
    });
  });
  return out;
}

/**
 * Read every manifest `-f` names, in file order.
 *
 * @param stdin reads standard input, for `-f -`.
 * @throws UsageError without `-f`; RequestError (CLI exit 2) naming every file that
 *   cannot be read or parsed and every document without an apiVersion, a kind or a
 *   name, before anything is sent.
 */
export async function readManifests(parsed: Parsed, command: string, stdin: () => Promise<Buffer>): Promise<Manifest[]> {
  const given = (parsed.values.filename as string[] | undefined) ?? [];
  if (given.length === 0) throw new UsageError('-f FILE|DIR|- is required', command);
  if (given.filter((f) => f === '-').length > 1) throw new UsageError('-f - (standard input) can be given once', command);
  const manifests: Manifest[] = [];
  const problems: FieldProblem[] = [];
  for (const f of given.flatMap((g) => files(g, parsed.values.recursive === true))) {
    const name = f === '-' ? 'stdin' : f;
    let bytes: Buffer;
    try {
      bytes = f === '-' ? await stdin() : readFileSync(f);
    } catch (e) {
      problems.push({ path: name, message: `cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}` });
      continue;
    }
    try {
      manifests.push(...manifestsOf(decodeUtf8(bytes), f, problems));
    } catch (e) {
      if (!(e instanceof RequestError)) throw e;
      problems.push(...e.problems.map((p) => (p.path.startsWith(name) ? p : { path: `${name}${p.path ? ` ${p.path}` : ''}`, message: p.message })));
    }
  }
  if (problems.length > 0) throw new RequestError(problems, 400);
  if (manifests.length === 0) throw new RequestError([{ path: given.join(', '), message: given.length > 1 ? 'hold no documents' : 'holds no documents' }], 400);
  return manifests;
}

/** The collection path of a document: `/v1/machines/node-1`. */
export const documentPath = (doc: ResourceDocument): string => `/v1/${RESOURCE_KINDS[doc.kind]}/${encodeURIComponent(doc.metadata.name)}`;
