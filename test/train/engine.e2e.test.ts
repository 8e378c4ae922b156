/**
 * Evaluation through the gradient engines: prediction in seeded chunks gives the same outputs on this
 * thread and over a pool of worker threads (whichever worker takes a chunk), reports its progress, and
 * a chunk's seed depends on its position only. Steps: a worker's share of the next step, sampled and
 * gathered while the trainer updates the weights, gives the gradients of one prepared at the step, and
 * the loop hands every step the seed it drew before prefetching existed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig } from '../../src/config/load.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { DeepModel } from '../../src/model/deep_model.js';
import { featureSpecFromGraph } from '../../src/model/features.js';
import { Rng } from '../../src/core/rng.js';
import { Scratch } from '../../src/model/scratch.js';
import { chunkSeed, computeGradients, LocalEngine, prepareStep, PREDICT_CHUNK, type EngineData, type GradientEngine, type StepResult } from '../../src/train/engine.js';
import { trainLoop } from '../../src/train/loop.js';
import { WorkerEngine } from '../../src/train/parallel.js';
import { randomDeepModel } from '../helpers/deep_model.js';
import { pipelineConfig } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';

let fx: SynthFixture;
let graph: Graph;

beforeAll(async () => {
  await selectBackend('cpu');
  fx = await tinySynth(pipelineConfig());
  const cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  graph = Graph.load((await buildGraph(cfg)).dir);
});
afterAll(() => fx.cleanup());

describe('engine.predict', () => {
  it('chunk seeds differ by position and not by anything else', () => {
    expect(chunkSeed(1234, 0)).not.toBe(chunkSeed(1234, PREDICT_CHUNK));
    expect(chunkSeed(1234, PREDICT_CHUNK)).toBe(chunkSeed(1234, PREDICT_CHUNK));
    expect(chunkSeed(1, 0)).not.toBe(chunkSeed(2, 0));
  });

  it('outputs over two worker threads equal this thread\'s, with uniform sampling, and progress ends at the total', async () => {
    const base = randomDeepModel(graph, 'transactions', [3, 2]);
    // Uniform sampling: outputs depend on each chunk's seed, so a scheduling-dependent seed would show.
    const spec = { ...base.spec, sampling: 'uniform' as const };
    base.dispose();
    const featureSpec = featureSpecFromGraph(graph, []);
    const model = new DeepModel(graph, spec, featureSpec, 3);
    const rows = PREDICT_CHUNK + 3000;
    const n = graph.table('transactions').rows;
    const [lo, hi] = graph.manifest.time_range!;
    const ex = {
      nodes: Int32Array.from({ length: rows }, (_, i) => i % n),
      anchors: Float64Array.from({ length: rows }, (_, i) => lo + ((hi - lo) * (i % 97)) / 97),
      labels: new Float32Array(rows),
    };
    const data: EngineData = { train: ex, val: ex, test: ex };
    const weights = model.params.serialize().blob;
    const localDone: number[] = [];
    const local = await new LocalEngine(model, data).predict(weights, 'val', 1234, (d) => localDone.push(d));
    const pool = (await WorkerEngine.start(2, graph, spec, featureSpec, data, 'cpu'))!;
    expect(pool).not.toBeNull();
    try {
      const poolDone: number[] = [];
      const parallel = await pool.predict(weights, 'val', 1234, (d) => poolDone.push(d));
      expect(Array.from(parallel)).toEqual(Array.from(local));
      expect(localDone).toEqual([PREDICT_CHUNK, rows]);
      expect(poolDone[poolDone.length - 1]).toBe(rows);
      // A different seed samples different neighbours: the seed reaches the sampler.
      const other = await pool.predict(weights, 'val', 99);
      expect(Array.from(other)).not.toEqual(Array.from(local));
    } finally {
      await pool.close();
      model.dispose();
    }
  });
});

/** Examples over the transactions (labels alternate so both classes exist). */
function examples(rows: number) {
  const n = graph.table('transactions').rows;
  const [lo, hi] = graph.manifest.time_range!;
  return {
    nodes: Int32Array.from({ length: rows }, (_, i) => (i * 13) % n),
    anchors: Float64Array.from({ length: rows }, (_, i) => lo + ((hi - lo) * (i % 89)) / 89),
    labels: Float32Array.from({ length: rows }, (_, i) => i % 2),
  };
}

describe('engine.step with the next step prepared ahead', () => {
  it('a prepared step gives the gradients of an unprepared one; a mismatched preparation is not used', () => {
    const base = randomDeepModel(graph, 'transactions', [3, 2]);
    const model = new DeepModel(graph, { ...base.spec, sampling: 'uniform' }, base.featureSpec, 3);
    base.dispose();
    try {
      const ex = examples(300);
      const rows = Int32Array.from({ length: 64 }, (_, i) => i * 3);
      const fresh = computeGradients(model, ex, rows, 77);
      const ahead = computeGradients(model, ex, rows, 77, prepareStep(model, ex, rows, 77));
      expect(ahead.loss).toBe(fresh.loss);
      expect(Array.from(ahead.grads)).toEqual(Array.from(fresh.grads));
      // Prepared for another seed, or other rows: sampled again at the step, so the same numbers still.
      for (const wrong of [prepareStep(model, ex, rows, 78), prepareStep(model, ex, rows.map((r) => r + 1), 77)]) {
        const r = computeGradients(model, ex, rows, 77, wrong);
        expect(Array.from(r.grads)).toEqual(Array.from(fresh.grads));
      }
      // The seed matters (uniform sampling), so the comparisons above could fail.
      expect(Array.from(computeGradients(model, ex, rows, 78).grads)).not.toEqual(Array.from(fresh.grads));
    } finally {
      model.dispose();
    }
  });

  it('steps prepared in one reused scratch buffer give the gradients of freshly allocated ones, step after step', () => {
    const base = randomDeepModel(graph, 'transactions', [3, 2]);
    const model = new DeepModel(graph, { ...base.spec, sampling: 'uniform' }, base.featureSpec, 3);
    base.dispose();
    try {
      const ex = examples(300);
      const scratch = new Scratch();
      // Batches of different sizes, so a later one reuses (and must fully overwrite) an earlier one's memory.
      for (const [size, seed] of [[64, 77], [17, 78], [64, 79], [5, 80]] as const) {
        const rows = Int32Array.from({ length: size }, (_, i) => (i * 7 + seed) % 300);
        const fresh = computeGradients(model, ex, rows, seed);
        const ahead = computeGradients(model, ex, rows, seed, prepareStep(model, ex, rows, seed, scratch));
        const inside = computeGradients(model, ex, rows, seed, null, scratch);
        expect(Array.from(ahead.grads)).toEqual(Array.from(fresh.grads));
        expect(Array.from(inside.grads)).toEqual(Array.from(fresh.grads));
        expect(inside.loss).toBe(fresh.loss);
      }
    } finally {
      model.dispose();
    }
  });

  it('over two workers: a step whose shares were prepared during the previous step equals the same step unprepared', async () => {
    const base = randomDeepModel(graph, 'transactions', [3, 2]);
    const spec = { ...base.spec, sampling: 'uniform' as const };
    const featureSpec = base.featureSpec;
    base.dispose();
    const model = new DeepModel(graph, spec, featureSpec, 3);
    const ex = examples(400);
    const data: EngineData = { train: ex, val: ex, test: ex };
    const weights = model.params.serialize().blob;
    const pool = (await WorkerEngine.start(2, graph, spec, featureSpec, data, 'cpu'))!;
    try {
      const a = Int32Array.from({ length: 96 }, (_, i) => i);
      const b = Int32Array.from({ length: 96 }, (_, i) => 399 - i);
      await pool.step(weights, a, 5, { rows: b, rngSeed: 6 });
      const prepared = await pool.step(weights, b, 6);
      const unprepared = await pool.step(weights, b, 6);
      expect(prepared.loss).toBe(unprepared.loss);
      expect(Array.from(prepared.grads)).toEqual(Array.from(unprepared.grads));
      // Announced b with seed 6, then asked for seed 7: the preparation is not used.
      await pool.step(weights, a, 5, { rows: b, rngSeed: 6 });
      const other = await pool.step(weights, b, 7);
      expect(Array.from(other.grads)).toEqual(Array.from((await pool.step(weights, b, 7)).grads));
      expect(Array.from(other.grads)).not.toEqual(Array.from(unprepared.grads));
    } finally {
      await pool.close();
      model.dispose();
    }
  });

  it('trainLoop: step s gets the seed drawn after the shuffle as before, and announces step s + 1 exactly', async () => {
    const model = randomDeepModel(graph, 'transactions', [2]);
    const dir = mkdtempSync(join(tmpdir(), 'gnnctl-loop-'));
    const calls: { rows: number[]; seed: number; next?: { rows: number[]; seed: number } }[] = [];
    const size = model.params.serialize().blob.length;
    const engine: GradientEngine = {
      workers: 1,
      async step(_w, rows, rngSeed, next): Promise<StepResult> {
        calls.push({ rows: Array.from(rows), seed: rngSeed, next: next && { rows: Array.from(next.rows), seed: next.rngSeed } });
        return { loss: 0.5, count: rows.length, grads: new Float32Array(size), timing: { sample: 0, gather: 0, step: 0 } };
      },
      async predict(_w, split) {
        return new Float32Array(split === 'val' ? 40 : 0).map((_, i) => i / 40);
      },
      async close() {},
    };
    try {
      const tables = { train: examples(100), val: examples(40), test: examples(0) };
      await trainLoop(model, engine, tables, { epochs: 2, batchSize: 32, patience: 5, lr: 1e-3 }, 11, { requested: false }, dir);
      // What the loop drew before prefetching: per epoch a shuffle, then one seed per step.
      const rng = new Rng(11);
      const order = Int32Array.from({ length: 100 }, (_, i) => i);
      const expected: { rows: number[]; seed: number }[] = [];
      for (let e = 0; e < 2; e++) {
        rng.shuffle(order);
        for (let s = 0; s < 4; s++) expected.push({ rows: Array.from(order.subarray(s * 32, Math.min(100, (s + 1) * 32))), seed: rng.nextU32() });
      }
      expect(calls.map((c) => ({ rows: c.rows, seed: c.seed }))).toEqual(expected);
      calls.forEach((c, k) => expect(c.next).toEqual(k % 4 === 3 ? undefined : expected[k + 1]));
    } finally {
      model.dispose();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
