/**
 * Training one student: Adam on mini-batches of fact rows with their embeddings and RTI elements, the
 * objective's loss (mixed with the teacher's predictions as soft targets when the objective has them),
 * early stopping on the validation score, and the batch-1 latency of the result.
 */
import { tf } from '../core/tf.js';
import { round } from '../core/number.js';
import { Progress } from '../core/progress.js';
import { Rng } from '../core/rng.js';
import { EarlyStopping, SCORE_NOISE_DELTA } from '../core/early_stopping.js';
import { Adam } from '../model/optim.js';
import { StudentFeatures, type StudentData } from '../model/student/features.js';
import type { StudentSpec } from '../model/student/spec.js';
import { StudentModel } from '../model/student/student.js';
import type { BinaryMetrics, Metrics } from '../task/metrics.js';
import { predictValues, type LossName, type Objective } from '../task/objective/objective.js';
import type { StudentTrainOptions, TrainedModel } from './student_kind.js';

export interface StudentMetrics {
  val: Metrics;
  test: Metrics;
  best_epoch: number;
}

/** A row student trained to its best validation epoch, with its test predictions. */
export interface TrainedStudent extends TrainedModel<Metrics> {
  model: StudentModel;
  testPred: Float32Array;
  /** predictions of the kept weights on the validation rows (what the choice among students resamples) */
  valPred: Float32Array;
  epochs: { epoch: number; loss: number; val: Metrics }[];
  /** wall time of this student's training and test scoring */
  seconds: number;
}

/** What `trainStudent` reports its epochs to: a Progress, or a worker's relay of one. */
export type StudentProgress = Pick<Progress, 'begin' | 'update' | 'end' | 'stop'>;

export function summarize(s: TrainedStudent): StudentMetrics {
  s.model.dispose();
  return { val: s.val, test: s.test, best_epoch: s.bestEpoch };
}

export function trainStudent(
  spec: StudentSpec,
  features: StudentFeatures,
  data: StudentData,
  labels: Float32Array,
  ranges: { train: readonly [number, number]; val: readonly [number, number]; test: readonly [number, number] },
  objective: Objective,
  teacher: Float32Array | null,
  kdWeight: number,
  o: StudentTrainOptions & {
    kdTemperature?: number;
    positiveWeight?: number;
    /** rows (indices into `data`) to train on; default the whole `ranges.train` */
    trainRows?: Int32Array;
    /** the weights validated and kept: a moving average over about this many epochs of steps (0: the raw weights) */
    emaEpochs?: number;
    /** or the average's decay per step, directly (overrides emaEpochs) */
    emaDecay?: number;
    /** binary: the validation metric that picks the epoch and drives patience (default the objective's main metric) */
    selectBy?: 'auroc' | 'ap';
    /** where the epochs report (default a Progress on stderr); a student worker's forwards to the main thread */
    progress?: StudentProgress;
    /** names the student in progress lines: `distill <label> epoch 1/5` (default none: `distill epoch 1/5`) */
    label?: string;
  },
): TrainedStudent {
  const t0 = performance.now();
  const T = o.kdTemperature ?? 1;
  const selectBy = o.selectBy;
  if (selectBy && objective.kind !== 'binary') throw new Error(`selectBy ${selectBy} needs a binary objective (got ${objective.kind})`);
  const posWeight = o.positiveWeight ?? 1;
  // The teacher's logits softened by T (Hinton et al. 2015): at T > 1 the student also learns how the
  // teacher orders the many confident negatives, which is where a rare-positive ranking's precision is won.
  const softTarget = teacher && T !== 1 ? teacher.map((p) => 1 / (1 + Math.exp(-logit(p) / T))) : teacher;
  const model = new StudentModel(spec, o.seed, o.dropout);
  const optimizer = new Adam(model.params.vars, o.lr);
  const rng = new Rng(o.seed);
  const [a, b] = ranges.train;
  const order = o.trainRows ? Int32Array.from(o.trainRows) : Int32Array.from({ length: b - a }, (_, i) => a + i);
  const output = spec.output;
  const lossName = objective.losses[0]!;
  const predict = (lo: number, hi: number): Float32Array => predictRows(model, features, data, lo, hi);
  const evaluate = (lo: number, hi: number, p: Float32Array): Metrics => objective.metrics(labels.subarray(lo, hi), p);
  const y = new Float32Array(o.batchSize);
  const soft = new Float32Array(o.batchSize);
  const weight = new Float32Array(o.batchSize);
  let best = model.params.snapshot();
  let bestVal: Metrics | null = null;
  const stopping = studentStopping(`val ${selectBy ?? objective.mainMetric.name}`, o.patience);
  // Polyak averaging: the weights validated at each epoch's end (and kept) are a bias-corrected moving
  // average over the last ~1 / (1 − decay) steps, not the last step's. On a rare-positive task with a few
  // hundred validation positives the raw weights' validation score jumps by ±0.01 AUROC from epoch to
  // epoch, and early stopping picks one of those jumps.
  // The horizon is in epochs, so a 30k-row ablation averages over as much of its training as the main
  // student does over its 110k rows (per step, 1 − 1 / steps is one epoch).
  const stepsPerEpoch = Math.ceil(order.length / o.batchSize);
  const emaDecay = o.emaDecay ?? (o.emaEpochs ? Math.max(0, 1 - 1 / (o.emaEpochs * stepsPerEpoch)) : 0);
  const ema = emaDecay > 0 ? new WeightAverage(model.params.snapshot(), emaDecay) : null;
  const epochs: { epoch: number; loss: number; val: Metrics }[] = [];
  const progress = o.progress ?? new Progress();
  const name = o.label ? `distill ${o.label}` : 'distill';
  try {
    for (let epoch = 1; epoch <= o.epochs; epoch++) {
      rng.shuffle(order);
      let lossSum = 0;
      progress.begin(`${name} epoch ${epoch}/${o.epochs}`, order.length);
      for (let i = 0; i < order.length; i += o.batchSize) {
        const rows = order.subarray(i, Math.min(order.length, i + o.batchSize));
        const m = rows.length;
        for (let k = 0; k < m; k++) {
          y[k] = objective.target(labels[rows[k]!]!, output);
          soft[k] = softTarget ? softTarget[rows[k]!]! : 0;
          weight[k] = posWeight !== 1 && labels[rows[k]!]! > 0.5 ? posWeight : 1;
        }
        const batch = features.batch(data, rows);
        const targets = { y: y.subarray(0, m), weight: posWeight !== 1 ? weight.subarray(0, m) : null, soft: teacher && kdWeight !== 0 ? soft.subarray(0, m) : null, T, kdWeight };
        const loss = optimizer.minimize(() => batchLoss(objective, lossName, model.forward(batch, true), targets));
        ema?.update(model.params.snapshot());
        lossSum += loss * m;
        progress.update(i + m, `loss ${(lossSum / (i + m)).toFixed(4)}`);
      }
      // With averaging, the averaged weights are validated (and kept); training resumes from the raw ones.
      const raw = ema ? model.params.snapshot() : null;
      const candidate = ema ? ema.averaged() : null;
      if (candidate) model.params.restore(candidate);
      const val = evaluate(ranges.val[0], ranges.val[1], predict(ranges.val[0], ranges.val[1]));
      if (raw) model.params.restore(raw);
      epochs.push({ epoch, loss: round(lossSum / order.length, 4), val });
      const sc = selectBy ? (val as BinaryMetrics)[selectBy] : objective.score(val);
      const step = stopping.update(sc)!;
      progress.end(`${name} epoch ${epoch}/${o.epochs}: loss ${(lossSum / order.length).toFixed(4)}, val ${selectBy ?? objective.mainMetric.name} ${Math.abs(sc).toFixed(4)}${step.improved ? ' (best)' : ''}`);
      if (step.improved) {
        best = candidate ?? model.params.snapshot();
        bestVal = val;
      }
      if (step.should_stop) break;
    }
  } finally {
    progress.stop();
  }
  model.params.restore(best);
  const valPred = predict(ranges.val[0], ranges.val[1]);
  const testPred = predict(ranges.test[0], ranges.test[1]);
  const test = evaluate(ranges.test[0], ranges.test[1], testPred);
  return { model, best, val: bestVal!, test, testPred, valPred, bestEpoch: stopping.bestEpoch, epochs, seconds: round((performance.now() - t0) / 1000, 1) };
}

/**
 * A batch's loss: the objective's loss on the labels — binary BCE with the positives weighted up when
 * `weight` is given — mixed with the loss against the teacher's soft targets when `soft` is given.
 */
function batchLoss(
  objective: Objective,
  lossName: LossName,
  logits: tf.Tensor1D,
  t: { y: Float32Array; weight: Float32Array | null; soft: Float32Array | null; T: number; kdWeight: number },
): tf.Scalar {
  const yt = tf.tensor1d(t.y);
  // Positives weighted up (binary only, hard-label term): the loss then spends more of its capacity on
  // separating the rare positives from their nearest negatives, the top of the ranking.
  const hard = t.weight ? weightedBce(logits, yt, tf.tensor1d(t.weight)) : objective.loss(lossName, logits, yt);
  if (!t.soft) return hard;
  // The teacher's predictions as soft targets (only objectives with softTargets get a kdWeight > 0),
  // matched at temperature T and scaled by T² so the gradient's size does not depend on T.
  const T = t.T;
  const softLoss = T === 1 ? objective.loss(lossName, logits, tf.tensor1d(t.soft)) : objective.loss(lossName, logits.div(T), tf.tensor1d(t.soft)).mul(T * T);
  return hard.mul(1 - t.kdWeight).add(softLoss.mul(t.kdWeight)) as tf.Scalar;
}

/**
 * Patience counts epochs without a relative gain of at least MIN_GAIN: a plateau that creeps up by 1e-4
 * AUROC an epoch (the features-only ablation at medium) ran every epoch it was given. The best weights
 * still follow any gain.
 */
function studentStopping(monitor: string, patience: number): EarlyStopping {
  return new EarlyStopping({ monitor, patience, min_delta: MIN_GAIN, min_delta_mode: 'relative', best_delta: SCORE_NOISE_DELTA });
}

/** Predictions (the objective's output transform applied) of rows [lo, hi) of `data`, 4096 at a time. */
function predictRows(model: StudentModel, features: StudentFeatures, data: StudentData, lo: number, hi: number): Float32Array {
  const out = new Float32Array(hi - lo);
  for (let i = lo; i < hi; i += 4096) {
    const j = Math.min(hi, i + 4096);
    const batch = features.batch(data, Int32Array.from({ length: j - i }, (_, k) => i + k));
    const r = tf.tidy(() => model.forward(batch, false));
    const v = r.dataSync() as Float32Array;
    r.dispose();
    out.set(predictValues(model.spec.output, v), i - lo);
  }
  return out;
}

/** A bias-corrected exponential moving average of the weights, in float64 (Polyak averaging). */
class WeightAverage {
  private readonly sums: Map<string, Float64Array>;
  private steps = 0;

  constructor(
    like: Map<string, Float32Array>,
    private readonly decay: number,
  ) {
    this.sums = new Map([...like].map(([k, v]) => [k, new Float64Array(v.length)]));
  }

  /** Folds in the weights after one optimizer step. */
  update(weights: Map<string, Float32Array>): void {
    this.steps++;
    const d = this.decay;
    for (const [k, w] of weights) {
      const e = this.sums.get(k)!;
      for (let j = 0; j < w.length; j++) e[j] = d * e[j]! + (1 - d) * w[j]!;
    }
  }

  /** The average so far, divided by 1 − decay^steps so early steps are not pulled towards zero. */
  averaged(): Map<string, Float32Array> {
    const c = 1 - this.decay ** this.steps;
    return new Map([...this.sums].map(([k, v]) => [k, Float32Array.from(v, (x) => x / c)]));
  }
}

/** Smallest relative gain in the validation score (AUROC, −MAE, …) that resets the patience. */
const MIN_GAIN = 1e-3;

function logit(p: number): number {
  const q = Math.min(1 - 1e-6, Math.max(1e-6, p));
  return Math.log(q / (1 - q));
}

/** Σ w · BCE(logits, y) / Σ w. */
function weightedBce(logits: tf.Tensor1D, y: tf.Tensor1D, w: tf.Tensor1D): tf.Scalar {
  const per = tf.relu(logits).sub(logits.mul(y)).add(tf.log1p(tf.exp(tf.neg(tf.abs(logits)))));
  return per.mul(w).sum().div(w.sum()) as tf.Scalar;
}

/** Single-example latency of the TF.js student (features included), p50/p99 over a few hundred calls. */
export function measureLatency(model: StudentModel, features: StudentFeatures, data: StudentData, row: number): { p50: number; p99: number } {
  const times: number[] = [];
  for (let i = 0; i < 300; i++) {
    const t = performance.now();
    const r = tf.tidy(() => model.forward(features.batch(data, [row]), false));
    r.dataSync();
    r.dispose();
    if (i >= 50) times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return { p50: round(times[Math.floor(times.length * 0.5)]!, 4), p99: round(times[Math.floor(times.length * 0.99)]!, 4) };
}
