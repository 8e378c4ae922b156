/**
 * An embedding worker (see pool.ts): the model on its own TF.js instance, answering `embed` messages
 * with exact (layer-wise) embeddings of a piece of a chunk or the head's outputs for examples, and
 * writing sampled batches into their job's shared output.
 */
import { parentPort } from 'node:worker_threads';
import type * as tf from '@tensorflow/tfjs';
import { selectBackend } from '../compute/backend.js';
import { Rng } from '../core/rng.js';
import { Graph } from '../graph/graph.js';
import { setQuiet } from '../core/log.js';
import { DeepModel } from '../model/deep_model.js';
import { Scratch } from '../model/scratch.js';
import { embedExact } from './layerwise.js';
import type { EmbedTask, EmbedWorkerInit } from './pool.js';

let model: DeepModel | null = null;

/** Per sampled job: its seeded stream and the first batch it has not sampled yet. */
const streams = new Map<number, { rng: Rng; next: number }>();
/**
 * Per (table, depth): the sampling tree and the static encodings (`DeepModel.staticEncodings`). A worker's
 * weights never change, so the encodings are computed once, for the first job, not once per chunk (at
 * `large`, 21 chunks of 65,536 customers would each encode the 105k articles again).
 */
const trees = new Map<string, { tree: ReturnType<DeepModel['samplingTree']>; encoded: Map<string, tf.Tensor2D> }>();

/** The sampled batches' arrays, one batch at a time (see model/scratch.ts). */
const scratch = new Scratch();

setQuiet(true);

/** The sampling tree and static encodings for sampled batches of `table` at `depth`, for a job of `seeds` entities. */
function treeFor(m: DeepModel, table: string, depth: number, seeds: number) {
  const key = `${table}\u0000${depth}`;
  let cached = trees.get(key);
  if (!cached) {
    const tree = m.samplingTree(table, depth);
    trees.set(key, (cached = { tree, encoded: m.staticEncodings(tree.plan, seeds) }));
  }
  return cached;
}

/** Writes batch `t.batch` of a sampled job into the job's shared output. */
function sampled(m: DeepModel, t: Extract<EmbedTask, { kind: 'sampled' }>): void {
  const { tree, encoded } = treeFor(m, t.table, t.depth, t.nodes.length);
  let s = streams.get(t.job);
  if (!s) streams.set(t.job, (s = { rng: new Rng(t.seed), next: 0 }));
  if (t.batch < s.next) throw new Error(`sampled batch ${t.batch} of job ${t.job} asked for after batch ${s.next - 1}`);
  const anchors = new Float64Array(t.batchSize).fill(t.anchor);
  const slice = (b: number): Int32Array => t.nodes.subarray(b * t.batchSize, Math.min(t.nodes.length, (b + 1) * t.batchSize));
  // Batches another worker computes: draw what they drew, so this batch's draws are the single-thread ones.
  if (tree.sampler.method !== 'last') {
    for (let b = s.next; b < t.batch; b++) {
      const nodes = slice(b);
      scratch.reset();
      tree.sampler.sample(nodes, anchors.subarray(0, nodes.length), s.rng, scratch);
    }
  }
  const nodes = slice(t.batch);
  s.next = t.batch + 1;
  scratch.reset();
  m.embedSampledBatch(tree, tree.sampler.sample(nodes, anchors.subarray(0, nodes.length), s.rng, scratch), encoded, scratch, { out: t.out, offset: t.batch * t.batchSize * m.spec.channels });
}

parentPort!.on('message', async (msg: { id: number; type: string } & Record<string, unknown>) => {
  try {
    if (msg.type === 'init') {
      const init = msg.init as EmbedWorkerInit;
      await selectBackend(init.backend);
      model = new DeepModel(Graph.fromShared(init.graph), init.spec, init.featureSpec, 1);
      model.params.assignBlob(init.weights);
      if (init.prepare) treeFor(model, init.prepare.table, init.prepare.depth, init.prepare.seeds);
      parentPort!.postMessage({ id: msg.id });
      return;
    }
    if (msg.type === 'done') {
      streams.delete(msg.job as number);
      parentPort!.postMessage({ id: msg.id });
      return;
    }
    if (!model) throw new Error('worker used before init');
    if (msg.type !== 'embed') throw new Error(`unknown message ${msg.type}`);
    const t = msg.task as EmbedTask;
    if (t.kind === 'sampled') {
      sampled(model, t);
      parentPort!.postMessage({ id: msg.id });
      return;
    }
    const res = t.kind === 'exact' ? embedExact(model, t.table, t.depth, t.nodes, t.anchor, t.degreeCap) : model.predictRaw({ nodes: t.nodes, anchors: t.anchors }, 2048, t.seed);
    // Transfer only a buffer the result owns whole (never a view into a larger one).
    const out = res.byteOffset === 0 && res.byteLength === res.buffer.byteLength ? res : res.slice();
    parentPort!.postMessage({ id: msg.id, out }, [out.buffer as ArrayBuffer]);
  } catch (e) {
    parentPort!.postMessage({ id: msg.id, error: e instanceof Error ? `${e.message}\n${e.stack ?? ''}` : String(e) });
  }
});
