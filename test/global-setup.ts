/**
 * Training's worker threads run the compiled `dist/` (Node 20 cannot load TypeScript in a worker), so a
 * test run from source would otherwise pair the current `src/` with whatever `dist/` was built last.
 * Rebuild it first when any source file is newer than the build.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');

function newest(dir: string, ext: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name.endsWith(ext)) t = Math.max(t, statSync(join(e.parentPath, e.name)).mtimeMs);
  }
  return t;
}

export default function setup(): void {
  const dist = join(ROOT, 'dist');
  const built = existsSync(dist) ? newest(dist, '.js') : 0;
  if (built >= newest(join(ROOT, 'src'), '.ts')) return;
  process.stderr.write('test setup: src/ is newer than dist/; running npm run build\n');
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
}
