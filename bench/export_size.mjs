#!/usr/bin/env node
/**
 * Compact exports (issue 16, item 6): one distilled model exported four ways at each size —
 * FLOAT32 inside model.onnx, FLOAT32 as external data (model.onnx.data), INT8 inside, INT8 external — with
 * the files' sizes, the entity tables' bytes, the INT8 report (max |Δ score| and AUROC change against
 * FLOAT32 on the test rows), onnxruntime's session load time and its batch-1 latency (one intra-op
 * thread, 1,000 requests of the newest rows after 50 warm-up ones; p50/p99 are the median of 3 passes).
 * One JSON object.
 *
 *   npm run build && node bench/export_size.mjs [--sizes small,medium]
 *
 * The deep and distilled runs are trained briefly (not timed): size and latency depend on the tables'
 * shapes, not on how well the model was trained.
 */
import * as ort from 'onnxruntime-node';
import { statSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { arg, benchConfig, dataset, peakRssMb } from './common.mjs';

const sizes = arg('sizes', 'small,medium').split(',');
const { loadConfig } = await import('../dist/config/load.js');
const { train } = await import('../dist/train/trainer.js');
const { distill } = await import('../dist/distill/distill.js');
const { embed } = await import('../dist/embed/embed.js');
const { exportModel } = await import('../dist/export/export.js');
const { rawRequests, feeds } = await import('../dist/export/parity.js');
const { readModelJson } = await import('../dist/artifacts/run_store.js');
const { buildGraph } = await import('../dist/graph/build.js');
const { Graph } = await import('../dist/graph/graph.js');
const { setQuiet } = await import('../dist/core/log.js');
setQuiet(true);

const VARIANTS = [
  { name: 'fp32', quantize: 'none', externalData: 'never' },
  { name: 'fp32_external', quantize: 'none', externalData: 'always' },
  { name: 'int8', quantize: 'int8', externalData: 'never' },
  { name: 'int8_external', quantize: 'int8', externalData: 'always' },
];
const PASSES = 3;
const WARMUP = 50;
const RUNS = 1000;

const out = { bench: 'export_size', machine: { cpus: availableParallelism(), load_average_1m_at_start: Math.round(loadavg()[0] * 10) / 10 }, sizes: {} };
for (const size of sizes) {
  const data = await dataset(size);
  const cfg = loadConfig(benchConfig(size, data));
  cfg.taskSpecs.fraud.model = { ...cfg.taskSpecs.fraud.model, max_steps_per_epoch: 50 };
  const base = (await train({ cfg, task: 'fraud', epochs: 1, skip_baseline: true })).runId;
  const WEEK = 7 * 86400;
  cfg.distillation = { ...cfg.distillation, train_window: WEEK, embedding_cadence: WEEK, max_train_examples: 20_000 };
  const distilled = await distill({ cfg, base, epochs: 1 });
  const files = [];
  for (const table of ['customers', 'articles']) files.push((await embed({ cfg, run: base, table, out: join(cfg.artifactsDir, `bench-export-size-${table}.parquet`) })).path);

  const repo = join(cfg.artifactsDir, `bench-export-size-${Date.now()}`);
  const spec = readModelJson(distilled.runDir, 'student.json');
  const graph = Graph.load((await buildGraph(cfg)).dir);
  const results = {};
  let requests;
  for (const v of VARIANTS) {
    const t = performance.now();
    const r = await exportModel({ cfg, run: distilled.runId, embeddings: files, out: repo, name: v.name, quantize: v.quantize, externalData: v.externalData, parityExamples: 256 });
    const seconds = (performance.now() - t) / 1000;
    if (!requests) {
      const tables = await entityTables(r.dir, spec, graph);
      const f = graph.table(spec.fact_table);
      const nodes = Int32Array.from({ length: Math.min(RUNS, f.rows) }, (_, i) => f.rows - Math.min(RUNS, f.rows) + i);
      requests = (await rawRequests(graph, spec, cfg.hopPaths, cfg.distillation.real_time_offset, nodes, tables)).requests;
    }
    const lat = await latency(join(r.dir, 'model.onnx'), spec, requests);
    results[v.name] = {
      export_seconds: round(seconds),
      model_onnx_mib: mib(statSync(join(r.dir, 'model.onnx')).size),
      model_onnx_data_mib: mib(r.files.external_data_bytes),
      external_tensors: r.files.external_tensors,
      quantization: r.quantization,
      parity_max_abs_diff: r.parity?.max_abs_diff ?? null,
      ...lat,
    };
  }
  const fp = results.fp32;
  const q = results.int8;
  out.sizes[size] = {
    embedding_rows: (await exportRows(repo)) ?? null,
    variants: results,
    int8_table_size_ratio: q.quantization?.size_ratio ?? null,
    int8_total_size_ratio: round((fp.model_onnx_mib + fp.model_onnx_data_mib) / (q.model_onnx_mib + q.model_onnx_data_mib)),
    int8_auroc_delta: q.quantization?.delta ?? null,
    int8_max_abs_diff: q.quantization?.max_abs_diff ?? null,
    runs: { base, distilled: distilled.runId },
  };
}
out.peak_rss_mb = peakRssMb();
console.log(JSON.stringify(out));

async function exportRows(repo) {
  const { readFileSync } = await import('node:fs');
  const m = JSON.parse(readFileSync(join(repo, 'fp32', '1', 'manifest.json'), 'utf8'));
  return Object.fromEntries(m.embeddings.map((e) => [e.table, e.rows]));
}

/** The exported embedding snapshots as export reads them (keys in file order, vectors row-major). */
async function entityTables(dir, spec, graph) {
  const arrow = await import('apache-arrow');
  const pq = await import('parquet-wasm/node');
  const { readFileSync } = await import('node:fs');
  return spec.embeddings.map((k) => {
    const key = graph.manifest.schema.tables[k.target].primary_key.column;
    const t = arrow.tableFromIPC(pq.readParquet(new Uint8Array(readFileSync(join(dir, `embeddings.${k.target}.parquet`))), { columns: [key, 'embedding'] }).intoIPCStream());
    const integer = /INT/.test(k.type);
    const keys = Array.from(t.getChild(key), (x) => (integer ? BigInt(x) : String(x)));
    const vectors = new Float32Array(keys.length * k.dim);
    let i = 0;
    for (const v of t.getChild('embedding')) vectors.set(v.toArray(), k.dim * i++);
    return { keys, vectors, dim: k.dim };
  });
}

/** Session load time and batch-1 latency; p50/p99 the median of PASSES passes. */
async function latency(modelPath, spec, req) {
  const loads = [];
  const p50 = [];
  const p99 = [];
  const output = spec.output.kind === 'regression' ? 'prediction' : 'probability';
  for (let pass = 0; pass < PASSES; pass++) {
    const t0 = performance.now();
    const s = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1 });
    loads.push(performance.now() - t0);
    try {
      const times = [];
      for (let i = 0; i < WARMUP + RUNS; i++) {
        const k = i % req.n;
        const feed = feeds(spec, req, k, k + 1);
        const t = performance.now();
        const r = await s.run(feed);
        if (i >= WARMUP) times.push(performance.now() - t);
        if (!Number.isFinite(r[output].data[0])) throw new Error(`non-finite score from ${modelPath}`);
      }
      times.sort((a, b) => a - b);
      p50.push(times[Math.floor(0.5 * times.length)]);
      p99.push(times[Math.floor(0.99 * times.length)]);
    } finally {
      await s.release();
    }
  }
  return { session_load_ms: round(median(loads), 1), latency_ms: { p50: round(median(p50), 3), p99: round(median(p99), 3), runs: RUNS, passes: PASSES } };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}
function round(x, d = 2) {
  return Math.round(x * 10 ** d) / 10 ** d;
}
function mib(b) {
  return round(b / 2 ** 20, 2);
}
