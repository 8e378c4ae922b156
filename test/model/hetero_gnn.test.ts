/**
 * HeteroGnn.forward in inference frees each layer's intermediates as it goes (a sampled batch's TF.js
 * heap peaks at one layer's tensors): the numbers must be those of the forward that keeps everything.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tf } from '../../src/core/tf.js';
import { selectBackend } from '../../src/compute/backend.js';
import { Rng } from '../../src/core/rng.js';
import type { Graph } from '../../src/graph/graph.js';
import { DeepModel } from '../../src/model/deep_model.js';
import { randomDeepModel } from '../helpers/deep_model.js';
import { tinyPipelineGraph } from '../helpers/tiny_graph.js';
import type { SynthFixture } from '../helpers/synth.js';

let fx: SynthFixture;
let graph: Graph;

beforeAll(async () => {
  await selectBackend('wasm');
  ({ fx, graph } = await tinyPipelineGraph());
});
afterAll(() => fx?.cleanup());

/**
 * The root embedding of one batch and the forward's TF.js peak (bytes above those alive before it, after
 * each kernel: tf.profile's snapshots); `leftBehind`: tensors still alive after the caller's scope.
 */
async function profiled(model: DeepModel, arrays: ReturnType<DeepModel['batch']>, training: boolean): Promise<{ values: Float32Array; peakBytes: number; leftBehind: number }> {
  const before = tf.memory().numTensors;
  const startBytes = tf.memory().numBytes;
  let values = new Float32Array(0);
  const p = await tf.profile(() => {
    tf.tidy(() => {
      values = (model.gnn.forward(model.plan, arrays, training).embedding.dataSync() as Float32Array).slice();
    });
  });
  return { values, peakBytes: p.peakBytes - startBytes, leftBehind: tf.memory().numTensors - before };
}

describe('HeteroGnn.forward in inference', () => {
  for (const encoder of ['sage', 'gat'] as const) {
    it(`${encoder}: the same numbers as the forward that keeps every intermediate (training mode, no dropout), at a lower TF.js peak, nothing left behind`, async () => {
      const base = randomDeepModel(graph, 'customers', [6, 3], { channels: 16 });
      const model = new DeepModel(graph, { ...base.spec, encoder, heads: 2 }, base.featureSpec, 5);
      base.dispose();
      try {
        const n = graph.table('customers').rows;
        const seeds = Int32Array.from({ length: 200 }, (_, i) => (i * 7) % n);
        const anchors = new Float64Array(seeds.length).fill(graph.manifest.time_range![1]);
        const arrays = model.batch(seeds, anchors, new Rng(1));
        const kept = await profiled(model, arrays, true);
        const freed = await profiled(model, arrays, false);
        expect(freed.values.length).toBe(seeds.length * 16);
        expect(Array.from(freed.values)).toEqual(Array.from(kept.values));
        expect(freed.values.some((v) => v !== 0)).toBe(true);
        expect(freed.leftBehind).toBe(0);
        expect(kept.leftBehind).toBe(0);
        expect(kept.peakBytes).toBeGreaterThan(0);
        // SAGE: 0.23× here (the conv's sums freed as they go); GAT's conv already ran in its own scope,
        // so only the encoder inputs and the norm/ReLU/skip chain are freed earlier: 0.77×.
        expect(freed.peakBytes).toBeLessThan((encoder === 'sage' ? 0.4 : 0.9) * kept.peakBytes);
      } finally {
        model.dispose();
      }
    });
  }
});
