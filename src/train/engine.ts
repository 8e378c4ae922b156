/**
 * Where the gradients of a training step are computed. The trainer owns the weights (one flat blob) and
 * the optimizer; an engine turns (weights, example rows) into (loss, gradient blob):
 *
 * - `LocalEngine`: on this thread, with the trainer's own model;
 * - `WorkerEngine` (parallel.ts): data parallel over worker threads, each with its own TF.js instance
 *   and a share of the batch — on the single-threaded wasm backend, the way to use a second core.
 */
import { tf } from '../core/tf.js';
import { Rng } from '../core/rng.js';
import type { DeepModel } from '../model/deep_model.js';
import type { Examples } from '../task/task_spec.js';
import { objectiveFor } from '../task/objective/objective.js';
import { Scratch } from '../model/scratch.js';
import { withRowDependentProducts } from '../compute/wasm_fast_kernels.js';

export interface StepResult {
  /** mean loss over the rows */
  loss: number;
  count: number;
  /** gradient of the mean loss, in `ParamStore.serialize` order */
  grads: Float32Array;
  /** milliseconds: sampling, feature gathering, forward + backward */
  timing: { sample: number; gather: number; step: number };
}

export interface GradientEngine {
  readonly workers: number;
  /**
   * `next`: the following step's rows and seed, when known. An engine may sample and gather them while
   * the caller updates the weights (they do not depend on the weights); results are the same either way.
   */
  step(weights: Float32Array, rows: Int32Array, rngSeed: number, next?: { rows: Int32Array; rngSeed: number }): Promise<StepResult>;
  /**
   * Raw head outputs (logits / standardized values) for every example of a split, in chunks of
   * PREDICT_CHUNK rows seeded by their position (the same outputs whatever the number of workers);
   * `onProgress` gets the rows done so far.
   */
  predict(weights: Float32Array, split: 'val' | 'test', seed: number, onProgress?: (done: number) => void): Promise<Float32Array>;
  close(): Promise<void>;
}

export interface EngineData {
  train: Examples;
  val: Examples;
  test: Examples;
}

/** Rows per prediction chunk: small enough to spread over workers and report progress, large enough that a message per chunk costs nothing. */
export const PREDICT_CHUNK = 16384;

/** The sampling seed of the prediction chunk starting at row `lo`. */
export function chunkSeed(seed: number, lo: number): number {
  return (Math.imul(seed, 0x9e3779b1) + lo) >>> 0;
}

/**
 * Raw head outputs for examples in `PREDICT_CHUNK` chunks, each sampled with `chunkSeed(seed, lo)`, so
 * the numbers do not depend on how many threads compute the chunks (training's parallel engine and
 * `EmbedPool.predictRaw` give the same).
 */
export async function predictInChunks(model: DeepModel, ex: Pick<Examples, 'nodes' | 'anchors'>, seed: number, onProgress?: (done: number) => void): Promise<Float32Array> {
  const out = new Float32Array(ex.nodes.length);
  for (let lo = 0; lo < out.length; lo += PREDICT_CHUNK) {
    const hi = Math.min(out.length, lo + PREDICT_CHUNK);
    out.set(model.predictRaw({ nodes: ex.nodes.subarray(lo, hi), anchors: ex.anchors.subarray(lo, hi) }, 2048, chunkSeed(seed, lo)), lo);
    onProgress?.(hi);
    // The progress line is drawn, and Ctrl-C delivered, on the event loop.
    await new Promise((resolve) => setImmediate(resolve));
  }
  return out;
}

/**
 * `predictInChunks` over worker threads: the same seeded chunks, handed out from one queue so a worker
 * slowed by another process takes fewer. `call(w, lo, hi, chunkSeed)` has worker `w` compute rows [lo, hi).
 */
export async function predictOnWorkers<W>(
  workers: readonly W[],
  total: number,
  seed: number,
  call: (w: W, lo: number, hi: number, seed: number) => Promise<Float32Array>,
  onProgress?: (done: number) => void,
): Promise<Float32Array> {
  const out = new Float32Array(total);
  let next = 0;
  let done = 0;
  await Promise.all(
    workers.map(async (w) => {
      while (next < total) {
        const lo = next;
        const hi = Math.min(total, lo + PREDICT_CHUNK);
        next = hi;
        out.set(await call(w, lo, hi, chunkSeed(seed, lo)), lo);
        done += hi - lo;
        onProgress?.(done);
      }
    }),
  );
  return out;
}

/** A step's inputs before any weight is read: sampled trees, dense arrays and targets. */
export interface PreparedStep {
  rows: Int32Array;
  rngSeed: number;
  labels: Float32Array;
  arrays: ReturnType<DeepModel['arrays']>;
  /** milliseconds */
  sample: number;
  gather: number;
}

/**
 * Samples and gathers a step's share of rows. Nothing here depends on the weights, so it can run ahead of
 * them. With `scratch`, the step's arrays come from it (reset here): a scratch holds one prepared step at a
 * time, so the step prepared before must have been computed already.
 */
export function prepareStep(model: DeepModel, train: Examples, rows: Int32Array, rngSeed: number, scratch?: Scratch): PreparedStep {
  scratch?.reset();
  const output = model.spec.output;
  const objective = objectiveFor(output.kind);
  const m = rows.length;
  const seeds = new Int32Array(m);
  const anchors = new Float64Array(m);
  const labels = new Float32Array(m);
  for (let k = 0; k < m; k++) {
    const r = rows[k]!;
    seeds[k] = train.nodes[r]!;
    anchors[k] = train.anchors[r]!;
    labels[k] = objective.target(train.labels[r]!, output);
  }
  let t = performance.now();
  const sampled = model.sampler.sample(seeds, anchors, new Rng(rngSeed), scratch);
  const sample = performance.now() - t;
  t = performance.now();
  const arrays = model.arrays(sampled, model.plan, undefined, scratch);
  return { rows, rngSeed, labels, arrays, sample, gather: performance.now() - t };
}

/** True when `p` was prepared for exactly these rows and seed. */
export function preparedFor(p: PreparedStep | null, rows: Int32Array, rngSeed: number): p is PreparedStep {
  if (!p || p.rngSeed !== rngSeed || p.rows.length !== rows.length) return false;
  for (let k = 0; k < rows.length; k++) if (p.rows[k] !== rows[k]) return false;
  return true;
}

/**
 * One step's loss and gradients on `rows` of the training examples (prepared here unless `prepared` is
 * given; `scratch`: where a step prepared here takes its arrays, see `prepareStep`).
 */
export function computeGradients(model: DeepModel, train: Examples, rows: Int32Array, rngSeed: number, prepared: PreparedStep | null = null, scratch?: Scratch): StepResult {
  const p = preparedFor(prepared, rows, rngSeed) ? prepared : prepareStep(model, train, rows, rngSeed, scratch);
  const objective = objectiveFor(model.spec.output.kind);
  const t = performance.now();
  const vars = [...model.params.vars.values()];
  const { value, grads } = withRowDependentProducts(() =>
    tf.variableGrads(() => {
      const { logits } = model.gnn.forward(model.plan, p.arrays, true);
      const y = tf.tensor1d(p.labels);
      return objective.loss(model.spec.loss, logits!, y);
    }, vars),
  );
  const loss = value.dataSync()[0]!;
  value.dispose();
  const blob = model.params.gradientBlob(grads);
  for (const g of Object.values(grads)) g.dispose();
  return { loss, count: rows.length, grads: blob, timing: { sample: p.sample, gather: p.gather, step: performance.now() - t } };
}

/** Gradients on this thread. */
export class LocalEngine implements GradientEngine {
  readonly workers = 1;
  private readonly scratch = new Scratch();

  constructor(
    private readonly model: DeepModel,
    private readonly data: EngineData,
  ) {}

  async step(weights: Float32Array, rows: Int32Array, rngSeed: number): Promise<StepResult> {
    this.model.params.assignBlob(weights);
    const r = computeGradients(this.model, this.data.train, rows, rngSeed, null, this.scratch);
    // Yield to the event loop once per step: Ctrl-C (SIGINT) is delivered there.
    await new Promise((resolve) => setImmediate(resolve));
    return r;
  }

  async predict(weights: Float32Array, split: 'val' | 'test', seed: number, onProgress?: (done: number) => void): Promise<Float32Array> {
    this.model.params.assignBlob(weights);
    return predictInChunks(this.model, this.data[split], seed, onProgress);
  }

  async close(): Promise<void> {}
}
