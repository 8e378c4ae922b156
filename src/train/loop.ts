/**
 * The training loop: epochs of shuffled mini-batches through a gradient engine (one thread or a worker
 * pool), Adam on the flat weight blob, the objective's validation score after each epoch, the best
 * checkpoint saved atomically on every improvement, early stopping, and Ctrl-C between steps.
 *
 * Model choice on a small validation set: with `smoothing` k = 2h + 1 > 1, epoch e is judged by the mean
 * validation score of epochs e − h … e + h (a centered moving average, partial at both ends), so one lucky
 * or unlucky evaluation on ~150 examples neither picks nor ends the run. The weights kept are epoch e's
 * own; the loop holds the last h + 1 epochs' weights until their window is complete.
 */
import { saveWeights } from '../artifacts/run_store.js';
import { EarlyStopping, SCORE_NOISE_DELTA, type EarlyStoppingStep } from '../core/early_stopping.js';
import { info } from '../core/log.js';
import { round } from '../core/number.js';
import { Progress, formatRate } from '../core/progress.js';
import { Rng } from '../core/rng.js';
import type { DeepModel } from '../model/deep_model.js';
import { FlatAdam } from '../model/optim.js';
import type { Metrics } from '../task/metrics.js';
import { objectiveFor } from '../task/objective/objective.js';
import type { GradientEngine } from './engine.js';
import type { TrainingTables } from './examples.js';

export interface EpochRecord {
  epoch: number;
  loss: number;
  val: Metrics;
  /** the score model choice used for this epoch: the centered moving average (smoothing > 1), else the score itself */
  val_smoothed?: number;
  seconds: number;
  seeds_per_s: number;
  /** seconds spent per phase in this epoch */
  timing: { sample: number; gather: number; step: number };
}

/** An epoch's running loss and time per phase, from its steps' results; `record` makes its EpochRecord. */
export class EpochTally {
  seen = 0;
  private lossSum = 0;
  private readonly timing = { sample: 0, gather: 0, step: 0 };
  private readonly start = performance.now();

  add(r: { loss: number; count: number; timing: { sample: number; gather: number; step: number } }): void {
    this.timing.sample += r.timing.sample;
    this.timing.gather += r.timing.gather;
    this.timing.step += r.timing.step;
    this.lossSum += r.loss * r.count;
    this.seen += r.count;
  }

  meanLoss(): number {
    return this.lossSum / this.seen;
  }

  /** seconds since the epoch began */
  seconds(): number {
    return (performance.now() - this.start) / 1000;
  }

  /** `seconds`: the epoch's training time (taken before its validation pass) */
  record(epoch: number, val: Metrics, seconds: number): EpochRecord {
    const t = this.timing;
    return {
      epoch,
      loss: round(this.lossSum / this.seen, 5),
      val,
      seconds: round(seconds, 2),
      seeds_per_s: Math.round(this.seen / seconds),
      timing: { sample: round(t.sample / 1000, 2), gather: round(t.gather / 1000, 2), step: round(t.step / 1000, 2) },
    };
  }
}

export interface LoopResult {
  /** best weights (a flat blob in ParamStore order) */
  best: Float32Array;
  bestEpoch: number;
  epochs: EpochRecord[];
  /** the best epoch's raw validation outputs: the final evaluation reuses them instead of a second pass */
  bestValRaw: Float32Array | null;
  /** why training ended early: the budget's deadline, early stopping, or Ctrl-C; null when all epochs ran */
  stopped: 'deadline' | 'early_stopping' | 'interrupt' | null;
}

export interface LoopOptions {
  epochs: number;
  batchSize: number;
  patience: number;
  maxSteps?: number;
  lr: number;
  /** odd window of the centered moving average of the validation score (1: the raw score) */
  smoothing?: number;
  /** performance.now() in ms after which no new epoch starts (variant search budget) */
  deadline?: number;
  /** where checkpoints go (default: the run folder) */
  checkpointDir?: string;
}

export async function trainLoop(
  model: DeepModel,
  engine: GradientEngine,
  tables: TrainingTables,
  mc: LoopOptions,
  seed: number,
  stop: { requested: boolean },
  runDir: string,
): Promise<LoopResult> {
  const objective = objectiveFor(model.spec.output.kind);
  const mm = objective.mainMetric;
  const rng = new Rng(seed);
  const n = tables.train.nodes.length;
  const order = Int32Array.from({ length: n }, (_, i) => i);
  const { index, blob } = model.params.serialize();
  const weights = blob;
  const optimizer = new FlatAdam(weights.length, mc.lr);
  const save = (w: Float32Array): void => saveWeights(mc.checkpointDir ?? runDir, index, w);
  const records: EpochRecord[] = [];
  const h = Math.max(0, Math.floor(((mc.smoothing ?? 1) - 1) / 2));
  const stopping = new EarlyStopping({
    monitor: `val ${mm.name}`,
    patience: mc.patience,
    min_delta: SCORE_NOISE_DELTA,
    smoothing: h > 0 ? { kind: 'window', size: 2 * h + 1 } : { kind: 'none' },
  });
  // weights and raw validation outputs of the epochs not judged yet (window smoothing), by 1-based epoch
  const pending = new Map<number, { weights: Float32Array<ArrayBuffer>; valRaw: Float32Array }>();
  let best = weights.slice();
  let bestValRaw: Float32Array | null = null;
  let stopped: LoopResult['stopped'] = null;
  /** Keeps a judged epoch's weights when it is the new best; true when early stopping should end training. */
  const judged = (s: EarlyStoppingStep): boolean => {
    if (h > 0) records[s.epoch - 1]!.val_smoothed = round(s.value, 4);
    const p = pending.get(s.epoch)!;
    pending.delete(s.epoch);
    if (s.improved) {
      best = p.weights;
      bestValRaw = p.valRaw;
      save(best);
    }
    return s.should_stop;
  };
  const progress = new Progress();
  for (let epoch = 0; epoch < mc.epochs && !stop.requested; epoch++) {
    if (mc.deadline !== undefined && epoch > 0 && performance.now() > mc.deadline) {
      stopped = 'deadline';
      info(`search budget reached: stopping after epoch ${epoch}`);
      break;
    }
    rng.shuffle(order);
    const steps = Math.min(Math.ceil(n / mc.batchSize), mc.maxSteps ?? Infinity);
    const tally = new EpochTally();
    progress.begin(`epoch ${epoch + 1}/${mc.epochs}`, steps * mc.batchSize);
    const stepRows = (s: number): Int32Array => order.subarray(s * mc.batchSize, Math.min(n, (s + 1) * mc.batchSize));
    // Seeds are drawn in step order as before; the next step's is drawn one step early so the engine can
    // sample and gather that step while the optimizer runs (never past the epoch: the shuffle comes next).
    let seed = steps > 0 ? rng.nextU32() : 0;
    for (let s = 0; s < steps && !stop.requested; s++) {
      const rows = stepRows(s);
      const next = s + 1 < steps ? { rows: stepRows(s + 1), rngSeed: rng.nextU32() } : undefined;
      const r = await engine.step(weights, rows, seed, next);
      if (next) seed = next.rngSeed;
      optimizer.update(weights, r.grads);
      tally.add(r);
      progress.update(tally.seen, `loss ${tally.meanLoss().toFixed(4)}`);
    }
    const seconds = tally.seconds();
    if (tally.seen === 0) break;
    progress.begin(`epoch ${epoch + 1}/${mc.epochs} validation`, tables.val.nodes.length);
    const valRaw = await engine.predict(weights, 'val', 1234, (done) => progress.update(done));
    const val = objective.metrics(tables.val.labels, model.toOutput(valRaw));
    const score = objective.score(val);
    const record = tally.record(epoch + 1, val, seconds);
    records.push(record);
    pending.set(epoch + 1, { weights: weights.slice(), valRaw });
    const step = stopping.update(score);
    const stopNow = step !== null && judged(step);
    progress.end(
      `epoch ${epoch + 1}/${mc.epochs}: loss ${record.loss.toFixed(4)}, val ${mm.name} ${(val as unknown as Record<string, number>)[mm.name]!.toFixed(4)}` +
        `${step?.improved ? (h > 0 ? ` (epoch ${step.best_epoch} best, smoothed ${step.best_value.toFixed(4)})` : ' (best)') : ''}, ` +
        `${formatRate(record.seeds_per_s)} seeds/s, ${record.seconds.toFixed(1)}s`,
    );
    if (stopNow) {
      stopped = 'early_stopping';
      info(`early stopping: no val improvement for ${mc.patience} epoch(s)${h > 0 ? ` (moving average over ${2 * h + 1})` : ''}`);
      break;
    }
  }
  if (stop.requested && stopped === null) stopped = 'interrupt';
  // The last epochs' windows end with training: judge them on what there is (they were trained anyway).
  for (const s of stopping.finish()) judged(s);
  // Interrupted before the first epoch ended: keep the current weights so the run is still loadable.
  const bestEpoch = stopping.bestEpoch > 0 ? stopping.bestEpoch : -1;
  if (bestEpoch < 0) save((best = weights.slice()));
  return { best, bestEpoch, epochs: records, bestValRaw, stopped };
}
