/**
 * The recommender's step with its item tower split over two workers (train/ranking_engine.ts) computes the
 * one-thread step's loss and gradient (train/ranking_step.ts `localStep`): with deterministic trees
 * (`last` sampling) and no dropout the two are the same function, so they agree to float rounding, over
 * two steps in a row (the second's trees prepared by the workers during the first) and with more
 * candidates than either share. With `uniform` sampling, trees prepared ahead equal trees sampled when
 * their step comes.
 */
import { tf } from '../../src/core/tf.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig } from '../../src/config/load.js';
import { setQuiet } from '../../src/core/log.js';
import { Rng } from '../../src/core/rng.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { DeepModel } from '../../src/model/deep_model.js';
import { popularityCache } from '../../src/model/context_gnn.js';
import { taskSplit } from '../../src/task/split.js';
import type { Examples } from '../../src/task/task_spec.js';
import { buildTrainingTables } from '../../src/train/examples.js';
import { ItemSplitEngine } from '../../src/train/ranking_engine.js';
import { localStep, stepInputs, stepLoss, type StepResult } from '../../src/train/ranking_step.js';
import { groups } from '../../src/train/ranking_trainer.js';
import { train as trainRun } from '../../src/train/trainer.js';
import { synthConfig, tinySynth, type SynthFixture } from '../helpers/synth.js';

const QUERY = 'PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP 12 FOR EACH customers.customer_id';

let fx: SynthFixture;
let graph: Graph;
let base: DeepModel;
let examples: Examples;

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = await tinySynth(
    synthConfig(`tasks:
  next_purchases:
    query: ${QUERY}
    split: { train_anchors: 2 }
model: { channels: 8, categorical_dim: 4, num_neighbors: [6, 3], epochs: 1, batch_size: 64, max_steps_per_epoch: 2 }
`),
  );
  const cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  const built = await buildGraph(cfg);
  graph = Graph.load(built.dir);
  // A trained run gives the recommender's spec (ranking head, item plan) and non-trivial weights.
  const run = await trainRun({ cfg, task: 'next_purchases', backend: 'wasm' });
  base = DeepModel.load(run.runDir, graph);
  const task = cfg.taskSpecs.next_purchases!;
  const range = graph.manifest.time_range!;
  examples = (await buildTrainingTables(built.dir, graph.manifest, task, taskSplit(task, { min: range[0], max: range[1] }), { seed: 0 })).train;
}, 180_000);
afterAll(() => {
  base?.dispose();
  fx?.cleanup();
  setQuiet(false);
});

/** A model with `base`'s weights and the given sampling and dropout. */
function variant(sampling: 'last' | 'uniform', dropout: number): { model: DeepModel; weights: Float32Array } {
  const model = new DeepModel(graph, { ...base.spec, sampling, dropout }, base.featureSpec, 0);
  const weights = base.params.serialize().blob;
  model.params.assignBlob(weights);
  return { model, weights };
}

function relDiff(a: Float32Array, b: Float32Array): number {
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < a.length; i++) {
    diff = Math.max(diff, Math.abs(a[i]! - b[i]!));
    scale = Math.max(scale, Math.abs(a[i]!));
  }
  return diff / scale;
}

describe('ItemSplitEngine', () => {
  it('equals the one-thread step (loss and gradient) when the trees are deterministic, step after step', async () => {
    const { model, weights } = variant('last', 0);
    const rs = model.spec.ranking!;
    const nItems = graph.tables[rs.item_table]!.rows;
    const pop = popularityCache(graph, rs);
    const vars = [...model.params.vars.values()];
    const engine = (await ItemSplitEngine.start(2, model, examples, nItems, pop, 'wasm'))!;
    expect(engine).not.toBeNull();
    try {
      const batches = [...groups(examples).values()].map((rows) => Int32Array.from(rows.slice(0, 48)));
      expect(batches.length).toBeGreaterThanOrEqual(2);
      for (const [i, rows] of batches.slice(0, 2).entries()) {
        const one: StepResult = localStep(model, examples, rows, nItems, pop, new Rng(10 + i), vars);
        // The first step plans the second: its generator is consumed then, so the one passed when it comes
        // is not read.
        const upcoming = i === 0 ? [{ rows: batches[1]!, rng: new Rng(11) }] : [];
        const two = await engine.step(weights, rows, i === 0 ? new Rng(10) : new Rng(999), vars, upcoming);
        expect(two.count).toBe(rows.length);
        expect(Math.abs(two.loss - one.loss) / Math.abs(one.loss)).toBeLessThan(1e-5);
        expect(two.grads.length).toBe(one.grads.length);
        // Every part of the model gets its gradient: the item tower's (from the workers) included.
        expect(one.grads.some((g) => g !== 0)).toBe(true);
        expect(relDiff(one.grads, two.grads)).toBeLessThan(1e-4);
      }
    } finally {
      await engine.close();
      model.dispose();
    }
  });

  it('the workers\' part is material (the user side alone is another gradient); trees prepared ahead equal trees sampled when the step comes', async () => {
    const { model, weights } = variant('last', 0);
    const rs = model.spec.ranking!;
    const nItems = graph.tables[rs.item_table]!.rows;
    const pop = popularityCache(graph, rs);
    const vars = [...model.params.vars.values()];
    const rows = Int32Array.from([...groups(examples).values()][0]!.slice(0, 32));
    const engine = (await ItemSplitEngine.start(2, model, examples, nItems, pop, 'wasm'))!;
    try {
      const full = localStep(model, examples, rows, nItems, pop, new Rng(3), vars);
      const split = await engine.step(weights, rows, new Rng(3), vars);
      expect(relDiff(full.grads, split.grads)).toBeLessThan(1e-4);
      // The same loss with the item embeddings held constant: what this thread computes without the workers.
      const inputs = stepInputs(model, examples, rows, nItems, pop, new Rng(3));
      const itemArrays = model.arrays(model.itemSampler!.sample(inputs.items, new Float64Array(inputs.items.length).fill(inputs.anchor), new Rng(0)), model.itemPlan!);
      const g = tf.tidy(() => model.gnn.forward(model.itemPlan!, itemArrays, false).embedding);
      const userArrays = model.arrays(inputs.userSample);
      const { value, grads } = tf.variableGrads(() => stepLoss(model, inputs, userArrays, () => g), vars);
      const userSide = model.params.gradientBlob(grads);
      value.dispose();
      g.dispose();
      for (const x of Object.values(grads)) x.dispose();
      expect(relDiff(full.grads, userSide)).toBeGreaterThan(1e-2);
    } finally {
      await engine.close();
      model.dispose();
    }
    // Uniform sampling, no dropout: a step whose trees the workers prepared during the previous step equals
    // the same step planned when it comes, bit for bit (the same seeds draw the same trees).
    const u = variant('uniform', 0);
    const uVars = [...u.model.params.vars.values()];
    const second = Int32Array.from([...groups(examples).values()][1]!.slice(0, 32));
    const engineU = (await ItemSplitEngine.start(2, u.model, examples, nItems, pop, 'wasm'))!;
    try {
      // Step 1 plans `second` and `third`; step 2 (`second`) publishes `third`, whose trees the workers
      // prepare while they wait; step 3 uses them. Then `third` again, planned when it comes.
      const third = Int32Array.from([...groups(examples).values()][0]!.slice(32, 64));
      expect(third.length).toBeGreaterThan(0);
      const r = await engineU.step(u.weights, rows, new Rng(4), uVars, [
        { rows: second, rng: new Rng(5) },
        { rows: third, rng: new Rng(6) },
      ]);
      expect(Number.isFinite(r.loss)).toBe(true);
      expect(r.grads.every(Number.isFinite)).toBe(true);
      await engineU.step(u.weights, second, new Rng(999), uVars, [{ rows: third, rng: new Rng(998) }]);
      const prefetched = await engineU.step(u.weights, third, new Rng(997), uVars);
      const planned = await engineU.step(u.weights, third, new Rng(6), uVars);
      expect(prefetched.loss).toBe(planned.loss);
      expect(Array.from(prefetched.grads)).toEqual(Array.from(planned.grads));
    } finally {
      await engineU.close();
      u.model.dispose();
    }
  });
});
