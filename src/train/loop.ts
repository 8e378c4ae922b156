/**
 * The training loop: epochs of shuffled mini-batches through a gradient engine (one thread or a worker
 * pool), Adam on the flat weight blob, the objective's validation score after each epoch, the best
 * checkpoint saved atomically on every improvement, early stopping, and Ctrl-C between steps.
 */
import { saveWeights } from '../artifacts/run_store.js';
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
  seconds: number;
  seeds_per_s: number;
  /** seconds spent per phase in this epoch */
  timing: { sample: number; gather: number; step: number };
}

export interface LoopResult {
  /** best weights (a flat blob in ParamStore order) */
  best: Float32Array;
  bestEpoch: number;
  epochs: EpochRecord[];
  /** the best epoch's raw validation outputs: the final evaluation reuses them instead of a second pass */
  bestValRaw: Float32Array | null;
}

export async function trainLoop(
  model: DeepModel,
  engine: GradientEngine,
  tables: TrainingTables,
  mc: { epochs: number; batchSize: number; patience: number; maxSteps?: number; lr: number },
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
  const save = (w: Float32Array): void => saveWeights(runDir, index, w);
  const records: EpochRecord[] = [];
  let best = weights.slice();
  let bestScore = -Infinity;
  let bestEpoch = -1;
  let bestValRaw: Float32Array | null = null;
  let stale = 0;
  const progress = new Progress();
  for (let epoch = 0; epoch < mc.epochs && !stop.requested; epoch++) {
    rng.shuffle(order);
    const steps = Math.min(Math.ceil(n / mc.batchSize), mc.maxSteps ?? Infinity);
    const timing = { sample: 0, gather: 0, step: 0 };
    let lossSum = 0;
    let seen = 0;
    const tEpoch = performance.now();
    progress.begin(`epoch ${epoch + 1}/${mc.epochs}`, steps * mc.batchSize);
    for (let s = 0; s < steps && !stop.requested; s++) {
      const rows = order.subarray(s * mc.batchSize, Math.min(n, (s + 1) * mc.batchSize));
      const r = await engine.step(weights, rows, rng.nextU32());
      optimizer.update(weights, r.grads);
      timing.sample += r.timing.sample;
      timing.gather += r.timing.gather;
      timing.step += r.timing.step;
      lossSum += r.loss * r.count;
      seen += r.count;
      progress.update(seen, `loss ${(lossSum / seen).toFixed(4)}`);
    }
    const seconds = (performance.now() - tEpoch) / 1000;
    if (seen === 0) break;
    progress.begin(`epoch ${epoch + 1}/${mc.epochs} validation`, tables.val.nodes.length);
    const valRaw = await engine.predict(weights, 'val', 1234, (done) => progress.update(done));
    const val = objective.metrics(tables.val.labels, model.toOutput(valRaw));
    const score = objective.score(val);
    const record: EpochRecord = {
      epoch: epoch + 1,
      loss: round(lossSum / seen, 5),
      val,
      seconds: round(seconds, 2),
      seeds_per_s: Math.round(seen / seconds),
      timing: { sample: round(timing.sample / 1000, 2), gather: round(timing.gather / 1000, 2), step: round(timing.step / 1000, 2) },
    };
    records.push(record);
    const improved = score > bestScore + 1e-6;
    progress.end(
      `epoch ${epoch + 1}/${mc.epochs}: loss ${record.loss.toFixed(4)}, val ${mm.name} ${(val as unknown as Record<string, number>)[mm.name]!.toFixed(4)}${improved ? ' (best)' : ''}, ` +
        `${formatRate(record.seeds_per_s)} seeds/s, ${record.seconds.toFixed(1)}s`,
    );
    if (improved) {
      bestScore = score;
      bestEpoch = epoch + 1;
      best = weights.slice();
      bestValRaw = valRaw;
      save(best);
      stale = 0;
    } else if (++stale >= mc.patience) {
      info(`early stopping: no val improvement for ${mc.patience} epoch(s)`);
      break;
    }
  }
  // Interrupted before the first epoch ended: keep the current weights so the run is still loadable.
  if (bestEpoch < 0) save((best = weights.slice()));
  return { best, bestEpoch, epochs: records, bestValRaw };
}
