import { randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';

/**
 * A temporary sibling of `target` (same folder, so the final rename is atomic on POSIX file systems).
 * The name starts with `.tmp-` so that globs like `part-*.parquet` never match a half-written file.
 */
export function tempSibling(target: string): string {
  const dir = dirname(target);
  mkdirSync(dir, { recursive: true });
  return join(dir, `.tmp-${basename(target)}-${process.pid}-${randomBytes(4).toString('hex')}`);
}

/** Writes a whole file atomically: a reader sees the old file or the new one, never a partial one. */
export function writeFileAtomic(target: string, data: string | NodeJS.ArrayBufferView): void {
  const tmp = tempSibling(target);
  try {
    writeFileSync(tmp, data);
    renameSync(tmp, target);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

export function writeJsonAtomic(target: string, value: unknown): void {
  writeFileAtomic(target, `${JSON.stringify(value, null, 2)}\n`);
}

/**
 * Runs `fill(tmpPath)` to produce a file or folder at a temporary path, then renames it to `target`.
 * If `fill` throws (or the process dies), nothing appears at `target`. An existing `target` is
 * replaced only after `fill` succeeded.
 */
export async function produceAtomically<T>(target: string, fill: (tmp: string) => Promise<T>): Promise<T> {
  const tmp = tempSibling(target);
  try {
    const result = await fill(tmp);
    if (existsSync(target)) {
      const old = tempSibling(target);
      renameSync(target, old);
      renameSync(tmp, target);
      rmSync(old, { recursive: true, force: true });
    } else {
      renameSync(tmp, target);
    }
    return result;
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
}
