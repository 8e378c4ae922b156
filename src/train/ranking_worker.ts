/**
 * A recommender training worker (see ranking_engine.ts): the model on its own TF.js instance, answering
 * `items` messages with its share's gradient through the item tower. The forward's embeddings go to the
 * trainer through shared memory; the worker then blocks, its gradient tape open, until the trainer has
 * written ∂L/∂g of its items, and closes the tape with Σ g ⊙ ∂L/∂g. Woken meanwhile with the next step's
 * share, it samples and gathers those trees, and uses them when that step's message comes.
 */
import { parentPort } from 'node:worker_threads';
import { tf } from '../core/tf.js';
import { selectBackend } from '../compute/backend.js';
import { setQuiet } from '../core/log.js';
import { Rng } from '../core/rng.js';
import { Graph } from '../graph/graph.js';
import type { BatchArrays } from '../model/batch.js';
import { DeepModel } from '../model/deep_model.js';
import { ABORT, GO, type ItemShare, type RankingWorkerInit } from './ranking_engine.js';

let model: DeepModel | null = null;
let vars: tf.Variable[] = [];
/** A private copy of the shared weights (the cpu backend keeps the array a tensor is made from). */
let weights: Float32Array | null = null;
/** the next step's item trees, sampled and gathered while this worker waited in the previous step */
let prepared: { seq: number; arrays: BatchArrays; sample: number; gather: number } | null = null;

setQuiet(true);

/** A share's item trees: sampled with its seed, gathered into the item plan's arrays. */
function itemTrees(m: DeepModel, items: Int32Array, anchor: number, seed: number): { arrays: BatchArrays; sample: number; gather: number } {
  let t = performance.now();
  const sampled = m.itemSampler!.sample(items, new Float64Array(items.length).fill(anchor), new Rng(seed));
  const sample = performance.now() - t;
  t = performance.now();
  const arrays = m.arrays(sampled, m.itemPlan!);
  return { arrays, sample, gather: performance.now() - t };
}

/**
 * Blocks until the trainer has written ∂L/∂g (GO); throws when its step failed (ABORT). Prepares the next
 * step's share when the trainer publishes it meanwhile.
 */
function awaitGradient(m: DeepModel, share: ItemShare): void {
  const flag = share.flag;
  let seen = share.seq;
  for (;;) {
    const next = Atomics.load(flag, 1);
    if (next > seen) {
      seen = next;
      const [seq, anchor, seed, count] = share.nextMeta;
      if (seq === next) prepared = { seq, ...itemTrees(m, share.nextItems.slice(0, count), anchor!, seed!) };
      continue;
    }
    const v = Atomics.load(flag, 0);
    if (v === GO) return;
    if (v === ABORT) throw new Error('the trainer abandoned the step');
    // The timeout only bounds each wait: a trainer that died terminates this worker.
    Atomics.wait(flag, 0, v, 10_000);
  }
}

function items(m: DeepModel, share: ItemShare): { grads: Float32Array; timing: { sample: number; gather: number } } {
  if (weights?.length !== share.weights.length) weights = new Float32Array(share.weights.length);
  weights.set(share.weights);
  m.params.assignBlob(weights);
  const M = share.items.length;
  const C = m.spec.channels;
  const trees = prepared?.seq === share.seq ? prepared : itemTrees(m, share.items, share.anchor, share.seed);
  prepared = null;
  const { value, grads } = tf.variableGrads(() => {
    const g = m.gnn.forward(m.itemPlan!, trees.arrays, true).embedding;
    share.g.set(g.dataSync() as Float32Array);
    parentPort!.postMessage({ event: 'ready' });
    awaitGradient(m, share);
    return tf.sum(tf.mul(g, tf.tensor2d(share.dg.slice(0, M * C), [M, C]))) as tf.Scalar;
  }, vars);
  value.dispose();
  const blob = m.params.gradientBlob(grads);
  for (const x of Object.values(grads)) x.dispose();
  return { grads: blob, timing: { sample: trees.sample, gather: trees.gather } };
}

parentPort!.on('message', async (msg: { id: number; type: string } & Record<string, unknown>) => {
  try {
    if (msg.type === 'init') {
      const init = msg.init as RankingWorkerInit;
      await selectBackend(init.backend);
      model = new DeepModel(Graph.fromShared(init.graph), init.spec, init.featureSpec, 1);
      vars = [...model.params.vars.values()];
      parentPort!.postMessage({ id: msg.id });
      return;
    }
    if (!model) throw new Error('worker used before init');
    if (msg.type !== 'items') throw new Error(`unknown message ${msg.type}`);
    const r = items(model, msg.share as ItemShare);
    parentPort!.postMessage({ id: msg.id, ...r }, [r.grads.buffer as ArrayBuffer]);
  } catch (e) {
    parentPort!.postMessage({ id: msg.id, error: e instanceof Error ? `${e.message}\n${e.stack ?? ''}` : String(e) });
  }
});
