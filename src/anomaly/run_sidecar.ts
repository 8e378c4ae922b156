/**
 * JSON files `anomaly fit` saves beside a run's model (`<run>/model/<file>`: the learned root-cause
 * weights, the chosen detector). One writer (atomic) and one reader: absent is `null` (the run was
 * fitted without the labels that produce it), unreadable or of another version is a typed error naming
 * the file.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeJsonAtomic } from '../core/atomic.js';
import { ArtifactError } from '../core/errors.js';

export function writeRunSidecar(runDir: string, file: string, value: unknown): void {
  writeJsonAtomic(join(runDir, 'model', file), value);
}

/**
 * The sidecar's contents, or null when the file is absent. `problem` returns why a parsed value is not
 * one (null when it is); `what` and `hint` word the error.
 */
export function readRunSidecar<T>(runDir: string, file: string, problem: (v: T) => string | null, what: string, hint: string): T | null {
  const path = join(runDir, 'model', file);
  if (!existsSync(path)) return null;
  try {
    const v = JSON.parse(readFileSync(path, 'utf8')) as T;
    const p = problem(v);
    if (p !== null) throw new Error(p);
    return v;
  } catch (e) {
    throw new ArtifactError(`cannot read ${what}: ${(e as Error).message}`, { where: path, hint });
  }
}
