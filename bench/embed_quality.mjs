#!/usr/bin/env node
/**
 * Does exact (layer-wise) mode give embeddings as good as the ones the model was trained on? For churn
 * runs trained with `uniform` and with `last` sampling, the test window's AUROC of the model's own head
 * applied to (a) sampled-mode embeddings (the training fanouts, seeded) and (b) exact-mode embeddings
 * (the k most recent neighbours for `last`; all neighbours up to exact_degree_cap for `uniform`).
 * One JSON object.
 *
 *   npm run build && node bench/embed_quality.mjs [--size small] [--epochs 3]
 */
import * as tf from '@tensorflow/tfjs';
import { arg, benchConfig, dataset } from './common.mjs';

const size = arg('size', 'small');
const epochs = Number(arg('epochs', '3'));
const data = await dataset(size);
const { loadConfig } = await import('../dist/config/load.js');
const { train } = await import('../dist/train/trainer.js');
const { buildGraph } = await import('../dist/graph/build.js');
const { Graph } = await import('../dist/graph/graph.js');
const { DeepModel } = await import('../dist/model/deep_model.js');
const { taskSplit } = await import('../dist/task/split.js');
const { buildTrainingTables } = await import('../dist/train/examples.js');
const { embedExact } = await import('../dist/embed/layerwise.js');
const { auroc } = await import('../dist/task/metrics.js');
const { setQuiet } = await import('../dist/core/log.js');
setQuiet(true);

const cfg = loadConfig(benchConfig(size, data));
const task = cfg.taskSpecs.churn;
const built = await buildGraph(cfg);
const graph = Graph.load(built.dir);
const range = graph.manifest.time_range;
const tables = await buildTrainingTables(built.dir, graph.manifest, task, taskSplit(task, { min: range[0], max: range[1] }), { seed: cfg.seed });
const test = tables.test;
const out = { bench: 'embed quality (churn, test window)', size, epochs, test_examples: test.nodes.length };

for (const sampling of ['uniform', 'last']) {
  task.model = { ...task.model, sampling, num_neighbors: [10, 5] };
  const run = await train({ cfg, task: 'churn', epochs, skip_baseline: true });
  const model = DeepModel.load(run.runDir, graph);
  const cap = sampling === 'uniform' ? task.model.exact_degree_cap : 0;
  const C = model.spec.channels;
  const exact = new Float32Array(test.nodes.length * C);
  const sampled = new Float32Array(test.nodes.length * C);
  // Test examples share few anchors (one per test window); embed each anchor's entities together.
  const byAnchor = new Map();
  test.anchors.forEach((a, i) => byAnchor.set(a, [...(byAnchor.get(a) ?? []), i]));
  for (const [anchor, rows] of byAnchor) {
    const nodes = Int32Array.from(rows, (i) => test.nodes[i]);
    const e = embedExact(model, 'customers', 0, nodes, anchor, cap);
    const s = model.embedSampled('customers', 0, nodes, anchor, 1234);
    rows.forEach((r, j) => {
      exact.set(e.subarray(j * C, (j + 1) * C), r * C);
      sampled.set(s.subarray(j * C, (j + 1) * C), r * C);
    });
  }
  const score = (emb) => {
    const logits = tf.tidy(() => model.gnn.head(tf.tensor2d(emb, [test.nodes.length, C]), false));
    const v = logits.dataSync();
    logits.dispose();
    return Math.round(auroc(test.labels, v) * 10000) / 10000;
  };
  out[sampling] = { run: run.runId, trained_test_auroc: run.metrics.test.auroc, sampled_auroc: score(sampled), exact_auroc: score(exact), degree_cap: cap || null };
  model.dispose();
}
console.log(JSON.stringify(out));
