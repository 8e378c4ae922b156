/**
 * The row student (kinds `fact_row` and `entity` of the student seam, student_kind.ts): a shallow model for
 * online serving, trained on each fact row of the serving task from the row's own columns, its entities'
 * precomputed embeddings (from the base run, as of the newest snapshot the batch job would have published)
 * and its recent interactions (RTI) — Kumo's "train, then distill". An entity task (churn per customer at
 * request time) is distilled the same way with the entity as the "row": examples are the task's (entity,
 * anchor) pairs, the entity's own embedding is looked up by its key, its interactions are its own child
 * rows (`entity.pk->child.fk`), and the request time is the anchor. Reports the distilled model against the
 * teacher (same task) and the features/embedding/RTI ablations.
 */
import { round } from '../core/number.js';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { selectBackend, type BackendRequest } from '../compute/backend.js';
import type { Config, TaskSpec } from '../config/load.js';
import { isEntityHopPath, type Examples, type HopPath } from '../task/task_spec.js';
import type { DistillationConfig } from '../config/schema.js';
import { checkSchema } from '../embed/embed.js';
import { ConfigError, DataError, NotImplementedError, suggest } from '../core/errors.js';
import { buildGraph } from '../graph/build.js';
import { firstValAnchor, runFit } from '../graph/fit_until.js';
import { Graph } from '../graph/graph.js';
import { newRunId, readManifest, resolveRun } from '../artifacts/run_store.js';
import { runManifestHead } from '../artifacts/run_lifecycle.js';
import { taskSplit, targetTimeRange } from '../task/split.js';
import { DeepModel } from '../model/deep_model.js';
import { predictInChunks } from '../train/engine.js';
import { buildTrainingTables } from '../train/examples.js';
import type { BinaryMetrics, Metrics } from '../task/metrics.js';
import { objectiveFor, teacherRatio, type Curves, type ObjectiveKind } from '../task/objective/objective.js';
import type { TrainManifest } from '../train/trainer.js';
import { hashValue } from '../core/hash.js';
import { isoSeconds } from '../core/duration.js';
import { info, warn } from '../core/log.js';
import { Progress, withHeartbeat } from '../core/progress.js';
import { sharedArray } from '../core/shared_memory.js';
import { Rng } from '../core/rng.js';
import { VERSION } from '../core/version.js';
import { EmbedPool, embedWorkers } from '../embed/pool.js';
import { computedEmbeddings, embeddingFiles, entityFileEmbeddings, entityRtiElements, fileEmbeddings, rtiElements, type EntityEmbeddings } from './data.js';
import { StudentFeatures, type StudentData } from '../model/student/features.js';
import { measureLatency, type StudentMetrics, type TrainedStudent } from './student_training.js';
import { chooseStudent, STUDENT_VARIANTS, type StudentChoice, type StudentVariant } from './student_choice.js';
import { judgeLift, liftInterval, metricIntervals, type Interval } from '../task/intervals.js';
import { trainStudents, type StudentJob, type StudentOptions } from './student_pool.js';
import { studentSpec } from './student_spec.js';
import type { StudentDistillResult } from './distill_student.js';
import type { DistillManifestBase, StudentKind } from './student_kind.js';

/** The spec file of a row student's run (what export rebuilds the model from). */
export const STUDENT_SPEC_FILE = 'student.json';

/** The sampling seed of the teacher's predictions (the KD targets): `predictInChunks` seeds each chunk from it. */
const TEACHER_SEED = 1234;

export interface DistillOptions {
  cfg: Config;
  /** the base (deep) run: id, folder or latest:<task>; default latest:<distillation.base> */
  base?: string;
  /** serving task override (default distillation.task) */
  task?: string;
  /** embedding snapshots: a file, folder or glob; default: computed in memory from the base run */
  embeddings?: string;
  backend?: BackendRequest;
  epochs?: number;
  cwd?: string;
}

export interface DistillMetrics {
  task: string;
  kind: ObjectiveKind;
  base_run: string;
  base_task: string;
  val: Metrics;
  test: Metrics;
  teacher: { val: Metrics; test: Metrics } | null;
  /**
   * 95% bootstrap intervals (test rows resampled, docs/evaluation.md): every test metric of the kept student
   * and of the teacher, and the student's lift over the teacher on the main metric (paired, same rows)
   */
  intervals: { test: Record<string, Interval>; teacher_test: Record<string, Interval> | null; lift_over_teacher: Interval; lift_over_teacher_judgement: ReturnType<typeof judgeLift> | null };
  /** the student kept and exported: the full one or an ablation, whichever is best on validation (student_choice.ts); `val`, `test`, `student`, `epochs` are its */
  chosen: StudentVariant;
  chosen_reason: string;
  /** the best ablation's validation lift over the full student (95% paired bootstrap; null when the full student scored best) */
  chosen_val_lift: Interval;
  /** the full student (every input) */
  full_student: StudentMetrics;
  ablations: Record<'features_only' | 'embedding_only' | 'rti_only', StudentMetrics>;
  /** distilled test AUROC / teacher test AUROC */
  teacher_ratio: number | null;
  /** binary: the student's test average precision over the teacher's (the top of the ranking); null otherwise */
  teacher_ap_ratio: number | null;
  student: { parameters: number; bytes: number; latency_ms_p50: number; latency_ms_p99: number };
  teacher_model: { parameters: number; parameters_without_embeddings: number; bytes: number };
  embeddings: { source: 'computed' | 'files'; snapshots: string[]; coverage: { train: number; val: number; test: number } };
  /** `ablation_train`: the training rows the ablations saw (distillation.ablation_max_train_examples) */
  counts: { train: number; val: number; test: number; ablation_train: number };
  epochs: { epoch: number; loss: number; val: Metrics }[];
  best_epoch: number;
  curves?: Curves;
}

export interface DistillManifest extends DistillManifestBase {
  /** identity of what was distilled: same key → same model */
  run_key: string;
  base_run: string;
  base_task: string;
  embeddings_source: string;
}

export type DistillResult = StudentDistillResult<DistillMetrics>;

/** The serving task of a row distillation, checked: the config's `distillation` block and the task it names. */
export function servingTask(opts: Pick<DistillOptions, 'cfg' | 'task'>): { d: DistillationConfig; taskName: string; task: TaskSpec } {
  const d = opts.cfg.distillation;
  if (!d) throw new ConfigError('the config has no `distillation` block', [], { hint: 'add distillation: { task, base, embedding_keys, real_time_interactions, … } (see the README)' });
  const taskName = opts.task ?? d.task;
  const task = opts.cfg.taskSpecs[taskName];
  if (!task) throw new ConfigError(`unknown task "${taskName}"`, [], { where: '--task', hint: suggest(taskName, Object.keys(opts.cfg.taskSpecs)) });
  return { d, taskName, task };
}

/**
 * Everything the students train on, computed once: the examples (train rows restricted to the window and
 * subsampled), their RTI element lists, their as-of embeddings, the teacher's predictions and the
 * student spec. `distill` trains the main student and the ablations on it; bench/distill.mjs trains
 * variants on the same data.
 */
export async function prepareDistill(opts: DistillOptions) {
  const { cfg } = opts;
  const { d, taskName, task } = servingTask(opts);
  if (task.query.taskType === 'ranking') {
    throw new NotImplementedError(`distilling the ranking task "${taskName}": the session-aware recommender is not part of this distillation`, {
      where: opts.task ? '--task' : 'distillation.task',
      hint: 'serve its batch top-k (gnnctl predict on the ranking run), or distil a binary/regression task',
    });
  }
  if (d.early_stopping_metric && task.query.taskType !== 'binary') {
    throw new ConfigError(`distillation.early_stopping_metric: ${d.early_stopping_metric} is a binary-classification metric, and task "${taskName}" is ${task.query.taskType}`, [], {
      where: 'distillation.early_stopping_metric',
      hint: 'remove it (the task\'s main metric picks the epoch)',
    });
  }
  const backend = await selectBackend(opts.backend ?? 'auto');
  const baseRef = opts.base ?? `latest:${d.base}`;
  const base = resolveRun(cfg.artifactsDir, baseRef, { kind: 'train', cwd: opts.cwd });
  const baseManifest = readManifest<TrainManifest>(base.dir);

  // The base run's own graph (its fit_until): a graph fitted earlier would read some of the values in the
  // teacher's vocabularies as out-of-vocabulary, so its embeddings would not be the ones embed serves.
  const built = await buildGraph(cfg, { fit: runFit(base.dir, baseManifest) });
  const graph = Graph.load(built.dir);
  const ownCut = firstValAnchor(task, graph.manifest.tables);
  if (ownCut !== null && graph.manifest.fit_until !== null && graph.manifest.fit_until > ownCut) {
    warn(`distill ${taskName}: the base run ${base.id} fitted its statistics up to ${isoSeconds(graph.manifest.fit_until)}, after this task's first validation anchor ${isoSeconds(ownCut)}, and the student standardises with them; distil from a base run of a task with the same cut-off (or set data.fit_until) to keep them out of the validation period`);
  }
  checkSchema(base, baseManifest, graph);
  const split = taskSplit(task, targetTimeRange(task, graph.manifest.tables));
  const seed = cfg.seed;
  // Two minutes of DuckDB at `large` with the RTI tables below: heartbeats, so a --json log is not silent.
  const tables = await withHeartbeat(`distill ${taskName}: training tables`, () => buildTrainingTables(built.dir, graph.manifest, task, split, { seed }));
  tables.train = restrictTrain(tables.train, split.valAnchor - d.train_window, d.max_train_examples, seed);
  for (const [k, ex] of Object.entries({ train: tables.train, val: tables.val, test: tables.test })) {
    if (ex.nodes.length === 0) throw new DataError(`task ${taskName} has no ${k} rows for distillation`, { hint: 'check distillation.train_window and the task split' });
  }
  info(`distill: ${tables.train.nodes.length} train / ${tables.val.nodes.length} val / ${tables.test.nodes.length} test rows; base run ${base.id}`);

  const teacherModel = DeepModel.load(base.dir, graph);
  const spec = studentSpec(d, task, cfg.hopPaths, graph, teacherModel);
  spec.output = objectiveFor(spec.output.kind).fitOutput(tables.train.labels);
  const all = concatExamples([tables.train, tables.val, tables.test]);
  const ranges = { train: [0, tables.train.nodes.length], val: [tables.train.nodes.length, tables.train.nodes.length + tables.val.nodes.length], test: [tables.train.nodes.length + tables.val.nodes.length, all.nodes.length] } as const;

  // Data: RTI element lists and embeddings per example, in the concatenated example order.
  let t = performance.now();
  const rti = await withHeartbeat(`distill ${taskName}: RTI element lists`, (p) => rtiLists(graph, cfg.hopPaths, all, d.real_time_offset, p));
  const timings: Record<string, number> = { rti: secs(t) };
  t = performance.now();
  const cadence = d.embedding_cadence ?? defaultCadence(d.min_embedding_offset, d.max_embedding_offset);
  const embeddings: EntityEmbeddings[] = [];
  // Both cores: the teacher's weights on embed workers, started once for the as-of embeddings of every key and the teacher's predictions.
  let pool: EmbedPool | null = null;
  const workers = embedWorkers('auto', backend.name);
  const teacherPool = async (): Promise<EmbedPool | null> => (pool ??= workers > 1 ? await EmbedPool.start(workers, teacherModel, opts.backend ?? 'auto') : null);
  const kind = task.query.taskType;
  const objective = objectiveFor(kind);
  const sameTask = baseManifest.task === taskName;
  let teacherPred: Float32Array | null = null;
  try {
    for (const k of spec.embeddings) {
      // An entity task's own key: the example's entity is the embedded one.
      const own = k.target === spec.fact_table && k.column === spec.primary_key?.column;
      const parents = own ? null : graph.edges.find((e) => e.kind === 'fk' && e.src === spec.fact_table && e.meta.column === k.column)!.parent!;
      const exParents = parents ? Int32Array.from(all.nodes, (v) => parents[v]!) : all.nodes;
      if (opts.embeddings && own) {
        // An entity task's own key: the example's (entity, anchor) reads the snapshot as of its anchor.
        embeddings.push(await entityFileEmbeddings(graph, embeddingFiles(opts.embeddings), k.target, k.column, all.nodes, all.anchors, { min: d.min_embedding_offset, max: d.max_embedding_offset }, k.dim));
      } else if (opts.embeddings && task.query.target.kind === 'entity') {
        throw new NotImplementedError(`--embeddings with the entity task "${taskName}" and the foreign key ${spec.fact_table}.${k.column}: snapshot files are read for the entity's own key only`, {
          where: 'distillation.embedding_keys',
          hint: `leave --embeddings out (the base run computes the as-of embeddings), or use only ${spec.fact_table}.${spec.primary_key?.column ?? '<key>'}`,
        });
      } else if (opts.embeddings) {
        const files = embeddingFiles(opts.embeddings);
        const targetKey = graph.manifest.schema.tables[k.target]!.primary_key!.column;
        embeddings.push(await embeddingsForExamples(graph, files, spec.fact_table, k.column, targetKey, all, { min: d.min_embedding_offset, max: d.max_embedding_offset }, k.dim));
      } else {
        const pool = await teacherPool();
        embeddings.push(
          await computedEmbeddings(teacherModel, exParents, all.anchors, k.target, { min: d.min_embedding_offset, max: d.max_embedding_offset, cadence }, baseManifestCap(cfg, baseManifest), { progress: new Progress(), pool }),
        );
      }
    }
    timings.embeddings = secs(t);

    // Teacher predictions (the KD target, and the teacher's own test metric) when it was trained on this task:
    // 2.7M examples at `large`, so over the workers and with a progress line.
    if (sameTask) {
      t = performance.now();
      const pool = await teacherPool();
      const progress = new Progress();
      progress.begin('teacher predictions', all.nodes.length);
      const onProgress = (done: number) => progress.update(done);
      let raw: Float32Array;
      try {
        raw = pool ? await pool.predictRaw(all, TEACHER_SEED, onProgress) : await predictInChunks(teacherModel, all, TEACHER_SEED, onProgress);
      } finally {
        progress.stop();
      }
      progress.end(`teacher predictions: ${all.nodes.length.toLocaleString('en-US')} examples`);
      teacherPred = teacherModel.toOutput(raw);
      timings.teacher = secs(t);
    }
  } finally {
    await (pool as EmbedPool | null)?.close();
  }
  const data: StudentData = { nodes: all.nodes, anchors: all.anchors, embeddings, rti };
  const features = new StudentFeatures(graph, spec);
  return { d, cfg, taskName, task, backend, base, baseManifest, built, graph, split, seed, tables, teacherModel, spec, all, ranges, embeddings, data, kind, objective, sameTask, teacherPred, features, labels: all.labels, timings };
}

export type PreparedDistill = Awaited<ReturnType<typeof prepareDistill>>;

/**
 * The row student as a kind of the student seam: `fact_row` (a prediction per fact row at its own time) or
 * `entity` (a prediction per entity at the request's anchor). One implementation serves both: what differs
 * — an entity's own key and its interactions as the example's, the anchor as its time — follows from the
 * task's hop paths and embedding keys inside `prepareDistill`.
 */
export function rowStudentKind(name: 'fact_row' | 'entity'): StudentKind<DistillOptions, PreparedDistill, DistillStudents, DistillMetrics> {
  return {
    name,
    specFile: STUDENT_SPEC_FILE,
    prepare: prepareDistill,
    manifest: rowRunManifest,
    train: trainDistillStudents,
    main: (s) => s.kept,
    metrics: distillMetrics,
    headline: (m) => ({ chosen: m.chosen, test: m.test, teacher_test: m.teacher?.test ?? null, ablations_test: Object.fromEntries(Object.entries(m.ablations).map(([k, v]) => [k, v.test])) }),
    disposeStudents: (s) => s.kept.model.dispose(),
    release: (p) => p.teacherModel.dispose(),
  };
}

/** The kind of row student a task makes: `entity` for a task with one prediction per entity, `fact_row` otherwise. */
export function rowKindFor(opts: Pick<DistillOptions, 'cfg' | 'task'>): 'fact_row' | 'entity' {
  return servingTask(opts).task.query.target.kind === 'entity' ? 'entity' : 'fact_row';
}

/** The distill run's `running` manifest (its timings fill in as the stages end). */
function rowRunManifest(p: PreparedDistill, opts: DistillOptions, startedAt: string): DistillManifest {
  const { d, cfg, taskName, task, backend, base, baseManifest, built, graph, split, seed } = p;
  return {
    ...runManifestHead({
      kind: 'distill',
      id: newRunId(`${taskName}-distilled`),
      task: taskName,
      created_at: startedAt,
      graph_dir: built.dir,
      graph: graph.manifest,
      backend: backend.name,
      seed,
      config: { name: cfg.name, path: cfg.path, distillation: d, task: { query: task.query.text, split: task.split } },
      timings: p.timings,
    }),
    base_run: base.id,
    base_task: baseManifest.task,
    run_key: distillRunKey(cfg, d, taskName, base.id, graph.manifest.fingerprint, opts),
    embeddings_source: opts.embeddings ?? 'computed',
    split: { val: isoSeconds(split.valAnchor), test: isoSeconds(split.testAnchor), train_from: isoSeconds(split.valAnchor - d.train_window) },
  };
}

/** The main student and the three input ablations, trained side by side, and the one the run keeps. */
interface DistillStudents {
  /** the student best on validation (the full one or an ablation): its weights and spec are the run's */
  kept: TrainedStudent;
  choice: StudentChoice;
  full: StudentMetrics;
  ablations: DistillMetrics['ablations'];
  /** the rows the ablations trained on (undefined: all training rows) */
  ablationRows: Int32Array | undefined;
}

/** Trains the main student and the ablations (features only, embedding only, RTI only) over the worker threads. */
async function trainDistillStudents(p: PreparedDistill, opts: DistillOptions): Promise<DistillStudents> {
  const { d, backend, graph, seed, spec, ranges, data, kind, objective, sameTask, teacherPred, labels, timings } = p;
  const t = performance.now();
  const epochs = opts.epochs ?? d.epochs;
  const ablationEpochs = Math.max(1, Math.ceil(epochs * 0.67));
  // The ablations say what each input contributes; on a sample of the rows they say it at a fraction of
  // the cost (on all rows, 185 s of a 306 s medium run). Same sample for all three, so they compare.
  const ablationRows = sampleRange(ranges.train, d.ablation_max_train_examples, seed);
  const jobs: StudentJob[] = [
    { name: 'student', variant: {}, epochs, kdWeight: sameTask && objective.softTargets ? d.kd_weight : 0 },
    { name: 'features_only', variant: { use_embeddings: false, use_rti: false }, epochs: ablationEpochs, kdWeight: 0, trainRows: ablationRows },
    { name: 'embedding_only', variant: { use_rti: false }, epochs: ablationEpochs, kdWeight: 0, trainRows: ablationRows },
    { name: 'rti_only', variant: { use_embeddings: false }, epochs: ablationEpochs, kdWeight: 0, trainRows: ablationRows },
  ];
  const options: StudentOptions = {
    batchSize: d.batch_size,
    lr: d.lr,
    patience: d.patience,
    dropout: d.dropout,
    seed,
    kdTemperature: d.kd_temperature,
    positiveWeight: objective.softTargets ? d.positive_weight : 1,
    emaEpochs: d.ema_epochs,
    selectBy: d.early_stopping_metric,
  };
  // Both cores: the students on worker threads, as many as the embed pool would use (2 on wasm with 2+ cores).
  const trained = await trainStudents(
    { graph, spec, data, labels, ranges, objective: kind, teacher: teacherPred, options, backend: opts.backend ?? 'auto' },
    jobs,
    embedWorkers('auto', backend.name),
  );
  const byVariant = Object.fromEntries(STUDENT_VARIANTS.map((v, i) => [v, trained[i]!])) as Record<StudentVariant, TrainedStudent>;
  const choice = chooseKept(p, byVariant);
  info(`distill: keeping ${choice.chosen} (${choice.reason})`);
  const kept = byVariant[choice.chosen];
  for (const s of trained) if (s !== kept) s.model.dispose();
  const summary = (s: TrainedStudent): StudentMetrics => ({ val: s.val, test: s.test, best_epoch: s.bestEpoch });
  const rest = trained.slice(1);
  // `students` is their wall time together; `student` and `ablations` each one's own training time
  // (side by side on two threads, they add up to more than `students`).
  timings.students = secs(t);
  timings.student = byVariant.student.seconds;
  timings.ablations = round(rest.reduce((a, r) => a + r.seconds, 0), 1);
  return {
    kept,
    choice,
    full: summary(byVariant.student),
    ablations: { features_only: summary(byVariant.features_only), embedding_only: summary(byVariant.embedding_only), rti_only: summary(byVariant.rti_only) },
    ablationRows,
  };
}

/** The variant the run keeps (student_choice.ts), judged on the selection metric: `early_stopping_metric`, else the task's main metric. */
function chooseKept(p: PreparedDistill, byVariant: Record<StudentVariant, TrainedStudent>): StudentChoice {
  const { d, objective, kind, labels, ranges, seed } = p;
  const selectBy = d.early_stopping_metric;
  const metric = selectBy ? { name: selectBy, higherIsBetter: true } : objective.mainMetric;
  const score = (m: Metrics): number => (selectBy ? (m as BinaryMetrics)[selectBy] : objective.score(m));
  const scores = Object.fromEntries(STUDENT_VARIANTS.map((v) => [v, score(byVariant[v].val)])) as Record<StudentVariant, number>;
  const valLabels = labels.subarray(ranges.val[0], ranges.val[1]);
  return chooseStudent(scores, metric.name, (v) => liftInterval(kind, metric, valLabels, byVariant[v].valPred, byVariant.student.valPred, { seed }));
}

/** metrics.json of a distill run: the student beside the teacher and the ablations, its size and latency, the embeddings' coverage. */
function distillMetrics(p: PreparedDistill, opts: DistillOptions, students: DistillStudents, studentBytes: number): DistillMetrics {
  const { taskName, base, baseManifest, tables, teacherModel, ranges, embeddings, data, kind, objective, teacherPred, features, labels, seed } = p;
  const { kept: main, ablations, ablationRows, choice, full } = students;
  const testLabels = labels.subarray(ranges.test[0], ranges.test[1]);
  const evaluate = (l: Float32Array, pred: Float32Array): Metrics => objective.metrics(l, pred);
  const teacher = teacherPred
    ? {
        val: evaluate(labels.subarray(ranges.val[0], ranges.val[1]), teacherPred.subarray(ranges.val[0], ranges.val[1])),
        test: evaluate(testLabels, teacherPred.subarray(ranges.test[0], ranges.test[1])),
      }
    : null;
  const teacherTestPred = teacherPred?.subarray(ranges.test[0], ranges.test[1]);
  const liftOverTeacher = teacherTestPred ? liftInterval(kind, objective.mainMetric, testLabels, main.testPred, teacherTestPred, { seed }) : null;
  const intervals = {
    test: metricIntervals(kind, testLabels, main.testPred, { seed }),
    teacher_test: teacherTestPred ? metricIntervals(kind, testLabels, teacherTestPred, { seed }) : null,
    lift_over_teacher: liftOverTeacher,
    lift_over_teacher_judgement: teacherTestPred ? judgeLift(liftOverTeacher) : null,
  };
  const latency = measureLatency(main.model, features, data, ranges.test[0]);
  const teacherBytes = statSync(join(base.dir, 'model', 'weights.bin')).size;
  const metrics: DistillMetrics = {
    task: taskName,
    kind,
    base_run: base.id,
    base_task: baseManifest.task,
    val: main.val,
    test: main.test,
    teacher,
    intervals,
    chosen: choice.chosen,
    chosen_reason: choice.reason,
    chosen_val_lift: choice.val_lift,
    full_student: full,
    ablations,
    teacher_ratio: teacher ? round(teacherRatio(objective, main.test, teacher.test), 4) : null,
    teacher_ap_ratio: teacher && 'ap' in main.test && 'ap' in teacher.test ? round(main.test.ap / teacher.test.ap, 4) : null,
    student: { parameters: main.model.parameterCount(), bytes: studentBytes, latency_ms_p50: latency.p50, latency_ms_p99: latency.p99 },
    teacher_model: { parameters: teacherModel.gnn.parameterCount(false), parameters_without_embeddings: teacherModel.gnn.parameterCount(true), bytes: teacherBytes },
    embeddings: {
      source: opts.embeddings ? 'files' : 'computed',
      snapshots: [...new Set(embeddings.flatMap((e) => e.anchors))].sort((a, b) => a - b).map(isoSeconds),
      // Share of examples with a usable snapshot, averaged over the embedding keys.
      coverage: Object.fromEntries(
        (['train', 'val', 'test'] as const).map((k) => [
          k,
          round(embeddings.length ? embeddings.reduce((a, e) => a + 1 - mean(e.missing.subarray(ranges[k][0], ranges[k][1])), 0) / embeddings.length : 0, 4),
        ]),
      ) as DistillMetrics['embeddings']['coverage'],
    },
    counts: { train: tables.train.nodes.length, val: tables.val.nodes.length, test: tables.test.nodes.length, ablation_train: ablationRows ? ablationRows.length : tables.train.nodes.length },
    epochs: main.epochs,
    best_epoch: main.bestEpoch,
  };
  const curves = objective.curves(testLabels, main.testPred);
  if (curves) metrics.curves = curves;
  return metrics;
}

export function distillRunKey(cfg: Config, d: DistillationConfig, task: string, baseRun: string, dataFingerprint: string, opts: Pick<DistillOptions, 'embeddings' | 'epochs'>): string {
  return hashValue({ v: VERSION, d, task, baseRun, data: dataFingerprint, seed: cfg.seed, embeddings: opts.embeddings ?? null, epochs: opts.epochs ?? null, hops: cfg.hopPaths });
}

function baseManifestCap(cfg: Config, m: TrainManifest): number {
  return cfg.taskSpecs[m.task]?.model.exact_degree_cap ?? 1000;
}

/** Grid spacing of computed snapshots: at most a week, at most half the usable age range, whole days when ≥ 1 day. */
export function defaultCadence(minOffset: number, maxOffset: number): number {
  const c = Math.min(7 * 86400, (maxOffset - minOffset) / 2);
  return c >= 86400 ? Math.floor(c / 86400) * 86400 : Math.max(60, Math.floor(c / 60) * 60);
}

function restrictTrain(ex: Examples, from: number, max: number | undefined, seed: number): Examples {
  let idx = Array.from({ length: ex.nodes.length }, (_, i) => i).filter((i) => ex.anchors[i]! > from);
  if (max && idx.length > max) {
    const rng = new Rng(seed ^ 0xd157);
    idx = Array.from(rng.shuffle(Uint32Array.from(idx)).subarray(0, max)).sort((a, b) => a - b);
  }
  return { nodes: Int32Array.from(idx, (i) => ex.nodes[i]!), anchors: Float64Array.from(idx, (i) => ex.anchors[i]!), labels: Float32Array.from(idx, (i) => ex.labels[i]!) };
}

/** A seeded sample (sorted) of at most `max` rows of [lo, hi); undefined when the range is not larger. */
function sampleRange([lo, hi]: readonly [number, number], max: number | undefined, seed: number): Int32Array | undefined {
  if (!max || hi - lo <= max) return undefined;
  const rng = new Rng(seed ^ 0xab1a);
  return rng.shuffle(Int32Array.from({ length: hi - lo }, (_, i) => lo + i)).subarray(0, max).sort();
}

function concatExamples(parts: Examples[]): Examples {
  const n = parts.reduce((a, p) => a + p.nodes.length, 0);
  const out: Examples = { nodes: sharedArray(Int32Array, n), anchors: sharedArray(Float64Array, n), labels: sharedArray(Float32Array, n) };
  let o = 0;
  for (const p of parts) {
    out.nodes.set(p.nodes, o);
    out.anchors.set(p.anchors, o);
    out.labels.set(p.labels, o);
    o += p.nodes.length;
  }
  return out;
}

/** Every example's RTI element list per hop path: an entity's own child rows, or a fact row's hop. */
async function rtiLists(graph: Graph, hops: HopPath[], all: Examples, offset: number, p: { step(what: string): void }): Promise<Int32Array[]> {
  const lists: Int32Array[] = [];
  for (const hop of hops) {
    p.step(hop.text);
    lists.push(isEntityHopPath(hop) ? entityRtiElements(graph, hop, all.nodes, all.anchors, offset) : await rtiForExamples(graph, hop, all.nodes, offset));
  }
  return lists;
}

/** RTI lists for examples in any order (the DuckDB pass wants them sorted). */
async function rtiForExamples(graph: Graph, hop: HopPath, nodes: Int32Array, offset: number): Promise<Int32Array> {
  const order = Int32Array.from({ length: nodes.length }, (_, i) => i).sort((a, b) => nodes[a]! - nodes[b]!);
  const sorted = Int32Array.from(order, (i) => nodes[i]!);
  const lists = await rtiElements(graph, hop, sorted, offset);
  const N = hop.max_length;
  const out = sharedArray(Int32Array, lists.length);
  order.forEach((orig, k) => out.set(lists.subarray(k * N, (k + 1) * N), orig * N));
  return out;
}

async function embeddingsForExamples(
  graph: Graph,
  files: string[],
  factTable: string,
  keyColumn: string,
  targetKey: string,
  all: Examples,
  offsets: { min: number; max: number },
  dim: number,
): Promise<EntityEmbeddings> {
  const order = Int32Array.from({ length: all.nodes.length }, (_, i) => i).sort((a, b) => all.nodes[a]! - all.nodes[b]!);
  const sorted = Int32Array.from(order, (i) => all.nodes[i]!);
  const e = await fileEmbeddings(graph, files, factTable, keyColumn, targetKey, sorted, offsets, dim);
  const values = sharedArray(Float32Array, e.values.length);
  const missing = new Float32Array(e.missing.length);
  order.forEach((orig, k) => {
    values.set(e.values.subarray(k * dim, (k + 1) * dim), orig * dim);
    missing[orig] = e.missing[k]!;
  });
  return { values, missing, anchors: e.anchors };
}

function mean(a: Float32Array): number {
  let s = 0;
  for (const v of a) s += v;
  return a.length ? s / a.length : 0;
}

function secs(t: number): number {
  return Math.round((performance.now() - t) / 10) / 100;
}

