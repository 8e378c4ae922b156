/**
 * Training the session recommender: Adam on mini-batches of (user, anchor) examples, each batch drawn from
 * one embedding snapshot (the item table B is the snapshot's), early stopping on the validation MAP@k.
 *
 * Loss: softmax over the whole catalogue with every positive of the example as a target,
 *   L = logsumexp_i(s_i) − (1/|P|) Σ_{p ∈ P} s_p,
 * i.e. cross-entropy against the uniform distribution over the window's items (mixed with the teacher's
 * softmax over the catalogue when the base run is a ranking run of the same task: `teacher.ts`). Why the full softmax and
 * not sampled softmax or in-batch negatives: the catalogues this targets (2k–10k items on the synthetic
 * data, ~100k on H&M) fit a [batch, items] logit matrix (256 × 10k × 32 multiply-adds ≈ 80 MFLOP a step),
 * so the exact gradient is affordable, and it has none of the biases the approximations need correcting
 * (in-batch negatives sample items by popularity and punish popular items unless a logQ term is added;
 * sampled softmax needs the same correction for its proposal). Past ~1M items the logits stop fitting and
 * sampled softmax would be the tool; `negatives: full` is the only choice implemented and says so.
 */
import { tf } from '../../core/tf.js';
import { round } from '../../core/number.js';
import { Progress } from '../../core/progress.js';
import { EarlyStopping, SCORE_NOISE_DELTA } from '../../core/early_stopping.js';
import { Rng } from '../../core/rng.js';
import { Adam } from '../../model/optim.js';
import { SessionModel } from '../../model/student/session_model.js';
import type { SessionSpec } from '../../model/student/session_spec.js';
import { sessionBatch, type SessionData } from './data.js';
import type { RankingExamples } from './examples.js';
import type { RankingTeacher } from './teacher.js';
import { rankingMetrics, topK, type RankingMetrics } from './ranking_eval.js';
import type { StudentTrainOptions, TrainedModel } from '../student_kind.js';

export interface SessionTrainOptions extends StudentTrainOptions {
  /** a ranking run of the same task: its softmax over the catalogue is mixed into the target with `weight` */
  teacher?: { model: RankingTeacher; weight: number };
}

/** A session recommender trained to its best validation epoch, with its test top-k lists. */
export interface TrainedSessionModel extends TrainedModel<RankingMetrics> {
  model: SessionModel;
  /** top-k item lists of the test examples [test × k] */
  testLists: Int32Array;
  epochs: { epoch: number; loss: number; val_map: number }[];
}

/** Top-k lists [rows × k] for examples `rows` (scored per snapshot, 512 at a time). */
export function predictLists(model: SessionModel, spec: SessionSpec, data: SessionData, tables: tf.Tensor2D[], rows: ArrayLike<number>): Int32Array {
  const k = spec.k;
  const out = new Int32Array(rows.length * k);
  const bySnapshot = new Map<number, number[]>();
  for (let r = 0; r < rows.length; r++) {
    const s = data.snapshot[rows[r]!]!;
    let l = bySnapshot.get(s);
    if (!l) bySnapshot.set(s, (l = []));
    l.push(r);
  }
  for (const [s, positions] of bySnapshot) {
    for (let i = 0; i < positions.length; i += 512) {
      const part = positions.slice(i, i + 512);
      const batch = sessionBatch(spec, data, part.map((p) => rows[p]!));
      const t = tf.tidy(() => model.scores(batch, tables[s]!, false));
      const scores = t.dataSync() as Float32Array;
      t.dispose();
      part.forEach((p, j) => topK(scores.subarray(j * spec.items, (j + 1) * spec.items), k, out, p * k));
    }
  }
  return out;
}

export function trainSessionModel(spec: SessionSpec, data: SessionData, ex: RankingExamples, o: SessionTrainOptions): TrainedSessionModel {
  const model = new SessionModel(spec, o.seed, o.dropout);
  const optimizer = new Adam(model.params.vars, o.lr);
  const rng = new Rng(o.seed);
  const tables = data.snapshots.map((s) => tf.tensor2d(s.items, [spec.items, spec.item.dim]));
  const range = (r: [number, number]): Int32Array => Int32Array.from({ length: r[1] - r[0] }, (_, i) => r[0] + i);
  const valRows = range(ex.ranges.val);
  const testRows = range(ex.ranges.test);
  // Training examples by snapshot and anchor: a batch never mixes item tables (the student's snapshot, the
  // teacher's anchor).
  const groups = new Map<string, { s: number; rows: number[] }>();
  for (let e = ex.ranges.train[0]; e < ex.ranges.train[1]; e++) {
    const key = `${data.snapshot[e]}|${ex.anchors[e]}`;
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { s: data.snapshot[e]!, rows: [] }));
    g.rows.push(e);
  }
  const nTrain = ex.ranges.train[1] - ex.ranges.train[0];
  const target = new Float32Array(o.batchSize * spec.items);
  let best = model.params.snapshot();
  const stopping = new EarlyStopping({ monitor: `val MAP@${spec.k}`, patience: o.patience, min_delta: SCORE_NOISE_DELTA });
  let bestVal: RankingMetrics | null = null;
  const epochs: TrainedSessionModel['epochs'] = [];
  const progress = new Progress();
  try {
    for (let epoch = 1; epoch <= o.epochs; epoch++) {
      const batches: { s: number; rows: Int32Array }[] = [];
      for (const { s, rows: g } of groups.values()) {
        const order = rng.shuffle(Int32Array.from(g));
        for (let i = 0; i < order.length; i += o.batchSize) batches.push({ s, rows: order.subarray(i, Math.min(order.length, i + o.batchSize)) });
      }
      const batchOrder = rng.shuffle(Int32Array.from(batches.keys()));
      let lossSum = 0;
      let done = 0;
      progress.begin(`recommender epoch ${epoch}/${o.epochs}`, nTrain);
      for (const bi of batchOrder) {
        const { s, rows } = batches[bi]!;
        const m = rows.length;
        target.fill(0, 0, m * spec.items);
        for (let r = 0; r < m; r++) {
          const e = rows[r]!;
          const a = ex.ptr[e]!;
          const b = ex.ptr[e + 1]!;
          for (let j = a; j < b; j++) target[r * spec.items + ex.items[j]!] = 1 / (b - a);
        }
        const batch = sessionBatch(spec, data, rows);
        const teacher = o.teacher;
        const soft = teacher ? tf.tidy(() => tf.softmax(teacher.model.scores(rows, ex.anchors[rows[0]!]!))) : null;
        const loss = optimizer.minimize(() => {
          const scores = model.scores(batch, tables[s]!, true);
          let t: tf.Tensor2D = tf.tensor2d(target.subarray(0, m * spec.items), [m, spec.items]);
          if (soft) t = t.mul(1 - teacher!.weight).add(soft.mul(teacher!.weight)) as tf.Tensor2D;
          return tf.mean(tf.sub(tf.logSumExp(scores, 1), tf.sum(tf.mul(scores, t), 1))) as tf.Scalar;
        });
        soft?.dispose();
        lossSum += loss * m;
        done += m;
        progress.update(done, `loss ${(lossSum / done).toFixed(4)}`);
      }
      const val = rankingMetrics(ex, valRows, predictLists(model, spec, data, tables, valRows), spec.k);
      epochs.push({ epoch, loss: round(lossSum / nTrain, 4), val_map: val.map });
      const step = stopping.update(val.map)!;
      progress.end(`recommender epoch ${epoch}/${o.epochs}: loss ${(lossSum / nTrain).toFixed(4)}, val MAP@${spec.k} ${val.map.toFixed(4)}${step.improved ? ' (best)' : ''}`);
      if (step.improved) {
        best = model.params.snapshot();
        bestVal = val;
      } else if (step.should_stop) break;
    }
    model.params.restore(best);
    const testLists = predictLists(model, spec, data, tables, testRows);
    return { model, best, val: bestVal!, test: rankingMetrics(ex, testRows, testLists, spec.k), testLists, bestEpoch: stopping.bestEpoch, epochs };
  } finally {
    for (const t of tables) t.dispose();
  }
}
