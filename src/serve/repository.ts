/**
 * What a Triton model repository folder holds right now: one folder per model with a `config.pbtxt`,
 * and in it numeric version folders with the model file. Only reads the file system; deciding what to
 * load is `ModelManager`'s job.
 *
 * A version folder counts only when it is complete: a positive integer name (so the exporter's
 * `.tmp-*` folders never count) and the model file present. Each complete folder gets a fingerprint
 * (inode, size and mtime of the model file and its external data) so a folder replaced in place is
 * noticed, and a broken version is retried only once its files change.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** The canary control file in a model's folder (its format and meaning: `rollout.ts`). */
export const ROLLOUT_FILE = 'rollout.json';

export interface ModelFolder {
  name: string;
  dir: string;
  configPath: string;
  /** Changes whenever `config.pbtxt` is rewritten. */
  configFingerprint: string;
  /** `rollout.json` (see `rollout.ts`): its path, and a fingerprint that changes when it is rewritten ('' when absent). */
  rolloutPath: string;
  rolloutFingerprint: string;
}

export interface VersionFolder {
  version: number;
  dir: string;
  modelPath: string;
  /** Changes whenever the model file or its `.data` file is rewritten or replaced. */
  fingerprint: string;
}

/** Why an entry of the repository was skipped (logged once per entry by the caller). */
export interface SkippedEntry {
  path: string;
  reason: string;
}

const VERSION_NAME = /^[1-9][0-9]*$/;

/** Model folders of `root` (sorted by name). Entries without `config.pbtxt` are reported as skipped. */
export async function scanModelFolders(root: string, skipped: SkippedEntry[] = []): Promise<ModelFolder[]> {
  const entries = await readdir(root, { withFileTypes: true });
  const models: ModelFolder[] = [];
  for (const e of entries) {
    if (!e.isDirectory() || e.name.startsWith('.')) continue;
    const dir = join(root, e.name);
    const configPath = join(dir, 'config.pbtxt');
    const st = await statOrUndefined(configPath);
    if (!st?.isFile()) {
      skipped.push({ path: dir, reason: 'no config.pbtxt (gnnctl serve needs an explicit model configuration)' });
      continue;
    }
    const rolloutPath = join(dir, ROLLOUT_FILE);
    const ro = await statOrUndefined(rolloutPath);
    models.push({ name: e.name, dir, configPath, configFingerprint: `${st.ino}:${st.size}:${st.mtimeMs}`, rolloutPath, rolloutFingerprint: ro?.isFile() ? `${ro.ino}:${ro.size}:${ro.mtimeMs}` : '' });
  }
  return models.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The complete version folders of a model (ascending). Folders with a non-numeric or temporary name and
 * folders without `modelFilename` yet are left out (a half-written export); the latter are reported.
 */
export async function scanVersionFolders(modelDir: string, modelFilename: string, skipped: SkippedEntry[] = []): Promise<VersionFolder[]> {
  const entries = await readdir(modelDir, { withFileTypes: true });
  const versions: VersionFolder[] = [];
  for (const e of entries) {
    if (!e.isDirectory() || !VERSION_NAME.test(e.name)) continue;
    const version = Number(e.name);
    if (!Number.isSafeInteger(version)) continue;
    const dir = join(modelDir, e.name);
    const modelPath = join(dir, modelFilename);
    const st = await statOrUndefined(modelPath);
    if (!st?.isFile()) {
      skipped.push({ path: dir, reason: `no ${modelFilename} yet (ignored until it is complete)` });
      continue;
    }
    const data = await statOrUndefined(`${modelPath}.data`);
    const fingerprint = `${st.ino}:${st.size}:${st.mtimeMs}${data ? `|${data.ino}:${data.size}:${data.mtimeMs}` : ''}`;
    versions.push({ version, dir, modelPath, fingerprint });
  }
  return versions.sort((a, b) => a.version - b.version);
}

async function statOrUndefined(path: string): Promise<import('node:fs').Stats | undefined> {
  try {
    return await stat(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw e;
  }
}
