/**
 * A data-parallel training worker (see parallel.ts): a model replica on its own TF.js instance that
 * answers `step` (gradients of a share of the batch at the given weights) and `predict` messages.
 */
import { parentPort } from 'node:worker_threads';
import { selectBackend } from '../compute/backend.js';
import { Graph } from '../graph/graph.js';
import { setQuiet } from '../core/log.js';
import { DeepModel } from '../model/deep_model.js';
import { Scratch } from '../model/scratch.js';
import { computeGradients, prepareStep, type PreparedStep } from './engine.js';
import type { WorkerInit } from './parallel.js';

let model: DeepModel | null = null;
let init: WorkerInit | null = null;
/** the next step's share, sampled and gathered while the trainer updated the weights */
let prepared: PreparedStep | null = null;
/** where steps are prepared: one at a time, each computed before the next is prepared */
const scratch = new Scratch();
/**
 * A private copy of the trainer's shared weight blob: the cpu backend keeps the array a tensor is made
 * from, so a variable made straight from the shared memory would follow the trainer's next update.
 */
let weights: Float32Array | null = null;

setQuiet(true);

parentPort!.on('message', async (msg: { id: number; type: string } & Record<string, unknown>) => {
  try {
    if (msg.type === 'init') {
      init = msg.init as WorkerInit;
      await selectBackend(init.backend);
      model = new DeepModel(Graph.fromShared(init.graph), init.spec, init.featureSpec, 1 + init.index);
      parentPort!.postMessage({ id: msg.id });
      return;
    }
    if (!model || !init) throw new Error('worker used before init');
    const w = msg.weights as Float32Array;
    if (weights?.length !== w.length) weights = new Float32Array(w.length);
    weights.set(w);
    model.params.assignBlob(weights);
    if (msg.type === 'step') {
      const r = computeGradients(model, init.data.train, msg.rows as Int32Array, msg.rngSeed as number, prepared, scratch);
      prepared = null;
      parentPort!.postMessage({ id: msg.id, ...r }, [r.grads.buffer as ArrayBuffer]);
      // The trainer now averages the gradients and steps the optimizer: prepare the next share meanwhile.
      const next = msg.next as { rows: Int32Array; rngSeed: number } | undefined;
      if (next && next.rows.length > 0) prepared = prepareStep(model, init.data.train, next.rows, next.rngSeed, scratch);
    } else if (msg.type === 'predict') {
      const ex = init.data[msg.split as 'val' | 'test'];
      const lo = msg.lo as number;
      const hi = msg.hi as number;
      const out = model.predictRaw({ nodes: ex.nodes.subarray(lo, hi), anchors: ex.anchors.subarray(lo, hi) }, 2048, msg.seed as number);
      parentPort!.postMessage({ id: msg.id, out }, [out.buffer as ArrayBuffer]);
    } else {
      throw new Error(`unknown message ${msg.type}`);
    }
  } catch (e) {
    parentPort!.postMessage({ id: msg.id, error: e instanceof Error ? `${e.message}\n${e.stack ?? ''}` : String(e) });
  }
});
