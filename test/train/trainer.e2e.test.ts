/**
 * The deep model end to end on tiny synthetic data: it can fit, a seed fixes a run, a run folder holds
 * everything needed to reload it, fine-tuning grows vocabularies and refuses a changed schema, GAT trains.
 * Kept small (16 channels, 1 epoch of 3 steps): the point is behaviour, not accuracy.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servedTest, runsListCommand } from '../../src/cli/commands/runs.js';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { ArtifactError } from '../../src/core/errors.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { loadWeights, readManifest, readModelJson, saveWeights, writeModelJson } from '../../src/artifacts/run_store.js';
import { setQuiet, takeWarnings } from '../../src/core/log.js';
import { Rng } from '../../src/core/rng.js';
import { taskSplit } from '../../src/task/split.js';
import { DeepModel } from '../../src/model/deep_model.js';
import { buildTrainingTables, type TrainingTables } from '../../src/train/examples.js';
import { categoricalSizes, featureSpecFromGraph, numericDim, type FeatureSpec } from '../../src/model/features.js';
import { bceWithLogits } from '../../src/task/objective/losses.js';
import { convLayout, type ModelSpec } from '../../src/model/hetero_gnn.js';
import { Adam } from '../../src/model/optim.js';
import { buildPlan } from '../../src/model/plan.js';
import { targetExclusions } from '../../src/task/task_spec.js';
import { evaluate } from '../../src/train/baseline_model.js';
import { baselineWarning, train, type TrainManifest, type TrainMetrics, type TrainResult } from '../../src/train/trainer.js';
import { tf } from '../../src/core/tf.js';
import { appendFutureRows, copyFixture, synthConfig, tinySynth, type SynthFixture } from '../helpers/synth.js';

const CHURN = 'PREDICT COUNT(transactions.*, 0, 7, days) = 0 FOR EACH customers.customer_id WHERE COUNT(transactions.*, -7, 0, days) > 0';
const CONFIG = synthConfig(`tasks:
  churn:
    query: ${CHURN}
    split: { train_anchors: 3 }
  churn_gat:
    query: ${CHURN}
    split: { train_anchors: 3 }
    model: { encoder: gat, heads: 2 }
  spend:
    query: PREDICT SUM(transactions.price, 0, 7, days) FOR EACH customers.customer_id
    split: { train_anchors: 3 }
  fraud:
    query: PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id
    model: { num_neighbors: [1, 6] }
model: { channels: 16, categorical_dim: 4, num_neighbors: [6, 3], epochs: 1, batch_size: 64, max_steps_per_epoch: 3 }
`);

let fx: SynthFixture;
let cfg: Config;
let first: TrainResult;

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = await tinySynth(CONFIG);
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  first = await train({ cfg, task: 'churn', backend: 'wasm' });
});
afterAll(() => {
  fx?.cleanup();
  setQuiet(false);
});

/** metrics.json without wall-clock fields. */
function stable(m: TrainMetrics): unknown {
  const mc = m.model_choice;
  // model_choice: every figure but the candidates' and the tree inputs' wall-clock seconds
  const choice = mc && {
    ...mc,
    candidates: Object.fromEntries(Object.entries(mc.candidates).map(([k, { seconds: _s, ...rest }]) => [k, rest])),
    tree_features: mc.tree_features && { ...mc.tree_features, seconds: 0 },
  };
  return { ...m, epochs: m.epochs.map(({ seconds: _s, seeds_per_s: _r, timing: _t, ...rest }) => rest), model_choice: choice };
}

describe('a training run', () => {
  it('writes a complete run folder: manifest, metrics with val/test/baseline, spec, features, weights', () => {
    const dir = first.runDir;
    expect(first.status).toBe('complete');
    for (const f of ['manifest.json', 'metrics.json', 'model/spec.json', 'model/features.json', 'model/weights.bin', 'model/weights.json']) expect(existsSync(join(dir, f)), f).toBe(true);
    const manifest = readManifest<TrainManifest>(dir);
    expect(manifest).toMatchObject({ kind: 'train', id: first.runId, task: 'churn', status: 'complete', backend: 'wasm', init_from: null });
    expect(manifest.graph.schema_fingerprint).toMatch(/^[0-9a-f]+$/);
    const metrics = JSON.parse(readFileSync(join(dir, 'metrics.json'), 'utf8')) as TrainMetrics;
    expect(metrics).toEqual(JSON.parse(JSON.stringify(first.metrics)));
    expect(metrics.kind).toBe('binary');
    expect(metrics.main_metric).toBe('auroc');
    for (const m of [metrics.val, metrics.test, metrics.baseline!.val, metrics.baseline!.test]) expect(Number.isFinite((m as { auroc: number }).auroc)).toBe(true);
    const auroc = (m: unknown): number => (m as { auroc: number }).auroc;
    expect(metrics.val_lift).toBeCloseTo(auroc(metrics.val) - auroc(metrics.baseline!.val), 3);
    expect(metrics.lift).toBeCloseTo(auroc(metrics.test) - auroc(metrics.baseline!.test), 3);
    expect(metrics.counts.train).toBeGreaterThan(0);
    expect(metrics.anchors.train).toHaveLength(3);
    const spec = readModelJson<ModelSpec>(dir, 'spec.json');
    expect(spec).toMatchObject({ encoder: 'sage', channels: 16, layers: 2, root: 'customers', fanouts: [6, 3] });
    // the weights blob holds exactly the indexed weights
    const { index, blob } = loadWeights(dir);
    const size = index.reduce((a, e) => a + e.shape.reduce((x, y) => x * y, 1), 0);
    expect(blob.length).toBe(size);
  });

  it('same seed → same metrics (metrics.json equal up to wall-clock fields)', async () => {
    const again = await train({ cfg, task: 'churn', backend: 'wasm' });
    expect(again.runId).not.toBe(first.runId);
    expect(stable(again.metrics)).toEqual(stable(first.metrics));
    // and the same weights
    expect(Array.from(loadWeights(again.runDir).blob)).toEqual(Array.from(loadWeights(first.runDir).blob));
  });

  it('save → DeepModel.load gives the predictions the run was evaluated with', async () => {
    const m = readManifest<TrainManifest>(first.runDir);
    const graph = Graph.load(m.graph.dir);
    const tables = await churnTables(graph, first.metrics.validation.anchors.length);
    const a = DeepModel.load(first.runDir, graph);
    const b = DeepModel.load(first.runDir, graph);
    try {
      const pa = a.predict(tables.test);
      expect(Array.from(b.predict(tables.test))).toEqual(Array.from(pa));
      expect(evaluate('binary', tables.test.labels, pa)).toEqual(first.metrics.test);
      expect(evaluate('binary', tables.val.labels, a.predict(tables.val))).toEqual(first.metrics.val);
    } finally {
      a.dispose();
      b.dispose();
    }
  });

  it('runs list shows the runs with their status and test metric', async () => {
    const out = await runsListCommand({ artifacts: fx.artifacts });
    const runs = (out.result as { runs: { id: string; task: string; status: string; metric: string; value: number }[] }).runs;
    const mine = runs.find((r) => r.id === first.runId)!;
    // the served model's test figure: model.kind may keep the trees or the hybrid instead of the GNN
    expect(mine).toMatchObject({ task: 'churn', status: 'complete', metric: 'auroc', value: (servedTest(first.metrics as unknown as Parameters<typeof servedTest>[0]) as { auroc: number }).auroc });
    expect(out.text).toContain(first.runId);
  });

  it('GAT encoder trains (1 epoch) to a loadable run', async () => {
    const r = await train({ cfg, task: 'churn_gat', backend: 'wasm', skip_baseline: true });
    expect(r.status).toBe('complete');
    expect(readModelJson<ModelSpec>(r.runDir, 'spec.json')).toMatchObject({ encoder: 'gat', heads: 2, channels: 16 });
    expect(Number.isFinite((r.metrics.test as { auroc: number }).auroc)).toBe(true);
    expect(Number.isFinite(r.metrics.epochs[0]!.loss)).toBe(true);
    expect(r.metrics.baseline).toBeNull();
  });
});

describe('fine-tuning with --init-from', () => {
  it('a graph whose articles gained categorical values loads the run with grown vocabularies', async () => {
    const grown = copyFixture(fx, 'data-new-colours');
    // New articles, bought before fit_until (the earliest validation anchor, 2020-04-08 with 20 test anchors), so their colour enters the vocabulary.
    appendFutureRows(grown.dir, '2020-03-20T00:00:00Z', { transactions: 40, customers: 0, articles: 4, seed: 5, days: 1 });
    const cfg2 = loadConfig(grown.config, { cwd: grown.dir, artifacts: fx.artifacts });
    const r = await train({ cfg: cfg2, task: 'churn', backend: 'wasm', init_from: first.runId, skip_baseline: true });
    expect(r.status).toBe('complete');
    expect(readManifest<TrainManifest>(r.runDir).init_from).toBe(first.runId);
    const before = readModelJson<FeatureSpec>(first.runDir, 'features.json');
    const after = readModelJson<FeatureSpec>(r.runDir, 'features.json');
    const colour = (s: FeatureSpec) => s.tables.articles!.categorical.find((c) => c.name === 'colour_group_name')!.vocab;
    expect(colour(before)).not.toContain('Ultraviolet');
    // the run's codes stay where they were; the new value is appended
    expect(colour(after)).toEqual([...colour(before), 'Ultraviolet']);
    const emb = (dir: string) => loadWeights(dir).index.find((e) => e.name === 'enc/articles/emb')!.shape;
    const rows = (s: FeatureSpec) => categoricalSizes(s.tables.articles!).reduce((a, b) => a + b, 0);
    expect(emb(r.runDir)[0]).toBe(rows(after));
    expect(emb(r.runDir)[0]).toBeGreaterThan(emb(first.runDir)[0]!);
  });

  it('a changed schema (a column removed) is refused with a message naming the column', async () => {
    const changed = copyFixture(fx, 'data-no-fashion-news');
    const path = join(changed.dir, 'customers.csv');
    const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
    const drop = lines[0]!.split(',').indexOf('fashion_news_frequency');
    expect(drop).toBeGreaterThan(0);
    writeFileSync(path, `${lines.map((l) => l.split(',').filter((_, i) => i !== drop).join(',')).join('\n')}\n`);
    const cfg2 = loadConfig(changed.config, { cwd: changed.dir, artifacts: fx.artifacts });
    const err = await train({ cfg: cfg2, task: 'churn', backend: 'wasm', init_from: first.runId, skip_baseline: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArtifactError);
    expect((err as ArtifactError).describe()).toMatch(new RegExp(`cannot fine-tune from ${first.runId}: the data's schema changed`));
    expect((err as ArtifactError).describe()).toMatch(/table customers: column fashion_news_frequency was removed/);
  });

  // The inherited encoders were fitted for the earlier run's task; the churn run reads every transaction
  // column, fraud's target (transactions.fraud, a row's own label) included.
  it.each([
    { task: 'fraud', from: 'churn', message: /its encoders read transactions\.fraud, the target of task fraud/ },
    { task: 'churn', from: 'fraud', message: /it predicts per transactions, task churn per customers/ },
  ])('$task from a $from run is refused: $message', async ({ task, from, message }) => {
    const prev = from === 'churn' ? first : await train({ cfg, task: from, backend: 'wasm', skip_baseline: true });
    const err = await train({ cfg, task, backend: 'wasm', init_from: prev.runId, skip_baseline: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArtifactError);
    expect((err as ArtifactError).describe()).toMatch(message);
    expect((err as ArtifactError).describe()).toMatch(new RegExp(`hint: fine-tune from a run of task ${task}, or train from scratch`));
  });

  // spend sums transactions.price after the anchor; the prices before it are the target's history, an
  // input every spend run reads (docs/tasks.md), so churn's encoders reading them are no leak.
  it('spend from a churn run fine-tunes: the target column before the anchor is history, not a label', async () => {
    const r = await train({ cfg, task: 'spend', backend: 'wasm', init_from: first.runId, skip_baseline: true });
    expect(readManifest<TrainManifest>(r.runDir)).toMatchObject({ task: 'spend', status: 'complete', init_from: first.runId });
  });
});

/** The churn examples of a run: at its validation anchors (several when the tiny validation set was small). */
async function churnTables(graph: Graph, valAnchors = 1): Promise<TrainingTables> {
  const task = cfg.taskSpecs.churn!;
  const range = graph.manifest.time_range!;
  return buildTrainingTables(graph.dir, graph.manifest, task, taskSplit(task, { min: range[0], max: range[1] }, { valAnchorCount: valAnchors }), { seed: 0 });
}

describe('the deep model can fit', () => {
  it('overfits one batch of 64 seeds: BCE falls below 0.05, and save → load reproduces its predictions exactly', async () => {
    const built = await buildGraph(cfg);
    const graph = Graph.load(built.dir);
    const tables = await churnTables(graph);
    const n = 64;
    const seeds = tables.train.nodes.slice(0, n);
    const anchors = tables.train.anchors.slice(0, n);
    const labels = tables.train.labels.slice(0, n);
    const positives = labels.reduce((a, b) => a + b, 0);
    expect(positives).toBeGreaterThan(5);
    expect(positives).toBeLessThan(n - 5);

    const featureSpec = featureSpecFromGraph(graph, targetExclusions(cfg.taskSpecs.churn!));
    const fanouts = [6, 3];
    const plan = buildPlan(graph, 'customers', fanouts);
    const spec: ModelSpec = {
      encoder: 'sage', layers: 2, channels: 32, heads: 1, dropout: 0, norm: 'layer', skip: true, categorical_dim: 4, root: 'customers', fanouts, sampling: 'last',
      types: Object.fromEntries(Object.entries(featureSpec.tables).map(([t, s]) => [t, { num_dim: numericDim(s), cat_sizes: categoricalSizes(s) }])),
      convs: convLayout(plan),
      output: { kind: 'binary', label_mean: 0, label_std: 1 },
      loss: 'bce',
    };
    const model = new DeepModel(graph, spec, featureSpec, 3);
    const tensorsBefore = tf.memory().numTensors;
    const arrays = model.batch(seeds, anchors, new Rng(1));
    const adam = new Adam(model.params.vars, 0.01);
    const losses: number[] = [];
    for (let step = 0; step < 300 && (losses.at(-1) ?? 1) >= 0.05; step++) {
      losses.push(adam.minimize(() => bceWithLogits(model.gnn.forward(model.plan, arrays, true).logits!, tf.tensor1d(labels))));
    }
    expect(losses.at(-1)!).toBeLessThan(0.05);
    expect(losses[0]!).toBeGreaterThan(0.3);
    // a training step leaves no tensor behind
    expect(tf.memory().numTensors).toBe(tensorsBefore);

    const dir = join(fx.artifacts, 'overfit-run');
    mkdirSync(join(dir, 'model'), { recursive: true });
    const ser = model.params.serialize();
    saveWeights(dir, ser.index, ser.blob);
    writeModelJson(dir, 'spec.json', spec);
    writeModelJson(dir, 'features.json', featureSpec);
    const loaded = DeepModel.load(dir, graph);
    try {
      const ex = { nodes: seeds, anchors };
      expect(Array.from(loaded.predictRaw(ex))).toEqual(Array.from(model.predictRaw(ex)));
    } finally {
      loaded.dispose();
      model.dispose();
    }
  });
});

describe('a graph model that loses to its baseline is said so', () => {
  it('a negative validation lift gives a plain-words warning naming the task, both lifts and the gate', () => {
    expect(baselineWarning('churn', 'auroc', -0.03, -0.05)).toMatch(/task churn: the graph model is worse than the no-graph baseline on validation \(auroc lift -0\.03; test lift -0\.05\).*--fail-under lift=0/);
  });

  it('no warning when the graph model is ahead, level, or there is no baseline', () => {
    expect(baselineWarning('churn', 'auroc', 0.02, -0.01)).toBeNull();
    expect(baselineWarning('churn', 'auroc', 0, 0)).toBeNull();
    expect(baselineWarning('churn', 'auroc', null, null)).toBeNull();
  });

  it('the run that trained has the warning on record exactly when its val_lift is negative', async () => {
    takeWarnings();
    const r = await train({ cfg, task: 'churn', backend: 'wasm', epochs: 1 });
    const warnings = takeWarnings();
    const expected = baselineWarning('churn', 'auroc', r.metrics.val_lift, r.metrics.lift);
    expect(warnings.filter((w) => w.includes('worse than the no-graph baseline'))).toEqual(expected ? [expect.stringContaining(expected)] : []);
  });
});
