/**
 * The tree-model stage (src/train/tree_model.ts) on tiny synthetic data: own columns + relational
 * aggregates → gradient-boosted trees with early stopping on validation → objective metrics.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/config/load.js';
import { buildGraph, type BuildResult } from '../../src/graph/build.js';
import { taskSplit } from '../../src/task/split.js';
import { trainTreeModel } from '../../src/train/tree_model.js';
import { synthConfig, tinySynth, type SynthFixture } from '../helpers/synth.js';

const CONFIG = synthConfig(`tasks:
  churn:
    query: PREDICT COUNT(transactions.*, 0, 7, days) = 0 FOR EACH customers.customer_id WHERE COUNT(transactions.*, -7, 0, days) > 0
  spend:
    query: PREDICT SUM(transactions.price, 0, 7, days) FOR EACH customers.customer_id
  fraud:
    query: PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id
`);

let fx: SynthFixture;
let cfg: Config;
let built: BuildResult;

beforeAll(async () => {
  fx = await tinySynth(CONFIG);
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  built = await buildGraph(cfg);
});
afterAll(() => fx?.cleanup());

async function run(task: string, max = 60) {
  const spec = cfg.taskSpecs[task]!;
  const range = built.manifest.time_range!;
  return trainTreeModel({ graphDir: built.dir, manifest: built.manifest, task: spec, split: taskSplit(spec, { min: range[0], max: range[1] }), features: { max }, gbdt: { max_iter: 50 } });
}

describe('trainTreeModel', () => {
  it('binary entity task: own columns and aggregates in, early-stopped trees, AUROC on val and test', async () => {
    const r = await run('churn');
    expect(r.examples.train).toBeGreaterThan(100);
    expect(r.examples.val).toBeGreaterThan(10);
    expect(r.feature_names).toContain('transactions.customer_id:count_all');
    expect(r.feature_names.some((n) => n.startsWith('customers.'))).toBe(true);
    expect(r.plan.features.length).toBeLessThanOrEqual(60);
    expect(r.main_metric.name).toBe('auroc');
    // Churn among recently active customers is predictable from their recent activity.
    expect(r.main_metric.val).toBeGreaterThan(0.55);
    expect(r.main_metric.test).toBeGreaterThan(0.55);
    expect(r.model.history!.best_round).toBe(r.model.trees.length);
  });

  it('fact-row task: the label column never enters, the parents\' history does', async () => {
    const r = await run('fraud');
    expect(r.feature_names.some((n) => n.includes('fraud'))).toBe(false);
    expect(r.feature_names).toContain('transactions.price');
    expect(r.feature_names.some((n) => n.startsWith('transactions.customer_id->transactions.customer_id:'))).toBe(true);
    expect(Number.isFinite(r.main_metric.test)).toBe(true);
  });

  it('regression entity task: l1 trees (the main metric is MAE) scored by MAE', async () => {
    const r = await run('spend', 30);
    expect(r.model.lossName).toBe('l1');
    expect(r.main_metric.name).toBe('mae');
    expect(r.main_metric.test).toBeGreaterThanOrEqual(0);
  });
});
