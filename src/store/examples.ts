/**
 * The repository's example inventory (examples/inventory/) as stored resources: each
 * file validated by the write schema of its kind (src/store/documents.ts), defaults
 * applied, at revision 1 with a fixed instant, as a store would hold it right after
 * `bootwright apply -f`. The OpenAPI document shows them (src/api/openapi-examples.ts)
 * and the render threads warm up on them (src/work/warmup.ts).
 *
 * The files ship with the package (package.json `files`); a copy without them gets
 * undefined, never an error.
 */
import { readFileSync } from 'node:fs';
import { load } from 'js-yaml';
import { RULES_VERSION } from '../rules.js';
import { jsonSafeSpec, WRITE_DOCUMENTS } from './documents.js';
import type { ResourceKind, StoredResource } from './resources.js';

/** The instant the examples were "stored" at (fixed: what is made of them must not change between runs). */
export const EXAMPLE_STORED_AT = '2026-01-01T00:00:00.000Z';

/**
 * A file of the package, parsed as YAML.
 *
 * @param path relative to the package root, e.g. `examples/worker.yaml`
 * @returns the parsed document, or undefined when the file is absent or not YAML
 */
export function exampleFile(path: string): unknown {
  try {
    return load(readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8'));
  } catch {
    return undefined;
  }
}

/**
 * An example file as the store keeps it (a Machine's refs name revision 1 of its
 * cluster and profile).
 *
 * @returns the resource and the document as written, or undefined when the file is
 *   absent or does not validate as a `kind`
 */
export function storedExample(kind: ResourceKind, path: string): { written: unknown; stored: StoredResource } | undefined {
  const written = exampleFile(path);
  const parsed = WRITE_DOCUMENTS[kind].safeParse(written);
  if (!parsed.success) return undefined;
  const { metadata, spec } = parsed.data as { metadata: { name: string; labels?: Record<string, string> }; spec: unknown };
  return {
    written,
    stored: {
      kind,
      name: metadata.name,
      labels: metadata.labels ?? {},
      revision: 1,
      spec: jsonSafeSpec(kind, spec),
      ...(kind === 'Machine' ? { refs: { clusterRevision: 1, profileRevision: 1 } } : {}),
      rules: RULES_VERSION,
      createdAt: EXAMPLE_STORED_AT,
      updatedAt: EXAMPLE_STORED_AT,
    },
  };
}
