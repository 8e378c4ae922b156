/**
 * The learned re-ranker end to end on tiny synthetic data, through the real binary: `train --json` fits it
 * beside the deep model and the heuristics (its record: sources, features, val/test MAP@k with intervals,
 * reranker.json in the run) and `chosen` follows the rule; `predict` on a run whose choice is the re-ranker
 * writes its top-k (read back with DuckDB: k rows per customer, ranks 1…k, no item twice, scores falling),
 * and MAP@k from those files at the run's test anchors equals the re-ranker's recorded test MAP@k.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/config/load.js';
import { isoSeconds } from '../../src/core/duration.js';
import { setQuiet } from '../../src/core/log.js';
import { buildGraph } from '../../src/graph/build.js';
import { predict } from '../../src/predict/predict.js';
import { selectBackend } from '../../src/compute/backend.js';
import { rankingMetrics } from '../../src/task/metrics.js';
import { targetTimeRange, taskSplit } from '../../src/task/split.js';
import { buildTrainingTables } from '../../src/train/examples.js';
import { nodeKeys } from '../helpers/graph.js';
import { sqlPath, sqlRows } from '../helpers/pipeline.js';
import { synthConfig, tinySynth, type SynthFixture } from '../helpers/synth.js';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'gnnctl.js');
const K = 12;
const QUERY = `PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP ${K} FOR EACH customers.customer_id`;

type Map3 = { map_at_k: number; recall_at_k: number; ndcg_at_k: number; k: number; n: number };
type RunMetrics = {
  val: Map3;
  test: Map3;
  baselines: Record<string, { val: Map3; test: Map3 }>;
  best_baseline: string;
  chosen: string;
  chosen_reason: string;
  reranker: { sources: string[]; features: string[]; val: Map3; test: Map3; train_users: number; candidate_recall: { val: number; test: number }; test_map_intervals: Record<string, [number, number]> };
};

let fx: SynthFixture;
let cfg: Config;
let runDir: string;
let m: RunMetrics;
let json: { run_dir: string; chosen: string; reranker: RunMetrics['reranker'] };
const run = (args: string[]) => spawnSync(process.execPath, [BIN, ...args], { cwd: fx.dir, encoding: 'utf8', timeout: 170_000, env: { ...process.env, NO_COLOR: '1' } });

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = await tinySynth(
    synthConfig(`tasks:
  next_purchases:
    query: ${QUERY}
    split: { train_anchors: 2, test_anchors: 3 }
model: { channels: 8, categorical_dim: 4, num_neighbors: [6, 3], epochs: 1, batch_size: 128, max_steps_per_epoch: 3 }
`),
  );
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  const r = run(['train', '-c', fx.config, '-t', 'next_purchases', '--artifacts', fx.artifacts, '--backend', 'wasm', '--json']);
  expect(r.status, r.stderr).toBe(0);
  json = JSON.parse(r.stdout) as { run_dir: string; chosen: string; reranker: RunMetrics['reranker'] };
  runDir = json.run_dir;
  m = JSON.parse(readFileSync(join(runDir, 'metrics.json'), 'utf8')) as RunMetrics;
}, 180_000);
afterAll(() => {
  fx?.cleanup();
  setQuiet(false);
});

describe.skipIf(!existsSync(join(ROOT, 'dist', 'cli', 'main.js')))('the re-ranker through the real binary', () => {
  it('train --json records it beside the model and the heuristics, and chooses by the rule', () => {
    const r = m.reranker;
    expect(r.sources).toEqual(['popularity', 'repeat', 'affinity', 'cooccurrence', 'repeat_affinity', 'model']);
    expect(r.features).toContain('model_score');
    expect(r.train_users).toBeGreaterThan(0);
    for (const split of [r.val, r.test]) {
      expect(split.k).toBe(K);
      expect(split.map_at_k).toBeGreaterThan(0);
      expect(split.map_at_k).toBeLessThanOrEqual(1);
    }
    expect(r.test.n).toBe(m.test.n);
    expect(r.candidate_recall.test).toBeGreaterThan(r.test.recall_at_k - 1e-9);
    for (const name of ['reranker', 'model', 'popularity', m.best_baseline]) {
      const [lo, hi] = r.test_map_intervals[name]!;
      const point = name === 'reranker' ? r.test.map_at_k : name === 'model' ? m.test.map_at_k : m.baselines[name]!.test.map_at_k;
      expect(lo, name).toBeLessThanOrEqual(point + 1e-4);
      expect(hi, name).toBeGreaterThanOrEqual(point - 1e-4);
    }
    // a learned list is served only with a validation lift whose 95% paired interval lies above 0; otherwise the best heuristic
    const choice = (m as unknown as { ranking_choice: { simple_best: string; val_lift: Record<string, [number, number] | null> } }).ranking_choice;
    if (m.chosen === 'model' || m.chosen === 'reranker') expect(choice.val_lift[m.chosen]![0]).toBeGreaterThan(0);
    else expect(m.chosen).toBe(choice.simple_best);
    // intervals: the model's test figures and every heuristic's test MAP@k, each holding its point
    const iv = (m as unknown as { intervals: { test: Record<string, [number, number]>; test_map_by_list: Record<string, [number, number]> } }).intervals;
    for (const key of ['map_at_k', 'recall_at_k', 'ndcg_at_k'] as const) {
      expect(iv.test[key]![0]).toBeLessThanOrEqual((m.test as unknown as Record<string, number>)[key]! + 1e-4);
      expect(iv.test[key]![1]).toBeGreaterThanOrEqual((m.test as unknown as Record<string, number>)[key]! - 1e-4);
    }
    for (const name of Object.keys(m.baselines)) {
      expect(iv.test_map_by_list[name]![0], name).toBeLessThanOrEqual(m.baselines[name]!.test.map_at_k + 1e-4);
      expect(iv.test_map_by_list[name]![1], name).toBeGreaterThanOrEqual(m.baselines[name]!.test.map_at_k - 1e-4);
    }
    expect(existsSync(join(runDir, 'reranker.json'))).toBe(true);
    // --json carries the same record and choice
    expect(json.chosen).toBe(m.chosen);
    expect(json.reranker).toMatchObject({ val: r.val, test: r.test, test_map_intervals: r.test_map_intervals, sources: r.sources });
  });

  it("predict serves its lists when it is the run's choice; MAP@k from them equals its recorded test MAP@k", async () => {
    if (m.chosen !== 'reranker') {
      // Served whichever list won: the choice rule itself is unit-tested (test/train/rerank.test.ts).
      const file = join(runDir, 'metrics.json');
      writeFileSync(file, JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), chosen: 'reranker', chosen_reason: 'set by the test' }));
    }
    const built = await buildGraph(cfg);
    const spec = cfg.taskSpecs.next_purchases!;
    const split = taskSplit(spec, targetTimeRange(spec, built.manifest.tables));
    const tables = await buildTrainingTables(built.dir, built.manifest, spec, split, { seed: 0 });
    const customers = await nodeKeys(built.dir, built.manifest, 'customers');
    const article = new Map((await nodeKeys(built.dir, built.manifest, 'articles')).map((k, i) => [k, i]));
    const lists = new Map<number, Map<string, Int32Array>>();
    const anchors = [...new Set(tables.test.anchors)];
    for (const [i, anchor] of anchors.entries()) {
      const path = join(fx.dir, `reranked_${anchor}.parquet`);
      if (i === 0) {
        const r = run(['predict', '-c', fx.config, '-r', runDir, '--artifacts', fx.artifacts, '--backend', 'wasm', '--anchor-time', isoSeconds(anchor), '--out', path, '--json']);
        expect(r.status, r.stderr).toBe(0);
        expect(JSON.parse(r.stdout)).toMatchObject({ served_by: 'reranker', item_embeddings: null, k: K });
      } else {
        // The other test anchors in this process (one binary start each would take minutes).
        expect(await predict({ cfg, run: runDir, backend: 'wasm', anchorTime: isoSeconds(anchor), out: path })).toMatchObject({ served_by: 'reranker' });
      }
      const rows = await sqlRows(`SELECT customer_id AS c, rank AS r, article_id AS a, score AS s FROM read_parquet(${sqlPath(path)}) ORDER BY c, r`);
      const per = await sqlRows(`SELECT count(*)::INTEGER AS n, count(DISTINCT article_id)::INTEGER AS d, min(rank)::INTEGER AS lo, max(rank)::INTEGER AS hi FROM read_parquet(${sqlPath(path)}) GROUP BY customer_id`);
      for (const p of per) expect(p).toEqual({ n: K, d: K, lo: 1, hi: K });
      const byCustomer = new Map<string, Int32Array>();
      let prev: { c: string; s: number } | null = null;
      for (const x of rows) {
        if (prev && prev.c === x.c) expect(x.s as number).toBeLessThanOrEqual(prev.s);
        prev = { c: x.c as string, s: x.s as number };
        const list = byCustomer.get(x.c as string) ?? new Int32Array(K).fill(-1);
        list[(x.r as number) - 1] = article.get(x.a as string)!;
        byCustomer.set(x.c as string, list);
      }
      lists.set(anchor, byCustomer);
    }
    const test = tables.test;
    const ranked = new Int32Array(test.nodes.length * K);
    for (let i = 0; i < test.nodes.length; i++) ranked.set(lists.get(test.anchors[i]!)!.get(customers[test.nodes[i]!]!)!, i * K);
    expect(rankingMetrics(test.label_items!, ranked, K).map_at_k).toBeCloseTo(m.reranker.test.map_at_k, 4);
  }, 600_000);
});
