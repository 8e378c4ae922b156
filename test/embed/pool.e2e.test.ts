/**
 * Embedding over worker threads gives the single-thread outputs bit for bit: exact mode split into parts
 * over two workers equals `embedExact` on the whole chunk; sampled mode with uniform sampling (where each
 * batch's draws depend on the batches before it) equals `DeepModel.embedSampled`, whichever worker takes
 * which batch, and its seed still reaches the sampler. Sampled mode reads anchor-independent types
 * (articles) from encodings of their whole table computed once: the numbers of encoding them per batch.
 * Predictions over the workers (distillation's teacher targets) equal the single-thread chunked ones.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig } from '../../src/config/load.js';
import { embedExact } from '../../src/embed/layerwise.js';
import { EmbedPool, embedWorkers, EXACT_PART, SAMPLED_BATCH } from '../../src/embed/pool.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { DeepModel } from '../../src/model/deep_model.js';
import { Rng } from '../../src/core/rng.js';
import { PREDICT_CHUNK, predictInChunks } from '../../src/train/engine.js';
import { randomDeepModel } from '../helpers/deep_model.js';
import { pipelineConfig } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';

let fx: SynthFixture;
let graph: Graph;
let model: DeepModel;
let pool: EmbedPool;

beforeAll(async () => {
  await selectBackend('wasm');
  fx = await tinySynth(pipelineConfig());
  const cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  graph = Graph.load((await buildGraph(cfg)).dir);
  const base = randomDeepModel(graph, 'customers', [4, 3]);
  // Uniform sampling: a worker that did not replay the batches before its own would draw other neighbours.
  model = new DeepModel(graph, { ...base.spec, sampling: 'uniform' }, base.featureSpec, 5);
  base.dispose();
  pool = (await EmbedPool.start(2, model, 'wasm'))!;
  expect(pool).not.toBeNull();
});
afterAll(async () => {
  await pool?.close();
  model?.dispose();
  fx?.cleanup();
});

/** Every customer, repeated to span several sampled batches (a node may appear many times in a chunk). */
function manyNodes(): Int32Array {
  const n = graph.table('customers').rows;
  return Int32Array.from({ length: 2 * SAMPLED_BATCH + 777 }, (_, i) => (i * 7) % n);
}

describe('EmbedPool', () => {
  it('exact: parts over two workers equal embedExact of the whole chunk, bit for bit', async () => {
    const nodes = Int32Array.from({ length: graph.table('customers').rows }, (_, i) => i);
    const anchor = graph.manifest.time_range![1];
    const single = embedExact(model, 'customers', 0, nodes, anchor, 50);
    const parallel = await pool.exact('customers', 0, nodes, anchor, 50, model.spec.channels);
    expect(parallel.length).toBe(nodes.length * model.spec.channels);
    expect(Array.from(parallel)).toEqual(Array.from(single));
    // A chunk larger than EXACT_PART goes out in several parts per worker: still in order, same numbers.
    const many = Int32Array.from({ length: 2 * EXACT_PART + 5 }, (_, i) => (i * 11) % nodes.length);
    const manySingle = embedExact(model, 'customers', 0, many, anchor, 50);
    expect(Array.from(await pool.exact('customers', 0, many, anchor, 50, model.spec.channels))).toEqual(Array.from(manySingle));
  });

  it('sampled (uniform): batches over two workers equal embedSampled, and another seed differs', async () => {
    const nodes = manyNodes();
    const [lo, hi] = graph.manifest.time_range!;
    const anchor = (lo + hi) / 2;
    const single = model.embedSampled('customers', 0, nodes, anchor, 42);
    const parallel = await pool.sampled('customers', 0, nodes, anchor, 42, model.spec.channels);
    expect(Array.from(parallel)).toEqual(Array.from(single));
    // The workers wrote their batches straight into the chunk's output (shared), nothing posted back.
    expect(parallel.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(parallel.length).toBe(nodes.length * model.spec.channels);
    const other = await pool.sampled('customers', 0, nodes, anchor, 43, model.spec.channels);
    expect(Array.from(other)).not.toEqual(Array.from(single));
    // Same seed again (a new job): the same numbers, so no sampling state leaks between jobs.
    expect(Array.from(await pool.sampled('customers', 0, nodes, anchor, 42, model.spec.channels))).toEqual(Array.from(single));
  });

  it('sampled: whole-table encodings of anchor-independent types give the per-batch encoder\'s numbers', () => {
    const nodes = manyNodes();
    const [lo, hi] = graph.manifest.time_range!;
    const anchor = (lo + hi) / 2;
    const tree = model.samplingTree('customers', 0);
    const encoded = model.staticEncodings(tree.plan, nodes.length);
    try {
      // articles have no time column and appear under the customers' transactions: they are encoded once
      expect([...encoded.keys()]).toContain('articles');
      expect([...encoded.keys()].every((t) => !model.features[t]!.timeDependent)).toBe(true);
      expect(encoded.get('articles')!.shape).toEqual([graph.table('articles').rows, model.spec.channels]);
    } finally {
      for (const t of encoded.values()) t.dispose();
    }
    // A few entities cannot hold a whole table's worth of rows: nothing is encoded ahead.
    expect(model.staticEncodings(tree.plan, 1).size).toBe(0);
    const withStatic = model.embedSampled('customers', 0, nodes, anchor, 42);
    const rng = new Rng(42);
    const perBatch = new Float32Array(withStatic.length);
    for (let i = 0; i < nodes.length; i += SAMPLED_BATCH) {
      const part = nodes.subarray(i, Math.min(nodes.length, i + SAMPLED_BATCH));
      const sampled = tree.sampler.sample(part, new Float64Array(part.length).fill(anchor), rng);
      perBatch.set(model.embedSampledBatch(tree, sampled), i * model.spec.channels);
    }
    // Not bit for bit since training folds a leaf type's encoder into its readers' edge weights
    // (x·(W_enc·W_e) per batch against (x·W_enc)·W_e from the whole-table encoding): float rounding only.
    let worst = 0;
    for (let i = 0; i < perBatch.length; i++) worst = Math.max(worst, Math.abs(withStatic[i]! - perBatch[i]!));
    expect(worst).toBeLessThan(1e-5);
    expect(perBatch.some((v) => v !== 0)).toBe(true);
  });

  it('a pool started for a sampled job (`prepare`: tree and static encodings built at start) gives the same numbers', async () => {
    const nodes = manyNodes();
    const [lo, hi] = graph.manifest.time_range!;
    const anchor = (lo + hi) / 2;
    const prepared = (await EmbedPool.start(2, model, 'wasm', { table: 'customers', depth: 0, seeds: nodes.length }))!;
    try {
      expect(Array.from(await prepared.sampled('customers', 0, nodes, anchor, 42, model.spec.channels))).toEqual(Array.from(model.embedSampled('customers', 0, nodes, anchor, 42)));
    } finally {
      await prepared.close();
    }
  });

  it('predictRaw: chunks over two workers equal predictInChunks on this thread, bit for bit, with progress', async () => {
    const n = graph.table('customers').rows;
    const [lo, hi] = graph.manifest.time_range!;
    // More than two chunks, so both workers take several and each chunk's seed matters.
    const total = 2 * PREDICT_CHUNK + 501;
    const ex = { nodes: Int32Array.from({ length: total }, (_, i) => (i * 13) % n), anchors: Float64Array.from({ length: total }, (_, i) => lo + ((hi - lo) * (i % 97)) / 96) };
    const single = await predictInChunks(model, ex, 1234);
    const seen: number[] = [];
    const parallel = await pool.predictRaw(ex, 1234, (done) => seen.push(done));
    expect(parallel.length).toBe(total);
    expect(Array.from(parallel)).toEqual(Array.from(single));
    expect(new Set(parallel).size).toBeGreaterThan(100);
    expect(seen.at(-1)).toBe(total);
    // Another seed draws other neighbours (uniform sampling).
    expect(Array.from(await pool.predictRaw(ex, 99))).not.toEqual(Array.from(single));
  });

  it('auto uses 2 workers only on the single-threaded backends with 2+ cores; a number is taken as given', () => {
    expect(embedWorkers(3, 'tensorflow')).toBe(3);
    expect(embedWorkers('auto', 'tensorflow')).toBe(1);
    expect([1, 2]).toContain(embedWorkers(undefined, 'wasm'));
  });
});
