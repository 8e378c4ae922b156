#!/usr/bin/env node
/**
 * A 20M-entity embedding table through `gnnctl export` (issue 16, item 6): a real distilled run on the
 * tiny synthetic data (trained briefly, cached), its customers snapshot extended to `--rows` entities
 * (the 500 real rows first, then synthetic keys of the same 64-byte shape and random vectors; cached),
 * then:
 *   1. `gnnctl export --quantize <q> --json` in a child process (peak RSS through bench/gnnctl_rss.mjs);
 *   2. onnxruntime-node loads the version's model.onnx (+ model.onnx.data) by path: load seconds, RSS;
 *   3. requests for a real key, a synthetic key (row rows − 1) and an unknown key, the first timed; the
 *      real and unknown keys must score exactly as a small in-memory export of the 500 real rows
 *      (LabelEncoder path) scores them, and the synthetic key must not score as unknown;
 *   4. with --serve, `gnnctl serve` loads the repository and answers the same real-key request.
 * One JSON object. The version folder is deleted afterwards unless --keep.
 *
 *   npm run build && node bench/export_large.mjs --quantize none [--rows 20000000] [--serve] [--keep]
 */
import * as arrow from 'apache-arrow';
import * as ort from 'onnxruntime-node';
import * as pq from 'parquet-wasm/node';
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, readdirSync, mkdirSync, openAsBlob, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { arg, benchConfig, CACHE, dataset, flag, peakRssMb, ROOT } from './common.mjs';

const ROWS = Number(arg('rows', '20000000'));
const QUANTIZE = arg('quantize', 'none');
const ROW_GROUP = 65536;
const { loadConfig } = await import('../dist/config/load.js');
const { train } = await import('../dist/train/trainer.js');
const { distill } = await import('../dist/distill/distill.js');
const { embed } = await import('../dist/embed/embed.js');
const { rawRequests, feeds } = await import('../dist/export/parity.js');
const { requestInputs } = await import('../dist/export/student_onnx.js');
const { readModelJson } = await import('../dist/artifacts/run_store.js');
const { buildGraph } = await import('../dist/graph/build.js');
const { Graph } = await import('../dist/graph/graph.js');
const { setQuiet } = await import('../dist/core/log.js');
setQuiet(true);

const dir = join(CACHE, 'export-large');
mkdirSync(dir, { recursive: true });
const data = await dataset('tiny');
const cfgPath = benchConfig('tiny', data);
const cfg = loadConfig(cfgPath);

// 1. A real distilled run (cached: what is measured is the export, not training).
const runsFile = join(dir, 'runs.json');
let runs = existsSync(runsFile) ? JSON.parse(readFileSync(runsFile, 'utf8')) : null;
if (!runs || !existsSync(join(cfg.artifactsDir, 'runs', runs.distilled))) {
  cfg.taskSpecs.fraud.model = { ...cfg.taskSpecs.fraud.model, max_steps_per_epoch: 50 };
  const base = (await train({ cfg, task: 'fraud', epochs: 1, skip_baseline: true })).runId;
  const distilled = (await distill({ cfg, base, epochs: 1 })).runId;
  const files = {};
  for (const table of ['customers', 'articles']) files[table] = (await embed({ cfg, run: base, table, out: join(dir, `embeddings.${table}.parquet`) })).path;
  runs = { base, distilled, files };
  writeFileSync(runsFile, JSON.stringify(runs));
}
const spec = readModelJson(join(cfg.artifactsDir, 'runs', runs.distilled), 'student.json');
const dim = spec.embeddings.find((k) => k.target === 'customers').dim;

// 2. The customers snapshot at ROWS entities, as part files of PART_ROWS rows (cached per row count).
// Parts, as `gnnctl embed --shard` writes them: parquet-wasm's writer wraps its footer offsets past 4 GiB
// (row group 196 of a one-file 20M × 64 snapshot points back to byte 21 MB), so no single file may be larger.
const PART_ROWS = 4_000_000;
const bigFile = join(dir, `embeddings.customers.${ROWS}`);
let generateSeconds = null;
if (!existsSync(bigFile)) {
  const t = performance.now();
  const tmp = `${bigFile}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp);
  for (let p = 0; p * PART_ROWS < ROWS; p++) {
    await extendSnapshot(runs.files.customers, join(tmp, `part-${String(p).padStart(5, '0')}.parquet`), p * PART_ROWS, Math.min(ROWS, (p + 1) * PART_ROWS), `${p}/${Math.ceil(ROWS / PART_ROWS)}`);
  }
  renameSync(tmp, bigFile);
  generateSeconds = round((performance.now() - t) / 1000);
}

// 3. The export, in its own process.
const repo = join(dir, 'repo');
const name = `large-${QUANTIZE}-${ROWS}`;
rmSync(join(repo, name), { recursive: true, force: true });
const rssFile = join(tmpdir(), `gnnctl-export-large-${process.pid}.rss`);
const t0 = performance.now();
const ex = spawnSync(process.execPath, [join(ROOT, 'bench', 'gnnctl_rss.mjs'), 'export', '-c', cfgPath, '--run', runs.distilled, '--embeddings', bigFile, runs.files.articles, '--out', repo, '--name', name, '--quantize', QUANTIZE, '--json', '-q'], {
  encoding: 'utf8',
  env: { ...process.env, GNNCTL_BENCH_RSS_FILE: rssFile },
  maxBuffer: 1 << 26,
});
const exportSeconds = (performance.now() - t0) / 1000;
if (ex.status !== 0) throw new Error(`gnnctl export failed (${ex.status}): ${ex.stderr.slice(-3000)}`);
const result = JSON.parse(ex.stdout);
const exportRssMb = Math.round(Number(readFileSync(rssFile, 'utf8')) / 1024);
rmSync(rssFile, { force: true });
const modelPath = join(result.dir, 'model.onnx');

// 4. A small reference export of the real rows only (in memory, LabelEncoder): the same scores for real and unknown keys.
const refRepo = join(dir, 'ref-repo');
rmSync(refRepo, { recursive: true, force: true });
const ref = spawnSync(process.execPath, [join(ROOT, 'bin', 'gnnctl.js'), 'export', '-c', cfgPath, '--run', runs.distilled, '--embeddings', runs.files.customers, runs.files.articles, '--out', refRepo, '--name', 'ref', '--quantize', QUANTIZE, '--external-data', 'never', '--json', '-q'], { encoding: 'utf8' });
if (ref.status !== 0) throw new Error(`reference export failed: ${ref.stderr.slice(-2000)}`);
const refModel = join(JSON.parse(ref.stdout).dir, 'model.onnx');

// Requests: the newest fact row, with its customer key replaced.
const graph = Graph.load((await buildGraph(cfg)).dir);
const f = graph.table(spec.fact_table);
const zeros = { dim, vectorsFor: async (keys) => ({ values: new Float32Array(keys.length * dim), missing: new Float32Array(keys.length) }) };
const { requests } = await rawRequests(graph, spec, cfg.hopPaths, cfg.distillation.real_time_offset, Int32Array.of(f.rows - 1), spec.embeddings.map(() => zeros));
const keyInput = `${spec.fact_table}.${spec.embeddings.find((k) => k.target === 'customers').column}`;
const realKey = requests.values.get(keyInput)[0];
const keys = { real: realKey, synthetic: syntheticKey(ROWS - 1), unknown: 'no-such-customer' };
const feed = (key) => {
  requests.values.set(keyInput, [key]);
  return feeds(spec, requests, 0, 1);
};
const output = spec.output.kind === 'regression' ? 'prediction' : 'probability';

const rssBefore = process.memoryUsage().rss;
const tl = performance.now();
const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1 });
const loadSeconds = (performance.now() - tl) / 1000;
const rssLoaded = process.memoryUsage().rss;
const scores = {};
let firstRequestMs;
try {
  for (const [k, key] of Object.entries(keys)) {
    const t = performance.now();
    const r = await session.run(feed(key));
    if (firstRequestMs === undefined) firstRequestMs = performance.now() - t;
    scores[k] = r[output].data[0];
  }
} finally {
  await session.release();
}
const refSession = await ort.InferenceSession.create(refModel, { intraOpNumThreads: 1 });
const refScores = {};
try {
  for (const k of ['real', 'unknown']) refScores[k] = (await refSession.run(feed(keys[k])))[output].data[0];
} finally {
  await refSession.release();
}
const checks = {
  real_key_equals_small_export: scores.real === refScores.real,
  unknown_key_equals_small_export: scores.unknown === refScores.unknown,
  synthetic_key_not_fallback: scores.synthetic !== scores.unknown,
};

// 5. gnnctl serve loads the repository and answers the real-key request.
let serve = null;
if (flag('serve')) serve = await serveCheck(repo, name, realKey);

const out = {
  bench: 'export_large',
  machine: { cpus: availableParallelism(), load_average_1m_at_start: Math.round(loadavg()[0] * 10) / 10 },
  rows: ROWS,
  dim,
  quantize: QUANTIZE,
  snapshot_bytes: readdirSync(bigFile).reduce((n, f) => n + statSync(join(bigFile, f)).size, 0),
  fp32_table_bytes: (ROWS + 1) * dim * 4,
  generate_seconds: generateSeconds,
  export_seconds: round(exportSeconds),
  export_reported_seconds: result.seconds,
  export_peak_rss_mb: exportRssMb,
  model_onnx_bytes: result.files.model_onnx_bytes,
  model_onnx_data_bytes: result.files.external_data_bytes,
  external_tensors: result.files.external_tensors,
  parity: result.parity && { max_abs_diff: result.parity.max_abs_diff, examples: result.parity.examples },
  quantization: result.quantization && { size_ratio: result.quantization.size_ratio, auroc_delta: result.quantization.delta, max_abs_diff: result.quantization.max_abs_diff },
  load_seconds: round(loadSeconds),
  load_rss_delta_mb: Math.round((rssLoaded - rssBefore) / 2 ** 20),
  first_request_ms: round(firstRequestMs, 3),
  scores,
  reference_scores: refScores,
  checks,
  serve,
  bench_peak_rss_mb: peakRssMb(),
};
if (!flag('keep')) rmSync(join(repo, name), { recursive: true, force: true });
rmSync(refRepo, { recursive: true, force: true });
console.log(JSON.stringify(out));
if (!Object.values(checks).every(Boolean) || (serve && !serve.ok)) process.exitCode = 1;

/**
 * The real snapshot's rows, then synthetic ones up to `rows`, with the real file's metadata, one row group
 * per 65,536 rows as `gnnctl embed` writes them. Built straight from bytes (keys) and one reused block
 * of random vectors, and written uncompressed (random floats do not compress): on a shared 2-core
 * machine the snapshot, not the export, would otherwise take most of the bench's time.
 */
async function extendSnapshot(src, dst, from, to, shard) {
  const pf = await pq.ParquetFile.fromFile(await openAsBlob(src));
  const meta = { ...Object.fromEntries([...pf.metadata().fileMetadata().keyValueMetadata()].filter(([k]) => k !== 'ARROW:schema')), shard };
  const real = arrow.tableFromIPC((await pf.read({ columns: [meta.key, 'embedding'] })).intoIPCStream());
  pf.free();
  const realKeys = Array.from(real.getChild(meta.key), String);
  let seed = 12345;
  const rand = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const block = Float32Array.from({ length: ROW_GROUP * dim }, () => (rand() - 0.5) * 0.4);
  const first = block.slice();
  let o = 0;
  for (const v of real.getChild('embedding')) {
    first.set(v.toArray(), o);
    o += dim;
  }
  const enc = new TextEncoder();
  const anchorMicros = BigInt(Date.parse(meta.anchor_time)) * 1000n;
  const embType = new arrow.FixedSizeList(dim, new arrow.Field('item', new arrow.Float32(), false));
  async function* batches() {
    for (let r = from; r < to; r += ROW_GROUP) {
      const n = Math.min(ROW_GROUP, to - r);
      const offsets = new Int32Array(n + 1);
      const bytes = new Uint8Array(n * 64).fill(0x30);
      let end = 0;
      for (let i = 0; i < n; i++) {
        const row = r + i;
        if (row < realKeys.length) {
          const k = enc.encode(realKeys[row]);
          bytes.set(k, end);
          end += k.length;
        } else {
          bytes[end] = 0x73; // 's'
          const hex = row.toString(16);
          for (let j = 0; j < hex.length; j++) bytes[end + 64 - hex.length + j] = hex.charCodeAt(j);
          end += 64;
        }
        offsets[i + 1] = end;
      }
      const keys = arrow.makeData({ type: new arrow.Utf8(), length: n, valueOffsets: offsets, data: bytes.subarray(0, end) });
      const values = (r === 0 ? first : block).subarray(0, n * dim);
      const emb = arrow.makeData({ type: embType, length: n, nullCount: 0, child: arrow.makeData({ type: new arrow.Float32(), length: n * dim, data: values }) });
      const at = arrow.makeData({ type: new arrow.TimestampMicrosecond(), length: n, data: new BigInt64Array(n).fill(anchorMicros) });
      const table = new arrow.Table({ [meta.key]: arrow.makeVector(keys), embedding: arrow.makeVector(emb), anchor_time: arrow.makeVector(at) });
      for (const rb of pq.Table.fromIPCStream(arrow.tableToIPC(table, 'stream')).recordBatches()) yield rb;
    }
  }
  const props = new pq.WriterPropertiesBuilder()
    .setCompression(pq.Compression.UNCOMPRESSED)
    .setDictionaryEnabled(false)
    .setMaxRowGroupSize(ROW_GROUP)
    .setKeyValueMetadata(new Map(Object.entries(meta)))
    .build();
  const tmp = `${dst}.tmp`;
  const stream = await pq.transformParquetStream(ReadableStream.from(batches()), props);
  await pipeline(Readable.fromWeb(stream), createWriteStream(tmp));
  renameSync(tmp, dst);
}

function syntheticKey(i) {
  return `s${i.toString(16).padStart(63, '0')}`;
}

async function serveCheck(repoDir, model, key) {
  const port = 18000 + (process.pid % 1000);
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'gnnctl.js'), 'serve', '--model-repository', repoDir, '--port', String(port), '-q'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const t = performance.now();
  try {
    for (;;) {
      if (child.exitCode !== null) return { ok: false, error: stderr.slice(-2000) };
      try {
        const r = await fetch(`http://127.0.0.1:${port}/v2/models/${model}/ready`);
        if (r.ok) break;
      } catch {
        // not listening yet
      }
      await new Promise((res) => setTimeout(res, 250));
    }
    const readySeconds = (performance.now() - t) / 1000;
    // The request as a KServe V2 JSON body, typed from the model's declared inputs.
    const types = { FLOAT: 'FP32', INT64: 'INT64', STRING: 'BYTES' };
    const body = {
      inputs: requestInputs(spec).map((i) => {
        const v = i.name === keyInput ? [key] : Array.from(requests.values.get(i.name));
        return { name: i.name, datatype: types[i.elemType], shape: i.sequence ? [1, v.length, 1] : [1, 1], data: v };
      }),
    };
    const tr = performance.now();
    const r = await fetch(`http://127.0.0.1:${port}/v2/models/${model}/infer`, { method: 'POST', body: exactJson(body), headers: { 'content-type': 'application/json' } });
    const json = await r.json();
    return { ok: r.ok, ready_seconds: round(readySeconds), first_request_ms: round(performance.now() - tr, 1), response: r.ok ? json.outputs?.[0]?.data : json };
  } finally {
    child.kill('SIGTERM');
  }
}

/** JSON with INT64 values written exactly (JSON.stringify cannot take a bigint; Number loses INT64 min). */
function exactJson(v) {
  return JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? `__int64__${x}` : x)).replace(/"__int64__(-?\d+)"/g, '$1');
}

function round(x, d = 2) {
  return Math.round(x * 10 ** d) / 10 ** d;
}
