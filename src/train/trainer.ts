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
import { createRunDir, newRunId, readManifest, readModelJson, resolveRun, writeManifest, writeModelJson, loadWeights, saveWeights, type RunManifestBase } from '../artifacts/run_store.js';
import { writeJsonAtomic } from '../core/atomic.js';
import { hashValue } from '../core/hash.js';
import { isoSeconds } from '../core/duration.js';
import { info, warn } from '../core/log.js';
import { Progress, withHeartbeat } from '../core/progress.js';
import { VERSION } from '../core/version.js';
import { taskSplit, type TaskSplit } from '../task/split.js';
import { targetExclusions } from '../task/task_spec.js';
import { DeepModel } from '../model/deep_model.js';
import { buildTrainingTables, validationSize, type TrainingTables, type ValidationSize } from './examples.js';
import { planValidation, type ValidationPlan } from './validation.js';
import { chooseVariant, fitsBudget, searchVariants, type Variant } from './search.js';
import { bindFeatures, categoricalSizes, featureSpecFromGraph, numericDim, type FeatureSpec } from '../model/features.js';
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
import { MIN_HISTORY, PAIR_FEATURES, rankingEdges, type RankingSpec } from '../model/recommender.js';
import type { Plan } from '../model/plan.js';
import { availableParallelism } from 'node:os';

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
  anchors: { train: string[]; val: string; val_anchors: string[]; test: string };
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
}

export interface TrainManifest extends RunManifestBase {
  kind: 'train';
  /** identity of what was trained: same key → same model (pipeline re-runs reuse such a run) */
  run_key: string;
  split: { window: number; train: string[]; val: string; val_anchors: string[]; test: string };
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

export async function train(opts: TrainOptions): Promise<TrainResult> {
  const t0 = performance.now();
  const { cfg } = opts;
  const task = cfg.taskSpecs[opts.task];
  if (!task) throw new ConfigError(`unknown task "${opts.task}"`, [], { where: '--task', hint: suggest(opts.task, Object.keys(cfg.taskSpecs)) });
  const mc = task.model;
  const seed = mc.seed ?? cfg.seed;
  const backend = await selectBackend(opts.backend ?? 'auto');
  info(`train: task ${task.name} on the ${backend.name} backend`);

  const search = opts.search ?? (mc.search ? { budget_seconds: mc.search_budget } : null);
  if (search && opts.init_from) {
    throw new ConfigError('a variant search trains every variant from scratch, so it cannot fine-tune', [], { where: opts.search ? '--search' : `tasks.${task.name}.model.search`, hint: 'drop --init-from, or train without the search (omit --search; model.search: false)' });
  }
  const built = await buildGraph(cfg);
  const graph = Graph.load(built.dir);
  const range = graph.manifest.time_range;
  if (!range) throw new DataError('no table has a time_column, so there are no anchor times to train at', { hint: 'declare time_column on the fact tables' });
  const timeRange = { min: range[0], max: range[1] };
  const exclusions = targetExclusions(task);
  const excludedSet = new Set(exclusions.map((e) => `${e.table}.${e.column}`));

  let tStage = performance.now();
  const { split, validation } = await validationSplit(task, mc, timeRange, built.dir, graph);
  const tables: TrainingTables = await withHeartbeat(`training tables for ${task.name}`, () =>
    buildTrainingTables(built.dir, graph.manifest, task, split, { seed, baselineExcluding: opts.skip_baseline || kindOf(task) === 'ranking' ? undefined : excludedSet }),
  );
  const tablesSeconds = (performance.now() - tStage) / 1000;
  checkTables(task, tables, split);
  const kind = task.query.taskType;
  info(`train: ${tables.train.nodes.length} train / ${tables.val.nodes.length} val / ${tables.test.nodes.length} test examples (${tablesSeconds.toFixed(1)}s)`);

  // Encoders: fitted by the graph build, or inherited (and grown) from the run we fine-tune.
  let featureSpec: FeatureSpec;
  let init: { dir: string; id: string } | null = null;
  if (opts.init_from) {
    const prev = resolveRun(cfg.artifactsDir, opts.init_from, { kind: 'train' });
    const prevManifest = readManifest<TrainManifest>(prev.dir);
    const prevGraph = readGraphSchema(prevManifest);
    const diff = diffSchemas(prevGraph, graph.manifest.schema);
    const breaking = diff.filter((d) => !/column \S+ was added$/.test(d));
    if (breaking.length) {
      throw new ArtifactError(`cannot fine-tune from ${prev.id}: the data's schema changed`, { hint: `${breaking.join('; ')}. Train from scratch instead (omit --init-from).` });
    }
    for (const d of diff) warn(`fine-tuning: ${d}; the new column is not used by the fine-tuned model`);
    featureSpec = growVocabularies(readModelJson<FeatureSpec>(prev.dir, 'features.json'), graph);
    // The inherited encoders were fitted for the previous run's task: they may read this task's target.
    const leaked = exclusions.filter((e) => {
      const t = featureSpec.tables[e.table];
      return t !== undefined && [...t.numeric.map((c) => c.name), ...t.categorical.map((c) => c.name), ...t.timestamps].includes(e.column);
    });
    if (leaked.length) {
      const cols = leaked.map((e) => `${e.table}.${e.column}`).join(', ');
      throw new ArtifactError(`cannot fine-tune from ${prev.id}: its encoders read ${cols}, the target of task ${task.name}`, { hint: `fine-tune from a run of task ${task.name}, or train from scratch (omit --init-from)` });
    }
    const prevRoot = readModelJson<ModelSpec>(prev.dir, 'spec.json').root;
    if (prevRoot !== task.query.entity.table) {
      throw new ArtifactError(`cannot fine-tune from ${prev.id}: it predicts per ${prevRoot}, task ${task.name} per ${task.query.entity.table}`, { hint: `fine-tune from a run of task ${task.name}, or train from scratch (omit --init-from)` });
    }
    init = { dir: prev.dir, id: prev.id };
  } else {
    featureSpec = featureSpecFromGraph(graph, exclusions, task.query.entity.table);
  }

  const objective = objectiveFor(kind);
  const ranking = kind === 'ranking' ? rankingSpec(graph, task, buildPlan(graph, task.query.entity.table, mc.num_neighbors)) : undefined;
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

  const runId = newRunId(task.name);
  const runDir = createRunDir(cfg.artifactsDir, runId);
  writeModelJson(runDir, 'spec.json', specFor(variants[0]!));
  writeModelJson(runDir, 'features.json', featureSpec);
  const manifest: TrainManifest = {
    kind: 'train',
    id: runId,
    task: task.name,
    status: 'running',
    gnnctl: VERSION,
    created_at: new Date().toISOString(),
    graph: { dir: built.dir, fingerprint: graph.manifest.fingerprint, schema_fingerprint: graph.manifest.schema_fingerprint },
    graph_schema: graph.manifest.schema,
    backend: backend.name,
    backend_info: backend,
    seed,
    config: { name: cfg.name, path: cfg.path, task: { query: task.query.text, split: task.split }, model: mc, data: cfg.data },
    split: splitRecord(split),
    init_from: init?.id ?? null,
    run_key: trainRunKey(cfg, task, graph.manifest.fingerprint, opts),
    timings: { training_tables: round(tablesSeconds, 2) },
  };
  writeManifest(runDir, manifest);

  // Ctrl-C: finish the current step, keep the best checkpoint, evaluate it and mark the run interrupted.
  const stop = { requested: false };
  const onSigint = (): void => {
    if (stop.requested) process.exit(130);
    stop.requested = true;
    warn('interrupt: stopping after this step; the best checkpoint is kept (Ctrl-C again to quit now)');
  };
  process.on('SIGINT', onSigint);
  const finish = (metrics: TrainMetrics): TrainResult => {
    writeJsonAtomic(join(runDir, 'metrics.json'), metrics);
    const status = stop.requested ? 'interrupted' : 'complete';
    manifest.status = status;
    manifest.finished_at = new Date().toISOString();
    manifest.timings.total = round((performance.now() - t0) / 1000, 2);
    manifest.metrics = { val: metrics.val, test: metrics.test, baseline_test: metrics.baseline?.test ?? null, lift: metrics.lift };
    writeManifest(runDir, manifest);
    return { runId, runDir, status, metrics, seconds: (performance.now() - t0) / 1000 };
  };
  const workers = mc.workers === 'auto' ? (availableParallelism() >= 2 && (backend.name === 'wasm' || backend.name === 'cpu') ? 2 : 1) : mc.workers;
  const data = { train: tables.train, val: tables.val, test: tables.test };
  const batchSize = effectiveBatchSize(tables.train.nodes.length, mc.batch_size, mc.min_steps_per_epoch);
  if (batchSize < mc.batch_size) info(`train: batch ${batchSize} (not ${mc.batch_size}) so that ${tables.train.nodes.length} training examples give ≥ ${mc.min_steps_per_epoch} steps an epoch (model.min_steps_per_epoch)`);
  const mm = objective.mainMetric;
  const mainOf = (m: Metrics): number => (m as unknown as Record<string, number>)[mm.name]!;
  /** Trains one variant to its best epoch and evaluates it; its model stays open for the caller. */
  const fit = async (spec: ModelSpec, checkpointDir: string, deadline: number | undefined) => {
    const model = new DeepModel(graph, spec, featureSpec, seed);
    let engine: GradientEngine | null = null;
    try {
      if (init) {
        const w = loadWeights(init.dir);
        model.params.load(w.index, w.blob, { allowGrow: true });
        info(`train: fine-tuning from ${init.id}`);
      }
      engine = workers > 1 ? await WorkerEngine.start(workers, graph, spec, featureSpec, data, opts.backend ?? 'auto') : null;
      engine ??= new LocalEngine(model, data);
      manifest.workers = engine.workers;
      if (engine.workers > 1) info(`train: data parallel over ${engine.workers} worker threads`);
      const t = performance.now();
      const loop = await trainLoop(
        model,
        engine,
        tables,
        { epochs: opts.epochs ?? mc.epochs, batchSize, patience: mc.patience, maxSteps: mc.max_steps_per_epoch, lr: mc.lr, smoothing: validation.smoothing, deadline, checkpointDir },
        seed,
        stop,
        runDir,
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
      return { model, loop, trainingSeconds, evaluationSeconds, valPred, testPred, val: objective.metrics(tables.val.labels, valPred), test: objective.metrics(tables.test.labels, testPred) };
    } catch (e) {
      model.dispose();
      throw e;
    } finally {
      await engine?.close();
    }
  };
  if (ranking) {
    // The recommender trains on its own loop (train/ranking_trainer.ts), its item tower split over the workers, without the search.
    const model = new DeepModel(graph, specFor(variants[0]!), featureSpec, seed);
    try {
      if (init) {
        const w = loadWeights(init.dir);
        model.params.load(w.index, w.blob, { allowGrow: true });
        info(`train: fine-tuning from ${init.id}`);
      }
      return finish(await trainRankingRun(model, tables, task, mc, seed, stop, runDir, opts, manifest, split, validation, workers));
    } catch (e) {
      manifest.status = 'failed';
      manifest.error = e instanceof Error ? e.message : String(e);
      writeManifest(runDir, manifest);
      throw e;
    } finally {
      process.off('SIGINT', onSigint);
      model.dispose();
    }
  }

  let chosen: Awaited<ReturnType<typeof fit>> | null = null;
  let baselineJob: BaselineJob | null = null;
  let baselineRowCount = 0;
  try {
    // The no-graph baseline fits on a worker thread beside the epochs (and the search's variants).
    if (tables.baseline) {
      const inputs = baselineInputs(tables, task.split.baseline_max_train_examples, seed);
      baselineRowCount = inputs.train.nodes.length;
      const entity = task.query.entity.table;
      baselineJob = BaselineJob.start({ featureSpec, table: entity, inputs, kind, seed, backend: opts.backend ?? 'auto' }, graph, bindFeatures(graph, featureSpec)[entity]!);
    }
    tStage = performance.now();
    const records: SearchVariantRecord[] = [];
    const durations: number[] = [];
    const deadline = search ? tStage + search.budget_seconds * 1000 : undefined;
    let chosenIndex = -1;
    for (const v of variants) {
      const elapsed = (performance.now() - tStage) / 1000;
      const base = { name: v.name, encoder: v.encoder, layers: v.layers, sampling: v.sampling, num_neighbors: v.num_neighbors, configured: v.configured };
      if (stop.requested || (search && !fitsBudget(elapsed, durations, search.budget_seconds))) {
        records.push({ ...base, status: 'skipped', reason: stop.requested ? 'interrupted' : `budget: ${Math.round(elapsed)}s of ${search!.budget_seconds}s used, the slowest variant took ${Math.round(Math.max(...durations))}s` });
        continue;
      }
      if (search) info(`search: variant ${records.length + 1}/${variants.length} ${v.name}${v.configured ? ' (configured)' : ''}`);
      const spec = specFor(v);
      const tVariant = performance.now();
      // The configured model has no deadline: a search never ends without it.
      const r = await fit(spec, search ? join(runDir, 'variants', v.name) : runDir, v.configured ? undefined : deadline);
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
      if (search) info(`search: ${v.name}: val ${mm.name} ${mainOf(r.val).toFixed(4)}, test ${mainOf(r.test).toFixed(4)} (best epoch ${r.loop.bestEpoch})`);
      const scores = records.map((x) => (x.status === 'trained' ? x.val_score! : null));
      const pick = chooseVariant(scores);
      // A validation set with one class scores NaN: then the first variant stays, as a run without search would.
      if (pick === records.length - 1 || (chosen === null && pick < 0)) {
        chosen?.model.dispose();
        chosen = r;
        chosenIndex = records.length - 1;
        if (search) {
          // The run folder always holds the best variant so far: spec and weights agree at every moment.
          writeModelJson(runDir, 'spec.json', spec);
          saveWeights(runDir, r.model.params.serialize().index, r.loop.best);
        }
      } else {
        r.model.dispose();
      }
    }
    for (const sk of skipped) records.push({ name: sk.name, status: 'skipped', reason: sk.reason, configured: false });
    if (!chosen) throw new DataError(`task ${task.name}: no variant produced a validation score`, { hint: 'check the validation examples (their labels may be all one class)' });
    if (search) rmSync(join(runDir, 'variants'), { recursive: true, force: true });
    const { model, loop, val, test, testPred } = chosen;
    manifest.timings.training = round((performance.now() - tStage - chosen.evaluationSeconds * 1000) / 1000, 2);
    manifest.timings.evaluation = round(chosen.evaluationSeconds, 2);

    tStage = performance.now();
    let baseline: BaselineResult | null = null;
    if (baselineJob) {
      const bp = new Progress();
      const n = baselineRowCount;
      bp.begin(`baseline fit (${n.toLocaleString('en-US')}${n < tables.train.nodes.length ? ` of ${tables.train.nodes.length.toLocaleString('en-US')}` : ''} rows)`, 0);
      // At most `epochs × rows` (early stopping usually ends sooner), so the count goes without a total.
      baselineJob.listen((seen, note) => bp.update(seen, `${seen.toLocaleString('en-US')} rows seen${note ? `, ${note}` : ''}`));
      try {
        baseline = await baselineJob.result();
      } finally {
        baselineJob.listen(null);
        bp.stop();
      }
      // `baseline`: the fit's own time (beside the epochs when on a worker); `baseline_wait`: what the run waited for it after evaluation.
      manifest.timings.baseline = round(baseline.seconds, 2);
      manifest.timings.baseline_wait = round((performance.now() - tStage) / 1000, 2);
      bp.end(`baseline: no-graph MLP on ${baseline.train_rows.toLocaleString('en-US')} rows in ${baseline.seconds.toFixed(1)}s${baselineJob.onWorker ? ` (beside training; waited ${manifest.timings.baseline_wait.toFixed(1)}s)` : ''}`);
    }

    const testMain = mainOf(test);
    const baseMain = baseline ? mainOf(baseline.test) : null;
    const metrics: TrainMetrics = {
      task: task.name,
      kind,
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
      anchors: manifest.split,
      seeds: { model: seed, evaluation: EVAL_SEED },
      batch_size: batchSize,
      validation: { anchors: split.valAnchors.map(isoSeconds), examples: tables.val.nodes.length, smoothing: validation.smoothing, small: validation.small, at_val_anchor: validation.at_val_anchor, reason: validation.reason },
      search: search ? { budget_seconds: search.budget_seconds, seconds: manifest.timings.training, chosen: records[chosenIndex]!.name, variants: records } : null,
      parameters: { total: model.gnn.parameterCount(false), without_embeddings: model.gnn.parameterCount(true) },
    };
    const curves = objective.curves(tables.test.labels, testPred);
    if (curves) {
      metrics.curves = curves;
      const bc = baseline ? objective.curves(tables.test.labels, baseline.testPred) : null;
      if (bc) metrics.baseline_curves = { roc: bc.roc, pr: bc.pr };
    }
    const behind = baselineWarning(task.name, mm.name, metrics.val_lift, metrics.lift);
    if (behind) warn(behind);
    if (search) manifest.search = { chosen: metrics.search!.chosen, budget_seconds: search.budget_seconds };
    return finish(metrics);
  } catch (e) {
    manifest.status = 'failed';
    manifest.error = e instanceof Error ? e.message : String(e);
    writeManifest(runDir, manifest);
    throw e;
  } finally {
    process.off('SIGINT', onSigint);
    await baselineJob?.close();
    chosen?.model.dispose();
  }
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
  return { window: split.window, train: split.trainAnchors.map(isoSeconds), val: isoSeconds(split.valAnchor), val_anchors: split.valAnchors.map(isoSeconds), test: isoSeconds(split.testAnchor) };
}

/**
 * The split with the validation anchors the run uses (`split.val_anchors`, "auto" decided on the size of
 * the validation set at the val anchor), and the smoothing of the validation score (`model.val_smoothing`).
 */
async function validationSplit(task: TaskSpec, mc: TaskSpec['model'], range: { min: number; max: number }, graphDir: string, graph: Graph): Promise<{ split: TaskSplit; validation: ValidationPlan }> {
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

/** A ranking task's recommender settings, from its query and the graph (model/recommender.ts). */
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

/** Fits the recommender and its baselines; the metrics file of a ranking run. */
async function trainRankingRun(
  model: DeepModel,
  tables: TrainingTables,
  task: TaskSpec,
  mc: TaskSpec['model'],
  seed: number,
  stop: { requested: boolean },
  runDir: string,
  opts: TrainOptions,
  manifest: TrainManifest,
  split: TaskSplit,
  validation: ValidationPlan,
  workers: number,
): Promise<TrainMetrics> {
  const tStage = performance.now();
  const fit = await fitRanking(
    model,
    tables,
    { epochs: opts.epochs ?? mc.epochs, batchSize: mc.batch_size, patience: mc.patience, maxSteps: mc.max_steps_per_epoch, lr: mc.lr, workers, backend: opts.backend ?? 'auto' },
    seed,
    stop,
    runDir,
  );
  manifest.workers = fit.workers;
  manifest.timings.training = round((performance.now() - tStage) / 1000, 2);
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
    anchors: manifest.split,
    stopped: null,
    seeds: { model: seed, evaluation: EVAL_SEED },
    batch_size: mc.batch_size,
    validation: { anchors: split.valAnchors.map(isoSeconds), examples: tables.val.nodes.length, smoothing: validation.smoothing, small: validation.small, at_val_anchor: validation.at_val_anchor, reason: validation.reason },
    search: null,
    parameters: { total: model.gnn.parameterCount(false), without_embeddings: model.gnn.parameterCount(true) },
    baselines: fit.baselines,
    best_baseline: fit.best_baseline,
  };
  const behind = baselineWarning(task.name, 'map_at_k', metrics.val_lift, metrics.lift);
  if (behind) warn(behind.replace("the baseline uses only the entity's own columns and past-window aggregates", `the best baseline is ${fit.best_baseline}`));
  return metrics;
}

function checkTables(task: TaskSpec, t: TrainingTables, split: TaskSplit): void {
  for (const [name, ex] of Object.entries({ train: t.train, val: t.val, test: t.test })) {
    if (ex.nodes.length === 0) {
      throw new DataError(`task ${task.name} has no ${name} examples`, {
        hint: `anchors: train ${split.trainAnchors.map(isoSeconds).join(', ') || '-'}, val ${isoSeconds(split.valAnchor)}, test ${isoSeconds(split.testAnchor)}; check the WHERE filter and tasks.${task.name}.split`,
      });
    }
  }
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
