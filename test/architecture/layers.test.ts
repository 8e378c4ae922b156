/**
 * The layer rule of docs/architecture.md, checked on the source: every import of a file in `src/` points
 * to its own folder or to a folder of a lower layer. Type-only imports count too: a type is a dependency.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(__dirname, '../../src');

/** Layer of each top-level folder of src/, lowest first; folders in one layer may not import each other. */
export const LAYERS: string[][] = [
  ['core'],
  ['task'],
  ['config'],
  ['artifacts'],
  ['data', 'compute', 'datasets'],
  ['graph', 'online_store'],
  ['model'],
  ['train'],
  ['embed'],
  ['predict'],
  ['evaluate'],
  ['distill'],
  ['report', 'export', 'anomaly'],
  ['serve'],
  ['pipeline', 'loadgen'],
  ['cli'],
];

const rank = new Map(LAYERS.flatMap((folders, i) => folders.map((f) => [f, i] as const)));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : name.endsWith('.ts') ? [path] : [];
  });
}

function folderOf(file: string): string {
  return relative(SRC, file).split('/')[0]!;
}

/** Relative import specifiers of a file (static, dynamic and type-only). */
function imports(file: string): string[] {
  return importsIn(readFileSync(file, 'utf8'));
}

function importsIn(text: string): string[] {
  return [...text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]!);
}

/** Strongly connected components with more than one file (Tarjan): each is an import cycle. */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) out.push(component);
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

describe('layers', () => {
  const files = sourceFiles(SRC);

  it('every folder of src/ has a layer', () => {
    const folders = new Set(files.map(folderOf).filter((f) => !f.endsWith('.ts')));
    expect([...folders].filter((f) => !rank.has(f))).toEqual([]);
  });

  it('no file imports a folder of the same or a higher layer', () => {
    const violations: string[] = [];
    for (const file of files) {
      const from = folderOf(file);
      for (const spec of imports(file)) {
        const to = folderOf(resolve(dirname(file), spec));
        if (to === from) continue;
        if (!(rank.get(to)! < rank.get(from)!)) violations.push(`${relative(SRC, file)} → ${spec} (${from} may not import ${to})`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('no import cycle between files', () => {
    const graph = new Map(files.map((f) => [f, imports(f).map((s) => resolve(dirname(f), s).replace(/\.js$/, '.ts')).filter((t) => t !== f)]));
    expect(cyclesOf(graph).map((c) => c.map((f) => relative(SRC, f)).join(' → '))).toEqual([]);
  });

  it('the cycle finder finds a cycle', () => {
    expect(cyclesOf(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]])).map((c) => [...c].sort())).toEqual([['a', 'b', 'c']]);
  });

  it('TF.js and its wasm backend are loaded only through require (core/tf.ts, compute/backend.ts): type-only imports elsewhere', () => {
    // An ESM import of these CommonJS bundles costs ~200 ms of lexing per process and worker (core/tf.ts).
    const valueImport = /^import\s+(?!type\b)[^;]*from\s*['"]@tensorflow\/tfjs(?:-backend-wasm)?['"]|(?<!typeof\s*)import\(\s*['"]@tensorflow\/tfjs(?:-backend-wasm)?['"]\s*\)/m;
    expect(files.filter((f) => valueImport.test(readFileSync(f, 'utf8'))).map((f) => relative(SRC, f))).toEqual([]);
    expect(valueImport.test("import * as tf from '@tensorflow/tfjs';")).toBe(true);
    expect(valueImport.test("import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';")).toBe(true);
    expect(valueImport.test("const tf = await import('@tensorflow/tfjs');")).toBe(true);
    expect(valueImport.test("import type * as TF from '@tensorflow/tfjs';")).toBe(false);
    expect(valueImport.test("const w = req(P) as typeof import('@tensorflow/tfjs-backend-wasm');")).toBe(false);
  });

  it('sees static, type-only and dynamic imports, and not packages', () => {
    const text = "import { a } from '../core/a.js';\nimport type { B } from '../train/b.js';\nconst c = await import('./c.js');\nimport * as tf from '@tensorflow/tfjs';";
    expect(importsIn(text)).toEqual(['../core/a.js', '../train/b.js', './c.js']);
  });
});
