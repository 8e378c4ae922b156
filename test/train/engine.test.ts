/**
 * Evaluation through the gradient engines: prediction in seeded chunks gives the same outputs on this
 * thread and over a pool of worker threads (whichever worker takes a chunk), reports its progress, and
 * a chunk's seed depends on its position only.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig } from '../../src/config/load.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { DeepModel } from '../../src/model/deep_model.js';
import { featureSpecFromGraph } from '../../src/model/features.js';
import { chunkSeed, LocalEngine, PREDICT_CHUNK, type EngineData } from '../../src/train/engine.js';
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
