/**
 * `bootwright apply -f FILE|DIR|-`, as `kubectl apply`: every Cluster, Profile and
 * Machine document of the files (multi-document YAML, JSON, or a `List` of items),
 * clusters first, then profiles, then machines (a machine needs both), each created
 * when absent or replaced with `If-Match` on the revision just read. One line per
 * document: `machine/node-1 created|configured|unchanged` (unchanged: the service wrote
 * no revision, the document changed nothing).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { RequestError, type FieldProblem } from '../../errors.js';
import { decodeUtf8, parseDocuments, syntaxForFile } from '../../request/parse.js';
import { RESOURCE_API_VERSION, RESOURCE_KINDS, type ResourceKind } from '../../store/resources.js';
import { EXIT, UsageError, type Command, type Parsed } from '../commands.js';
import { clientFrom, CONNECTION_FLAGS, type InventoryClient, printRefusal, ServerRefusal } from './client.js';
import { ref, type ResourceDocument } from './kinds.js';

/** `bootwright apply`. */
export const APPLY: Command = {
  name: 'apply',
  summary: 'Create or replace clusters, profiles and machines from YAML or JSON files',
  usage: ['apply -f FILE|DIR|- [-R]'],
  positionals: 0,
  flags: [
    { name: 'filename', short: 'f', type: 'string', value: 'FILE', help: 'a file, a directory of .yaml, .yml and .json files, or - for standard input' },
    { name: 'recursive', short: 'R', type: 'boolean', help: 'with a directory, also the files of its subdirectories' },
    ...CONNECTION_FLAGS,
  ],
  details: `Documents are applied clusters first, then profiles, then machines; each is created when
absent, else replaced with If-Match on the revision read just before (a concurrent change
is refused, 412, not overwritten). A secret written as "<redacted>" keeps the stored one.
Each document prints kind/name created, configured or unchanged. A document the service
refuses prints its problem (each field on its own line); the others are still applied,
and the exit code is 3.

Examples:
  bootwright apply -f examples/inventory/flatcar/
  bootwright apply -R -f examples/inventory/
  kustomize build . | bootwright apply -f -`,
};

/** Apply order: what a machine needs first. */
const ORDER: Record<ResourceKind, number> = { Cluster: 0, Profile: 1, Machine: 2 };

/** One document to apply, and where it came from (for messages). */
interface Manifest {
  doc: ResourceDocument;
  source: string;
}

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
 */
function manifestsOf(text: string, file: string): Manifest[] {
  const out: Manifest[] = [];
  const problems: FieldProblem[] = [];
  const docs = parseDocuments(text, file === '-' ? 'yaml' : syntaxForFile(file));
  docs.forEach((value, i) => {
    const where = `${file === '-' ? 'stdin' : file} (document ${i + 1})`;
    const items = isObject(value) && value.kind === 'List' && Array.isArray(value.items) ? value.items : [value];
    items.forEach((item: unknown, j) => {
      const at = items.length > 1 || item !== value ? `${where} items[${j}]` : where;
      if (!isObject(item)) return void problems.push({ path: at, message: 'must be a mapping with apiVersion, kind, metadata and spec' });
      if (item.apiVersion !== RESOURCE_API_VERSION) problems.push({ path: `${at} apiVersion`, message: `must be ${RESOURCE_API_VERSION}` });
      if (typeof item.kind !== 'string' || !Object.hasOwn(RESOURCE_KINDS, item.kind)) return void problems.push({ path: `${at} kind`, message: `must be ${Object.keys(RESOURCE_KINDS).join(', ')} or List` });
      const name = isObject(item.metadata) ? item.metadata.name : undefined;
      if (typeof name !== 'string' || name === '') return void problems.push({ path: `${at} metadata.name`, message: 'is required' });
      out.push({ doc: item as unknown as ResourceDocument, source: at });
    });
  });
  if (problems.length > 0) throw new RequestError(problems, 400);
  return out;
}

/** Create or replace one document. @returns what happened, as kubectl words it. */
async function applyOne(client: InventoryClient, doc: ResourceDocument): Promise<'created' | 'configured' | 'unchanged'> {
  const path = `/v1/${RESOURCE_KINDS[doc.kind]}/${encodeURIComponent(doc.metadata.name)}`;
  const current = await client.request('GET', path, { allow: [404] });
  if (current.status === 404) {
    await client.request('POST', `/v1/${RESOURCE_KINDS[doc.kind]}`, { body: doc });
    return 'created';
  }
  const before = (current.json as ResourceDocument).metadata.revision;
  const etag = current.headers.get('etag') ?? `"${before}"`;
  const after = (await client.request('PUT', path, { body: doc, headers: { 'if-match': etag } })).json as ResourceDocument;
  return after.metadata.revision === before ? 'unchanged' : 'configured';
}

/**
 * Run `apply`.
 *
 * @returns 0 when every document was applied; 3 when the service refused any (each
 *   printed); the rest are applied regardless.
 * @throws UsageError without `-f`; RequestError (exit 2) for a file that cannot be read
 *   or parsed or a document without apiVersion, kind or name, before anything is sent;
 *   ServerUnavailable (exit 4) when the service cannot be reached.
 */
export async function runApply(parsed: Parsed, out: NodeJS.WritableStream, err: NodeJS.WritableStream, stdin: () => Promise<Buffer>): Promise<number> {
  const file = parsed.values.filename as string | undefined;
  if (file === undefined) throw new UsageError('-f FILE|DIR|- is required', 'apply');
  const client = clientFrom(parsed);
  const manifests: Manifest[] = [];
  for (const f of files(file, parsed.values.recursive === true)) {
    let bytes: Buffer;
    try {
      bytes = f === '-' ? await stdin() : readFileSync(f);
    } catch (e) {
      throw new RequestError([{ path: f, message: `cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}` }], 400);
    }
    let text: string;
    try {
      text = decodeUtf8(bytes);
      manifests.push(...manifestsOf(text, f));
    } catch (e) {
      if (e instanceof RequestError) throw new RequestError(e.problems.map((p) => (p.path.startsWith(f) || p.path.startsWith('stdin') ? p : { path: `${f === '-' ? 'stdin' : f}${p.path ? ` ${p.path}` : ''}`, message: p.message })), 400);
      throw e;
    }
  }
  if (manifests.length === 0) throw new RequestError([{ path: file, message: 'holds no documents' }], 400);
  manifests.sort((a, b) => ORDER[a.doc.kind] - ORDER[b.doc.kind]);
  let refused = false;
  for (const m of manifests) {
    try {
      out.write(`${ref(m.doc.kind, m.doc.metadata.name)} ${await applyOne(client, m.doc)}\n`);
    } catch (e) {
      if (!(e instanceof ServerRefusal)) throw e;
      refused = true;
      err.write(`${m.source}: ${ref(m.doc.kind, m.doc.metadata.name)}: `);
      printRefusal(e, err);
    }
  }
  return refused ? EXIT.refused : EXIT.ok;
}
