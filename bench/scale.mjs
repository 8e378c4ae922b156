#!/usr/bin/env node
/**
 * The bundled pipeline end to end at a size, each stage through the real binary in its own process:
 * graph → train churn → train fraud → embed all customers and all articles (fraud run, exact) → predict
 * churn for every customer → train next_purchases (the recommender) → its top-12 articles for every
 * customer over the whole catalogue → distill (fraud, on the fraud run's embeddings) → export → one
 * served request. `--skip-recommendations` leaves the two recommendation stages out. Prints one JSON
 * line: per stage wall seconds, peak RSS of that stage's process (MB; worker threads, TF.js heaps and
 * DuckDB included) and its key figure; the high-water stage; the total.
 *
 *   npm run build && node bench/scale.mjs --size medium|large [--duckdb-memory 4GB]
 *       [--churn-epochs N] [--fraud-epochs N] [--ranking-epochs N] [--max-steps N] [--ranking-max-steps N]
 *       [--distill-epochs N]
 *       [--skip-recommendations] [--cache DIR] [--resume PREVIOUS.json] [--only "STAGE,STAGE,…"]
 *
 * Epoch caps (the bundled config trains churn 10 epochs, fraud 5, next_purchases 8, distillation 25; an
 * end-to-end figure with those is hours at `large`, so the bench caps them and says so in `caps`):
 *   medium: churn 2 epochs, fraud 1 epoch, next_purchases 1 epoch, distillation 3 epochs;
 *   large:  churn, fraud and next_purchases 1 epoch each; churn and fraud at most 2,000 steps of 512 seeds
 *           (1.02M seeds), next_purchases at most 200 steps of 512 users (`--ranking-max-steps`: the
 *           recommender trains on one thread at ~370 users/s at `large`, 4,096 candidate item trees per
 *           step, so 2,000 steps alone would be 45 minutes); distillation 2 epochs.
 * The figures measure the pipeline's machinery at that scale, not the quality of a fully trained model.
 *
 * Memory: `--duckdb-memory` sets GNNCTL_DUCKDB_MEMORY for every stage (DuckDB's cap; default 40% of RAM).
 * The cap bounds DuckDB only: the JS heap, typed arrays of the graph and TF.js's wasm heaps come on top,
 * which is why peak RSS is measured per process and not assumed.
 *
 * `--resume PREVIOUS.json` (a previous run's output at the same size and caps, e.g. one a failed stage
 * ended) keeps that run's artifacts folder and its finished stages' figures (marked `resumed`) and runs
 * only the stages after them: a stage fixed after an hour at `large` need not repeat the hour.
 *
 * `--only` runs the named stages alone (e.g. `--only "graph,train fraud,distill"` to check the memory of
 * the heavy ones under `--duckdb-memory 4GB`); it must include what they read (distill and the embed
 * stages read the fraud run, export the distilled run and both embed stages).
 *
 * The synthetic data is generated once per size into the cache folder (not timed as a stage; `synth`
 * reports it when it happened in this run). Runs on a shared machine must say so next to the figures.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { arg, CACHE, dataset, flag, ROOT } from './common.mjs';

const size = arg('size', 'medium');
if (!['tiny', 'small', 'medium', 'large'].includes(size)) {
  console.error(`--size must be tiny, small, medium or large (got ${JSON.stringify(size)})`);
  process.exit(2);
}
const defaults = {
  tiny: { ranking_max_steps: null, churn_epochs: 1, fraud_epochs: 1, ranking_epochs: 1, max_steps_per_epoch: null, distill_epochs: 1 },
  small: { ranking_max_steps: null, churn_epochs: 2, fraud_epochs: 1, ranking_epochs: 1, max_steps_per_epoch: null, distill_epochs: 3 },
  medium: { ranking_max_steps: null, churn_epochs: 2, fraud_epochs: 1, ranking_epochs: 1, max_steps_per_epoch: null, distill_epochs: 3 },
  large: { ranking_max_steps: 200, churn_epochs: 1, fraud_epochs: 1, ranking_epochs: 1, max_steps_per_epoch: 2000, distill_epochs: 2 },
}[size];
const num = (name, fallback) => {
  const v = arg(name, null);
  if (v === null) return fallback;
  if (!/^\d+$/.test(v) || Number(v) < 1) {
    console.error(`--${name} must be a whole number ≥ 1 (got ${JSON.stringify(v)})`);
    process.exit(2);
  }
  return Number(v);
};
const caps = {
  churn_epochs: num('churn-epochs', defaults.churn_epochs),
  fraud_epochs: num('fraud-epochs', defaults.fraud_epochs),
  ranking_epochs: num('ranking-epochs', defaults.ranking_epochs),
  max_steps_per_epoch: num('max-steps', defaults.max_steps_per_epoch),
  ranking_max_steps: num('ranking-max-steps', defaults.ranking_max_steps),
  distill_epochs: num('distill-epochs', defaults.distill_epochs),
};
const duckdbMemory = arg('duckdb-memory', process.env.GNNCTL_DUCKDB_MEMORY ?? null);
const onlyArg = arg('only', null);
const only = onlyArg ? new Set(onlyArg.split(',').map((x) => x.trim())) : null;
const STAGES = ['graph', 'train churn', 'train fraud', 'embed customers', 'embed articles', 'predict churn', 'train next_purchases', 'predict next_purchases top-12', 'distill', 'export', 'serve request'];
for (const name of only ?? []) {
  if (!STAGES.includes(name)) {
    console.error(`--only: no stage ${JSON.stringify(name)}; stages: ${STAGES.join(', ')}`);
    process.exit(2);
  }
}

const loadBefore = loadavg()[0];
let synth = null;
{
  const t = performance.now();
  const existed = existsSync(join(CACHE, `data-${size}`, 'transactions.csv'));
  await dataset(size);
  if (!existed) synth = { seconds: Math.round((performance.now() - t) / 100) / 10 };
}
const data = join(CACHE, `data-${size}`);

// The bundled config on this data, with the caps, in a fresh artifacts folder (no reused stage unless --resume).
const artifacts = join(CACHE, `scale-${size}`);
const resumeFile = arg('resume', null);
/** stage name → its figures from the run resumed */
const finished = new Map();
let resumedFrom = null;
if (resumeFile) {
  const prev = JSON.parse(readFileSync(resumeFile, 'utf8'));
  // Caps the previous run did not have yet apply only to the stages it did not finish.
  if (prev.size !== size || Object.keys(prev.caps).some((k) => prev.caps[k] !== caps[k])) {
    console.error(`--resume ${resumeFile}: that run is size ${prev.size} with caps ${JSON.stringify(prev.caps)}; this one is ${size} with ${JSON.stringify(caps)}`);
    process.exit(2);
  }
  for (const s of prev.stages) if (!s.error) finished.set(s.stage, { ...s, resumed: true });
  resumedFrom = { file: resumeFile, stages: [...finished.keys()], load_avg_1m_at_start: prev.machine?.load_avg_1m_at_start ?? null };
} else {
  rmSync(artifacts, { recursive: true, force: true });
}
mkdirSync(artifacts, { recursive: true });
const cfg = parse(readFileSync(join(ROOT, 'configs', 'retail.yaml'), 'utf8'));
for (const t of Object.values(cfg.data.tables)) t.path = t.path.replace('datasets/retail', data);
for (const [name, steps] of [['churn', caps.max_steps_per_epoch], ['fraud', caps.max_steps_per_epoch], ['next_purchases', caps.ranking_max_steps ?? caps.max_steps_per_epoch]]) {
  if (steps) cfg.tasks[name].model = { ...(cfg.tasks[name].model ?? {}), max_steps_per_epoch: steps };
}
const configPath = join(CACHE, `scale-${size}.yaml`);
writeFileSync(configPath, stringify(cfg));
const common = ['--config', configPath, '--artifacts', artifacts, '--json'];

const env = { ...process.env, ...(duckdbMemory ? { GNNCTL_DUCKDB_MEMORY: duckdbMemory } : {}) };
const stages = [];
const rssFile = join(tmpdir(), `gnnctl-scale-rss-${process.pid}`);

/** Runs one stage in its own process; progress goes to this process's stderr as the stage prints it. */
function stage(name, script, args, figure) {
  // A resumed stage gives its outputs to the stages that read them, also when --only leaves it out.
  const done = finished.get(name);
  if (only && !only.has(name) && !done) return {};
  if (done) {
    stages.push(done);
    // What later stages read of a stage's output, as its figures recorded it.
    return { run_id: done.run, path: done.path ?? embeddingPath(done), repository: done.repository, model: done.model };
  }
  rmSync(rssFile, { force: true });
  const t = performance.now();
  const r = spawnSync(process.execPath, [join(ROOT, 'bench', script), ...args], {
    cwd: ROOT,
    env: { ...env, GNNCTL_BENCH_RSS_FILE: rssFile },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 1 << 26,
  });
  const seconds = Math.round((performance.now() - t) / 100) / 10;
  let peak = null;
  try {
    peak = Math.round(Number(readFileSync(rssFile, 'utf8')) / 1024);
  } catch {
    // the process died before its exit handler ran; the stage fails below
  }
  const last = (r.stdout ?? '').trim().split('\n').pop() ?? '';
  let json = null;
  try {
    json = JSON.parse(last);
  } catch {
    // reported below
  }
  if (r.status !== 0 || !json) {
    stages.push({ stage: name, seconds, peak_rss_mb: peak, error: json?.message ?? `exit ${r.status}` });
    finish();
    process.exit(1);
  }
  stages.push({ stage: name, seconds, peak_rss_mb: peak, ...figure(json) });
  return json;
}

const g = stage('graph', 'gnnctl_rss.mjs', ['graph', 'build', ...common], (j) => ({ nodes: Object.values(j.tables).reduce((a, b) => a + b, 0), edges: Object.values(j.edges).reduce((a, b) => a + b, 0) }));
void g;
// The run's own record: epochs and where the rest of the time went (tables, evaluation, baseline).
const trainFigure = (j) => {
  const m = JSON.parse(readFileSync(join(j.run_dir, 'metrics.json'), 'utf8'));
  const manifest = JSON.parse(readFileSync(join(j.run_dir, 'manifest.json'), 'utf8'));
  return {
    run: j.run_id,
    train_examples: j.counts.train,
    epoch_seconds: m.epochs.map((e) => e.seconds),
    seeds_per_s: j.seeds_per_s,
    timings: manifest.timings,
    test_auroc: j.metrics.test.auroc ?? null,
    baseline_test_auroc: j.metrics.baseline?.test?.auroc ?? null,
    baseline_train_rows: m.baseline?.train_rows ?? null,
  };
};
const churn = stage('train churn', 'gnnctl_rss.mjs', ['train', '-t', 'churn', '--epochs', String(caps.churn_epochs), ...common], trainFigure);
const fraud = stage('train fraud', 'gnnctl_rss.mjs', ['train', '-t', 'fraud', '--epochs', String(caps.fraud_epochs), ...common], trainFigure);
const embedFigure = (j) => ({ rows: j.rows, entities_per_s: j.entities_per_s, compute_seconds: j.compute_seconds, path: j.path });
const customers = stage('embed customers', 'gnnctl_rss.mjs', ['embed', '--run', fraud.run_id, '--table', 'customers', ...common], embedFigure);
const articles = stage('embed articles', 'gnnctl_rss.mjs', ['embed', '--run', fraud.run_id, '--table', 'articles', ...common], embedFigure);
stage('predict churn', 'gnnctl_rss.mjs', ['predict', '--run', churn.run_id, ...common], embedFigure);
if (!flag('skip-recommendations')) {
  const ranking = stage('train next_purchases', 'gnnctl_rss.mjs', ['train', '-t', 'next_purchases', '--epochs', String(caps.ranking_epochs), ...common], (j) => {
    const m = JSON.parse(readFileSync(join(j.run_dir, 'metrics.json'), 'utf8'));
    const manifest = JSON.parse(readFileSync(join(j.run_dir, 'manifest.json'), 'utf8'));
    return { run: j.run_id, train_examples: j.counts.train, epoch_seconds: m.epochs.map((e) => e.seconds), timings: manifest.timings, test_map_at_k: j.metrics.test?.map_at_k ?? null, best_baseline: m.best_baseline ?? null };
  });
  stage('predict next_purchases top-12', 'gnnctl_rss.mjs', ['predict', '--run', ranking.run_id, ...common], (j) => ({ ...embedFigure(j), items: j.items, k: j.k }));
}
const distilled = stage('distill', 'gnnctl_rss.mjs', ['distill', '--base', fraud.run_id, '--epochs', String(caps.distill_epochs), ...common], (j) => ({ run: j.run_id, test_auroc: j.metrics.test?.auroc ?? null, teacher_test_auroc: j.metrics.teacher?.test?.auroc ?? null, train_rows: j.counts?.train ?? null }));
const exported = stage('export', 'gnnctl_rss.mjs', ['export', '--run', distilled.run_id, '--embeddings', customers.path, articles.path, ...common], (j) => ({ version: j.version, model_mb: Math.round((j.model_bytes / 2 ** 20) * 10) / 10, repository: j.repository, model: j.model }));
stage('serve request', 'serve_request.mjs', ['--repository', exported.repository, '--model', exported.model], (j) => ({ status: j.status, request_ms: Math.round(j.ms * 10) / 10 }));
finish();

/** An embed stage's file in the resumed artifacts folder (runs before `path` was recorded in the figures). */
function embeddingPath(done) {
  if (!done.stage.startsWith('embed ')) return undefined;
  const table = done.stage.slice('embed '.length);
  const root = join(artifacts, 'embeddings');
  for (const run of existsSync(root) ? readdirSync(root) : []) {
    for (const anchor of readdirSync(join(root, run))) {
      const p = join(root, run, anchor, table, 'embeddings.parquet');
      if (existsSync(p)) return p;
    }
  }
  throw new Error(`--resume: no embeddings of ${table} under ${root}`);
}

function finish() {
  rmSync(rssFile, { force: true });
  const withRss = stages.filter((s) => s.peak_rss_mb !== null);
  const high = withRss.reduce((a, s) => (a === null || s.peak_rss_mb > a.peak_rss_mb ? s : a), null);
  console.log(
    JSON.stringify({
      bench: 'scale',
      size,
      caps,
      duckdb_memory: duckdbMemory ?? 'default (40% of RAM)',
      machine: { cores: availableParallelism(), ram_gb: Math.round(totalmem() / 2 ** 30), load_avg_1m_at_start: Math.round(loadBefore * 100) / 100, load_avg_1m_at_end: Math.round(loadavg()[0] * 100) / 100 },
      synth,
      ...(resumedFrom ? { resumed_from: resumedFrom } : {}),
      ...(only ? { only: [...only] } : {}),
      stages,
      total_seconds: Math.round(stages.reduce((a, s) => a + s.seconds, 0) * 10) / 10,
      high_water: high ? { stage: high.stage, peak_rss_mb: high.peak_rss_mb } : null,
      node: process.version,
    }),
  );
}
