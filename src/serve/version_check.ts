/**
 * Whether a version folder of a model repository would load in `gnnctl serve`: the same load as the
 * server's (config.pbtxt parsed, onnxruntime session, inputs and outputs checked, warm-up request), on
 * the main thread, then released. `gnnctl rollout` runs it before it points traffic at a version, so a
 * damaged or incompatible canary fails the command instead of silently getting no traffic.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ArtifactError } from '../core/errors.js';
import { parseModelConfig } from '../artifacts/triton/pbtxt.js';
import { modelSpecFromConfig } from './model_spec.js';
import { loadModelVersion } from './model_version.js';
import { scanVersionFolders } from './repository.js';
import { InlineSessionHost } from './session_host.js';

/** Loads `<modelRepository>/<model>/<version>` and releases it; throws an ArtifactError naming the file that fails. */
export async function checkVersionLoads(modelRepository: string, model: string, version: number): Promise<void> {
  const dir = join(modelRepository, model);
  const configPath = join(dir, 'config.pbtxt');
  const spec = modelSpecFromConfig(parseModelConfig(await readFile(configPath, 'utf8'), { file: configPath }), model, configPath);
  const folder = (await scanVersionFolders(dir, spec.modelFilename)).find((f) => f.version === version);
  if (!folder) {
    throw new ArtifactError(`model "${model}" has no complete version ${version}`, { where: join(dir, String(version), spec.modelFilename), hint: 'export the version first: a version folder with its model file' });
  }
  const host = new InlineSessionHost();
  try {
    const mv = await loadModelVersion(host, spec, folder);
    await mv.retire();
  } catch (e) {
    if (e instanceof ArtifactError) {
      throw new ArtifactError(`model "${model}" version ${version} does not load, so gnnctl serve would refuse it: ${e.message}`, {
        where: folder.modelPath,
        hint: 're-export the version (or copy its files again), then rerun the command; the rollout file was left as it was',
      });
    }
    throw e;
  } finally {
    await host.close();
  }
}
