#!/usr/bin/env node
/**
 * `refresh --incremental` against a full refresh after one day of new rows, on a realism preset
 * (`retail-dates` by default: t_dat is a date, so "a day" is one date). Holds the data's last two days of
 * transactions back, trains a short fraud base run, distills it and refreshes in full (the "last full
 * refresh"), appends the first held-back day, then times an incremental and a full refresh of the same data
 * (each with its phases: embedding, export, drift) and compares their snapshots: entities recomputed and
 * kept, and how far the kept vectors are from the full refresh's. Then it appends the last day and scores
 * its transactions with each refreshed model version (onnxruntime, the exported model.onnx with that
 * snapshot baked in; the request tensors rebuilt from the rows as export's parity check does): the
 * distilled model's AUROC on rows that come after both snapshots, with each.
 *
 * The day's graph is built once, untimed, before either refresh (both would read the same cached build);
 * `graph_build_seconds` says what it took.
 *
 *   npm run build && node bench/refresh_incremental.mjs --size small|medium [--preset retail-dates|retail] [--steps 30] [--distill-epochs 2] [--train-window-days N]
 */
import { copyFileSync, cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { arg, CACHE, peakRssMb, ROOT } from './common.mjs';

const size = arg('size', 'small');
const preset = arg('preset', 'retail-dates');
const steps = Number(arg('steps', '30'));
const distillEpochs = Number(arg('distill-epochs', '2'));
// The student's training window (default: the preset config's): shorter makes the untimed distillation cheaper.
const trainWindowDays = arg('train-window-days', null);

const { SYNTH_PRESETS } = await import('../dist/datasets/presets.js');
const source = join(CACHE, `data-${preset}-${size}`);
if (!existsSync(join(source, 'transactions.csv'))) {
  execFileSync(process.execPath, [join(ROOT, 'bin', 'gnnctl.js'), 'datasets', 'synth', '--preset', preset, '--size', size, '--seed', '0', '--out', source, '--quiet']);
}
const data = join(CACHE, `refresh-incremental-${preset}-${size}`);
rmSync(data, { recursive: true, force: true });
cpSync(source, data, { recursive: true });

const { loadConfig } = await import('../dist/config/load.js');
const { train } = await import('../dist/train/trainer.js');
const { distill } = await import('../dist/distill/distill.js');
const { refresh } = await import('../dist/pipeline/refresh.js');
const { setQuiet } = await import('../dist/core/log.js');
const { buildGraph } = await import('../dist/graph/build.js');
const { runFit } = await import('../dist/graph/fit_until.js');
const { Graph } = await import('../dist/graph/graph.js');
const { readManifest, readModelJson, resolveRun } = await import('../dist/artifacts/run_store.js');
const { rawRequests, feeds } = await import('../dist/export/parity.js');
const { outputName } = await import('../dist/export/student_onnx.js');
const { auroc, averagePrecision } = await import('../dist/task/metrics.js');
const { DuckDBInstance } = await import('@duckdb/node-api');
const ort = await import('onnxruntime-node');
setQuiet(true);

// The last two days of transactions are held back: the first is the day a daily refresh sees, the
// second the rows scored with each refreshed model.
const txPath = join(data, 'transactions.csv');
const lines = readFileSync(txPath, 'utf8').trimEnd().split('\n');
const header = lines[0].split(',');
const tcol = header.indexOf('t_dat');
const time = (l) => {
  const t = l.split(',')[tcol];
  return Date.parse(t.length === 10 ? `${t}T00:00:00Z` : `${t.replace(' ', 'T')}Z`);
};
const end = lines.slice(1).reduce((m, l) => Math.max(m, time(l)), -Infinity);
const cut2 = end - (preset === 'retail-dates' ? 0 : 86400_000) - 1;
const cut1 = cut2 - 86400_000;
const before = lines.slice(1).filter((l) => time(l) <= cut1);
const day = lines.slice(1).filter((l) => time(l) > cut1 && time(l) <= cut2);
const evalDay = lines.slice(1).filter((l) => time(l) > cut2);
writeFileSync(txPath, `${[lines[0], ...before].join('\n')}\n`);

const presetConfig = readFileSync(join(ROOT, SYNTH_PRESETS[preset].config), 'utf8');
const folder = /path: (datasets\/[^/]+)\//.exec(presetConfig)[1];
const cfgPath = join(CACHE, `refresh-incremental-${preset}-${size}.yaml`);
writeFileSync(cfgPath, `${presetConfig.replaceAll(`${folder}/`, `${data}/`)}\nartifacts: ${join(CACHE, `artifacts-refresh-incremental-${preset}-${size}`)}\n`);
const config = () => {
  const cfg = loadConfig(cfgPath);
  cfg.taskSpecs.fraud.model = { ...cfg.taskSpecs.fraud.model, max_steps_per_epoch: steps };
  if (trainWindowDays && cfg.distillation) cfg.distillation.train_window = Number(trainWindowDays) * 86400;
  return cfg;
};
rmSync(config().artifactsDir, { recursive: true, force: true });
const base = (await train({ cfg: config(), task: 'fraud', epochs: 1, skip_baseline: true })).runId;
const distilled = (await distill({ cfg: config(), epochs: distillEpochs })).runId;
const timed = async (incremental) => {
  const t = performance.now();
  const r = await refresh({ cfg: config(), run: distilled, incremental });
  return { r, seconds: Math.round((performance.now() - t) / 10) / 100 };
};
const previous = await timed(false);

const runDir = resolveRun(config().artifactsDir, base, { kind: 'train' }).dir;
const buildDayGraph = async () => {
  const t = performance.now();
  const built = await buildGraph(config(), { fit: runFit(runDir, readManifest(runDir)) });
  return { dir: built.dir, seconds: Math.round((performance.now() - t) / 10) / 100 };
};
writeFileSync(txPath, `${[lines[0], ...before, ...day].join('\n')}\n`);
const graphBuild = await buildDayGraph();
const inc = await timed(true);
const incFiles = Object.fromEntries(inc.r.embeddings.map((e) => {
  const to = join(data, `incremental-${e.table}.parquet`);
  copyFileSync(e.path, to);
  return [e.table, to];
}));
const full = await timed(false);

// Per table: rows, how many vectors differ from the full refresh's, and by how much (cosine, max |Δ|).
const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();
const agreement = {};
for (const e of full.r.embeddings) {
  const key = (await (await conn.runAndReadAll(`SELECT column_name FROM (DESCRIBE SELECT * FROM read_parquet('${e.path}')) LIMIT 1`)).getRowObjects())[0].column_name;
  const rows = (await (await conn.runAndReadAll(`
    SELECT count(*) AS n,
           count(*) FILTER (WHERE i.embedding <> f.embedding) AS differ,
           avg(list_cosine_similarity(i.embedding, f.embedding)) AS mean_cosine,
           min(list_cosine_similarity(i.embedding, f.embedding)) AS min_cosine,
           max(list_max(list_transform(list_zip(i.embedding, f.embedding), x -> abs(x[1] - x[2])))) AS max_abs_diff
    FROM read_parquet('${incFiles[e.table]}') i JOIN read_parquet('${e.path}') f USING ("${key}")`)).getRowObjects())[0];
  agreement[e.table] = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : Math.round(Number(v) * 1e6) / 1e6]));
}

// The next day's transactions, scored by each refreshed version (its snapshot baked into model.onnx).
writeFileSync(txPath, `${[lines[0], ...before, ...day, ...evalDay].join('\n')}\n`);
const evalGraph = Graph.load((await buildDayGraph()).dir);
const distilledDir = resolveRun(config().artifactsDir, distilled, { kind: 'distill' }).dir;
const spec = readModelJson(distilledDir, 'student.json');
const f = evalGraph.table(spec.fact_table);
const nodes = Int32Array.from({ length: f.rows }, (_, i) => i).filter((v) => f.time[v] * 1000 > cut2);
const labels = Float32Array.from(nodes, (v) => f.numeric.find((c) => c.meta.name === 'fraud').values[v]);
// The model holds the embeddings; the TF.js side of rawRequests is not used here.
const noVectors = spec.embeddings.map(() => ({ dim: 0, vectorsFor: async (keys) => ({ values: new Float32Array(0), missing: new Float32Array(keys.length) }) }));
const { requests } = await rawRequests(evalGraph, spec, config().hopPaths, config().distillation?.real_time_offset ?? 0, nodes, noVectors);
const scoreVersion = async (dir) => {
  const session = await ort.InferenceSession.create(join(dir, 'model.onnx'));
  const scores = new Float32Array(nodes.length);
  for (let lo = 0; lo < nodes.length; lo += 256) {
    const hi = Math.min(nodes.length, lo + 256);
    const out = await session.run(feeds(spec, requests, lo, hi));
    scores.set(out[outputName(spec.output.kind)].data, lo);
  }
  await session.release();
  return { auroc: Math.round(auroc(labels, scores) * 1e4) / 1e4, ap: Math.round(averagePrecision(labels, scores) * 1e4) / 1e4 };
};
const scoreInc = await scoreVersion(inc.r.dir);
const scoreFull = await scoreVersion(full.r.dir);

const phases = (r) => r.phases ?? null;
console.log(JSON.stringify({
  bench: 'refresh --incremental vs full after one day of new rows',
  preset,
  size,
  measured: 'under load (shared 2-core machine)',
  new_rows: day.length,
  student_train_window_days: trainWindowDays === null ? 'config' : Number(trainWindowDays),
  base_run: base,
  distilled_run: distilled,
  student_embeddings: spec.embeddings.map((k) => k.target),
  graph_build_seconds: graphBuild.seconds,
  last_full_refresh_seconds: previous.seconds,
  full_refresh_seconds: full.seconds,
  incremental_refresh_seconds: inc.seconds,
  speedup: Math.round((full.seconds / inc.seconds) * 100) / 100,
  phases: { incremental: phases(inc.r), full: phases(full.r) },
  embedding_seconds: { incremental: inc.r.incremental.seconds, full_refresh_reported: inc.r.incremental.full_refresh_seconds, saved: inc.r.incremental.seconds_saved },
  recomputed: inc.r.incremental.recomputed,
  kept: inc.r.incremental.kept,
  tables: inc.r.incremental.tables.map((t) => ({ table: t.table, kind: t.kind, full_reason: t.full_reason, recomputed: t.recomputed, kept: t.kept, expired: t.expired, seconds: t.seconds })),
  agreement_with_full_refresh: agreement,
  next_day: { rows: nodes.length, positives: labels.reduce((a, b) => a + b, 0), incremental: scoreInc, full: scoreFull, auroc_diff: Math.round((scoreInc.auroc - scoreFull.auroc) * 1e4) / 1e4 },
  peak_rss_mb: peakRssMb(),
}));
