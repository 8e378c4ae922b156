/**
 * `model.kind` end to end on tiny synthetic data: a churn GNN trained for a few steps loses to trees on the
 * customers' own columns and relational aggregates, so `auto` keeps the trees; metrics.json lists all three
 * candidates with intervals and the reason; `predict` writes the trees' scores (read back with DuckDB and
 * scored against labels realised in the CSVs: the run's GBDT test AUROC) and `evaluate` scores them (the
 * run's GBDT test figures). `kind: gnn` keeps the GNN whatever the trees score; `kind: hybrid` appends
 * the GNN's embeddings and `evaluate` reproduces its test figures.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { setQuiet } from '../../src/core/log.js';
import { evaluate } from '../../src/evaluate/evaluate.js';
import { exportCommand } from '../../src/cli/commands/export.js';
import { UsageError } from '../../src/core/errors.js';
import { predict, type PredictResult } from '../../src/predict/predict.js';
import { auroc, type BinaryMetrics } from '../../src/task/metrics.js';
import { train, type TrainResult } from '../../src/train/trainer.js';
import { CHURN, sqlPath, sqlRows } from '../helpers/pipeline.js';
import { appendFutureRows, synthConfig, tinySynth, type SynthFixture } from '../helpers/synth.js';

const SPLIT = '{ train_anchors: 4, test_anchors: 2 }';
const CONFIG = synthConfig(`tasks:
  churn:
    query: ${CHURN}
    split: ${SPLIT}
  churn_gnn:
    query: ${CHURN}
    split: ${SPLIT}
    model: { kind: gnn }
  churn_hybrid:
    query: ${CHURN}
    split: ${SPLIT}
    model: { kind: hybrid }
model: { channels: 8, categorical_dim: 4, num_neighbors: [4, 2], epochs: 1, batch_size: 64, max_steps_per_epoch: 2 }
`);

let fx: SynthFixture;
let cfg: Config;
const runs: Record<'auto' | 'gnn' | 'hybrid', TrainResult> = {} as never;
let out: string;

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = await tinySynth(CONFIG);
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  runs.auto = await train({ cfg, task: 'churn', backend: 'wasm' });
  runs.gnn = await train({ cfg, task: 'churn_gnn', backend: 'wasm' });
  runs.hybrid = await train({ cfg, task: 'churn_hybrid', backend: 'wasm' });
  out = join(fx.dir, '..', 'out');
  mkdirSync(out);
}, 600_000);
afterAll(() => {
  fx?.cleanup();
  setQuiet(false);
});

const csv = (table: string) => `read_csv(${sqlPath(join(fx.dir, `${table}.csv`))}, all_varchar = true)`;
const TX = () => `(SELECT customer_id, CAST(t_dat AS TIMESTAMP) AS t FROM ${csv('transactions')})`;
const au = (m: unknown): number => (m as BinaryMetrics).auroc;
const ts = (iso: string) => `TIMESTAMP '${iso.slice(0, 19).replace('T', ' ')}'`;

/** (prediction, realised churn label) of the customers active in the week before each anchor, read with DuckDB. */
async function scoredAt(files: { path: string; anchor: string }[]): Promise<{ p: number[]; y: number[] }> {
  const p: number[] = [];
  const y: number[] = [];
  for (const f of files) {
    const T = ts(f.anchor);
    const rows = await sqlRows(
      `WITH p AS (SELECT customer_id, prediction FROM read_parquet(${sqlPath(f.path)})), tx AS ${TX()} ` +
        `SELECT p.prediction AS p, CASE WHEN (SELECT count(*) FROM tx WHERE tx.customer_id = p.customer_id AND tx.t > ${T} AND tx.t <= ${T} + INTERVAL 7 DAY) = 0 THEN 1 ELSE 0 END AS y ` +
        `FROM p WHERE (SELECT count(*) FROM tx WHERE tx.customer_id = p.customer_id AND tx.t > ${T} - INTERVAL 7 DAY AND tx.t <= ${T}) > 0`,
    );
    for (const r of rows) p.push(r.p as number), y.push(Number(r.y));
  }
  return { p, y };
}

describe('model.kind auto', () => {
  it('trains the GNN, the trees and the hybrid, records each with val/test intervals, and keeps the trees the under-trained GNN loses to', () => {
    const m = runs.auto.metrics;
    const mc = m.model_choice!;
    expect(mc.setting).toBe('auto');
    for (const k of ['gnn', 'gbdt', 'hybrid'] as const) {
      const c = mc.candidates[k];
      expect(c.status).toBe('trained');
      const iv = c.test_intervals!.auroc!;
      expect(iv[0]).toBeLessThanOrEqual(iv[1]);
      expect(c.val_intervals!.auroc).not.toBeNull();
    }
    expect(mc.tree_features!.aggregates).toBeGreaterThan(10);
    expect(au(mc.candidates.gbdt.val)).toBeGreaterThan(au(mc.candidates.gnn.val));
    expect(m.chosen).toBe('gbdt');
    expect(m.chosen_reason).toMatch(/trees \(own columns \+ aggregates\)/);
    expect(existsSync(join(runs.auto.runDir, 'model', 'tree_model.json'))).toBe(true);
    // The GNN's weights stay in the run: embeddings and distillation read them.
    expect(existsSync(join(runs.auto.runDir, 'model', 'spec.json'))).toBe(true);
  });

  it('predict writes the trees\' scores: pooled over the run\'s test anchors they score the run\'s GBDT test AUROC against labels from the CSVs', async () => {
    const anchors = runs.auto.metrics.anchors.test_anchors;
    expect(anchors.length).toBe(2);
    const files: { path: string; anchor: string }[] = [];
    for (const a of anchors) {
      const r = (await predict({ cfg, backend: 'wasm', run: runs.auto.runId, anchorTime: a, out: join(out, `auto-${a.slice(0, 10)}.parquet`) })) as PredictResult;
      expect(r.served_by).toBe('gbdt');
      files.push({ path: r.path, anchor: a });
    }
    const { p, y } = await scoredAt(files);
    expect(p.length).toBe(runs.auto.metrics.counts.test);
    expect(Math.abs(auroc(y, p) - au(runs.auto.metrics.model_choice!.candidates.gbdt.test))).toBeLessThanOrEqual(1e-3);
    // --serve-model: the GNN's own predictions, which score differently.
    const g = (await predict({ cfg, backend: 'wasm', run: runs.auto.runId, anchorTime: anchors[0]!, serveModel: true, out: join(out, 'auto-gnn.parquet') })) as PredictResult;
    expect(g.served_by).toBe('gnn');
    const differ = await sqlRows(`SELECT count(*)::INTEGER AS n FROM read_parquet(${sqlPath(g.path)}) g JOIN read_parquet(${sqlPath(files[0]!.path)}) t USING (customer_id) WHERE abs(g.prediction - t.prediction) > 1e-4`);
    expect(differ[0]!.n as number).toBeGreaterThan(0);
  });

  it('evaluate at the run\'s test anchors scores the trees: the run\'s GBDT test figures', async () => {
    const r = await evaluate({ cfg, run: runs.auto.runId, choice: null, backend: 'wasm' });
    expect(r.scored_model).toBe('gbdt');
    const gbdt = runs.auto.metrics.model_choice!.candidates.gbdt.test!;
    expect(r.metrics.n).toBe(gbdt.n);
    expect(au(r.metrics)).toBeCloseTo(au(gbdt), 4);
  });
});

describe('export of a train run', () => {
  it('exports the chosen trees (test/export/tree_export.e2e.test.ts); refuses the hybrid (the GNN embedding is not in a request) and the GNN, each with how it is served', async () => {
    const trees = await exportCommand({ config: fx.config, run: runs.auto.runId, out: join(out, 'repo'), artifacts: fx.artifacts, cwd: fx.dir });
    expect((trees.result as { model_kind: string }).model_kind).toBe('gbdt');
    const hybrid = await exportCommand({ config: fx.config, run: runs.hybrid.runId, artifacts: fx.artifacts, cwd: fx.dir }).catch((e: unknown) => e);
    expect(hybrid).toBeInstanceOf(UsageError);
    expect((hybrid as Error).message).toMatch(/chose the hybrid trees, which read the GNN embedding of each example/);
    expect((hybrid as UsageError).hint).toMatch(/distill a student/);
    const gnn = await exportCommand({ config: fx.config, run: runs.gnn.runId, artifacts: fx.artifacts, cwd: fx.dir }).catch((e: unknown) => e);
    expect((gnn as Error).message).toMatch(/is a train run; export takes a distilled run/);
  });
});

describe('model.kind forced', () => {
  it('gnn: the GNN is kept and served whatever the trees would score; no tree model is saved', async () => {
    const m = runs.gnn.metrics;
    expect(m.chosen).toBe('gnn');
    expect(m.model_choice!.candidates.gbdt.status).toBe('skipped');
    expect(m.chosen_reason).toMatch(/model.kind is gnn/);
    expect(existsSync(join(runs.gnn.runDir, 'model', 'tree_model.json'))).toBe(false);
    const r = (await predict({ cfg, backend: 'wasm', run: runs.gnn.runId, anchorTime: m.anchors.test, out: join(out, 'gnn.parquet') })) as PredictResult;
    expect(r.served_by).toBe('gnn');
    const e = await evaluate({ cfg, run: runs.gnn.runId, choice: null, backend: 'wasm' });
    expect(e.scored_model).toBe('gnn');
    expect(au(e.metrics)).toBeCloseTo(au(m.test), 4);
  });

  it('hybrid: the trees read the GNN embedding too, and evaluate reproduces the hybrid\'s test figures', async () => {
    const m = runs.hybrid.metrics;
    expect(m.chosen).toBe('hybrid');
    expect(m.model_choice!.candidates.hybrid.features).toBe(m.model_choice!.candidates.gnn.status === 'trained' ? m.model_choice!.tree_features!.own + m.model_choice!.tree_features!.aggregates + 8 : -1);
    const e = await evaluate({ cfg, run: runs.hybrid.runId, choice: null, backend: 'wasm' });
    expect(e.scored_model).toBe('hybrid');
    expect(au(e.metrics)).toBeCloseTo(au(m.model_choice!.candidates.hybrid.test), 4);
    const r = (await predict({ cfg, backend: 'wasm', run: runs.hybrid.runId, anchorTime: m.anchors.test, out: join(out, 'hybrid.parquet') })) as PredictResult;
    expect(r.served_by).toBe('hybrid');
    const rows = await sqlRows(`SELECT count(*)::INTEGER AS n, count(*) FILTER (WHERE isfinite(prediction) AND prediction BETWEEN 0 AND 1)::INTEGER AS ok FROM read_parquet(${sqlPath(r.path)})`);
    expect(rows[0]!.ok).toBe(rows[0]!.n);
  });
});

// Last: it appends rows to the fixture's data.
describe('the trees at an anchor t see nothing after t', () => {
  it('appending transactions, customers and articles dated after t changes no served score at t (max |Δ| = 0)', async () => {
    const T = runs.auto.metrics.anchors.test;
    const before = (await predict({ cfg, backend: 'wasm', run: runs.auto.runId, anchorTime: T, out: join(out, 'leak-before.parquet') })) as PredictResult;
    appendFutureRows(fx.dir, T, { transactions: 800, customers: 20, articles: 8, seed: 5, days: 40 });
    const after = (await predict({ cfg, backend: 'wasm', run: runs.auto.runId, anchorTime: T, out: join(out, 'leak-after.parquet') })) as PredictResult;
    expect(after.served_by).toBe('gbdt');
    const rows = await sqlRows(
      `SELECT count(*)::INTEGER AS n, max(abs(a.prediction - b.prediction))::DOUBLE AS d FROM read_parquet(${sqlPath(before.path)}) b JOIN read_parquet(${sqlPath(after.path)}) a USING (customer_id)`,
    );
    expect(rows[0]!.n).toBe(before.rows);
    expect(rows[0]!.d).toBe(0);
  });
});
