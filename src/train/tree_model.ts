/**
 * The tree candidates of a task: gradient-boosted trees on the entity's own columns plus relational
 * aggregates (train/tree_features.ts) — the "GBDT" of `model.kind` — and the same trees with the GNN's
 * embedding of each example at its anchor appended (the "hybrid", RelBench's "GNN + LightGBM"). Both are
 * fitted with early stopping on the validation split and scored by the task's objective. The trainer calls
 * `fitTreeCandidate`; `trainTreeModel` is the stand-alone stage (its own training tables).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TaskSpec } from '../config/load.js';
import { NotImplementedError } from '../core/errors.js';
import type { GraphManifest } from '../artifacts/graph_manifest.js';
import type { AggregateOptions, AggregatePlan } from '../graph/aggregates.js';
import { GbdtModel, type FeatureKind, type GbdtModelJSON, type GbdtParams } from '../model/gbdt/index.js';
import { objectiveFor } from '../task/objective/objective.js';
import type { Metrics } from '../task/metrics.js';
import type { TaskSplit } from '../task/split.js';
import type { Examples } from '../task/task_spec.js';
import { buildTrainingTables } from './examples.js';
import { computeTreeFeatures, featureKinds, featureNames, treeFeatureSpec, type TreeFeatureSpec } from './tree_features.js';

export type Splits<T> = { train: T; val: T; test: T };

/** What `model/tree_model.json` of a run holds: enough to score any (anchor, entity) again. */
export interface TreeModelFile {
  kind: 'gbdt' | 'hybrid';
  features: TreeFeatureSpec;
  /** hybrid: the GNN embedding's width, appended after the features (0 for gbdt) */
  embedding_dim: number;
  model: GbdtModelJSON;
}

export interface TreeCandidateInput {
  task: TaskSpec;
  kind: 'gbdt' | 'hybrid';
  spec: TreeFeatureSpec;
  labels: Splits<Float32Array | ArrayLike<number>>;
  /** `computeTreeFeatures` of the three splits */
  features: Splits<Float64Array[]>;
  /** hybrid: each example's GNN embedding, [rows × dim] row-major */
  embeddings?: Splits<Float32Array> & { dim: number };
  seed: number;
  gbdt?: Partial<GbdtParams>;
}

export interface TreeCandidate {
  file: TreeModelFile;
  model: GbdtModel;
  valPred: Float64Array;
  testPred: Float64Array;
  val: Metrics;
  test: Metrics;
  seconds: number;
}

/** The model's columns: the tree features, then (hybrid) one column per embedding channel. */
export function treeInputs(features: Float64Array[], embeddings: Float32Array | null, dim: number, rows: number): { rows: number; columns: Float64Array[] } {
  const columns = [...features];
  for (let j = 0; j < dim; j++) columns.push(Float64Array.from({ length: rows }, (_, i) => embeddings![i * dim + j]!));
  return { rows, columns };
}

/** Fits one tree candidate on prepared features and scores it on validation and test. */
export function fitTreeCandidate(input: TreeCandidateInput): TreeCandidate {
  const t0 = performance.now();
  const kind = input.task.query.taskType;
  if (kind === 'ranking') throw new NotImplementedError('tree models for ranking tasks are not implemented', { where: `tasks.${input.task.name}`, hint: 'train the GNN recommender for ranking tasks' });
  const dim = input.kind === 'hybrid' ? input.embeddings!.dim : 0;
  const data = (s: keyof Splits<unknown>) => treeInputs(input.features[s], input.embeddings?.[s] ?? null, dim, input.labels[s].length);
  const train = data('train');
  const val = data('val');
  const test = data('test');
  const names = [...featureNames(input.spec), ...Array.from({ length: dim }, (_, j) => `gnn.embedding[${j}]`)];
  const kinds = [...featureKinds(input.spec), ...Array.from({ length: dim }, (): FeatureKind => 'numeric')];
  const model = GbdtModel.fit(
    { train, y: input.labels.train, valid: { data: val, y: input.labels.val }, kinds, names },
    // Regression is judged by MAE, so the trees fit L1 like the GNN's default loss (L2 when model.loss is mse).
    { threads: 2, seed: input.seed, ...input.gbdt, loss: kind === 'binary' ? 'binary' : input.task.model.loss === 'mse' ? 'l2' : 'l1' },
  );
  const objective = objectiveFor(kind);
  const valPred = model.predict(val);
  const testPred = model.predict(test);
  return {
    file: { kind: input.kind, features: input.spec, embedding_dim: dim, model: model.toJSON() },
    model,
    valPred,
    testPred,
    val: objective.metrics(input.labels.val, valPred),
    test: objective.metrics(input.labels.test, testPred),
    seconds: (performance.now() - t0) / 1000,
  };
}

export interface TreeModelInput {
  graphDir: string;
  manifest: GraphManifest;
  task: TaskSpec;
  split: TaskSplit;
  seed?: number;
  /** GBDT parameters; the loss follows the task (binary → `binary`, regression → `l1`, `l2` with model.loss mse). Default threads 2. */
  gbdt?: Partial<GbdtParams>;
  /** Aggregate options (`max` is `features.max`). */
  features?: AggregateOptions;
}

export interface TreeModelResult {
  model: GbdtModel;
  plan: AggregatePlan;
  /** own columns (`<table>.<column>`) then the aggregates' names, in the model's feature order */
  feature_names: string[];
  examples: { train: number; val: number; test: number };
  metrics: { val: Metrics; test: Metrics };
  main_metric: { name: string; higher_is_better: boolean; val: number; test: number };
  seconds: { features: number; fit: number };
}

/** The GBDT candidate as a stand-alone stage: its own training tables, features and fit. */
export async function trainTreeModel(input: TreeModelInput): Promise<TreeModelResult> {
  const { graphDir, manifest, task, split } = input;
  if (task.query.taskType === 'ranking') throw new NotImplementedError('tree models for ranking tasks are not implemented', { where: `tasks.${task.name}`, hint: 'train the GNN recommender for ranking tasks' });
  const t0 = performance.now();
  const tables = await buildTrainingTables(graphDir, manifest, task, split, { seed: input.seed ?? 0 });
  const spec = treeFeatureSpec(manifest, task, input.features);
  const sets: Examples[] = [tables.train, tables.val, tables.test];
  const [train, val, test] = await computeTreeFeatures(graphDir, manifest, spec, sets);
  const tFeatures = performance.now();
  const c = fitTreeCandidate({
    task,
    kind: 'gbdt',
    spec,
    labels: { train: tables.train.labels, val: tables.val.labels, test: tables.test.labels },
    features: { train: train!, val: val!, test: test! },
    seed: input.seed ?? 0,
    gbdt: input.gbdt,
  });
  const objective = objectiveFor(task.query.taskType);
  const main = objective.mainMetric.name as keyof Metrics;
  return {
    model: c.model,
    plan: spec.plan,
    feature_names: featureNames(spec),
    examples: { train: tables.train.nodes.length, val: tables.val.nodes.length, test: tables.test.nodes.length },
    metrics: { val: c.val, test: c.test },
    main_metric: { name: objective.mainMetric.name, higher_is_better: objective.mainMetric.higherIsBetter, val: c.val[main] as number, test: c.test[main] as number },
    seconds: { features: (tFeatures - t0) / 1000, fit: (performance.now() - tFeatures) / 1000 },
  };
}

/**
 * A saved tree model's predictions for example rows: the features recomputed on `graphDir` (rows dated
 * before each anchor only), the embeddings (hybrid) supplied by the caller in the same row order.
 */
export async function predictTreeModel(file: TreeModelFile, graphDir: string, manifest: GraphManifest, rows: { anchors: ArrayLike<number>; nodes: ArrayLike<number> }, embeddings: Float32Array | null): Promise<Float64Array> {
  const model = GbdtModel.fromJSON(file.model);
  const [features] = await computeTreeFeatures(graphDir, manifest, file.features, [rows]);
  if (file.embedding_dim > 0 && (!embeddings || embeddings.length !== rows.nodes.length * file.embedding_dim)) {
    throw new Error(`the hybrid tree model needs ${file.embedding_dim} embedding values per row`);
  }
  return model.predict(treeInputs(features!, embeddings, file.embedding_dim, rows.nodes.length));
}

/**
 * The run's tree model when training chose it over the GNN (`chosen` in metrics.json is `gbdt` or
 * `hybrid`), else null.
 */
export function chosenTreeModel(runDir: string): TreeModelFile | null {
  const metricsPath = join(runDir, 'metrics.json');
  if (!existsSync(metricsPath)) return null;
  const chosen = (JSON.parse(readFileSync(metricsPath, 'utf8')) as { chosen?: string }).chosen;
  if (chosen !== 'gbdt' && chosen !== 'hybrid') return null;
  return JSON.parse(readFileSync(join(runDir, 'model', 'tree_model.json'), 'utf8')) as TreeModelFile;
}
