/**
 * `train` and `predict` on a ranking task over tiny synthetic data, through the real binary: train's
 * --json carries MAP@k/recall@k/NDCG@k, the three baselines and the lift; predict writes k rows per customer
 * (`customer_id`, `rank` 1…k, `article_id`, `score`), read back with DuckDB; MAP@k computed from the files at
 * the run's test anchors (each example scored by its own anchor's file) equals the run's own test figure,
 * pooled over those anchors (the same model, exact top-k over the catalogue);
 * shards concatenate to the unsharded file; transactions appended after the anchor change nothing at it;
 * item embeddings land beside the predictions; a ranking run's report; a run whose heuristic beat the
 * model serves that heuristic's lists (equal to the rule computed in DuckDB, scoring the run's recorded
 * heuristic MAP@k), --serve-model the model's; bad values
 * exit 2 naming the flag.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { setQuiet } from '../../src/core/log.js';
import { buildGraph } from '../../src/graph/build.js';
import { predict } from '../../src/predict/predict.js';
import type { TopKResult } from '../../src/predict/top_k.js';
import { rankingMetrics, type RankingMetrics } from '../../src/task/metrics.js';
import { isoSeconds } from '../../src/core/duration.js';
import { targetTimeRange, taskSplit } from '../../src/task/split.js';
import { buildTrainingTables } from '../../src/train/examples.js';
import { nodeKeys } from '../helpers/graph.js';
import { parquetKv, parquetTypes, sqlPath, sqlRows } from '../helpers/pipeline.js';
import { copyFixture, synthConfig, tinySynth, type SynthFixture } from '../helpers/synth.js';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'gnnctl.js');
const K = 12;
const QUERY = `PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP ${K} FOR EACH customers.customer_id`;

let fx: SynthFixture;
let cfg: Config;
let out: string;
let trained: { run_id: string; run_dir: string; kind: string; metrics: Record<string, unknown> };

const run = (args: string[]) => spawnSync(process.execPath, [BIN, ...args], { cwd: fx.dir, encoding: 'utf8', timeout: 170_000, env: { ...process.env, NO_COLOR: '1' } });

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = await tinySynth(
    synthConfig(`tasks:
  next_purchases:
    query: ${QUERY}
    split: { train_anchors: 2 }
model: { channels: 8, categorical_dim: 4, num_neighbors: [6, 3], epochs: 1, batch_size: 128, max_steps_per_epoch: 3 }
`),
  );
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  out = join(fx.dir, '..', 'out');
  mkdirSync(out);
  const r = run(['train', '-c', fx.config, '-t', 'next_purchases', '--artifacts', fx.artifacts, '--backend', 'wasm', '--json']);
  expect(r.status, r.stderr).toBe(0);
  trained = JSON.parse(r.stdout);
}, 180_000);
afterAll(() => {
  fx?.cleanup();
  setQuiet(false);
});

describe.skipIf(!existsSync(join(ROOT, 'dist', 'cli', 'main.js')))('the real binary on a ranking task', () => {
  it('train --json: kind ranking, MAP@k/recall@k/NDCG@k on val and test, the best baseline and the lift', async () => {
    expect(trained.kind).toBe('ranking');
    const m = trained.metrics as { val: Record<string, number>; test: Record<string, number>; baseline: { test: Record<string, number> }; lift: number };
    for (const split of [m.val, m.test, m.baseline.test]) {
      expect(split).toMatchObject({ k: K, map_at_k: expect.any(Number), recall_at_k: expect.any(Number), ndcg_at_k: expect.any(Number) });
      expect(split.map_at_k).toBeGreaterThanOrEqual(0);
      expect(split.map_at_k).toBeLessThanOrEqual(1);
    }
    expect(m.lift).toBeCloseTo(m.test.map_at_k! - m.baseline.test.map_at_k!, 4);
    // metrics.json has every heuristic, and the best (on val) is the one reported as `baseline`
    const file = JSON.parse(readFileSync(join(trained.run_dir, 'metrics.json'), 'utf8')) as { baselines: Record<string, { val: RankingMetrics }>; best_baseline: string; chosen: string; val: RankingMetrics; reranker?: { val: RankingMetrics } };
    expect(Object.keys(file.baselines).sort()).toEqual(['affinity', 'cooccurrence', 'popularity', 'repeat', 'repeat_affinity']);
    const best = Object.entries(file.baselines).sort((a, b) => b[1].val.map_at_k - a[1].val.map_at_k)[0]![0];
    expect(file.best_baseline).toBe(best);
    // never worse: a learned list is served only when its validation lift's 95% paired interval lies above 0
    const choice = (file as unknown as { ranking_choice: { simple_best: string; val_lift: Record<string, [number, number] | null> } }).ranking_choice;
    if (file.chosen === 'model' || file.chosen === 'reranker') expect(choice.val_lift[file.chosen]![0]).toBeGreaterThan(0);
    else expect(file.chosen).toBe(choice.simple_best);
    // On 2+ cores the steps split their item tower over two worker threads (train/ranking_engine.ts).
    const manifest = JSON.parse(readFileSync(join(trained.run_dir, 'manifest.json'), 'utf8')) as { workers: number };
    expect(manifest.workers).toBe(availableParallelism() >= 2 ? 2 : 1);
  });

  it('predict --json writes k ranked rows per customer, read back with DuckDB; item embeddings beside them', async () => {
    const path = join(out, 'top.parquet');
    const r = run(['predict', '-c', fx.config, '-r', trained.run_dir, '--artifacts', fx.artifacts, '--backend', 'wasm', '--out', path, '--serve-model', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const res = JSON.parse(r.stdout) as TopKResult;
    expect(res).toMatchObject({ objective: 'ranking', prediction: 'top_k', k: K, key: 'customer_id', item_table: 'articles', item_key: 'article_id', path, served_by: 'model' });
    expect(await parquetTypes(path)).toEqual({ customer_id: 'VARCHAR', rank: 'SMALLINT', article_id: 'VARCHAR', score: 'FLOAT' });
    const customers = await sqlRows(`SELECT count(*) AS n FROM read_csv(${sqlPath(join(fx.dir, 'customers.csv'))})`);
    const per = await sqlRows(
      `SELECT customer_id, count(*) AS n, count(DISTINCT article_id) AS d, min(rank) AS lo, max(rank) AS hi, ` +
        `bool_and(score IS NOT NULL AND isfinite(score)) AS finite FROM read_parquet(${sqlPath(path)}) GROUP BY 1`,
    );
    expect(per.length).toBe(Number(customers[0]!.n));
    for (const p of per) expect(p).toMatchObject({ n: BigInt(K), d: BigInt(K), lo: 1, hi: K, finite: true });
    const unordered = await sqlRows(`SELECT count(*) AS n FROM (SELECT score < lead(score) OVER (PARTITION BY customer_id ORDER BY rank) AS up FROM read_parquet(${sqlPath(path)})) WHERE up`);
    expect(unordered[0]!.n).toBe(0n);
    const kv = await parquetKv(path);
    expect(kv).toMatchObject({ run_id: trained.run_id, objective: 'ranking', k: String(K), item_table: 'articles' });
    expect(res.item_embeddings).toBe(join(out, 'top.item_embeddings.parquet'));
    const items = await sqlRows(`SELECT count(*) AS n, min(len(embedding)) AS d FROM read_parquet(${sqlPath(res.item_embeddings!)})`);
    const articles = await sqlRows(`SELECT count(*) AS n FROM read_csv(${sqlPath(join(fx.dir, 'articles.csv'))})`);
    expect(items[0]).toEqual({ n: articles[0]!.n, d: 8n });
  });

  it('embed keeps working on a ranking run: customers (the user side h_u) and articles (the item tree, at depth 0)', async () => {
    for (const table of ['customers', 'articles']) {
      const path = join(out, `embed-${table}.parquet`);
      const r = run(['embed', '-c', fx.config, '-r', trained.run_dir, '--artifacts', fx.artifacts, '--backend', 'wasm', '--table', table, '--out', path, '--json']);
      expect(r.status, r.stderr).toBe(0);
      const rows = await sqlRows(`SELECT count(*) AS n FROM read_csv(${sqlPath(join(fx.dir, `${table}.csv`))})`);
      expect(JSON.parse(r.stdout)).toMatchObject({ rows: Number(rows[0]!.n), dim: 8, table });
    }
  });

  it('report on the ranking run shows MAP@k, recall@k, NDCG@k and the three baselines', () => {
    const path = join(out, 'report.html');
    const r = run(['report', trained.run_dir, '--artifacts', fx.artifacts, '--out', path, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const html = readFileSync(path, 'utf8');
    const m = trained.metrics as { test: Record<string, number> };
    expect(html).toContain(`data-metric="test.map_at_k" data-value="${m.test.map_at_k}"`);
    expect(html).toContain('id="ranking-baselines"');
    for (const name of ['popularity', 'repeat', 'affinity', 'cooccurrence', 'repeat_affinity', 'Recall@k', 'NDCG@k', 'Serve: ']) expect(html).toContain(name);
    expect(html).not.toContain('no-graph MLP');
  });

  it.each([
    [['--shard', '2/2'], '--shard'],
    [['--anchor-time', 'yesterday'], '--anchor-time'],
    [['--with-embeddings'], '--with-embeddings'],
  ])('predict %j exits 2 naming %s', (args, flag) => {
    const r = run(['predict', '-c', fx.config, '-r', trained.run_dir, '--artifacts', fx.artifacts, '--backend', 'wasm', '--out', join(out, 'bad.parquet'), '--json', ...args]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(flag);
    expect(existsSync(join(out, 'bad.parquet'))).toBe(false);
  });
});

describe('predict on a ranking run agrees with the run', () => {
  it("MAP@k from the files at the run's test anchors equals the run's test MAP@k (every test anchor pooled)", async () => {
    const built = await buildGraph(cfg);
    const spec = cfg.taskSpecs.next_purchases!;
    // The run's split: anchors from the target table's time range, its test figure pooled over every test anchor.
    const split = taskSplit(spec, targetTimeRange(spec, built.manifest.tables));
    expect(split.testAnchors.map(isoSeconds)).toEqual((JSON.parse(readFileSync(join(trained.run_dir, 'manifest.json'), 'utf8')) as { split: { test_anchors: string[] } }).split.test_anchors);
    expect(split.testAnchors.length).toBeGreaterThan(1);
    const tables = await buildTrainingTables(built.dir, built.manifest, spec, split, { seed: 0 });
    const customers = await nodeKeys(built.dir, built.manifest, 'customers');
    const articles = await nodeKeys(built.dir, built.manifest, 'articles');
    const article = new Map(articles.map((k, i) => [k, i]));
    // Each example is scored by the file predicted at its own anchor.
    const lists = new Map<number, Map<string, Int32Array>>();
    for (const anchor of split.testAnchors) {
      const r = (await predict({ cfg, run: trained.run_dir, backend: 'wasm', anchorTime: new Date(anchor * 1000).toISOString(), out: join(out, `test_anchor_${anchor}.parquet`), serveModel: true })) as TopKResult;
      const byCustomer = new Map<string, Int32Array>();
      for (const x of await sqlRows(`SELECT customer_id AS c, rank AS r, article_id AS a FROM read_parquet(${sqlPath(r.path)})`)) {
        const list = byCustomer.get(x.c as string) ?? new Int32Array(K).fill(-1);
        list[(x.r as number) - 1] = article.get(x.a as string)!;
        byCustomer.set(x.c as string, list);
      }
      lists.set(anchor, byCustomer);
    }
    const test = tables.test;
    const ranked = new Int32Array(test.nodes.length * K);
    for (let i = 0; i < test.nodes.length; i++) ranked.set(lists.get(test.anchors[i]!)!.get(customers[test.nodes[i]!]!)!, i * K);
    const fromFile = rankingMetrics(test.label_items!, ranked, K);
    expect(fromFile.map_at_k).toBeCloseTo((trained.metrics as { test: { map_at_k: number } }).test.map_at_k, 3);
  });

  it('transactions appended after the anchor change no top-k list and no score at the anchor', async () => {
    const anchor = '2020-08-01T00:00:00Z';
    const before = (await predict({ cfg, run: trained.run_dir, backend: 'wasm', anchorTime: anchor, out: join(out, 'before.parquet'), serveModel: true })) as TopKResult;
    const copy = copyFixture(fx, 'future');
    try {
      // 300 copies of existing purchases (same customers and articles), dated 1 s … 30 days after the anchor
      const lines = readFileSync(join(copy.dir, 'transactions.csv'), 'utf8').trimEnd().split('\n');
      const maxId = Math.max(...lines.slice(1).map((l) => Number(l.split(',')[0])));
      const t0 = Date.parse(anchor);
      const rows = Array.from({ length: 300 }, (_, i) => {
        const f = lines[1 + ((i * 7919) % (lines.length - 1))]!.split(',');
        f[0] = String(maxId + 1 + i);
        f[1] = new Date(t0 + 1000 + i * 8_640_000).toISOString().slice(0, 19).replace('T', ' ');
        return f.join(',');
      });
      appendFileSync(join(copy.dir, 'transactions.csv'), `${rows.join('\n')}\n`);
      const cfg2 = loadConfig(copy.config, { cwd: copy.dir, artifacts: fx.artifacts });
      const after = (await predict({ cfg: cfg2, run: trained.run_dir, backend: 'wasm', anchorTime: anchor, out: join(out, 'after.parquet'), serveModel: true })) as TopKResult;
      const q = (p: string) => sqlRows(`SELECT customer_id, rank, article_id, score FROM read_parquet(${sqlPath(p)}) ORDER BY 1, 2`);
      expect(await q(after.path)).toEqual(await q(before.path));
    } finally {
      copy.cleanup();
    }
  });

  it('two shards concatenate to the unsharded file; only shard 0 writes the item embeddings', async () => {
    const anchor = '2020-08-01T00:00:00Z';
    const whole = (await predict({ cfg, run: trained.run_dir, backend: 'wasm', anchorTime: anchor, out: join(out, 'whole.parquet'), serveModel: true })) as TopKResult;
    const parts = [];
    for (const index of [0, 1]) parts.push((await predict({ cfg, run: trained.run_dir, backend: 'wasm', anchorTime: anchor, shard: { index, count: 2 }, out: join(out, `part${index}.parquet`), serveModel: true })) as TopKResult);
    expect(parts[0]!.item_embeddings).not.toBeNull();
    expect(parts[1]!.item_embeddings).toBeNull();
    const q = (p: string) => sqlRows(`SELECT customer_id, rank, article_id, round(score, 4) AS s FROM read_parquet(${sqlPath(p)}) ORDER BY 1, 2`);
    const a = await q(whole.path);
    const b = await sqlRows(`SELECT customer_id, rank, article_id, round(score, 4) AS s FROM read_parquet([${sqlPath(parts[0]!.path)}, ${sqlPath(parts[1]!.path)}]) ORDER BY 1, 2`);
    expect(b).toEqual(a);
    expect(parts[0]!.rows + parts[1]!.rows).toBe(whole.rows);
  });
});

describe('predict on a ranking run that chose a heuristic serves it', () => {
  type RunMetrics = { chosen: string; chosen_reason: string; baselines: Record<string, { test: { map_at_k: number } }>; heuristics: { popularity: { window_seconds: number }; affinity: { column: string }; repeat_affinity: { repeat_weight: number }; exclude_seen: { exclude: boolean } } };
  const metricsFile = (): RunMetrics => JSON.parse(readFileSync(join(trained.run_dir, 'metrics.json'), 'utf8')) as RunMetrics;
  beforeAll(() => {
    // The learned re-ranker (train/rerank.ts) may win on validation; these tests serve the best heuristic,
    // so the run's choice is set to it when it did (the choice rule is unit-tested in test/train/rerank.test.ts).
    const file = join(trained.run_dir, 'metrics.json');
    const m = JSON.parse(readFileSync(file, 'utf8')) as RunMetrics & { best_baseline: string };
    if (m.chosen === 'reranker') writeFileSync(file, JSON.stringify({ ...m, chosen: m.best_baseline, chosen_reason: `the best heuristic (${m.best_baseline}), set by the test` }));
  });

  it("writes the chosen heuristic's lists, equal to the same rule computed in DuckDB from the CSV files, and says so", async () => {
    const m = metricsFile();
    // One epoch of three steps: the model is far behind "your past items plus popular items of your sections".
    expect(m.chosen).toBe('repeat_affinity');
    expect(m.heuristics.exclude_seen.exclude).toBe(false);
    const built = await buildGraph(cfg);
    const spec = cfg.taskSpecs.next_purchases!;
    const anchor = taskSplit(spec, targetTimeRange(spec, built.manifest.tables)).testAnchor;
    const path = join(out, 'heuristic.parquet');
    const text = run(['predict', '-c', fx.config, '-r', trained.run_dir, '--artifacts', fx.artifacts, '--backend', 'wasm', '--anchor-time', isoSeconds(anchor), '--out', path]);
    expect(text.status, text.stderr).toBe(0);
    expect(text.stderr).toContain(`serving repeat_affinity, the run's choice: ${m.chosen_reason}`);
    const r = run(['predict', '-c', fx.config, '-r', trained.run_dir, '--artifacts', fx.artifacts, '--backend', 'wasm', '--anchor-time', isoSeconds(anchor), '--out', path, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ served_by: 'repeat_affinity', served_reason: m.chosen_reason, item_embeddings: null, k: K });
    expect(await parquetTypes(path)).toEqual({ customer_id: 'VARCHAR', rank: 'SMALLINT', article_id: 'VARCHAR', score: 'FLOAT' });

    // score(i | u) = w · share of i in u's purchases + (1 − w) · share of i's value among u's purchases ·
    // i's share of its value's purchases in the window (the value's `depth` best sellers), best first
    // (ties: lower article node), then the window's best sellers the list lacks. Values outside the run's
    // vocabulary of the column (features.json: rarer than data.min_frequency) share one bucket, as the run encodes them.
    const { window_seconds: W } = m.heuristics.popularity;
    const column = m.heuristics.affinity.column;
    const w = m.heuristics.repeat_affinity.repeat_weight;
    const depth = 2 * K;
    const features = JSON.parse(readFileSync(join(trained.run_dir, 'model', 'features.json'), 'utf8')) as { tables: Record<string, { categorical: { name: string; vocab: string[] }[] }> };
    const vocab = features.tables.articles!.categorical.find((c) => c.name === column)!.vocab;
    const keys = await nodeKeys(built.dir, built.manifest, 'articles');
    const csv = (name: string) => `read_csv(${sqlPath(join(fx.dir, name))}, all_varchar = true)`;
    const expected = await sqlRows(`
      WITH node AS (SELECT unnest([${keys.map((k) => `'${k}'`).join(', ')}]) AS a, unnest(range(${keys.length})) AS i),
      art AS (SELECT article_id AS a, i, CASE WHEN ${column} IN (${vocab.map((v) => `'${v}'`).join(', ')}) THEN ${column} ELSE '(rare)' END AS v FROM ${csv('articles.csv')} JOIN node ON node.a = article_id),
      tx AS (SELECT customer_id AS c, article_id AS a, epoch(t_dat::TIMESTAMP) AS t FROM ${csv('transactions.csv')} WHERE epoch(t_dat::TIMESTAMP) <= ${anchor}),
      tot AS (SELECT c, count(*) AS n FROM tx GROUP BY c),
      rep AS (SELECT c, a, count(*) / any_value(tot.n) AS p FROM tx JOIN tot USING (c) GROUP BY c, a),
      win AS (SELECT a, count(*) AS n FROM tx WHERE t > ${anchor - W} GROUP BY a),
      winv AS (SELECT a, v, n, row_number() OVER (PARTITION BY v ORDER BY n DESC, i) AS r, sum(n) OVER (PARTITION BY v) AS vt FROM win JOIN art USING (a)),
      pv AS (SELECT a, v, (n / vt)::FLOAT::DOUBLE AS share FROM winv WHERE r <= ${depth}),
      uv AS (SELECT c, v, count(*) / any_value(tot.n) AS p FROM tx JOIN art USING (a) JOIN tot USING (c) GROUP BY c, v),
      aff AS (SELECT c, pv.a, uv.p * pv.share AS p FROM uv JOIN pv USING (v)),
      score AS (SELECT coalesce(rep.c, aff.c) AS c, coalesce(rep.a, aff.a) AS a, ${w} * coalesce(rep.p, 0) + ${1 - w} * coalesce(aff.p, 0) AS s FROM rep FULL JOIN aff ON rep.c = aff.c AND rep.a = aff.a),
      top AS (SELECT c, a, s, row_number() OVER (PARTITION BY c ORDER BY s DESC, i) AS rank FROM score JOIN art USING (a) WHERE s > 0 QUALIFY rank <= ${K}),
      pop AS (SELECT a, row_number() OVER (ORDER BY n DESC, i) AS pr FROM win JOIN art USING (a) QUALIFY pr <= ${depth}),
      fill AS (
        SELECT cu.customer_id AS c, pop.a, 0.0 AS s, coalesce(m.n, 0) + row_number() OVER (PARTITION BY cu.customer_id ORDER BY pr) AS rank
        FROM ${csv('customers.csv')} cu CROSS JOIN pop LEFT JOIN (SELECT c, count(*) AS n FROM top GROUP BY c) m ON m.c = cu.customer_id
        WHERE NOT EXISTS (SELECT 1 FROM top WHERE top.c = cu.customer_id AND top.a = pop.a)
        QUALIFY rank <= ${K})
      SELECT c AS customer_id, rank::SMALLINT AS rank, a AS article_id, s::FLOAT AS score FROM (SELECT * FROM top UNION ALL SELECT * FROM fill) ORDER BY 1, 2`);
    const served = await sqlRows(`SELECT customer_id, rank, article_id, score FROM read_parquet(${sqlPath(path)}) ORDER BY 1, 2`);
    expect(served.length).toBe(expected.length);
    expect(served).toEqual(expected);
  });

  it("MAP@k from its files at the run's test anchors equals the run's recorded test MAP@k of that heuristic; --serve-model writes the model's", async () => {
    const m = metricsFile();
    const built = await buildGraph(cfg);
    const spec = cfg.taskSpecs.next_purchases!;
    const split = taskSplit(spec, targetTimeRange(spec, built.manifest.tables));
    const tables = await buildTrainingTables(built.dir, built.manifest, spec, split, { seed: 0 });
    const customers = await nodeKeys(built.dir, built.manifest, 'customers');
    const article = new Map((await nodeKeys(built.dir, built.manifest, 'articles')).map((k, i) => [k, i]));
    const lists = new Map<number, Map<string, Int32Array>>();
    for (const anchor of split.testAnchors) {
      const r = (await predict({ cfg, run: trained.run_dir, backend: 'wasm', anchorTime: isoSeconds(anchor), out: join(out, `heuristic_${anchor}.parquet`) })) as TopKResult;
      expect(r.served_by).toBe(m.chosen);
      const byCustomer = new Map<string, Int32Array>();
      for (const x of await sqlRows(`SELECT customer_id AS c, rank AS r, article_id AS a FROM read_parquet(${sqlPath(r.path)})`)) {
        const list = byCustomer.get(x.c as string) ?? new Int32Array(K).fill(-1);
        list[(x.r as number) - 1] = article.get(x.a as string)!;
        byCustomer.set(x.c as string, list);
      }
      lists.set(anchor, byCustomer);
    }
    const test = tables.test;
    const ranked = new Int32Array(test.nodes.length * K);
    for (let i = 0; i < test.nodes.length; i++) ranked.set(lists.get(test.anchors[i]!)!.get(customers[test.nodes[i]!]!)!, i * K);
    expect(rankingMetrics(test.label_items!, ranked, K).map_at_k).toBeCloseTo(m.baselines[m.chosen]!.test.map_at_k, 4);
    const model = (await predict({ cfg, run: trained.run_dir, backend: 'wasm', anchorTime: isoSeconds(split.testAnchor), out: join(out, 'served_model.parquet'), serveModel: true })) as TopKResult;
    expect(model).toMatchObject({ served_by: 'model', served_reason: expect.stringContaining('--serve-model') });
    expect(model.item_embeddings).not.toBeNull();
  });
});
