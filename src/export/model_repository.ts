/**
 * Writing one version of a model into a Triton model repository, for every kind of exported student:
 *
 *   <repo>/<name>/config.pbtxt
 *   <repo>/<name>/<version>/model.onnx (+ model.onnx.data), manifest.json, [README.md, …]
 *
 * The version folder is assembled under a temporary name, its files hashed into manifest.json, the
 * model's config.pbtxt written, and only then renamed into place: a server polling the repository never
 * sees half a version, and a failed export leaves nothing behind.
 */
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tempSibling, writeFileAtomic, writeJsonAtomic } from '../core/atomic.js';
import { UsageError } from '../core/errors.js';
import { hashFile } from '../core/hash.js';
import { writeModelConfig, type TritonModelConfig } from '../artifacts/triton/pbtxt.js';
import type { ModelFiles } from '../artifacts/onnx/onnx_graph_builder.js';

/** Where a version goes: the repository, the model's folder, the version number and its folder. */
export interface RepositoryTarget {
  name: string;
  repo: string;
  modelDir: string;
  version: number;
  versionDir: string;
}

/** The model's folder in the repository (created) and the version to write: `version`, or the next one. */
export function repositoryTarget(repo: string, name: string, version: number | undefined): RepositoryTarget {
  const modelDir = join(repo, name);
  mkdirSync(modelDir, { recursive: true });
  const v = version ?? nextVersion(modelDir);
  const versionDir = join(modelDir, String(v));
  if (existsSync(versionDir)) throw new UsageError(`version ${v} of ${name} already exists`, { where: versionDir, hint: 'omit --version to use the next one' });
  return { name, repo, modelDir, version: v, versionDir };
}

/** One more than the highest numbered version folder (1 for a new model). */
export function nextVersion(modelDir: string): number {
  const versions = readdirSync(modelDir)
    .filter((d) => /^\d+$/.test(d) && statSync(join(modelDir, d)).isDirectory())
    .map(Number);
  return versions.length ? Math.max(...versions) + 1 : 1;
}

/** The fields every export result starts with: where the version went and the model's size (model.onnx + model.onnx.data). */
export function versionResult(target: RepositoryTarget, files: ModelFiles): { repository: string; model: string; version: number; dir: string; model_bytes: number } {
  return { repository: target.repo, model: target.name, version: target.version, dir: target.versionDir, model_bytes: files.modelBytes + (files.dataBytes ?? 0) };
}

/** What a version's files say about themselves, once the model files are in the temporary folder. */
export interface VersionDescription {
  /** manifest.json, given the SHA-256 of every file written so far */
  manifest: (hashes: Record<string, string>) => object;
  /** README.md of the version folder (none when null) */
  readme: ((manifest: object) => string) | null;
  config: TritonModelConfig;
}

/**
 * Writes one version: `build(tmp)` puts the model files into a temporary sibling of the version folder and
 * says how to describe them; then manifest.json (with the files' hashes), README.md, config.pbtxt (before
 * the rename, so a server that picks up the new version reads a matching config) and the rename. On any
 * error the temporary folder is removed and the error rethrown.
 */
export async function publishVersion<T>(target: RepositoryTarget, build: (tmp: string) => Promise<{ value: T; description: VersionDescription }>): Promise<T> {
  const tmp = tempSibling(target.versionDir);
  try {
    mkdirSync(tmp, { recursive: true });
    const { value, description: d } = await build(tmp);
    const hashes: Record<string, string> = {};
    for (const f of readdirSync(tmp)) hashes[f] = await hashFile(join(tmp, f));
    const manifest = d.manifest(hashes);
    writeJsonAtomic(join(tmp, 'manifest.json'), manifest);
    if (d.readme) writeFileAtomic(join(tmp, 'README.md'), d.readme(manifest));
    writeFileAtomic(join(target.modelDir, 'config.pbtxt'), writeModelConfig(d.config));
    renameSync(tmp, target.versionDir);
    return value;
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
}
