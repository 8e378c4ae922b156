/**
 * `evaluate`: scores a trained run at any set of anchors from the labels its task's query defines,
 * independently of the run's own split — the way a user checks last quarter's model on this quarter's
 * data. Examples are built by the same SQL as training (`train/examples.ts`), predicted by the same seeded
 * chunks as the run's own evaluation (`train/engine.ts`), so at the run's test anchors on the same data
 * the metrics are the run's test metrics, exactly. Writes `evaluations/<name>.json` in the run folder.
 */
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import type { Config } from '../config/load.js';
import { writeJsonAtomic } from '../core/atomic.js';
import { isoSeconds } from '../core/duration.js';
import { ArtifactError, DataError, NotImplementedError, UsageError } from '../core/errors.js';
import { info, warn } from '../core/log.js';
import { Progress } from '../core/progress.js';
import { round } from '../core/number.js';
import { selectBackend, type BackendRequest } from '../compute/backend.js';
import { readManifest, resolveRun } from '../artifacts/run_store.js';
import { buildGraph } from '../graph/build.js';
import { runFit } from '../graph/fit_until.js';
import { Graph } from '../graph/graph.js';
import { DeepModel } from '../model/deep_model.js';
import { targetTimeRange, taskSplit, parseTime, type TaskSplit } from '../task/split.js';
import { objectiveFor, type ObjectiveKind } from '../task/objective/objective.js';
import type { Metrics } from '../task/metrics.js';
import { metricIntervals, type Interval } from '../task/intervals.js';
import { metricsByAnchor, type AnchorMetrics } from '../task/per_anchor.js';
import { smallDataWarnings } from '../task/data_warnings.js';
import { buildTrainingTables } from '../train/examples.js';
import { predictInChunks } from '../train/engine.js';
import { EVAL_SEED, type TrainManifest } from '../train/trainer.js';
import { checkSchema } from '../embed/snapshot.js';
import { chosenTreeModel, predictTreeModel } from '../train/tree_model.js';
import { exampleEmbeddings } from '../train/candidates.js';

/** Which anchors to score: explicit times, a range stepped one window at a time, or (neither) the run's test anchors. */
export type AnchorChoice = { anchors: string[] } | { from: string; to: string } | null;

export interface EvaluateOptions {
  cfg: Config;
  run: string;
  choice: AnchorChoice;
  /** seed of the bootstrap intervals */
  seed?: number;
  backend?: BackendRequest;
  allowSchemaDrift?: boolean;
  cwd?: string;
}

export interface EvaluateResult {
  run_id: string;
  task: string;
  kind: ObjectiveKind;
  main_metric: string;
  /** the model scored: the run's chosen candidate (`model.kind`), the GNN unless training chose its trees or hybrid */
  scored_model: 'gnn' | 'gbdt' | 'hybrid';
  /** how the anchors were chosen: "run test anchors", "anchors", or "from … to …" */
  anchors_from: string;
  anchors: string[];
  /** anchors whose label window holds no row of the target table: no examples there */
  empty_anchors: string[];
  target_table: string;
  /** every example of every anchor, pooled */
  metrics: Metrics;
  intervals: Record<string, Interval>;
  by_anchor: AnchorMetrics<Metrics>[];
  warnings: string[];
  path: string;
  seconds: number;
}

export async function evaluate(opts: EvaluateOptions): Promise<EvaluateResult> {
  const t0 = performance.now();
  const { cfg } = opts;
  await selectBackend(opts.backend ?? 'auto');
  const run = resolveRun(cfg.artifactsDir, opts.run, { kind: 'train', cwd: opts.cwd });
  const manifest = readManifest<TrainManifest>(run.dir);
  if (manifest.status !== 'complete' && manifest.status !== 'interrupted') {
    throw new ArtifactError(`run ${run.id} is ${manifest.status}; it has no finished model to evaluate`, { hint: 'use a complete run (gnnctl runs list)' });
  }
  const task = cfg.taskSpecs[manifest.task];
  if (!task) throw new UsageError(`run ${run.id} is for task ${manifest.task}, which this config does not define`, { where: '--config', hint: 'evaluate with the config the run was trained from' });
  if (task.query.target.kind !== 'entity') {
    throw new NotImplementedError(`evaluate scores entity tasks at anchors; ${task.name} is a fact-row task (each row at its own time)`, { hint: "read the run's test metrics (gnnctl runs show), or score new rows with the distilled student" });
  }
  if (task.query.taskType === 'ranking') throw new NotImplementedError(`evaluate does not score ranking tasks yet (${task.name})`, { hint: 'the run\'s own metrics.json has its test MAP@k' });

  const built = await buildGraph(cfg, { fit: runFit(run.dir, manifest) });
  const graph = Graph.load(built.dir);
  checkSchema(run, manifest, graph, opts.allowSchemaDrift, 'evaluate');
  const range = targetTimeRange(task, graph.manifest.tables);
  const window = taskSplit(task, range).window;
  const { anchors, from } = chooseAnchors(opts.choice, manifest, window, range.max, range.table);
  const split: TaskSplit = { window, table: range.table, dataEnd: range.max, trainAnchors: [], trainFrom: null, valAnchor: anchors[0]!, valAnchors: [], testAnchor: anchors[0]!, testAnchors: anchors };
  // The task's own split settings except the training subsample (there is no training split here).
  const tables = await buildTrainingTables(built.dir, graph.manifest, { ...task, split: { ...task.split, max_train_examples: undefined } }, split, { seed: cfg.seed });
  const ex = tables.test;
  const empty = (tables.empty_anchors?.test ?? []).map(isoSeconds);
  if (ex.nodes.length === 0) {
    throw new DataError(`task ${task.name} has no examples at ${anchors.length === 1 ? `anchor ${isoSeconds(anchors[0]!)}` : `the ${anchors.length} anchors ${isoSeconds(anchors[0]!)} … ${isoSeconds(anchors[anchors.length - 1]!)}`}${empty.length ? ` (${empty.length} with no ${range.table} row in their window)` : ''}`, {
      hint: `${range.table}'s last time is ${isoSeconds(range.max)}: choose anchors whose window ends by then (--from / --to / --anchors), and check the query's WHERE filter`,
    });
  }

  const model = DeepModel.load(run.dir, graph);
  const tree = chosenTreeModel(run.dir);
  let predictions: Float32Array;
  try {
    const progress = new Progress();
    progress.begin(`evaluate ${task.name}${tree ? ` (the run's ${tree.kind} model)` : ''}`, ex.nodes.length);
    // The hybrid's embeddings are sampled as training sampled them, so at the run's test anchors its figures are the run's.
    predictions = tree
      ? Float32Array.from(await predictTreeModel(tree, built.dir, graph.manifest, ex, tree.embedding_dim > 0 ? exampleEmbeddings(model, ex, EVAL_SEED) : null))
      : model.toOutput(await predictInChunks(model, ex, EVAL_SEED, (done) => progress.update(done)));
    progress.end(`evaluate: ${ex.nodes.length.toLocaleString('en-US')} examples at ${anchors.length - empty.length} anchor(s)`);
  } finally {
    model.dispose();
  }
  const objective = objectiveFor(task.query.taskType);
  const metrics = objective.metrics(ex.labels, predictions);
  const intervals = metricIntervals(objective.kind, ex.labels, predictions, { seed: opts.seed ?? EVAL_SEED });
  const byAnchor = metricsByAnchor(ex.anchors, ex.labels, predictions, (l, p) => objective.metrics(l, p));
  const warnings = smallDataWarnings(task.name, objective.kind, { test: ex.labels });
  for (const w of warnings) warn(w);
  if (empty.length) info(`evaluate: ${empty.length} of ${anchors.length} anchors have no ${range.table} row in their window and contribute no examples`);

  const dir = join(run.dir, 'evaluations');
  mkdirSync(dir, { recursive: true });
  const name = `${isoSeconds(anchors[0]!)}_${isoSeconds(anchors[anchors.length - 1]!)}_${anchors.length}`.replace(/[-:]/g, '');
  const path = join(dir, `${name}.json`);
  const result: EvaluateResult = {
    run_id: run.id,
    task: task.name,
    kind: objective.kind,
    main_metric: objective.mainMetric.name,
    scored_model: tree?.kind ?? 'gnn',
    anchors_from: from,
    anchors: anchors.map(isoSeconds),
    empty_anchors: empty,
    target_table: range.table,
    metrics,
    intervals,
    by_anchor: byAnchor,
    warnings,
    path,
    seconds: 0,
  };
  result.seconds = round((performance.now() - t0) / 1000, 2);
  writeJsonAtomic(path, result);
  return result;
}

/**
 * The anchors to score. A range steps from `from` one window at a time while the window ends by `to`
 * (RelBench's protocol); without a choice, the run's own test anchors.
 */
export function chooseAnchors(choice: AnchorChoice, manifest: Pick<TrainManifest, 'split' | 'id'>, window: number, dataEnd: number, table: string): { anchors: number[]; from: string } {
  if (choice === null) {
    // Runs record every test anchor; a run with one test anchor may record only `test`.
    const recorded = (manifest.split as { test_anchors?: string[] }).test_anchors ?? [manifest.split.test];
    return { anchors: recorded.map((a) => parseTime(a, `run ${manifest.id} split.test_anchors`)), from: 'run test anchors' };
  }
  if ('anchors' in choice) {
    const anchors = [...new Set(choice.anchors.map((a) => parseTime(a, '--anchors')))].sort((a, b) => a - b);
    if (anchors.length === 0) throw new UsageError('--anchors lists no time', { where: '--anchors', hint: 'e.g. --anchors 2020-09-01,2020-09-08' });
    return { anchors, from: 'anchors' };
  }
  const from = parseTime(choice.from, '--from');
  const to = parseTime(choice.to, '--to');
  const anchors: number[] = [];
  for (let a = from; a + window <= to; a += window) anchors.push(a);
  if (anchors.length === 0) {
    throw new UsageError(`no anchor fits: from ${isoSeconds(from)} to ${isoSeconds(to)} is shorter than one ${window / 86400}-day window`, {
      where: '--to',
      hint: `set --to at least one window after --from (${table}'s last time is ${isoSeconds(dataEnd)})`,
    });
  }
  return { anchors, from: `from ${isoSeconds(from)} to ${isoSeconds(to)}` };
}
