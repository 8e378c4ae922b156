/**
 * One training step of the deep recommender (model/context_gnn.ts): the batch's candidate items — every
 * label item of the batch, the items of the batch users' own histories (the hard negatives: what a user
 * bought before but not this time; subsampled to keep at most MAX_CANDIDATES), and NEGATIVES uniform
 * negatives; the whole catalogue when it has at most FULL_SOFTMAX items (exact softmax, no sampling) —
 * the user and item towers, and the sampled softmax over the candidates (task/objective/ranking.ts says
 * why). `localStep` runs it on this thread; ranking_engine.ts splits the item tower over workers.
 */
import { tf } from '../core/tf.js';
import type { Rng } from '../core/rng.js';
import type { BatchArrays } from '../model/batch.js';
import type { DeepModel } from '../model/deep_model.js';
import { pairCells, sampleNegatives, userHistories, type PairCells } from '../model/context_gnn.js';
import type { SampledBatch } from '../model/sampler.js';
import type { Examples } from '../task/task_spec.js';

/** catalogues up to this size are scored in full at every step */
export const FULL_SOFTMAX = 4096;
/** uniform negatives per step for larger catalogues */
export const NEGATIVES = 1024;
/**
 * candidates per step for larger catalogues: the item trees cost per candidate, and 512 users' last 50
 * purchases alone reach ~10k distinct articles at `medium`; history items beyond this are subsampled
 */
export const MAX_CANDIDATES = 4096;

export interface StepResult {
  loss: number;
  count: number;
  grads: Float32Array;
  timing: { sample: number; gather: number; step: number };
}

/**
 * Everything of a step but the item tower: the batch's users and their sampled trees, the candidate
 * items (label items, history items, negatives), which candidates each user bought, the candidates'
 * popularity and the (user, item) pair cells. Both engines start from it.
 */
export interface StepInputs {
  anchor: number;
  /** the candidate items */
  items: Int32Array;
  /** [B × M]: 1 where the user bought the candidate in the label window */
  positives: Float32Array;
  popCand: Float32Array;
  pair: PairCells;
  userSample: SampledBatch;
  /** milliseconds spent building it */
  ms: number;
}

/** The step's inputs from its rows and generator (the rng's draws are the candidates', then the users' trees). */
export function stepInputs(model: DeepModel, train: Examples, rows: Int32Array, nItems: number, pop: (a: number) => Float32Array, rng: Rng): StepInputs {
  const t = performance.now();
  const rs = model.spec.ranking!;
  const B = rows.length;
  const anchor = train.anchors[rows[0]!]!;
  const users = Int32Array.from(rows, (r) => train.nodes[r]!);
  const anchors = new Float64Array(B).fill(anchor);
  const labels = train.label_items!;
  const histories = userHistories(model.graph, rs, users, anchors, pop);

  // Candidates: label items, history items, then negatives (or the whole catalogue).
  const column = new Map<number, number>();
  const cand: number[] = [];
  const add = (i: number): void => {
    if (!column.has(i)) {
      column.set(i, cand.length);
      cand.push(i);
    }
  };
  if (nItems <= FULL_SOFTMAX) for (let i = 0; i < nItems; i++) add(i);
  for (const r of rows) for (let j = labels.offsets[r]!; j < labels.offsets[r + 1]!; j++) add(labels.items[j]!);
  if (nItems <= FULL_SOFTMAX) for (const i of histories.items) add(i);
  else {
    // A seeded subset of the history items (hard negatives), then uniform negatives.
    const hist = rng.shuffle(Int32Array.from(new Set(histories.items)));
    for (let j = 0; j < hist.length && cand.length < MAX_CANDIDATES - NEGATIVES; j++) add(hist[j]!);
    for (const i of sampleNegatives(nItems, NEGATIVES, new Set(cand), rng)) add(i);
  }
  const items = Int32Array.from(cand);
  const M = items.length;
  const positives = new Float32Array(B * M);
  rows.forEach((r, b) => {
    for (let j = labels.offsets[r]!; j < labels.offsets[r + 1]!; j++) positives[b * M + column.get(labels.items[j]!)!] = 1;
  });
  const p = pop(anchor);
  const popCand = Float32Array.from(items, (i) => p[i]!);
  const pair = pairCells(histories, Int32Array.from({ length: B }, (_, b) => b), M, (i) => column.get(i) ?? -1);
  const userSample = model.sampler.sample(users, anchors, rng);
  return { anchor, items, positives, popCand, pair, userSample, ms: performance.now() - t };
}

/**
 * The sampled-softmax loss of a step given the user trees' arrays and the candidates' GNN embeddings [M × C]
 * from `items()`: the user tower, then the items (their dropout draws come after the users', as they always
 * have), the item ID vectors, the scores. Call inside a gradient scope.
 */
export function stepLoss(model: DeepModel, inputs: StepInputs, userArrays: BatchArrays, items: () => tf.Tensor2D): tf.Scalar {
  const head = model.ranking!;
  const u = model.gnn.forward(model.plan, userArrays, true).embedding;
  return head.trainingLoss(u, head.itemEmbeddings(items(), inputs.items), inputs.popCand, inputs.pair, inputs.positives);
}

/** One step on this thread: both towers in one gradient computation. */
export function localStep(model: DeepModel, train: Examples, rows: Int32Array, nItems: number, pop: (a: number) => Float32Array, rng: Rng, vars: tf.Variable[]): StepResult {
  const inputs = stepInputs(model, train, rows, nItems, pop, rng);
  let t = performance.now();
  const itemSample = model.itemSampler!.sample(inputs.items, new Float64Array(inputs.items.length).fill(inputs.anchor), rng);
  const sample = inputs.ms + performance.now() - t;
  t = performance.now();
  const userArrays = model.arrays(inputs.userSample);
  const itemArrays = model.arrays(itemSample, model.itemPlan!);
  const gather = performance.now() - t;
  t = performance.now();
  const { value, grads } = tf.variableGrads(() => stepLoss(model, inputs, userArrays, () => model.gnn.forward(model.itemPlan!, itemArrays, true).embedding), vars);
  const loss = value.dataSync()[0]!;
  value.dispose();
  const blob = model.params.gradientBlob(grads);
  for (const g of Object.values(grads)) g.dispose();
  return { loss, count: rows.length, grads: blob, timing: { sample, gather, step: performance.now() - t } };
}
