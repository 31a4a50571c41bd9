/**
 * The layout's promises, checked on the sources: the HTTP API (src/api/) has no import
 * circle (routes depend on the service context, src/api/context.ts, not on the server that
 * builds them), and the Cluster API controller (src/controller/) and the renderer
 * (src/render.ts) never import the HTTP layer: one core, two front doors. Type-only
 * imports are left out (they vanish when compiled).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const src = fileURLToPath(new URL('../src/', import.meta.url));

/** Every module under src/ and the modules it imports at run time (relative imports only), by path relative to src/. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(path.join(src, file), 'utf8');
    const deps: string[] = [];
    for (const m of text.matchAll(/^(?:import|export)(?!\s+type\s)[^;]*?from\s+'(\.[^']+)';|^import\s+'(\.[^']+)';/gm)) {
      const target = (m[1] ?? m[2])!;
      deps.push(path.normalize(path.join(path.dirname(file), target)).replace(/\.js$/, '.ts'));
    }
    graph.set(path.normalize(file), deps);
  }
  return graph;
}

/** The import circles among `modules` (Tarjan's strongly connected components of more than one module). */
function circles(graph: Map<string, string[]>, modules: (m: string) => boolean): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!modules(w) || !graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      for (let w = stack.pop()!; ; w = stack.pop()!) {
        onStack.delete(w);
        component.push(w);
        if (w === v) break;
      }
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (modules(v) && !index.has(v)) visit(v);
  return found;
}

/** Every module `from` reaches by run-time imports. */
function reach(graph: Map<string, string[]>, from: string): Set<string> {
  const seen = new Set<string>();
  const todo = [from];
  while (todo.length > 0) {
    const v = todo.pop()!;
    for (const w of graph.get(v) ?? []) {
      if (seen.has(w)) continue;
      seen.add(w);
      todo.push(w);
    }
  }
  return seen;
}

describe('source layout', () => {
  const graph = importGraph();

  it('src/api/ has no import circle', () => {
    assert.deepEqual(circles(graph, (m) => m.startsWith('api/')), []);
  });

  it('the controller and the renderer do not depend on the HTTP layer', () => {
    const roots = [...graph.keys()].filter((m) => m.startsWith('controller/') || m === 'render.ts');
    assert.ok(roots.length > 5);
    for (const root of roots) {
      const http = [...reach(graph, root)].filter((m) => m.startsWith('api/'));
      assert.deepEqual(http, [], `${root} reaches ${http.join(', ')}`);
    }
  });

  it('finds a circle and an HTTP dependency when there is one (the check can fail)', () => {
    const made = new Map([
      ['api/a.ts', ['api/b.ts']],
      ['api/b.ts', ['api/a.ts']],
      ['controller/x.ts', ['api/a.ts']],
    ]);
    assert.deepEqual(circles(made, (m) => m.startsWith('api/')), [['api/a.ts', 'api/b.ts']]);
    assert.ok(reach(made, 'controller/x.ts').has('api/b.ts'));
  });
});
