/**
 * `export` of a train run. A run whose `model.kind` chose the trees (gbdt) is exported as a Triton model
 * version of the tree ensemble over the features the caller computes (tree_version.ts), as tree models
 * backed by a feature store are served. Refused, each with the way it is served: a hybrid choice (its
 * trees also read the GNN embedding of the example, which a request does not carry) and a GNN choice (a
 * train run's GNN serves through a distilled student, or its batch scores by key).
 */
import type { Config } from '../config/load.js';
import { UsageError } from '../core/errors.js';
import { resolveRun } from '../artifacts/run_store.js';
import { chosenTreeModel } from '../train/tree_model.js';
import { exportTreeVersion, type TreeExportResult } from './tree_version.js';

export interface TrainRunExportOptions {
  cfg: Config;
  /** the run: id, folder or latest:<task> */
  run: string;
  out?: string;
  name?: string;
  version?: number;
  /** the student-only flags by name (`--quantize`, `--embeddings`, …): any one given is refused for trees */
  studentFlags?: Record<string, unknown>;
  cwd?: string;
}

/**
 * Exports `opts.run` when it names a train run that chose the trees; null when it names no train run
 * (the student export handles it); throws, saying how the run is served, for any other train run.
 */
export async function exportTrainRun(opts: TrainRunExportOptions): Promise<{ result: TreeExportResult; text: string } | null> {
  const found = trainRunOf(opts.cfg, opts.run, opts.cwd);
  if (!found) return null;
  const { run, tree } = found;
  if (!tree || tree.kind !== 'gbdt') refuseTrainRun(run, tree);
  const flags = Object.entries(opts.studentFlags ?? {}).filter(([, v]) => v !== undefined && v !== false && !(Array.isArray(v) && v.length === 0)).map(([k]) => k);
  if (flags.length) throw new UsageError(`${flags.join(', ')} appl${flags.length === 1 ? 'ies' : 'y'} to distilled students; run ${run.id} exports its trees`, { where: flags[0], hint: 'leave it out: the tree ensemble has no embedding tables' });
  const r = await exportTreeVersion({ cfg: opts.cfg, run, manifest: run.manifest, tree: tree!, out: opts.out, name: opts.name, version: opts.version });
  const cats = r.features.filter((c) => c.kind === 'categorical').length;
  const text = [
    `exported ${r.model} version ${r.version} in ${r.seconds}s: ${r.dir}`,
    `  the trees of train run ${r.train_run} (${r.trees} trees): input ${r.input.name} FP32 [-1, ${r.input.shape[1]}] (${r.features.length - cats} numeric, ${cats} categorical as vocabulary codes; NaN = missing; names in manifest.json and config.pbtxt), output ${r.output.name}`,
    `  parity with the trees on ${r.parity.rows} rows: max |Δ| ${r.parity.max_abs_diff.toExponential(2)} (tolerance ${r.parity.tolerance})`,
  ].join('\n');
  return { result: r, text };
}

/** The train run `ref` names (a distilled run of the same name wins: `latest:<task>` may name both), or null. */
function trainRunOf(cfg: Config, ref: string, cwd?: string): { run: ReturnType<typeof resolveRun>; tree: ReturnType<typeof chosenTreeModel> } | null {
  try {
    if (resolveRun(cfg.artifactsDir, ref, { kind: 'distill', cwd }).manifest.kind === 'distill') return null;
  } catch {
    // no distilled run by that name: see whether it names a train run
  }
  let run: ReturnType<typeof resolveRun>;
  try {
    run = resolveRun(cfg.artifactsDir, ref, { cwd });
  } catch {
    return null; // not a run id or folder this can check: the export's own resolution reports it
  }
  return run.manifest.kind === 'train' ? { run, tree: chosenTreeModel(run.dir) } : null;
}

/** Throws for a train run whose choice is not exported (the GNN, the hybrid), saying how that run is served. */
function refuseTrainRun(run: ReturnType<typeof resolveRun>, tree: ReturnType<typeof chosenTreeModel>): never {
  const batch = `batch scores by key: gnnctl predict --run ${run.id} (--publish writes them to the online store by key)`;
  const student = `an online model: distill a student from this run's GNN embeddings (distillation.base: ${run.manifest.task}), then gnnctl export --run latest:<distillation task>`;
  if (tree) {
    const fact = tree.features.plan.kind === 'fact';
    throw new UsageError(
      `run ${run.id} chose the hybrid trees, which read the GNN embedding of each example (${tree.embedding_dim} channels, computed by the GNN over the graph at the anchor) besides ${tree.features.own.length + tree.features.plan.features.length} features: a serving request does not carry that embedding, so the hybrid is not exported`,
      // A fact-row run scores each row at its own time: predict does not batch-score it, the student serves it.
      { where: '--run', hint: `${student}; or train with model.kind: gbdt to export trees over request features${fact ? '' : `; or ${batch}`}` },
    );
  }
  throw new UsageError(`run ${run.id} is a train run; export takes a distilled run (gnnctl distill), or a train run that chose its trees (model.kind gbdt); this one chose its GNN`, { where: '--run', hint: `${student}; or ${batch}` });
}
