/**
 * The one export path every kind of student runs through (export_kind.ts): the distilled run resolved and
 * its kind checked against the exporter's, the kind's inputs, the version target in the repository, the
 * kind's model written and checked under a temporary name with one progress line, then the version
 * published (model_repository.ts).
 */
import { join } from 'node:path';
import { selectBackend } from '../compute/backend.js';
import { UsageError } from '../core/errors.js';
import { Progress } from '../core/progress.js';
import { readManifest, resolveRun } from '../artifacts/run_store.js';
import { studentKindOfRun, type DistillManifestBase } from '../distill/student_kind.js';
import type { ExportKind, StudentExportOptions } from './export_kind.js';
import { publishVersion, repositoryTarget } from './model_repository.js';

export async function exportStudent<O extends StudentExportOptions, X, W, R>(kind: ExportKind<O, X, W, R>, opts: O): Promise<R> {
  const t0 = performance.now();
  const { cfg } = opts;
  await selectBackend(opts.backend ?? 'auto');
  const run = resolveRun(cfg.artifactsDir, opts.run, { kind: 'distill', cwd: opts.cwd });
  const manifest = readManifest<DistillManifestBase>(run.dir);
  if (manifest.kind !== 'distill') throw new UsageError(`run ${run.id} is a ${manifest.kind} run; export takes a distilled run`, { where: '--run', hint: 'run `gnnctl distill` first and pass its run id' });
  if (!kind.kinds.includes(studentKindOfRun(manifest))) throw kind.wrongRun(run.id);
  const x = await kind.inputs(opts, run, manifest);
  const target = repositoryTarget(opts.out ?? join(cfg.artifactsDir, 'model_repository'), opts.name ?? kind.defaultName(x), opts.version);
  // Steps, not rows: writing the model, its checks, copying and hashing. Computing missing embeddings
  // (in `inputs`) shows its own progress, so this phase starts after it.
  const progress = new Progress();
  let stepsDone = 0;
  progress.begin(`export ${target.name}`, kind.steps, { steps: true });
  try {
    const written = await publishVersion(target, async (tmp) => {
      const w = await kind.write(x, opts, tmp, (what) => progress.update(stepsDone++, what));
      return { value: w, description: kind.describe(x, target, w) };
    });
    progress.end(`export: ${target.name} version ${target.version} → ${target.versionDir}`);
    return kind.result(x, target, written, Math.round((performance.now() - t0) / 10) / 100);
  } catch (e) {
    progress.stop();
    throw e;
  }
}
