/**
 * Source comments that point at a file must point at one that exists: a reader who follows
 * `see model/student/spec.ts` to nowhere loses more time than a comment without the pointer. Checked, in
 * the comments of `src/**` only (strings are data, not pointers):
 * - a path from the repository root (`src/…`, `docs/…`, `test/…`, `bench/…`, `scripts/…`, …);
 * - a `.ts` path that starts with a folder of `src/` (`distill/spec.ts`), from `src/` or from the file's own
 *   folder, or one that starts with `./` or `../`;
 * - a bare `.ts`, `.mjs` or `.md` file name (`wasm_kernels.ts`), which some file of the repository must carry.
 * Paths into run or artifact folders (`model/weights.json`) and other packages (`onnxruntime-node/dist/…`)
 * are not repository files and are left alone.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const SRC = join(ROOT, 'src');
const ROOT_FOLDERS = ['src', 'docs', 'test', 'bench', 'scripts', 'configs', 'deploy', 'datasets', '.ci'];
const NAMED_FOLDERS = ['src', 'test', 'bench', 'scripts', 'docs'];

/** The comments of a TypeScript source with the line each starts on; string and template literals are skipped. */
function commentsOf(text: string): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  const token = /\/\*[\s\S]*?\*\/|\/\/[^\n]*|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|`(?:\\.|[^`\\])*`/g;
  for (const m of text.matchAll(token)) {
    if (m[0].startsWith('/')) out.push({ text: m[0], line: text.slice(0, m.index).split('\n').length });
  }
  return out;
}

/** Path-like tokens of a comment: `a/b.ts`, `./c.md`, `d.ts`, ending in an extension a repository file has. */
function pathTokens(comment: string): string[] {
  const path = /(?<![\w./@-])((?:\.{1,2}\/)*(?:[\w.-]+\/)*[\w-][\w.-]*\.(?:ts|mjs|js|md|json|ya?ml|proto))(?![\w/-])/g;
  return [...comment.matchAll(path)].map((m) => m[1]!);
}

interface RepoIndex {
  root: string;
  srcFolders: Set<string>;
  fileNames: Set<string>;
}

function repoIndex(root: string): RepoIndex {
  const srcFolders = new Set(readdirSync(join(root, 'src'), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name));
  const fileNames = new Set(readdirSync(root, { withFileTypes: true }).filter((e) => e.isFile()).map((e) => e.name));
  for (const folder of NAMED_FOLDERS) {
    if (!existsSync(join(root, folder))) continue;
    for (const e of readdirSync(join(root, folder), { withFileTypes: true, recursive: true })) if (e.isFile()) fileNames.add(e.name);
  }
  return { root, srcFolders, fileNames };
}

/** Whether a token names an existing repository file; undefined when the token is not a repository path. */
function resolves(token: string, fromFile: string, repo: RepoIndex): boolean | undefined {
  if (token.startsWith('./') || token.startsWith('../')) return existsSync(resolve(dirname(fromFile), token));
  const first = token.split('/')[0]!;
  if (!token.includes('/')) return /\.(ts|mjs|md)$/.test(token) ? repo.fileNames.has(token) : undefined;
  if (ROOT_FOLDERS.includes(first)) return existsSync(join(repo.root, token));
  if (repo.srcFolders.has(first) && token.endsWith('.ts')) return existsSync(join(repo.root, 'src', token)) || existsSync(join(dirname(fromFile), token));
  return undefined;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
}

describe('paths named in source comments', () => {
  it('every one names a file that exists', () => {
    const repo = repoIndex(ROOT);
    const missing: string[] = [];
    for (const file of sourceFiles(SRC)) {
      for (const c of commentsOf(readFileSync(file, 'utf8'))) {
        for (const token of pathTokens(c.text)) {
          if (resolves(token, file, repo) === false) missing.push(`${relative(ROOT, file)}:${c.line}: ${token}`);
        }
      }
    }
    expect(missing, 'fix or drop these references').toEqual([]);
  });

  it('finds the references it is meant to catch, and only in comments', () => {
    const file = join(SRC, 'export', 'x.ts');
    const repo = repoIndex(ROOT);
    const text = [
      '/** Features of `distill/spec.ts`, see docs/nowhere.md and student_onnx_gone.ts. */',
      "const s = 'src/not_a_comment.ts';",
      '// the kernels live in compute/wasm_kernels.ts (test/architecture/layers.test.ts checks imports)',
      '// run folders hold model/weights.json; onnxruntime-node/dist/binding.js is another package',
    ].join('\n');
    const found = commentsOf(text).flatMap((c) => pathTokens(c.text).map((t) => [t, resolves(t, file, repo)] as const));
    expect(found).toEqual([
      ['distill/spec.ts', false],
      ['docs/nowhere.md', false],
      ['student_onnx_gone.ts', false],
      ['compute/wasm_kernels.ts', true],
      ['test/architecture/layers.test.ts', true],
      ['model/weights.json', undefined],
      ['onnxruntime-node/dist/binding.js', undefined],
    ]);
  });
});
