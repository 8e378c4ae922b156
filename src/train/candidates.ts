/**
 * `model.kind` for binary and regression tasks: beside the trained GNN, the tree candidates
 * (train/tree_model.ts) on the same training, validation and test examples, every candidate's validation
 * and test figures with 95% bootstrap intervals, and the choice (train/model_choice.ts). The chosen tree
 * model is saved as `model/tree_model.json`; the GNN's weights stay in the run whatever is chosen, since
 * embeddings, distillation and the hybrid's inputs come from it.
 */
import type { TaskSpec } from '../config/load.js';
import { round } from '../core/number.js';
import { info } from '../core/log.js';
import { Progress } from '../core/progress.js';
import { Rng } from '../core/rng.js';
import { writeModelJson } from '../artifacts/run_store.js';
import type { GraphManifest } from '../artifacts/graph_manifest.js';
import { SAMPLED_BATCH, type DeepModel } from '../model/deep_model.js';
import { Scratch } from '../model/scratch.js';
import { metricIntervals, type Interval } from '../task/intervals.js';
import type { Metrics } from '../task/metrics.js';
import { objectiveFor } from '../task/objective/objective.js';
import type { Examples } from '../task/task_spec.js';
import { chunkSeed } from './engine.js';
import type { TrainingTables } from './examples.js';
import { chooseModel, type CandidateKind } from './model_choice.js';
import { fitTreeCandidate, type TreeCandidate } from './tree_model.js';
import { computeTreeFeatures, treeFeatureSpec } from './tree_features.js';

export type ModelKindSetting = 'auto' | 'gnn' | 'gbdt' | 'hybrid';

/** One candidate as metrics.json records it. */
export interface CandidateRecord {
  status: 'trained' | 'skipped';
  /** skipped: why */
  reason?: string;
  val?: Metrics;
  test?: Metrics;
  /** 95% bootstrap intervals of every validation / test metric */
  val_intervals?: Record<string, Interval>;
  test_intervals?: Record<string, Interval>;
  /** fitting time (the GNN: its training; the trees: their fit, without the shared feature computation) */
  seconds?: number;
  /** trees: rounds kept by early stopping and the input count */
  trees?: number;
  features?: number;
}

/** The `model_choice` block of metrics.json. */
export interface ModelChoiceRecord {
  /** `model.kind` as configured ('gnn' when --skip-baseline trained the GNN alone) */
  setting: ModelKindSetting;
  candidates: Record<CandidateKind, CandidateRecord>;
  /** the best on validation by the point score, before the tie rule */
  best: CandidateKind;
  /** 95% interval of the best's validation lift over each other candidate */
  val_lift_vs_best: Partial<Record<CandidateKind, Interval>>;
  /** the relational aggregates (and own columns) the trees read, and how long computing them took */
  tree_features: { own: number; aggregates: number; candidates: number; seconds: number } | null;
}

export interface CandidatesInput {
  graphDir: string;
  manifest: GraphManifest;
  task: TaskSpec;
  setting: ModelKindSetting;
  tables: TrainingTables;
  gnn: { model: DeepModel; valPred: Float32Array; testPred: Float32Array; val: Metrics; test: Metrics; seconds: number };
  seed: number;
  evalSeed: number;
  runDir: string;
  stopped: () => boolean;
}

export interface CandidatesResult {
  record: ModelChoiceRecord;
  chosen: CandidateKind;
  chosen_reason: string;
}

/** Trains the candidates `setting` asks for beside the GNN, records all three and chooses. */
export async function trainCandidates(input: CandidatesInput): Promise<CandidatesResult> {
  const { task, tables, setting, gnn } = input;
  const objective = objectiveFor(task.query.taskType);
  const kind = objective.kind;
  const want = (k: 'gbdt' | 'hybrid') => setting === 'auto' || setting === k;
  const intervals = (labels: Float32Array, pred: ArrayLike<number>) => metricIntervals(kind, labels, pred, { seed: input.evalSeed });
  const candidates = {
    gnn: { status: 'trained', val: gnn.val, test: gnn.test, val_intervals: intervals(tables.val.labels, gnn.valPred), test_intervals: intervals(tables.test.labels, gnn.testPred), seconds: round(gnn.seconds, 2) },
    gbdt: { status: 'skipped', reason: `model.kind is ${setting}` },
    hybrid: { status: 'skipped', reason: `model.kind is ${setting}` },
  } as Record<CandidateKind, CandidateRecord>;
  const fitted: Partial<Record<'gbdt' | 'hybrid', TreeCandidate>> = {};
  let treeFeatures: ModelChoiceRecord['tree_features'] = null;
  const spec = setting !== 'gnn' ? treeFeatureSpec(input.manifest, task) : null;
  if (spec && !input.stopped()) {
    const t = performance.now();
    const progress = new Progress();
    progress.begin(`tree features: ${spec.own.length} own columns + ${spec.plan.features.length} aggregates`, 0);
    const [train, val, test] = await computeTreeFeatures(input.graphDir, input.manifest, spec, [tables.train, tables.val, tables.test]);
    const features = { train: train!, val: val!, test: test! };
    const seconds = (performance.now() - t) / 1000;
    progress.end(`tree features: ${spec.own.length} own columns + ${spec.plan.features.length} of ${spec.plan.candidates} aggregates for ${(tables.train.nodes.length + tables.val.nodes.length + tables.test.nodes.length).toLocaleString('en-US')} examples in ${seconds.toFixed(1)}s`);
    treeFeatures = { own: spec.own.length, aggregates: spec.plan.features.length, candidates: spec.plan.candidates, seconds: round(seconds, 2) };
    const labels = { train: tables.train.labels, val: tables.val.labels, test: tables.test.labels };
    for (const k of ['gbdt', 'hybrid'] as const) {
      if (!want(k)) continue;
      if (input.stopped()) {
        candidates[k] = { status: 'skipped', reason: 'interrupted' };
        continue;
      }
      const embeddings = k === 'hybrid' ? { train: exampleEmbeddings(gnn.model, tables.train, input.evalSeed), val: exampleEmbeddings(gnn.model, tables.val, input.evalSeed), test: exampleEmbeddings(gnn.model, tables.test, input.evalSeed), dim: gnn.model.spec.channels } : undefined;
      const c = fitTreeCandidate({ task, kind: k, spec, labels, features, embeddings, seed: input.seed });
      fitted[k] = c;
      candidates[k] = { status: 'trained', val: c.val, test: c.test, val_intervals: intervals(tables.val.labels, c.valPred), test_intervals: intervals(tables.test.labels, c.testPred), seconds: round(c.seconds, 2), trees: c.model.trees.length, features: c.file.features.own.length + c.file.features.plan.features.length + c.file.embedding_dim };
      info(`train: ${k}: val ${objective.mainMetric.name} ${round((c.val as unknown as Record<string, number>)[objective.mainMetric.name]!, 4)}, test ${round((c.test as unknown as Record<string, number>)[objective.mainMetric.name]!, 4)} (${c.model.trees.length} trees, ${c.seconds.toFixed(1)}s)`);
    }
  }
  const scores = [{ kind: 'gnn' as const, val_score: objective.score(gnn.val), val_pred: gnn.valPred }];
  for (const k of ['gbdt', 'hybrid'] as const) {
    const c = fitted[k];
    if (c) scores.push({ kind: k as never, val_score: objective.score(c.val), val_pred: c.valPred as never });
  }
  // A forced kind keeps it (the GNN when its trees could not train); auto chooses.
  const forced = setting !== 'auto' ? (setting === 'gnn' || fitted[setting] ? setting : 'gnn') : null;
  const choice = chooseModel({ kind, metric: objective.mainMetric, labels: tables.val.labels, candidates: scores, seed: input.evalSeed });
  const chosen = forced ?? choice.chosen;
  const chosen_reason = forced ? `model.kind is ${setting}${forced !== setting ? ` but the ${setting} model was not trained (${candidates[setting as CandidateKind].reason})` : ''} (model.kind auto would keep the ${choice.chosen}: ${choice.chosen_reason})` : choice.chosen_reason;
  if (chosen !== 'gnn') writeModelJson(input.runDir, 'tree_model.json', fitted[chosen]!.file);
  info(`train: chose the ${chosen}: ${chosen_reason}`);
  return { record: { setting, candidates, best: choice.best, val_lift_vs_best: choice.val_lift_vs_best, tree_features: treeFeatures }, chosen, chosen_reason };
}

/**
 * Each example's GNN embedding at its own anchor, [rows × channels], sampled with the evaluation seed in
 * the same chunks as the run's evaluation, so the hybrid's inputs are reproducible.
 */
export function exampleEmbeddings(model: DeepModel, ex: Pick<Examples, 'nodes' | 'anchors'>, seed: number): Float32Array {
  const C = model.spec.channels;
  const out = new Float32Array(ex.nodes.length * C);
  const scratch = new Scratch();
  for (let lo = 0; lo < ex.nodes.length; lo += SAMPLED_BATCH) {
    const hi = Math.min(ex.nodes.length, lo + SAMPLED_BATCH);
    scratch.reset();
    const sampled = model.sampler.sample(ex.nodes.subarray(lo, hi), ex.anchors.subarray(lo, hi), new Rng(chunkSeed(seed, lo)), scratch);
    model.embedSampledBatch({ plan: model.plan }, sampled, undefined, scratch, { out, offset: lo * C });
  }
  return out;
}
