#!/usr/bin/env node
/**
 * The recommendation targets (docs/recommendations.md, docs/performance.md): train a ranking task (MAP@12
 * of the deep recommender against every heuristic of train/ranking_heuristics.ts on the test anchor: popularity,
 * repeat, attribute affinity, co-occurrence, repeat + affinity), then time `predict`'s exact top-12 over the
 * whole catalogue for every user (median of --repeats). The learned re-ranker over the heuristics' and the model's
 * candidates (train/rerank.ts) is reported beside them (`map_at_12.*.reranker`, `test_map_intervals`), with the
 * run's `intervals` and the served list's choice (`chosen`, `ranking_choice`: paired validation lifts).
 *
 *   npm run build && node bench/recommend.mjs --size tiny|small|medium [--preset retail|retail-dates|bursty|ratings|retail-colour]
 *     [--data DIR] [--run RUN] [--epochs N] [--max-steps N] [--train-anchors N] [--val-anchors N] [--repeats 3] [--verbose]
 *
 * --preset picks the generator's data shape (`gnnctl datasets synth --preset`): the retail presets train
 * configs' `next_purchases`; the ratings presets (users/items/ratings) a `next_rated` task added here, the
 * items a user rates in the next week. `retail-colour` is the second item-attribute layout (issue 34): the
 * retail data with the customers' taste carried by the colour column (colourData) and the product
 * hierarchy shuffled across articles. --run skips training and reads that run's metrics; --max-steps caps
 * optimizer steps per epoch (medium).
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { arg, benchConfig, CACHE, dataset, peakRssMb, ROOT } from './common.mjs';

const size = arg('size', 'small');
const preset = arg('preset', 'retail');
mkdirSync(CACHE, { recursive: true });
const data = arg('data', null) ?? (preset === 'retail' ? await dataset(size) : preset === 'retail-colour' ? await colourData(size) : await presetData(preset, size));
const { loadConfig } = await import('../dist/config/load.js');
const { train } = await import('../dist/train/trainer.js');
const { predict } = await import('../dist/predict/predict.js');
const { resolveRun } = await import('../dist/artifacts/run_store.js');
const { setQuiet } = await import('../dist/core/log.js');
setQuiet(!process.argv.includes('--verbose'));

const ratingsShape = preset === 'bursty' || preset === 'ratings';
const taskName = ratingsShape ? 'next_rated' : 'next_purchases';
const cfg = loadConfig(preset === 'retail' ? benchConfig(`${size}-recommend`, data) : preset === 'retail-colour' ? benchConfig(`colour-${size}-recommend`, data) : presetConfig(preset, size, data));
const task = cfg.taskSpecs[taskName];
const maxSteps = arg('max-steps', null);
const anchors = arg('train-anchors', null);
if (maxSteps) task.model = { ...task.model, max_steps_per_epoch: Number(maxSteps) };
if (anchors) task.split = { ...task.split, train_anchors: Number(anchors) };
// more validation anchors: more validation users for the served list's paired choice
const valAnchors = arg('val-anchors', null);
if (valAnchors) task.split = { ...task.split, val_anchors: Number(valAnchors) };

let runDir;
let trainSeconds = null;
const given = arg('run', null);
if (given) runDir = resolveRun(cfg.artifactsDir, given).dir;
else {
  const t = performance.now();
  const epochs = arg('epochs', null);
  runDir = (await train({ cfg, task: taskName, ...(epochs ? { epochs: Number(epochs) } : {}) })).runDir;
  trainSeconds = Math.round((performance.now() - t) / 100) / 10;
}
const m = JSON.parse(readFileSync(join(runDir, 'metrics.json'), 'utf8'));
const map = (split) => ({
  deep: m[split].map_at_k,
  ...(m.reranker ? { reranker: m.reranker[split].map_at_k } : {}),
  ...Object.fromEntries(Object.entries(m.baselines).map(([name, b]) => [name, b[split].map_at_k])),
});
const test = map('test');

const repeats = Number(arg('repeats', '3'));
const times = [];
let last;
for (let i = 0; i < repeats; i++) {
  // CPU seconds too: on a shared machine the wall clock measures the neighbours as much as the code.
  const c0 = process.cpuUsage();
  // The deep model's exact top-k is what is timed, also when the run chose a heuristic to serve.
  last = await predict({ cfg, run: runDir, out: join(CACHE, `recommend-${size}.parquet`), serveModel: true });
  const c = process.cpuUsage(c0);
  times.push({ seconds: last.seconds, compute_seconds: last.compute_seconds, cpu_seconds: Math.round((c.user + c.system) / 1e4) / 100 });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

console.log(
  JSON.stringify({
    bench: 'recommend',
    size,
    preset,
    task: taskName,
    run: runDir.split('/').pop(),
    k: m.test.k,
    counts: m.counts,
    epochs: m.epochs.length,
    best_epoch: m.best_epoch,
    train_seconds: trainSeconds,
    map_at_12: { test, val: map('val') },
    recall_at_12_test: { deep: m.test.recall_at_k, ...Object.fromEntries(Object.entries(m.baselines).map(([n, b]) => [n, b.test.recall_at_k])) },
    deep_over_popularity: Math.round((test.deep / test.popularity) * 100) / 100,
    deep_above_repeat: test.deep > test.repeat,
    lift_over_best_baseline: m.lift,
    best_baseline: m.best_baseline,
    deep_over_best_baseline: Math.round((test.deep / Math.max(1e-9, test[m.best_baseline])) * 100) / 100,
    reranker_over_best_baseline: m.reranker ? Math.round((test.reranker / Math.max(1e-9, test[m.best_baseline])) * 100) / 100 : null,
    reranker_over_popularity: m.reranker ? Math.round((test.reranker / Math.max(1e-9, test.popularity)) * 100) / 100 : null,
    // 95% bootstrap intervals of test MAP@12 (test users resampled): re-ranker, deep model, popularity, best heuristic
    test_map_intervals: m.reranker?.test_map_intervals ?? null,
    reranker: m.reranker ? { train_users: m.reranker.train_users, train_rows: m.reranker.train_rows, candidate_recall: m.reranker.candidate_recall, rounds: m.reranker.rounds, best_round: m.reranker.best_round, seconds: m.reranker.seconds, top_features: m.reranker.top_features.slice(0, 5) } : null,
    // 95% intervals of the deep model's test MAP/recall/NDCG@12, the lift over the best heuristic, every heuristic's test MAP@12
    intervals: m.intervals ?? null,
    chosen: m.chosen ?? null,
    chosen_reason: m.chosen_reason ?? null,
    // the paired validation lifts the choice was judged on
    ranking_choice: m.ranking_choice ?? null,
    heuristics: m.heuristics ?? null,
    predict: {
      users: last.rows / last.k,
      items: last.items,
      rows: last.rows,
      seconds_median: median(times.map((t) => t.seconds)),
      compute_seconds_median: median(times.map((t) => t.compute_seconds)),
      cpu_seconds_median: median(times.map((t) => t.cpu_seconds)),
      runs: times,
    },
    load_average_1m: Math.round(loadavg()[0] * 10) / 10,
    peak_rss_mb: peakRssMb(),
  }),
);

/** The generator's data of a preset and size (seed 0), written once under the bench cache. */
async function presetData(name, sz) {
  const dir = join(CACHE, `data-${name}-${sz}`);
  const shape = name === 'bursty' || name === 'ratings';
  if (!existsSync(join(dir, shape ? 'ratings.csv' : 'transactions.csv'))) {
    mkdirSync(dir, { recursive: true });
    if (shape) {
      const { generateRatingsSynthetic } = await import('../dist/datasets/ratings_synth.js');
      await generateRatingsSynthetic({ out: dir, preset: name, size: sz, seed: 0, format: 'csv' });
    } else {
      const { generateSynthetic } = await import('../dist/datasets/synth.js');
      const { SYNTH_PRESETS } = await import('../dist/datasets/presets.js');
      await generateSynthetic({ out: dir, size: sz, seed: 0, format: 'csv', dateOnly: SYNTH_PRESETS[name].dateOnly });
    }
  }
  return dir;
}

/** The preset's bundled config pointed at the data, with a ranking task for the ratings shape. */
function presetConfig(name, sz, dir) {
  const file = { 'retail-dates': 'retail_dates.yaml', bursty: 'bursty.yaml', ratings: 'ratings.yaml' }[name];
  if (!file) throw new Error(`unknown --preset ${name} (use retail, retail-dates, bursty or ratings)`);
  let text = readFileSync(join(ROOT, 'configs', file), 'utf8').replaceAll(`datasets/${name.replace('-', '_')}`, dir);
  const query = name === 'bursty' || name === 'ratings'
    ? ['next_rated', 'PREDICT LIST_DISTINCT(ratings.item_id, 0, 7, days) RANK TOP 12 FOR EACH users.user_id']
    : ['next_purchases', 'PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP 12 FOR EACH customers.customer_id'];
  if (!text.includes(`  ${query[0]}:`)) text = text.replace(/^tasks:\n/m, `tasks:\n  ${query[0]}:\n    query: ${query[1]}\n    split: { train_anchors: 6 }\n`);
  const path = join(CACHE, `${name}-${sz}-recommend.yaml`);
  writeFileSync(path, `${text}\nartifacts: ${join(CACHE, `artifacts-${name}-${sz}`)}\n`);
  return path;
}

/**
 * The retail data (seed 0) in a second item-attribute layout: the customers' taste (the generator's
 * section) carried by colour_group_code/colour_group_name, and the product hierarchy (type, group,
 * department, index, section, garment group) moved together to another article by a fixed shuffle, so it
 * carries no taste. Customers and transactions are the retail files unchanged.
 */
async function colourData(sz) {
  const src = await dataset(sz);
  const dir = join(CACHE, `data-retail-colour-${sz}`);
  if (existsSync(join(dir, 'articles.csv'))) return dir;
  mkdirSync(dir, { recursive: true });
  for (const f of ['customers.csv', 'transactions.csv']) copyFileSync(join(src, f), join(dir, f));
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  const hier = ['product_type_no', 'product_type_name', 'product_group_name', 'department_no', 'department_name', 'index_code', 'index_name', 'index_group_no', 'index_group_name', 'section_no', 'section_name', 'garment_group_no', 'garment_group_name'];
  const tmp = join(dir, 'articles.csv.tmp');
  await con.run(`COPY (
    WITH a AS (SELECT *, row_number() OVER (ORDER BY article_id) AS rn FROM read_csv('${join(src, 'articles.csv')}', all_varchar = true)),
         s AS (SELECT ${hier.join(', ')}, row_number() OVER (ORDER BY hash(article_id || 'layout')) AS rn FROM a)
    SELECT a.article_id, a.product_code, a.prod_name, ${hier.slice(0, 3).map((c) => `s.${c}`).join(', ')},
           a.section_no AS colour_group_code, 'Colour ' || a.section_name AS colour_group_name,
           ${hier.slice(3).map((c) => `s.${c}`).join(', ')}
    FROM a JOIN s USING (rn) ORDER BY a.article_id) TO '${tmp}' (HEADER, FORMAT csv)`);
  con.closeSync?.();
  renameSync(tmp, join(dir, 'articles.csv'));
  return dir;
}
