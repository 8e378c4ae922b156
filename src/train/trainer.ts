/**
 * `train`: one predictive task → a deep GNN run. Builds (or reuses) the graph, the training tables at the
 * task's anchors, samples temporal computation trees per batch in TypeScript, trains with Adam on the
 * chosen TF.js backend with early stopping on the validation metric, keeps the best checkpoint on disk at
 * every improvement (so Ctrl-C leaves a usable run), and fits the no-graph baseline on the same examples.
 */
import { round } from '../core/number.js';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { selectBackend, type BackendInfo, type BackendRequest } from '../compute/backend.js';
import type { Config, TaskSpec } from '../config/load.js';
import { ArtifactError, ConfigError, DataError, NotImplementedError, suggest } from '../core/errors.js';
import { buildGraph } from '../graph/build.js';
import { Graph } from '../graph/graph.js';
import { diffSchemas } from '../graph/schema_diff.js';
import { newRunId, readManifest, readModelJson, resolveRun, writeModelJson, loadWeights, saveWeights, type RunManifestBase } from '../artifacts/run_store.js';
import { RunLifecycle, runManifestHead } from '../artifacts/run_lifecycle.js';
import { hashValue } from '../core/hash.js';
import { isoSeconds } from '../core/duration.js';
import { info, warn } from '../core/log.js';
import { Progress, withHeartbeat } from '../core/progress.js';
import { VERSION } from '../core/version.js';
import { taskSplit, targetTimeRange, type TaskSplit } from '../task/split.js';
import { checkSplits, splitWarnings, testFigures, type TestFigures } from './split_figures.js';
import { targetExclusions } from '../task/task_spec.js';
import { DeepModel } from '../model/deep_model.js';
import { buildTrainingTables, validationSize, type TrainingTables, type ValidationSize } from './examples.js';
import { planValidation, type ValidationPlan } from './validation.js';
import { chooseVariant, fitsBudget, searchVariants, type Variant } from './search.js';
import { bindFeatures, categoricalSizes, featureSpecFromGraph, leakedTargets, numericDim, type FeatureSpec } from '../model/features.js';
import type { Metrics } from '../task/metrics.js';
import { objectiveFor, type Curves, type ObjectiveKind } from '../task/objective/objective.js';
import { convLayout, type ModelSpec } from '../model/hetero_gnn.js';
import { buildPlan } from '../model/plan.js';
import { LocalEngine, type GradientEngine } from './engine.js';
import { WorkerEngine } from './parallel.js';
import { baselineInputs, type BaselineResult } from './baseline_model.js';
import { BaselineJob } from './baseline_job.js';
import { trainLoop, type EpochRecord, type LoopResult } from './loop.js';
import { fitRanking } from './ranking_trainer.js';
import type { RankingBaseline } from './ranking_baselines.js';
import type { HeuristicsRecord } from './ranking_heuristics.js';
import type { RankingChoiceRecord } from './ranking_choice.js';
import type { RerankRecord } from './rerank.js';
import { MIN_HISTORY, PAIR_FEATURES, rankingEdges, type RankingSpec } from '../model/context_gnn.js';
import type { Plan } from '../model/plan.js';
import { availableParallelism } from 'node:os';
import { trainCandidates, type ModelChoiceRecord } from './candidates.js';
import type { CandidateKind } from './model_choice.js';

export interface TrainOptions {
  cfg: Config;
  task: string;
  backend?: BackendRequest;
  /** fine-tune: start from this run's weights and encoders */
  init_from?: string;
  /** override model.epochs (tests, quick runs) */
  epochs?: number;
  /** skip the no-graph baseline (benchmarks) */
  skip_baseline?: boolean;
  /** variant search (`--search`); overrides model.search / model.search_budget */
  search?: { budget_seconds: number };
}

/** One variant of a search as metrics.json records it. */
export interface SearchVariantRecord {
  name: string;
  status: 'trained' | 'skipped';
  /** skipped: why (budget, interrupt, or a setting the variant cannot run with) */
  reason?: string;
  configured: boolean;
  encoder?: 'sage' | 'gat';
  layers?: number;
  sampling?: 'last' | 'uniform';
  num_neighbors?: Variant['num_neighbors'];
  val?: Metrics;
  test?: Metrics;
  /** the objective's validation score the choice compared (higher is better) */
  val_score?: number;
  best_epoch?: number;
  epochs?: number;
  stopped?: LoopResult['stopped'];
  seconds?: number;
  /** parameters without embedding tables */
  parameters?: number;
}

export interface TrainMetrics {
  task: string;
  kind: ObjectiveKind;
  main_metric: string;
  val: Metrics;
  test: Metrics;
  /** `train_rows`: the training examples it was fitted on (a seeded sample above split.baseline_max_train_examples; absent for ranking, whose baselines are not fitted) */
  baseline: { val: Metrics; test: Metrics; features: string[]; train_rows?: number } | null;
  /** test main metric minus the baseline's (for MAE: baseline minus model, so positive is better) */
  lift: number | null;
  /** the same on the validation split: what model choice can see (negative: the graph model lost) */
  val_lift: number | null;
  best_epoch: number;
  epochs: EpochRecord[];
  /** why training ended before model.epochs (null: all epochs ran) */
  stopped: LoopResult['stopped'];
  counts: { train: number; val: number; test: number };
  anchors: TrainManifest['split'];
  /** 95% bootstrap intervals of the test metrics and the lift (docs/evaluation.md); ranking runs add each heuristic's test MAP@k */
  intervals?: TestFigures['intervals'];
  /** entity tasks: each test anchor's metrics alone */
  test_by_anchor?: TestFigures['test_by_anchor'];
  /** anchors whose label window holds no row of the target table (they contribute no examples) */
  empty_anchors?: TestFigures['empty_anchors'];
  /** every seed the result depends on: the model's (initialization, shuffling, training sampling, the training subsample) and the evaluation sampling's */
  seeds: { model: number; evaluation: number };
  /** the batch trained with (batch_size, or smaller for model.min_steps_per_epoch) */
  batch_size: number;
  /** how model choice validated: anchors, examples, the moving-average window, and why */
  validation: { anchors: string[]; examples: number; smoothing: number; small: boolean | null; at_val_anchor: ValidationSize | null; reason: string };
  /** the variant search, when asked for: every variant's validation and test figures and the one chosen */
  search: { budget_seconds: number; seconds: number | undefined; chosen: string; variants: SearchVariantRecord[] } | null;
  curves?: Curves;
  baseline_curves?: { roc: [number, number][]; pr: [number, number][] };
  parameters: { total: number; without_embeddings: number };
  /** ranking runs: every baseline's metrics, the best one on validation (also in `baseline`) */
  baselines?: Record<RankingBaseline, { val: Metrics; test: Metrics }>;
  best_baseline?: RankingBaseline;
  /** ranking runs: each heuristic's choices on validation and the seen-items decision (train/ranking_heuristics.ts) */
  heuristics?: HeuristicsRecord;
  /** ranking runs: the learned re-ranker over the heuristics' and the model's candidates (train/rerank.ts), when fitted */
  reranker?: RerankRecord;
  /** binary and regression runs: the GNN, the trees and the hybrid on validation and test, and the choice (train/candidates.ts) */
  model_choice?: ModelChoiceRecord;
  /** ranking runs: how the served list was judged (train/ranking_choice.ts) */
  ranking_choice?: RankingChoiceRecord;
  /**
   * what a user should serve, and why. Ranking runs: the model or the heuristic that beat it on validation;
   * binary and regression runs: the candidate `model.kind` kept (`predict` and `evaluate` use it)
   */
  chosen?: 'model' | 'reranker' | RankingBaseline | CandidateKind;
  chosen_reason?: string;
}

export interface TrainManifest extends RunManifestBase {
  kind: 'train';
  /** identity of what was trained: same key → same model (pipeline re-runs reuse such a run) */
  run_key: string;
  /** `test`: the first test anchor; `test_anchors`: all of them; `table`: the target table whose times set them */
  split: { window: number; train: string[]; val: string; val_anchors: string[]; test: string; test_anchors: string[]; train_from: string | null; table: string };
  init_from: string | null;
  search?: { chosen: string; budget_seconds: number };
  backend_info: BackendInfo;
}

export interface TrainResult {
  runId: string;
  runDir: string;
  status: 'complete' | 'interrupted';
  metrics: TrainMetrics;
  seconds: number;
}

/**
 * Trains one task: each step below is a named function, and the run's ending (finish or fail) is written
 * once, by the run lifecycle.
 */
export async function train(opts: TrainOptions): Promise<TrainResult> {
  const t0 = performance.now();
  const ctx = await trainContext(opts);
  const examples = await trainingExamples(ctx);
  const encoders = featureEncoders(ctx);
  const setup = modelSetup(ctx, examples, encoders);
  const run = startTrainRun(ctx, examples, setup, t0);
  return run.guard(async () => {
    const metrics = setup.ranking ? await trainRankingRun(ctx, examples, setup, run) : await trainGraphRun(ctx, examples, setup, run);
    const ending = run.finish(metrics, { val: metrics.val, test: metrics.test, baseline_test: metrics.baseline?.test ?? null, lift: metrics.lift });
    return { runId: run.id, runDir: run.dir, status: ending.status, metrics, seconds: ending.seconds };
  });
}

/** What every step of a training run reads: the options, the task, its model settings, the backend and the graph. */
interface TrainContext {
  opts: TrainOptions;
  cfg: Config;
  task: TaskSpec;
  mc: TaskSpec['model'];
  seed: number;
  backend: BackendInfo;
  search: { budget_seconds: number } | null;
  built: { dir: string };
  graph: Graph;
  /** the task's target columns and how much of each an encoder may read (task_spec.ts TargetColumn) */
  exclusions: ReturnType<typeof targetExclusions>;
}

/** The examples a run trains, validates and tests on, and how it validates. */
interface TrainExamples {
  split: TaskSplit;
  validation: ValidationPlan;
  tables: TrainingTables;
  seconds: number;
}

/** Feature encoders: fitted by the graph build, or inherited from the run being fine-tuned. */
interface TrainEncoders {
  featureSpec: FeatureSpec;
  init: { dir: string; id: string } | null;
}

/** The model(s) to train: the spec of each variant, and how they train. */
interface TrainSetup extends TrainEncoders {
  objective: ReturnType<typeof objectiveFor>;
  ranking: RankingSpec | undefined;
  specFor: (v: Pick<Variant, 'encoder' | 'layers' | 'sampling' | 'num_neighbors'>) => ModelSpec;
  variants: Variant[];
  skipped: ReturnType<typeof searchVariants>['skipped'];
  workers: number;
  batchSize: number;
}

type TrainRun = RunLifecycle<TrainManifest>;

/** Step 1: the task, the backend, the search request, and the graph (built or reused). */
async function trainContext(opts: TrainOptions): Promise<TrainContext> {
  const { cfg } = opts;
  const task = cfg.taskSpecs[opts.task];
  if (!task) throw new ConfigError(`unknown task "${opts.task}"`, [], { where: '--task', hint: suggest(opts.task, Object.keys(cfg.taskSpecs)) });
  const mc = task.model;
  const backend = await selectBackend(opts.backend ?? 'auto');
  info(`train: task ${task.name} on the ${backend.name} backend`);
  const search = opts.search ?? (mc.search ? { budget_seconds: mc.search_budget } : null);
  if (search && opts.init_from) {
    throw new ConfigError('a variant search trains every variant from scratch, so it cannot fine-tune', [], { where: opts.search ? '--search' : `tasks.${task.name}.model.search`, hint: 'drop --init-from, or train without the search (omit --search; model.search: false)' });
  }
  // Statistics fitted before this task's own validation data; no other task's split moves them.
  const built = await buildGraph(cfg, { fit: { task: task.name } });
  const graph = Graph.load(built.dir);
  return { opts, cfg, task, mc, seed: mc.seed ?? cfg.seed, backend, search, built, graph, exclusions: targetExclusions(task) };
}

/** Step 2: the split (with its validation anchors) and the training tables at its anchors. */
async function trainingExamples(ctx: TrainContext): Promise<TrainExamples> {
  const { task, mc, built, graph, opts } = ctx;
  if (!graph.manifest.time_range) throw new DataError('no table has a time_column, so there are no anchor times to train at', { hint: 'declare time_column on the fact tables' });
  const t = performance.now();
  // Anchors from the target table's times: another table's future-dated rows never move them (docs/evaluation.md).
  const { split, validation } = await validationSplit(task, mc, targetTimeRange(task, graph.manifest.tables), built.dir, graph);
  const excludedSet = new Set(ctx.exclusions.map((e) => `${e.table}.${e.column}`));
  const tables: TrainingTables = await withHeartbeat(`training tables for ${task.name}`, () =>
    buildTrainingTables(built.dir, graph.manifest, task, split, { seed: ctx.seed, baselineExcluding: opts.skip_baseline || kindOf(task) === 'ranking' ? undefined : excludedSet }),
  );
  const seconds = (performance.now() - t) / 1000;
  checkTables(task, tables, split);
  info(`train: ${tables.train.nodes.length} train / ${tables.val.nodes.length} val / ${tables.test.nodes.length} test examples at ${split.trainAnchors.length || '-'} / ${split.valAnchors.length} / ${split.testAnchors.length} anchors (${seconds.toFixed(1)}s)`);
  for (const w of splitWarnings(task, tables)) warn(w);
  return { split, validation, tables, seconds };
}

/** Step 3: the encoders, from the graph build or inherited (and grown) from the run being fine-tuned. */
function featureEncoders(ctx: TrainContext): TrainEncoders {
  const { cfg, task, graph, exclusions, opts } = ctx;
  if (!opts.init_from) return { featureSpec: featureSpecFromGraph(graph, exclusions, task.query.entity.table), init: null };
  const prev = resolveRun(cfg.artifactsDir, opts.init_from, { kind: 'train' });
  const prevManifest = readManifest<TrainManifest>(prev.dir);
  const diff = diffSchemas(readGraphSchema(prevManifest), graph.manifest.schema);
  const breaking = diff.filter((d) => !/column \S+ was added$/.test(d));
  if (breaking.length) {
    throw new ArtifactError(`cannot fine-tune from ${prev.id}: the data's schema changed`, { hint: `${breaking.join('; ')}. Train from scratch instead (omit --init-from).` });
  }
  for (const d of diff) warn(`fine-tuning: ${d}; the new column is not used by the fine-tuned model`);
  const featureSpec = growVocabularies(readModelJson<FeatureSpec>(prev.dir, 'features.json'), graph);
  // The inherited encoders were fitted for the previous run's task: they may read this task's target.
  const leaked = leakedTargets(featureSpec, exclusions);
  if (leaked.length) {
    const cols = leaked.map((e) => `${e.table}.${e.column}`).join(', ');
    throw new ArtifactError(`cannot fine-tune from ${prev.id}: its encoders read ${cols}, the target of task ${task.name}`, { hint: `fine-tune from a run of task ${task.name}, or train from scratch (omit --init-from)` });
  }
  const prevRoot = readModelJson<ModelSpec>(prev.dir, 'spec.json').root;
  if (prevRoot !== task.query.entity.table) {
    throw new ArtifactError(`cannot fine-tune from ${prev.id}: it predicts per ${prevRoot}, task ${task.name} per ${task.query.entity.table}`, { hint: `fine-tune from a run of task ${task.name}, or train from scratch (omit --init-from)` });
  }
  return { featureSpec, init: { dir: prev.dir, id: prev.id } };
}

/** Step 4: the model spec of each variant to train, the worker count and the batch size. */
function modelSetup(ctx: TrainContext, examples: TrainExamples, encoders: TrainEncoders): TrainSetup {
  const { task, mc, graph, search, backend } = ctx;
  const { tables } = examples;
  const { featureSpec } = encoders;
  const objective = objectiveFor(task.query.taskType);
  const ranking = objective.kind === 'ranking' ? rankingSpec(graph, task, buildPlan(graph, task.query.entity.table, mc.num_neighbors)) : undefined;
  if (ranking && search) throw new NotImplementedError('the variant search does not cover ranking tasks yet', { hint: `train task ${task.name} without --search / model.search` });
  const specFor = (v: Pick<Variant, 'encoder' | 'layers' | 'sampling' | 'num_neighbors'>): ModelSpec => ({
    encoder: v.encoder,
    layers: v.layers,
    channels: mc.channels,
    heads: mc.heads,
    dropout: mc.dropout,
    norm: mc.norm,
    skip: mc.skip,
    categorical_dim: mc.categorical_dim,
    root: task.query.entity.table,
    fanouts: v.num_neighbors,
    sampling: v.sampling,
    degree: 'visible',
    types: Object.fromEntries(Object.entries(featureSpec.tables).map(([t, s]) => [t, { num_dim: numericDim(s), cat_sizes: categoricalSizes(s) }])),
    convs: ranking
      ? convLayout(buildPlan(graph, task.query.entity.table, v.num_neighbors), buildPlan(graph, ranking.item_table, v.num_neighbors))
      : convLayout(buildPlan(graph, task.query.entity.table, v.num_neighbors)),
    output: objective.fitOutput(tables.train.labels),
    // `config validate` already checked that a configured loss fits the objective.
    loss: mc.loss ?? objective.losses[0]!,
    ...(ranking ? { ranking } : {}),
  });
  const { variants, skipped } = search ? searchVariants(mc) : { variants: [searchVariants(mc).variants[0]!], skipped: [] };
  const workers = mc.workers === 'auto' ? (availableParallelism() >= 2 && (backend.name === 'wasm' || backend.name === 'cpu') ? 2 : 1) : mc.workers;
  const batchSize = effectiveBatchSize(tables.train.nodes.length, mc.batch_size, mc.min_steps_per_epoch);
  if (batchSize < mc.batch_size) info(`train: batch ${batchSize} (not ${mc.batch_size}) so that ${tables.train.nodes.length} training examples give ≥ ${mc.min_steps_per_epoch} steps an epoch (model.min_steps_per_epoch)`);
  return { ...encoders, objective, ranking, specFor, variants, skipped, workers, batchSize };
}

/** Step 5: the run folder, its `running` manifest, the first variant's spec and the encoders; Ctrl-C stops after a step. */
function startTrainRun(ctx: TrainContext, examples: TrainExamples, setup: TrainSetup, t0: number): TrainRun {
  const { cfg, task, mc, graph, built, backend, seed, opts } = ctx;
  const runId = newRunId(task.name);
  const manifest: TrainManifest = {
    ...runManifestHead({
      kind: 'train',
      id: runId,
      task: task.name,
      graph_dir: built.dir,
      graph: graph.manifest,
      backend: backend.name,
      seed,
      config: { name: cfg.name, path: cfg.path, task: { query: task.query.text, split: task.split }, model: mc, data: cfg.data },
      timings: { training_tables: round(examples.seconds, 2) },
    }),
    backend_info: backend,
    split: splitRecord(examples.split),
    init_from: setup.init?.id ?? null,
    run_key: trainRunKey(cfg, task, graph.manifest.fingerprint, opts),
  };
  const run = RunLifecycle.start(cfg.artifactsDir, manifest, { interruptible: true, t0 });
  writeModelJson(run.dir, 'spec.json', setup.specFor(setup.variants[0]!));
  writeModelJson(run.dir, 'features.json', setup.featureSpec);
  return run;
}

/** A fresh deep model for `spec`, with the fine-tuned run's weights loaded when there is one. */
function newModel(ctx: TrainContext, setup: TrainSetup, spec: ModelSpec): DeepModel {
  const model = new DeepModel(ctx.graph, spec, setup.featureSpec, ctx.seed);
  try {
    if (setup.init) {
      const w = loadWeights(setup.init.dir);
      model.params.load(w.index, w.blob, { allowGrow: true });
      info(`train: fine-tuning from ${setup.init.id}`);
    }
    return model;
  } catch (e) {
    model.dispose();
    throw e;
  }
}

/** One variant trained to its best epoch and evaluated on val and test. */
interface FittedVariant {
  model: DeepModel;
  loop: LoopResult;
  trainingSeconds: number;
  evaluationSeconds: number;
  valPred: Float32Array;
  testPred: Float32Array;
  val: Metrics;
  test: Metrics;
}

/** Trains one variant to its best epoch and evaluates it; its model stays open for the caller. */
async function fitVariant(ctx: TrainContext, examples: TrainExamples, setup: TrainSetup, run: TrainRun, spec: ModelSpec, checkpointDir: string, deadline: number | undefined): Promise<FittedVariant> {
  const { mc, graph, opts, seed } = ctx;
  const { tables } = examples;
  const data = { train: tables.train, val: tables.val, test: tables.test };
  const model = newModel(ctx, setup, spec);
  let engine: GradientEngine | null = null;
  try {
    engine = setup.workers > 1 ? await WorkerEngine.start(setup.workers, graph, spec, setup.featureSpec, data, opts.backend ?? 'auto') : null;
    engine ??= new LocalEngine(model, data);
    run.manifest.workers = engine.workers;
    if (engine.workers > 1) info(`train: data parallel over ${engine.workers} worker threads`);
    const t = performance.now();
    const loop = await trainLoop(
      model,
      engine,
      tables,
      { epochs: opts.epochs ?? mc.epochs, batchSize: setup.batchSize, patience: mc.patience, maxSteps: mc.max_steps_per_epoch, lr: mc.lr, smoothing: examples.validation.smoothing, deadline, checkpointDir },
      seed,
      run.stop,
      run.dir,
    );
    const trainingSeconds = (performance.now() - t) / 1000;
    const tEval = performance.now();
    model.params.assignBlob(loop.best);
    const evalProgress = new Progress();
    // The best epoch's validation outputs were computed with the same weights and seed: no second pass.
    let valRaw = loop.bestValRaw;
    if (!valRaw) {
      evalProgress.begin('evaluation: validation', tables.val.nodes.length);
      valRaw = await engine.predict(loop.best, 'val', EVAL_SEED, (done) => evalProgress.update(done));
    }
    evalProgress.begin('evaluation: test', tables.test.nodes.length);
    const testRaw = await engine.predict(loop.best, 'test', EVAL_SEED, (done) => evalProgress.update(done));
    const valPred = model.toOutput(valRaw);
    const testPred = model.toOutput(testRaw);
    const evaluationSeconds = (performance.now() - tEval) / 1000;
    evalProgress.end(`evaluation: ${tables.test.nodes.length.toLocaleString('en-US')} test examples in ${evaluationSeconds.toFixed(1)}s`);
    const { objective } = setup;
    return { model, loop, trainingSeconds, evaluationSeconds, valPred, testPred, val: objective.metrics(tables.val.labels, valPred), test: objective.metrics(tables.test.labels, testPred) };
  } catch (e) {
    model.dispose();
    throw e;
  } finally {
    await engine?.close();
  }
}

/** Step 6 (graph tasks): the no-graph baseline beside the variants, the chosen variant, and the metrics. */
async function trainGraphRun(ctx: TrainContext, examples: TrainExamples, setup: TrainSetup, run: TrainRun): Promise<TrainMetrics> {
  let chosen: { fitted: FittedVariant; records: SearchVariantRecord[]; chosenIndex: number } | null = null;
  let baselineJob: { job: BaselineJob; rows: number } | null = null;
  try {
    baselineJob = startBaseline(ctx, examples, setup);
    chosen = await fitVariants(ctx, examples, setup, run);
    const baseline = baselineJob ? await awaitBaseline(baselineJob.job, baselineJob.rows, examples, run) : null;
    const metrics = graphMetrics(ctx, examples, setup, run, chosen, baseline);
    const f = chosen.fitted;
    const t = performance.now();
    const choice = await trainCandidates({
      graphDir: ctx.built.dir,
      manifest: ctx.graph.manifest,
      task: ctx.task,
      // --skip-baseline (benchmarks, quick runs) times the GNN alone: no comparison model of any kind.
      setting: ctx.opts.skip_baseline ? 'gnn' : ctx.mc.kind,
      tables: examples.tables,
      gnn: { model: f.model, valPred: f.valPred, testPred: f.testPred, val: f.val, test: f.test, seconds: f.trainingSeconds },
      seed: ctx.seed,
      evalSeed: EVAL_SEED,
      runDir: run.dir,
      stopped: () => run.stop.requested,
    });
    run.manifest.timings.candidates = round((performance.now() - t) / 1000, 2);
    return { ...metrics, model_choice: choice.record, chosen: choice.chosen, chosen_reason: choice.chosen_reason };
  } finally {
    await baselineJob?.job.close();
    chosen?.fitted.model.dispose();
  }
}

/** The no-graph baseline, fitted on a worker thread beside the epochs (and the search's variants); null when skipped. */
function startBaseline(ctx: TrainContext, examples: TrainExamples, setup: TrainSetup): { job: BaselineJob; rows: number } | null {
  const { tables } = examples;
  if (!tables.baseline) return null;
  const { task, seed, graph, opts } = ctx;
  const inputs = baselineInputs(tables, task.split.baseline_max_train_examples, seed);
  const entity = task.query.entity.table;
  const job = BaselineJob.start({ featureSpec: setup.featureSpec, table: entity, inputs, kind: task.query.taskType, seed, backend: opts.backend ?? 'auto' }, graph, bindFeatures(graph, setup.featureSpec)[entity]!);
  return { job, rows: inputs.train.nodes.length };
}

/** Trains each variant (one without a search) and keeps the best on validation. */
async function fitVariants(ctx: TrainContext, examples: TrainExamples, setup: TrainSetup, run: TrainRun): Promise<{ fitted: FittedVariant; records: SearchVariantRecord[]; chosenIndex: number }> {
  const { task, search } = ctx;
  const { objective, variants } = setup;
  const mm = objective.mainMetric;
  const tStage = performance.now();
  const records: SearchVariantRecord[] = [];
  const durations: number[] = [];
  const deadline = search ? tStage + search.budget_seconds * 1000 : undefined;
  let chosen: FittedVariant | null = null;
  let chosenIndex = -1;
  try {
    for (const v of variants) {
      const elapsed = (performance.now() - tStage) / 1000;
      const base = { name: v.name, encoder: v.encoder, layers: v.layers, sampling: v.sampling, num_neighbors: v.num_neighbors, configured: v.configured };
      if (run.stop.requested || (search && !fitsBudget(elapsed, durations, search.budget_seconds))) {
        records.push({ ...base, status: 'skipped', reason: run.stop.requested ? 'interrupted' : `budget: ${Math.round(elapsed)}s of ${search!.budget_seconds}s used, the slowest variant took ${Math.round(Math.max(...durations))}s` });
        continue;
      }
      if (search) info(`search: variant ${records.length + 1}/${variants.length} ${v.name}${v.configured ? ' (configured)' : ''}`);
      const spec = setup.specFor(v);
      const tVariant = performance.now();
      // The configured model has no deadline: a search never ends without it.
      const r = await fitVariant(ctx, examples, setup, run, spec, search ? join(run.dir, 'variants', v.name) : run.dir, v.configured ? undefined : deadline);
      durations.push((performance.now() - tVariant) / 1000);
      records.push({
        ...base,
        status: 'trained',
        val: r.val,
        test: r.test,
        val_score: round(objective.score(r.val), 4),
        best_epoch: r.loop.bestEpoch,
        epochs: r.loop.epochs.length,
        stopped: r.loop.stopped,
        seconds: round(durations[durations.length - 1]!, 2),
        parameters: r.model.gnn.parameterCount(true),
      });
      if (search) info(`search: ${v.name}: val ${mm.name} ${mainOf(mm.name, r.val).toFixed(4)}, test ${mainOf(mm.name, r.test).toFixed(4)} (best epoch ${r.loop.bestEpoch})`);
      const pick = chooseVariant(records.map((x) => (x.status === 'trained' ? x.val_score! : null)));
      // A validation set with one class scores NaN: then the first variant stays, as a run without search would.
      if (pick === records.length - 1 || (chosen === null && pick < 0)) {
        chosen?.model.dispose();
        chosen = r;
        chosenIndex = records.length - 1;
        if (search) {
          // The run folder always holds the best variant so far: spec and weights agree at every moment.
          writeModelJson(run.dir, 'spec.json', spec);
          saveWeights(run.dir, r.model.params.serialize().index, r.loop.best);
        }
      } else {
        r.model.dispose();
      }
    }
  } catch (e) {
    chosen?.model.dispose();
    throw e;
  }
  for (const sk of setup.skipped) records.push({ name: sk.name, status: 'skipped', reason: sk.reason, configured: false });
  if (!chosen) throw new DataError(`task ${task.name}: no variant produced a validation score`, { hint: 'check the validation examples (their labels may be all one class)' });
  if (search) rmSync(join(run.dir, 'variants'), { recursive: true, force: true });
  run.manifest.timings.training = round((performance.now() - tStage - chosen.evaluationSeconds * 1000) / 1000, 2);
  run.manifest.timings.evaluation = round(chosen.evaluationSeconds, 2);
  return { fitted: chosen, records, chosenIndex };
}

/** Waits for the baseline fit, reporting its progress. */
async function awaitBaseline(job: BaselineJob, n: number, examples: TrainExamples, run: TrainRun): Promise<BaselineResult> {
  const tStage = performance.now();
  const bp = new Progress();
  const all = examples.tables.train.nodes.length;
  bp.begin(`baseline fit (${n.toLocaleString('en-US')}${n < all ? ` of ${all.toLocaleString('en-US')}` : ''} rows)`, 0);
  // At most `epochs × rows` (early stopping usually ends sooner), so the count goes without a total.
  job.listen((seen, note) => bp.update(seen, `${seen.toLocaleString('en-US')} rows seen${note ? `, ${note}` : ''}`));
  let baseline: BaselineResult;
  try {
    baseline = await job.result();
  } finally {
    job.listen(null);
    bp.stop();
  }
  // `baseline`: the fit's own time (beside the epochs when on a worker); `baseline_wait`: what the run waited for it after evaluation.
  const timings = run.manifest.timings;
  timings.baseline = round(baseline.seconds, 2);
  timings.baseline_wait = round((performance.now() - tStage) / 1000, 2);
  bp.end(`baseline: no-graph MLP on ${baseline.train_rows.toLocaleString('en-US')} rows in ${baseline.seconds.toFixed(1)}s${job.onWorker ? ` (beside training; waited ${timings.baseline_wait.toFixed(1)}s)` : ''}`);
  return baseline;
}

/** Step 7 (graph tasks): metrics.json of the chosen variant beside its baseline. */
function graphMetrics(
  ctx: TrainContext,
  examples: TrainExamples,
  setup: TrainSetup,
  run: TrainRun,
  chosen: { fitted: FittedVariant; records: SearchVariantRecord[]; chosenIndex: number },
  baseline: BaselineResult | null,
): TrainMetrics {
  const { task, search, seed } = ctx;
  const { tables } = examples;
  const { objective } = setup;
  const { model, loop, val, test, testPred } = chosen.fitted;
  const mm = objective.mainMetric;
  const testMain = mainOf(mm.name, test);
  const baseMain = baseline ? mainOf(mm.name, baseline.test) : null;
  const metrics: TrainMetrics = {
    task: task.name,
    kind: objective.kind,
    main_metric: mm.name,
    val,
    test,
    baseline: baseline ? { val: baseline.val, test: baseline.test, features: baseline.features, train_rows: baseline.train_rows } : null,
    lift: baseMain === null ? null : round(mm.higherIsBetter ? testMain - baseMain : baseMain - testMain, 4),
    val_lift: baseline ? round(objective.score(val) - objective.score(baseline.val), 4) : null,
    best_epoch: loop.bestEpoch,
    epochs: loop.epochs,
    stopped: loop.stopped,
    counts: { train: tables.train.nodes.length, val: tables.val.nodes.length, test: tables.test.nodes.length },
    anchors: run.manifest.split,
    seeds: { model: seed, evaluation: EVAL_SEED },
    batch_size: setup.batchSize,
    validation: validationRecord(examples),
    search: search ? { budget_seconds: search.budget_seconds, seconds: run.manifest.timings.training, chosen: chosen.records[chosen.chosenIndex]!.name, variants: chosen.records } : null,
    parameters: { total: model.gnn.parameterCount(false), without_embeddings: model.gnn.parameterCount(true) },
  };
  const curves = objective.curves(tables.test.labels, testPred);
  if (curves) {
    metrics.curves = curves;
    const bc = baseline ? objective.curves(tables.test.labels, baseline.testPred) : null;
    if (bc) metrics.baseline_curves = { roc: bc.roc, pr: bc.pr };
  }
  Object.assign(metrics, testFigures(task, tables, testPred, baseline?.testPred ?? null, EVAL_SEED));
  const behind = baselineWarning(task.name, mm.name, metrics.val_lift, metrics.lift);
  if (behind) warn(behind);
  if (search) run.manifest.search = { chosen: metrics.search!.chosen, budget_seconds: search.budget_seconds };
  return metrics;
}

/** How model choice validated, as metrics.json records it. */
function validationRecord(examples: TrainExamples): TrainMetrics['validation'] {
  const { split, validation, tables } = examples;
  return { anchors: split.valAnchors.map(isoSeconds), examples: tables.val.nodes.length, smoothing: validation.smoothing, small: validation.small, at_val_anchor: validation.at_val_anchor, reason: validation.reason };
}

/** A metric's value by name. */
function mainOf(name: string, m: Metrics): number {
  return (m as unknown as Record<string, number>)[name]!;
}

/**
 * The batch a training set trains with: batch_size, shrunk so an epoch has at least `minSteps` optimizer
 * steps, never below 32 rows. With ~1,000 examples and batch 512 an epoch was two Adam steps: ten epochs
 * ended undertrained (best epoch = last epoch in every run) and early stopping judged a model that had
 * barely moved. Training sets of batch_size × minSteps rows or more keep batch_size.
 */
export function effectiveBatchSize(n: number, batchSize: number, minSteps: number): number {
  return Math.max(1, Math.min(batchSize, Math.max(32, Math.ceil(n / minSteps))));
}

/** Seed of the neighbour sampling when validation and test are predicted: fixed, so evaluations compare. */
export const EVAL_SEED = 1234;

function splitRecord(split: TaskSplit): TrainManifest['split'] {
  return {
    window: split.window,
    train: split.trainAnchors.map(isoSeconds),
    val: isoSeconds(split.valAnchor),
    val_anchors: split.valAnchors.map(isoSeconds),
    test: isoSeconds(split.testAnchor),
    test_anchors: split.testAnchors.map(isoSeconds),
    train_from: split.trainFrom === null ? null : isoSeconds(split.trainFrom),
    table: split.table,
  };
}

/**
 * The split with the validation anchors the run uses (`split.val_anchors`, "auto" decided on the size of
 * the validation set at the val anchor), and the smoothing of the validation score (`model.val_smoothing`).
 */
async function validationSplit(task: TaskSpec, mc: TaskSpec['model'], range: { min: number; max: number; table: string }, graphDir: string, graph: Graph): Promise<{ split: TaskSplit; validation: ValidationPlan }> {
  const one = taskSplit(task, range);
  const entityTask = task.query.target.kind === 'entity';
  // Ranking runs train on their own loop (ranking_trainer.ts), which validates at one anchor by the raw score.
  if (task.query.taskType === 'ranking') return { split: one, validation: { val_anchors: 1, smoothing: 1, at_val_anchor: null, small: null, reason: 'ranking runs validate at the val anchor by the raw score' } };
  const configured = task.split.val_anchors ?? 'auto';
  const validation = await planValidation({ val_anchors: configured, smoothing: mc.val_smoothing }, entityTask, () => validationSize(graphDir, graph.manifest, task, one));
  let split = one;
  if (validation.val_anchors > 1) {
    try {
      split = taskSplit(task, range, { valAnchorCount: validation.val_anchors });
    } catch (e) {
      // "auto" must not break a task that trains with one val anchor: fall back when more do not fit.
      if (!(e instanceof DataError) || configured !== 'auto') throw e;
      warn(`train: ${validation.val_anchors} validation anchors do not fit the data (${e.message}); validating at one anchor`);
      validation.val_anchors = 1;
    }
    validation.val_anchors = split.valAnchors.length;
  }
  info(`train: validation at ${split.valAnchors.length} anchor(s), best epoch by ${validation.smoothing > 1 ? `a ${validation.smoothing}-epoch moving average` : 'the epoch\'s own score'} (${validation.reason})`);
  return { split, validation };
}

/** Everything that determines a training run's result: config of the task, data, seed, code version. */
/**
 * Said in plain words when the graph model loses to its own no-graph baseline on validation (what model
 * choice sees): a user must not miss it. Null when there is no baseline or the graph model is ahead.
 */
export function baselineWarning(task: string, metric: string, valLift: number | null, testLift: number | null): string | null {
  if (valLift === null || valLift >= 0) return null;
  return (
    `task ${task}: the graph model is worse than the no-graph baseline on validation (${metric} lift ${valLift}; test lift ${testLift}); ` +
    "the baseline uses only the entity's own columns and past-window aggregates. Gate CI with --fail-under lift=0."
  );
}

export function trainRunKey(cfg: Config, task: TaskSpec, dataFingerprint: string, opts: Pick<TrainOptions, 'init_from' | 'epochs' | 'search'>): string {
  // `search` joins the key only when asked for on the command line, so existing runs keep their keys.
  const search = opts.search ? { search: opts.search } : {};
  return hashValue({ v: VERSION, data: dataFingerprint, query: task.query.text, split: task.split, model: task.model, seed: cfg.seed, init: opts.init_from ?? null, epochs: opts.epochs ?? null, ...search });
}

function readGraphSchema(m: TrainManifest): Graph['manifest']['schema'] {
  const s = m.graph_schema as Graph['manifest']['schema'] | undefined;
  if (!s) throw new ArtifactError(`run ${m.id} does not record its graph schema`, { hint: 'it was made by an older gnnctl; train from scratch' });
  return s;
}

/** A ranking task's recommender settings, from its query and the graph (model/context_gnn.ts). */
function rankingSpec(graph: Graph, task: TaskSpec, plan: Plan): RankingSpec {
  const t = task.query.target;
  if (t.kind !== 'entity' || t.top_k === null || t.aggregate.column === null) throw new Error('rankingSpec needs a ranking task');
  const edges = rankingEdges(graph, task.query.entity.table, t.aggregate.table, t.aggregate.column);
  // H_u is the first hop of the user's training tree: the items of the interactions the sampler shows.
  const firstHop = plan.slots.find((s) => s.parent === 0 && s.edge === edges.user_edge);
  return {
    ...edges,
    item_count: graph.tables[edges.item_table]!.rows,
    fact_table: t.aggregate.table,
    history: Math.max(firstHop?.fanout ?? 0, MIN_HISTORY),
    window: t.aggregate.end - t.aggregate.start,
    top_k: t.top_k,
    pair_hidden: 16,
    pair_features: PAIR_FEATURES,
  };
}

/** Step 6 (ranking tasks): the recommender on its own loop (train/ranking_trainer.ts), its item tower split over the workers, and its baselines. */
async function trainRankingRun(ctx: TrainContext, examples: TrainExamples, setup: TrainSetup, run: TrainRun): Promise<TrainMetrics> {
  const { task, mc, seed, opts } = ctx;
  const { tables } = examples;
  const model = newModel(ctx, setup, setup.specFor(setup.variants[0]!));
  try {
    const tStage = performance.now();
    const fit = await fitRanking(
      model,
      tables,
      { epochs: opts.epochs ?? mc.epochs, batchSize: mc.batch_size, patience: mc.patience, maxSteps: mc.max_steps_per_epoch, lr: mc.lr, workers: setup.workers, backend: opts.backend ?? 'auto', excludeSeen: task.rank?.exclude_seen ?? 'auto' },
      seed,
      run.stop,
      run.dir,
    );
    run.manifest.workers = fit.workers;
    run.manifest.timings.training = round((performance.now() - tStage) / 1000, 2);
    const best = fit.baselines[fit.best_baseline];
    const metrics: TrainMetrics = {
      task: task.name,
      kind: 'ranking',
      main_metric: 'map_at_k',
      val: fit.val,
      test: fit.test,
      baseline: { val: best.val, test: best.test, features: [fit.best_baseline] },
      lift: round(fit.test.map_at_k - best.test.map_at_k, 5),
      val_lift: round(fit.val.map_at_k - best.val.map_at_k, 5),
      best_epoch: fit.bestEpoch,
      epochs: fit.epochs,
      counts: { train: tables.train.nodes.length, val: tables.val.nodes.length, test: tables.test.nodes.length },
      anchors: run.manifest.split,
      stopped: null,
      seeds: { model: seed, evaluation: EVAL_SEED },
      batch_size: mc.batch_size,
      validation: validationRecord(examples),
      search: null,
      parameters: { total: model.gnn.parameterCount(false), without_embeddings: model.gnn.parameterCount(true) },
      baselines: fit.baselines,
      best_baseline: fit.best_baseline,
      heuristics: fit.heuristics,
      ...(fit.reranker ? { reranker: fit.reranker } : {}),
      intervals: fit.intervals,
      ranking_choice: fit.choice,
      chosen: fit.chosen,
      chosen_reason: fit.chosen_reason,
    };
    const behind = baselineWarning(task.name, 'map_at_k', metrics.val_lift, metrics.lift);
    if (behind) warn(behind.replace("the baseline uses only the entity's own columns and past-window aggregates", `the best baseline is ${fit.best_baseline}`));
    return metrics;
  } finally {
    model.dispose();
  }
}

function checkTables(task: TaskSpec, t: TrainingTables, split: TaskSplit): void {
  checkSplits(task, t, split);
  const degenerate = objectiveFor(task.query.taskType).degenerate(t.train.labels);
  if (degenerate) throw new DataError(`task ${task.name}: ${degenerate}`, { hint: 'check the query\'s comparison and window' });
}

/** Fine-tuning: keep the run's codes, append values the new graph has that the run never saw. */
function growVocabularies(spec: FeatureSpec, graph: Graph): FeatureSpec {
  const tables = Object.fromEntries(
    Object.entries(spec.tables).map(([name, t]) => {
      const g = graph.table(name);
      return [
        name,
        {
          ...t,
          categorical: t.categorical.map((c) => {
            const known = new Set(c.vocab);
            const fresh = g.categorical.find((x) => x.meta.name === c.name)?.meta.vocab.filter((v) => !known.has(v)) ?? [];
            if (fresh.length) info(`fine-tuning: ${name}.${c.name} gains ${fresh.length} new categorical value(s)`);
            return { name: c.name, vocab: [...c.vocab, ...fresh] };
          }),
        },
      ];
    }),
  );
  return { ...spec, tables };
}


/** The task's objective kind (ranking runs report their own baselines, not the no-graph MLP). */
function kindOf(task: TaskSpec): ObjectiveKind {
  return task.query.taskType;
}
