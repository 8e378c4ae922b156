/**
 * An untrained deep model on any graph (random weights, `last` sampling): enough for tests of code that
 * only needs *a* model — which snapshot an example reads, which nodes an embedding covers — without
 * paying for a training run.
 */
import type { Graph } from '../../src/graph/graph.js';
import { DeepModel } from '../../src/model/deep_model.js';
import { categoricalSizes, featureSpecFromGraph, numericDim } from '../../src/model/features.js';
import { convLayout, type ModelSpec } from '../../src/model/hetero_gnn.js';
import { buildPlan } from '../../src/model/plan.js';

export function randomDeepModel(graph: Graph, root: string, fanouts: number[], opts: { channels?: number; seed?: number } = {}): DeepModel {
  const featureSpec = featureSpecFromGraph(graph, []);
  const plan = buildPlan(graph, root, fanouts);
  const spec: ModelSpec = {
    encoder: 'sage',
    layers: fanouts.length,
    channels: opts.channels ?? 8,
    heads: 1,
    dropout: 0,
    norm: 'layer',
    skip: true,
    categorical_dim: 4,
    root,
    fanouts,
    sampling: 'last',
    types: Object.fromEntries(Object.entries(featureSpec.tables).map(([t, s]) => [t, { num_dim: numericDim(s), cat_sizes: categoricalSizes(s) }])),
    convs: convLayout(plan),
    output: { kind: 'binary', label_mean: 0, label_std: 1 },
    loss: 'bce',
  };
  return new DeepModel(graph, spec, featureSpec, opts.seed ?? 3);
}
