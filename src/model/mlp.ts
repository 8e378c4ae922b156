/**
 * A plain multilayer perceptron on a dense feature matrix, trained with Adam and early stopping on a
 * validation set. The no-graph baseline uses it, so the graph's lift is measured against a tuned
 * tabular model on exactly the same examples.
 */
import { tf } from '../core/tf.js';
import { Rng } from '../core/rng.js';
import { EarlyStopping } from '../core/early_stopping.js';
import { objectiveFor, predictValues, type ObjectiveKind } from '../task/objective/objective.js';
import { ParamStore } from './params.js';

/** fewest optimizer steps per epoch (batches shrink for small training sets, never below 32 rows) */
const MIN_STEPS = 16;

/** Smallest gain (absolute) in the baseline's validation score that counts as an improvement. */
const MLP_MIN_DELTA = 1e-5;

export interface MlpOptions {
  kind: ObjectiveKind;
  hidden?: number[];
  epochs?: number;
  batchSize?: number;
  lr?: number;
  patience?: number;
  dropout?: number;
  seed: number;
  /** called after every optimizer step and each validation pass: rows seen so far of `epochs × n` at most, and a note (epoch, val score) */
  onProgress?: (rowsSeen: number, rowsMax: number, note: string) => void;
}

export interface MlpResult {
  /** predictions for the matrices passed to `fitMlp` as `predict` (probabilities or label units) */
  predictions: Float32Array[];
  bestEpoch: number;
  /** optimizer steps taken (all epochs) */
  steps: number;
  valMetric: number;
}

/** Column-standardizes X (in place) with statistics from `fit`; returns them. */
export function standardizeColumns(fit: Float32Array, d: number, others: Float32Array[]): void {
  const n = fit.length / d;
  for (let c = 0; c < d; c++) {
    let mean = 0;
    for (let i = 0; i < n; i++) mean += fit[i * d + c]!;
    mean /= Math.max(1, n);
    let v = 0;
    for (let i = 0; i < n; i++) v += (fit[i * d + c]! - mean) ** 2;
    const std = Math.sqrt(v / Math.max(1, n)) || 1;
    for (const X of [fit, ...others]) {
      const m = X.length / d;
      for (let i = 0; i < m; i++) X[i * d + c] = Math.max(-10, Math.min(10, (X[i * d + c]! - mean) / std));
    }
  }
}

export function fitMlp(
  d: number,
  train: { X: Float32Array; y: Float32Array },
  val: { X: Float32Array; y: Float32Array },
  predict: Float32Array[],
  opts: MlpOptions,
): MlpResult {
  const hidden = opts.hidden ?? [128, 64];
  const epochs = opts.epochs ?? 30;
  // At least MIN_STEPS steps an epoch: with 1,000 rows and batch 1024 an epoch was one Adam step, early
  // stopping (patience in epochs) then ended training a few steps from the random start, and the
  // baseline of a small task scored below a coin (docs/quality.md).
  const batchSize = Math.min(opts.batchSize ?? 1024, Math.max(32, Math.ceil(train.y.length / MIN_STEPS)));
  const patience = opts.patience ?? 4;
  const dropout = opts.dropout ?? 0.1;
  const params = new ParamStore(opts.seed);
  const rng = new Rng(opts.seed);
  const objective = objectiveFor(opts.kind);
  const output = objective.fitOutput(train.y);
  // The baseline trains with the objective's default loss, as the deep model does unless configured.
  const loss = objective.losses[0]!;
  const dims = [d, ...hidden, 1];
  const layers = dims.slice(1).map((out, i) => ({ w: params.glorot(`mlp/w${i}`, [dims[i]!, out]), b: params.zeros(`mlp/b${i}`, [out]) }));
  let seedCounter = opts.seed * 7919 + 1;
  const forward = (x: tf.Tensor2D, training: boolean): tf.Tensor1D => {
    let h: tf.Tensor2D = x;
    layers.forEach((l, i) => {
      h = tf.matMul(h, l.w).add(l.b) as tf.Tensor2D;
      if (i < layers.length - 1) {
        h = tf.relu(h);
        if (training && dropout > 0) h = tf.dropout(h, dropout, undefined, seedCounter++) as tf.Tensor2D;
      }
    });
    return h.reshape([-1]) as tf.Tensor1D;
  };
  const predictAll = (X: Float32Array): Float32Array => {
    const n = X.length / d;
    const out = new Float32Array(n);
    for (let i = 0; i < n; i += 8192) {
      const j = Math.min(n, i + 8192);
      const r = tf.tidy(() => forward(tf.tensor2d(X.subarray(i * d, j * d), [j - i, d]), false));
      out.set(r.dataSync() as Float32Array, i);
      r.dispose();
    }
    return predictValues(output, out);
  };
  const evalVal = (): number => objective.score(objective.metrics(val.y, predictAll(val.X)));

  const optimizer = tf.train.adam(opts.lr ?? 1e-3);
  const n = train.y.length;
  const order = Uint32Array.from({ length: n }, (_, i) => i);
  const xb = new Float32Array(batchSize * d);
  const yb = new Float32Array(batchSize);
  const stopping = new EarlyStopping({ monitor: `val ${objective.mainMetric.name}`, patience, min_delta: MLP_MIN_DELTA });
  let bestSnap = params.snapshot();
  let steps = 0;
  let seen = 0;
  let note = '';
  try {
    for (let epoch = 0; epoch < epochs; epoch++) {
      rng.shuffle(order);
      for (let i = 0; i < n; i += batchSize) {
        const m = Math.min(batchSize, n - i);
        for (let k = 0; k < m; k++) {
          const r = order[i + k]!;
          xb.set(train.X.subarray(r * d, (r + 1) * d), k * d);
          yb[k] = objective.target(train.y[r]!, output);
        }
        const cost = optimizer.minimize(() => {
          const logits = forward(tf.tensor2d(xb.subarray(0, m * d), [m, d]), true);
          const y = tf.tensor1d(yb.subarray(0, m));
          return objective.loss(loss, logits, y);
        }, true);
        cost?.dispose();
        steps++;
        seen += m;
        opts.onProgress?.(seen, epochs * n, note);
      }
      const v = evalVal();
      note = `epoch ${epoch + 1}, val ${objective.mainMetric.name} ${Math.abs(v).toFixed(4)}`;
      opts.onProgress?.(seen, epochs * n, note);
      const step = stopping.update(v)!;
      if (step.improved) bestSnap = params.snapshot();
      else if (step.should_stop) break;
    }
    params.restore(bestSnap);
    const best = stopping.bestValue;
    // 0-based, −1 when no epoch scored
    const bestEpoch = stopping.bestEpoch - 1;
    // valMetric in the metric's own sign (score() negates lower-is-better metrics).
    return { predictions: predict.map(predictAll), bestEpoch, steps, valMetric: objective.mainMetric.higherIsBetter ? best : -best };
  } finally {
    optimizer.dispose();
    params.dispose();
  }
}
