#!/usr/bin/env node
/**
 * Every stage a user runs, at a size, each through the real binary (or a bench script) in its own process:
 * graph → relational aggregates → train churn, fraud, item_sales and next_purchases (`model.kind: auto`:
 * the GNN, gradient-boosted trees on own columns + aggregates, and the hybrid, the best kept) → embed all
 * customers and all articles (fraud run, exact) → predict churn scores for every customer → the
 * recommender's top-12 articles for every customer → distill (fact: fraud) → distill (session
 * recommender) → export both → publish the customer embeddings to Redis (a throwaway local
 * `redis-server`) → one served request → anomaly detection on a synthetic service mesh from raw spans
 * (ingestion is the first step of `anomaly fit` and of `anomaly score`). Per stage: wall seconds, CPU
 * seconds (user + system of that process, its worker threads and DuckDB's included: bench/rusage.mjs),
 * peak RSS, and its key figure; the high-water stage; the total. Prints the docs/performance.md table
 * (markdown), then one JSON line.
 *
 *   npm run build && node bench/scale.mjs --size small|medium|large [--duckdb-memory 4GB]
 *       [--churn-epochs N] [--fraud-epochs N] [--ranking-epochs N] [--max-steps N] [--ranking-max-steps N]
 *       [--distill-epochs N] [--session-epochs N] [--search-budget 10m]
 *       [--mesh-services N] [--mesh-hours N] [--spans-per-call N] [--anomaly-epochs N]
 *       [--skip-recommendations] [--skip-anomaly] [--cache DIR] [--resume PREVIOUS.json] [--only "STAGE,STAGE,…"]
 *
 * `model: auto` in full (the variant search as well) is `--search-budget DURATION`: each GNN task then
 * searches its variants within that budget. Without it each task trains its configured GNN (kind auto).
 *
 * Epoch caps (the bundled config trains churn 10 epochs, fraud 5, next_purchases 8, distillation 25; an
 * end-to-end figure with those is hours at `large`, so the bench caps them and says so in `caps`):
 *   small, medium: churn 2 epochs, fraud, item_sales and next_purchases 1 epoch, distillation 3 epochs,
 *                  the session recommender 2;
 *   large:  churn, fraud, item_sales and next_purchases 1 epoch each; churn, fraud and item_sales at most
 *           2,000 steps of 512 seeds, next_purchases at most 200 steps of 512 users (the recommender
 *           scores 4,096 candidate item trees per step); distillation 2 epochs, the session recommender 1.
 * The figures measure the pipeline's machinery at that scale, not the quality of a fully trained model.
 *
 * The mesh: `gnnctl datasets synth-mesh` (--mesh-services, default 2,000 at large, 200 below; --mesh-hours,
 * default 24: fitting needs 88 snapshots of its first half) writes metrics and a per-snapshot call table; the call rows become raw
 * OpenTelemetry-named spans here (each call row `--spans-per-call` traces of a parent span in the caller
 * and a child span in the callee, durations from the row's latency, errors at its error rate), and the
 * anomaly config reads `spans:` instead of `calls:`. Generating them is reported as `mesh`, not a stage.
 *
 * Memory: `--duckdb-memory` sets GNNCTL_DUCKDB_MEMORY for every stage (DuckDB's cap; default 40% of RAM).
 * The cap bounds DuckDB only: the JS heap, typed arrays of the graph and TF.js's wasm heaps come on top,
 * which is why peak RSS is measured per process and not assumed.
 *
 * `--resume PREVIOUS.json` (a previous run's output at the same size and caps, e.g. one a failed stage
 * ended) keeps that run's artifacts folder and its finished stages' figures (marked `resumed`) and runs
 * only the stages after them: a stage fixed after an hour at `large` need not repeat the hour.
 *
 * `--only` runs the named stages alone (e.g. `--only "graph,train fraud,distill"`); it must include what
 * they read (distill and the embed stages read the fraud run, export the distilled run and both embed
 * stages, publish the customers' embeddings, the session recommender the churn and item_sales runs).
 *
 * A stage that fails is recorded with its error and the stages that read its output are skipped (marked
 * `skipped`); the others still run, and the process exits 1. The synthetic data is generated once per
 * size into the cache folder (not timed as a stage; `synth` reports it when it happened in this run).
 * Runs on a shared machine must say so next to the figures (`machine.load_avg_*`).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
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
  tiny: { ranking_max_steps: null, churn_epochs: 1, fraud_epochs: 1, ranking_epochs: 1, max_steps_per_epoch: null, distill_epochs: 1, session_epochs: 1 },
  small: { ranking_max_steps: null, churn_epochs: 2, fraud_epochs: 1, ranking_epochs: 1, max_steps_per_epoch: null, distill_epochs: 3, session_epochs: 2 },
  medium: { ranking_max_steps: null, churn_epochs: 2, fraud_epochs: 1, ranking_epochs: 1, max_steps_per_epoch: null, distill_epochs: 3, session_epochs: 2 },
  large: { ranking_max_steps: 200, churn_epochs: 1, fraud_epochs: 1, ranking_epochs: 1, max_steps_per_epoch: 2000, distill_epochs: 2, session_epochs: 1 },
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
  session_epochs: num('session-epochs', defaults.session_epochs),
  search_budget: arg('search-budget', null),
};
const mesh = {
  services: num('mesh-services', size === 'large' ? 2000 : 200),
  hours: num('mesh-hours', 24),
  spans_per_call: num('spans-per-call', 2),
  anomaly_epochs: num('anomaly-epochs', null),
};
const duckdbMemory = arg('duckdb-memory', process.env.GNNCTL_DUCKDB_MEMORY ?? null);
const onlyArg = arg('only', null);
const only = onlyArg ? new Set(onlyArg.split(',').map((x) => x.trim())) : null;
const STAGES = [
  'graph',
  'aggregates',
  'train churn',
  'train fraud',
  'embed customers',
  'embed articles',
  'predict churn',
  'train next_purchases',
  'predict next_purchases top-12',
  'train item_sales',
  'distill',
  'export',
  'distill session',
  'export session',
  'publish customers',
  'serve request',
  'anomaly fit',
  'anomaly score',
];
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
  // The bench's output: the table, then the JSON line.
  const prev = JSON.parse(readFileSync(resumeFile, 'utf8').trim().split('\n').pop());
  // Caps the previous run did not have yet apply only to the stages it did not finish.
  if (prev.size !== size || Object.keys(prev.caps).some((k) => prev.caps[k] !== caps[k])) {
    console.error(`--resume ${resumeFile}: that run is size ${prev.size} with caps ${JSON.stringify(prev.caps)}; this one is ${size} with ${JSON.stringify(caps)}`);
    process.exit(2);
  }
  for (const s of prev.stages) if (!s.error && !s.skipped) finished.set(s.stage, { ...s, resumed: true });
  resumedFrom = { file: resumeFile, stages: [...finished.keys()], load_avg_1m_at_start: prev.machine?.load_avg_1m_at_start ?? null };
} else {
  rmSync(artifacts, { recursive: true, force: true });
}
mkdirSync(artifacts, { recursive: true });
const cfg = parse(readFileSync(join(ROOT, 'configs', 'retail.yaml'), 'utf8'));
for (const t of Object.values(cfg.data.tables)) t.path = t.path.replace('datasets/retail', data);
for (const [name, steps] of [['churn', caps.max_steps_per_epoch], ['fraud', caps.max_steps_per_epoch], ['item_sales', caps.max_steps_per_epoch], ['next_purchases', caps.ranking_max_steps ?? caps.max_steps_per_epoch]]) {
  const model = { ...(cfg.tasks[name].model ?? {}), kind: 'auto' };
  if (steps) model.max_steps_per_epoch = steps;
  // `model: auto` is the defaults with the variant search: the search inside each task's own overrides.
  if (caps.search_budget && name !== 'next_purchases') Object.assign(model, { search: true, search_budget: caps.search_budget });
  cfg.tasks[name].model = model;
}
const configPath = join(CACHE, `scale-${size}.yaml`);
writeFileSync(configPath, stringify(cfg));
const common = ['--config', configPath, '--artifacts', artifacts, '--json'];

const env = { ...process.env, ...(duckdbMemory ? { GNNCTL_DUCKDB_MEMORY: duckdbMemory } : {}) };
const stages = [];
const usageFile = join(tmpdir(), `gnnctl-scale-usage-${process.pid}`);
let failed = false;

/**
 * Runs one stage in its own process (`script` a bench script, or `gnnctl`); progress goes to this
 * process's stderr as the stage prints it. `needs`: the outputs it reads, null when a stage before failed
 * (then it is skipped). Returns the stage's JSON result, or null when it did not run or failed.
 */
function stage(name, script, args, figure, needs = []) {
  // A resumed stage gives its outputs to the stages that read them, also when --only leaves it out.
  const done = finished.get(name);
  if (done) {
    stages.push(done);
    // What later stages read of a stage's output, as its figures recorded it.
    return { run_id: done.run, path: done.path ?? embeddingPath(done), repository: done.repository, model: done.model };
  }
  if (only && !only.has(name)) return null;
  if (needs.some((x) => x === null || x === undefined)) {
    stages.push({ stage: name, skipped: 'an earlier stage it reads failed or did not run' });
    return null;
  }
  rmSync(usageFile, { force: true });
  const t = performance.now();
  const r = spawnSync(process.execPath, [join(ROOT, 'bench', 'rusage.mjs'), script === 'gnnctl' ? 'gnnctl' : join(ROOT, 'bench', script), ...args], {
    cwd: ROOT,
    env: { ...env, GNNCTL_BENCH_USAGE_FILE: usageFile },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 1 << 28,
  });
  const seconds = Math.round((performance.now() - t) / 100) / 10;
  let usage = { peak_rss_mb: null, cpu_seconds: null };
  try {
    const u = JSON.parse(readFileSync(usageFile, 'utf8'));
    usage = { peak_rss_mb: Math.round(u.max_rss_kb / 1024), cpu_seconds: Math.round((u.user_seconds + u.system_seconds) * 10) / 10 };
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
    failed = true;
    stages.push({ stage: name, seconds, ...usage, error: json?.message ?? json?.error ?? `exit ${r.status ?? r.signal}` });
    return null;
  }
  let fig;
  try {
    fig = figure(json);
  } catch (e) {
    fig = { figure_error: String(e) };
  }
  stages.push({ stage: name, seconds, ...usage, ...fig });
  return json;
}

const sum = (o) => Object.values(o ?? {}).reduce((a, b) => a + b, 0);
stage('graph', 'gnnctl', ['graph', 'build', ...common], (j) => ({ nodes: sum(j.tables), edges: sum(j.edges), figure: `${fmt(sum(j.tables))} nodes, ${fmt(sum(j.edges))} edges` }));
// bench/aggregates.mjs builds (or loads) the bench config's graph of this size first: its own figures are
// the aggregates alone (an entity task's 10 weekly anchors, and every fact row).
stage('aggregates', 'aggregates.mjs', ['--size', size, '--cache', CACHE], (j) => ({
  aggregates_seconds: j.seconds,
  aggregates_cpu_seconds: j.cpu_seconds,
  figure: `entity: ${fmt(j.entity.examples)} rows × ${j.entity.features} features, fact: ${fmt(j.fact.examples)} × ${j.fact.features}; ${j.seconds} s computing (${j.cpu_seconds} s CPU)`,
}));
// The run's own record: epochs, the model kind it chose and where the rest of the time went.
const trainFigure = (j) => {
  const m = JSON.parse(readFileSync(join(j.run_dir, 'metrics.json'), 'utf8'));
  const manifest = JSON.parse(readFileSync(join(j.run_dir, 'manifest.json'), 'utf8'));
  const metric = j.metrics?.test?.auroc ?? j.metrics?.test?.map_at_k ?? j.metrics?.test?.mae ?? null;
  const name = j.metrics?.test?.auroc !== undefined ? 'AUROC' : j.metrics?.test?.map_at_k !== undefined ? 'MAP@12' : 'MAE';
  return {
    run: j.run_id,
    train_examples: j.counts?.train ?? null,
    epoch_seconds: (m.epochs ?? []).map((e) => e.seconds),
    seeds_per_s: j.seeds_per_s ?? null,
    chosen: j.chosen ?? m.chosen ?? null,
    tree_features: m.model_choice?.tree_features ?? null,
    timings: manifest.timings,
    test_metric: metric,
    figure: `${fmt(j.counts?.train)} training examples; chose ${j.chosen ?? m.chosen ?? 'the GNN'}; test ${name} ${metric === null ? 'n/a' : Math.round(metric * 1e4) / 1e4}`,
  };
};
const trainArgs = (task, epochs) => ['train', '-t', task, '--epochs', String(epochs), ...common];
const churn = stage('train churn', 'gnnctl', trainArgs('churn', caps.churn_epochs), trainFigure);
const fraud = stage('train fraud', 'gnnctl', trainArgs('fraud', caps.fraud_epochs), trainFigure);
const embedFigure = (j) => ({ rows: j.rows, entities_per_s: j.entities_per_s, compute_seconds: j.compute_seconds, path: j.path, figure: `${fmt(j.rows)} rows${j.entities_per_s ? `, ${fmt(j.entities_per_s)}/s compute` : ''}` });
const customers = stage('embed customers', 'gnnctl', ['embed', '--run', fraud?.run_id, '--table', 'customers', ...common], embedFigure, [fraud]);
const articles = stage('embed articles', 'gnnctl', ['embed', '--run', fraud?.run_id, '--table', 'articles', ...common], embedFigure, [fraud]);
stage('predict churn', 'gnnctl', ['predict', '--run', churn?.run_id, ...common], embedFigure, [churn]);
if (!flag('skip-recommendations')) {
  const ranking = stage('train next_purchases', 'gnnctl', trainArgs('next_purchases', caps.ranking_epochs), trainFigure);
  stage('predict next_purchases top-12', 'gnnctl', ['predict', '--run', ranking?.run_id, ...common], (j) => ({ ...embedFigure(j), items: j.items, k: j.k, figure: `${fmt(j.rows)} rows, top ${j.k} of ${fmt(j.items)} items` }), [ranking]);
}
const items = flag('skip-recommendations') ? null : stage('train item_sales', 'gnnctl', trainArgs('item_sales', caps.ranking_epochs), trainFigure);
const distilled = stage('distill', 'gnnctl', ['distill', '--base', fraud?.run_id, '--epochs', String(caps.distill_epochs), ...common], (j) => ({ run: j.run_id, test_auroc: j.metrics?.test?.auroc ?? null, teacher_test_auroc: j.metrics?.teacher?.test?.auroc ?? null, train_rows: j.counts?.train ?? null, figure: `test AUROC ${j.metrics?.test?.auroc ?? 'n/a'} (teacher ${j.metrics?.teacher?.test?.auroc ?? 'n/a'}), ${fmt(j.counts?.train)} training rows` }), [fraud]);
const exportFigure = (j) => ({ version: j.version, model_mb: Math.round((j.model_bytes / 2 ** 20) * 10) / 10, repository: j.repository, model: j.model, figure: `${Math.round((j.model_bytes / 2 ** 20) * 10) / 10} MiB model` });
const exported = stage('export', 'gnnctl', ['export', '--run', distilled?.run_id, '--embeddings', customers?.path, articles?.path, ...common], exportFigure, [distilled, customers, articles]);
if (!flag('skip-recommendations')) {
  const session = stage('distill session', 'gnnctl', ['recommender', 'distill', '--user-base', churn?.run_id, '--item-base', items?.run_id, '--epochs', String(caps.session_epochs), ...common], (j) => ({ run: j.run_id, test_map: j.metrics?.test?.map ?? null, figure: `test MAP@${j.metrics?.k ?? 12} ${j.metrics?.test?.map === undefined ? 'n/a' : Math.round(j.metrics.test.map * 1e4) / 1e4}` }), [churn, items]);
  stage('export session', 'gnnctl', ['recommender', 'export', '--run', session?.run_id, '--out', join(artifacts, 'session_repository'), ...common], (j) => ({ ...exportFigure(j), figure: j.model_bytes ? `${Math.round((j.model_bytes / 2 ** 20) * 10) / 10} MiB model` : '' }), [session]);
}
{
  const redis = customers ? await startRedis() : null;
  try {
    stage('publish customers', 'publish_file.mjs', ['--file', customers?.path, '--url', redis?.url], (j) => ({ keys: j.count, keys_per_s: j.keys_per_s, version: j.version, figure: `${fmt(j.count)} keys, ${fmt(j.keys_per_s)}/s` }), [customers, redis]);
  } finally {
    redis?.stop();
  }
}
stage('serve request', 'serve_request.mjs', ['--repository', exported?.repository, '--model', exported?.model], (j) => ({ status: j.status, request_ms: Math.round(j.ms * 10) / 10, figure: `HTTP ${j.status} in ${Math.round(j.ms)} ms (cold)` }), [exported]);
let meshInfo = null;
if (!flag('skip-anomaly') && (!only || only.has('anomaly fit') || only.has('anomaly score'))) {
  const meshConfig = await meshWithSpans();
  const anomalyCommon = ['--config', meshConfig, '--artifacts', join(artifacts, 'anomaly'), '--json'];
  const spans = `${mesh.services.toLocaleString('en-US')} services, spans ingested first`;
  const fit = stage('anomaly fit', 'gnnctl', ['anomaly', 'fit', ...(mesh.anomaly_epochs ? ['--epochs', String(mesh.anomaly_epochs)] : []), ...anomalyCommon], (j) => ({ run: j.run_id, train_snapshots: j.train_snapshots, figure: `${spans}; fitted on ${fmt(j.train_snapshots)} snapshots` }));
  stage('anomaly score', 'gnnctl', ['anomaly', 'score', '--run', fit?.run_id, ...anomalyCommon], (j) => ({ snapshots: j.snapshots, alerts: j.alerts, figure: `${spans}; ${fmt(j.snapshots)} snapshots scored, ${fmt(j.alerts)} alerting` }), [fit]);
}
finish();
process.exit(failed ? 1 : 0);

/** The synthetic mesh (generated once per shape into the cache) with its call rows turned into raw spans; returns its config. */
async function meshWithSpans() {
  const dir = join(CACHE, `mesh-${mesh.services}-${mesh.hours}h-${mesh.spans_per_call}`);
  const config = join(dir, 'spans.yaml');
  if (existsSync(config)) return config;
  const t = performance.now();
  rmSync(dir, { recursive: true, force: true });
  const g = spawnSync(process.execPath, [join(ROOT, 'bin', 'gnnctl.js'), 'datasets', 'synth-mesh', '--out', dir, '--services', String(mesh.services), '--hours', String(mesh.hours), '--json'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 26 });
  if (g.status !== 0) throw new Error(`datasets synth-mesh exited ${g.status}`);
  const made = JSON.parse(g.stdout.trim().split('\n').pop());
  const { withDuck, lit } = await import('../dist/data/duck.js');
  mkdirSync(join(dir, 'spans'), { recursive: true });
  // Each call row: k traces of a parent span in the caller and a child span in the callee, inside the
  // snapshot; the child lasts about the row's latency, the parent a little longer; errors at its rate.
  const k = mesh.spans_per_call;
  await withDuck(({ conn }) =>
    conn.run(
      `COPY (WITH c AS (SELECT row_number() OVER () AS row, epoch(ts::TIMESTAMP) AS t, source, destination, latency_ms, error_rate FROM read_csv_auto(${lit(join(dir, 'calls.csv'))})),
        r AS (SELECT c.*, i, hash(row, i) AS h FROM c, range(${k}) AS g(i)),
        s AS (SELECT format('{}-{}', row, i) AS trace_id, (t + (h % 280)) * 1e9 AS start_ns, latency_ms * (0.5 + (h % 1000) / 1000.0) * 1e6 AS child_ns, source, destination, (h % 100000) / 100000.0 < error_rate AS failed FROM r)
        SELECT trace_id, trace_id || '-p' AS span_id, NULL::VARCHAR AS parent_span_id, source AS service_name, start_ns::BIGINT AS start_time_unix_nano, (start_ns + child_ns * 1.2 + 2e5)::BIGINT AS end_time_unix_nano, 'STATUS_CODE_OK' AS status_code FROM s
        UNION ALL
        SELECT trace_id, trace_id || '-c', trace_id || '-p', destination, (start_ns + 1e5)::BIGINT, (start_ns + 1e5 + child_ns)::BIGINT, CASE WHEN failed THEN 'STATUS_CODE_ERROR' ELSE 'STATUS_CODE_OK' END FROM s)
       TO ${lit(join(dir, 'spans', 'spans.parquet'))} (FORMAT parquet, ROW_GROUP_SIZE 1000000)`,
    ),
  );
  const a = parse(readFileSync(join(dir, 'config.yaml'), 'utf8'));
  delete a.anomaly.calls;
  a.anomaly.spans = { path: join(dir, 'spans', '*.parquet') };
  a.anomaly.snapshot_seconds = made.step_seconds;
  for (const key of ['metrics', 'events', 'labels']) if (a.anomaly[key]?.path) a.anomaly[key].path = join(dir, a.anomaly[key].path);
  writeFileSync(config, stringify(a));
  meshInfo = { services: mesh.services, hours: mesh.hours, snapshots: made.snapshots, call_rows: made.rows.calls, spans: made.rows.calls * k * 2, seconds: Math.round((performance.now() - t) / 100) / 10 };
  return config;
}

/** A throwaway redis-server on a free loopback port, no persistence (as the online-store tests start one). */
async function startRedis() {
  const port = await new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const p = srv.address().port;
      srv.close(() => resolve(p));
    });
  });
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const ready = await new Promise((resolve) => {
    proc.on('error', () => resolve(false));
    proc.on('exit', () => resolve(false));
    proc.stdout.on('data', (d) => String(d).includes('Ready to accept') && resolve(true));
  });
  if (!ready) {
    console.error('scale: redis-server did not start (is it installed?); the publish stage is skipped');
    return null;
  }
  return { url: `redis://127.0.0.1:${port}`, stop: () => proc.kill('SIGTERM') };
}

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

function fmt(n) {
  return typeof n === 'number' ? n.toLocaleString('en-US') : String(n ?? 'n/a');
}

function finish() {
  rmSync(usageFile, { force: true });
  const withRss = stages.filter((s) => typeof s.peak_rss_mb === 'number');
  const high = withRss.reduce((a, s) => (a === null || s.peak_rss_mb > a.peak_rss_mb ? s : a), null);
  const ran = stages.filter((s) => typeof s.seconds === 'number');
  const out = {
    bench: 'scale',
    size,
    caps,
    mesh: { ...mesh, ...(meshInfo ?? {}) },
    duckdb_memory: duckdbMemory ?? 'default (40% of RAM)',
    machine: { cores: availableParallelism(), ram_gb: Math.round(totalmem() / 2 ** 30), load_avg_1m_at_start: Math.round(loadBefore * 100) / 100, load_avg_1m_at_end: Math.round(loadavg()[0] * 100) / 100 },
    synth,
    ...(resumedFrom ? { resumed_from: resumedFrom } : {}),
    ...(only ? { only: [...only] } : {}),
    stages,
    failed_stages: stages.filter((s) => s.error).map((s) => s.stage),
    skipped_stages: stages.filter((s) => s.skipped).map((s) => s.stage),
    total_seconds: Math.round(ran.reduce((a, s) => a + s.seconds, 0) * 10) / 10,
    total_cpu_seconds: Math.round(ran.reduce((a, s) => a + (s.cpu_seconds ?? 0), 0) * 10) / 10,
    high_water: high ? { stage: high.stage, peak_rss_mb: high.peak_rss_mb } : null,
    node: process.version,
  };
  // The docs/performance.md table: CPU over wall shows how much of the two cores a stage used.
  const rows = stages.map((s) => {
    const cores = s.cpu_seconds && s.seconds ? ` (${(s.cpu_seconds / s.seconds).toFixed(2)} cores)` : '';
    const figure = s.error ? `**failed**: ${String(s.error).split('\n')[0]}` : s.skipped ? `skipped: ${s.skipped}` : (s.figure ?? '');
    return `| ${s.stage} | ${s.seconds ?? ''} | ${s.cpu_seconds ?? ''}${cores} | ${s.peak_rss_mb === null || s.peak_rss_mb === undefined ? '' : fmt(s.peak_rss_mb)} | ${figure} |`;
  });
  console.log(['| stage | wall s | CPU s | peak RSS MB | figure |', '|---|---|---|---|---|', ...rows, `| **total** | ${out.total_seconds} | ${out.total_cpu_seconds} | ${high ? fmt(high.peak_rss_mb) : ''} (high-water) | |`].join('\n'));
  console.log(JSON.stringify(out));
}
