/**
 * `export` of a train run. A Triton repository serves a model from what a request carries (the distilled
 * student: fact-row columns, entity keys whose embeddings are baked in, recent interactions). A train run's
 * chosen trees (`model.kind`: gbdt or hybrid) read relational aggregates — counts, sums, recency over the
 * entity's history, computed in DuckDB strictly before the anchor — which no request carries, and baking
 * them per entity would freeze every score at the export time, which is what batch predictions already
 * are. So such a run is refused with the two paths that do serve it (docs/models.md): its batch scores by
 * key (`predict`, `--publish` to the online store), or a student distilled from its GNN's embeddings.
 */
import type { Config } from '../config/load.js';
import { UsageError } from '../core/errors.js';
import { resolveRun } from '../artifacts/run_store.js';
import { chosenTreeModel } from '../train/tree_model.js';

/** Throws when `ref` names a train run (export takes distilled runs), saying how that run's model is served. */
export function refuseTrainRun(cfg: Config, ref: string, cwd?: string): void {
  let run: ReturnType<typeof resolveRun>;
  try {
    // `latest:<task>` may name both kinds: a distilled run of the task is what export means.
    if (resolveRun(cfg.artifactsDir, ref, { kind: 'distill', cwd }).manifest.kind === 'distill') return;
  } catch {
    // no distilled run by that name: see whether it names a train run
  }
  try {
    run = resolveRun(cfg.artifactsDir, ref, { cwd });
  } catch {
    return; // not a run id or folder this can check: the export's own resolution reports it
  }
  if (run.manifest.kind !== 'train') return;
  const tree = chosenTreeModel(run.dir);
  const batch = `batch scores by key: gnnctl predict --run ${run.id} (--publish writes them to the online store by key)`;
  const student = `an online model: distill a student from this run's GNN embeddings (distillation.base: ${run.manifest.task}), then gnnctl export --run latest:<distillation task>`;
  if (tree) {
    const f = tree.features;
    const fact = f.plan.kind === 'fact';
    throw new UsageError(
      `run ${run.id} chose its ${tree.kind === 'gbdt' ? 'trees' : 'hybrid trees'} on ${f.own.length} own columns and ${f.plan.features.length} relational aggregates of ${fact ? `each ${f.entity} row's parents' history` : `the ${f.entity} history`} (computed in DuckDB before each anchor)${tree.kind === 'hybrid' ? ' and the GNN embedding' : ''}: a serving request does not carry those inputs, so the trees are not exported as an online model`,
      // A fact-row run scores each row at its own time: predict does not batch-score it, the student serves it.
      { where: '--run', hint: fact ? student : `${batch}; or ${student}` },
    );
  }
  throw new UsageError(`run ${run.id} is a train run; export takes a distilled run (gnnctl distill)`, { where: '--run', hint: `${student}; or ${batch}` });
}
