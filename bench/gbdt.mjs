/**
 * gnnctl's gradient-boosted trees against scikit-learn's HistGradientBoostingClassifier on the same
 * generated binary data (numeric features with interactions, 5% missing in some columns): training time
 * and test AUROC of both, as JSON. Same hyper-parameters on both sides (100 rounds, learning rate 0.1,
 * 31 leaves, 20 rows per leaf, 255 bins, no early stopping); scikit-learn uses both cores through OpenMP,
 * gnnctl through `threads: 2` (pass `--threads 1` to compare one thread). CPU seconds are printed beside
 * wall seconds: on a shared machine they are the fairer comparison.
 *
 *   npm run build && node bench/gbdt.mjs [--rows 1000000] [--features 200] [--threads 2] [--no-sklearn]
 *
 * Needs Debian's python3-sklearn for the comparison (/usr/bin/python3; benchmark only, never at runtime).
 * Targets (issue 33): AUROC within 0.005 of scikit-learn's, training time ≤ 2× its time, and ≤ 2 min at
 * 1M rows × 200 features on 2 cores.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { arg, flag, CACHE } from './common.mjs';
import { GbdtModel } from '../dist/model/gbdt/index.js';

const rows = Number(arg('rows', '1000000'));
const features = Number(arg('features', '200'));
const threads = Number(arg('threads', '2'));
const python = arg('python', '/usr/bin/python3');
const testRows = Math.floor(rows / 5);
const total = rows + testRows;

/** xorshift32 so the Python side can read exactly the same rows from the file. */
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

function generate() {
  const r = rng(12345);
  const cols = Array.from({ length: features }, () => new Float32Array(total));
  const y = new Float32Array(total);
  for (let i = 0; i < total; i++) {
    for (let f = 0; f < features; f++) cols[f][i] = r() * 2 - 1;
    // Ten informative features, two interactions and a threshold; the rest is noise.
    let z = 0;
    for (let f = 0; f < Math.min(10, features); f++) z += (f % 2 ? 1 : -1) * (0.5 + f / 10) * cols[f][i];
    if (features > 3) z += 2 * cols[0][i] * cols[1][i] + (cols[2][i] > 0.3 ? 1 : 0) - Math.abs(cols[3][i]);
    for (let f = 4; f < features; f += 10) if (r() < 0.05) cols[f][i] = NaN;
    y[i] = r() < 1 / (1 + Math.exp(-z)) ? 1 : 0;
  }
  return { cols, y };
}

function auroc(y, p) {
  const idx = Array.from(p.keys()).sort((a, b) => p[a] - p[b]);
  let sumPos = 0;
  let pos = 0;
  // Average ranks over ties.
  for (let k = 0; k < idx.length; ) {
    let j = k;
    while (j + 1 < idx.length && p[idx[j + 1]] === p[idx[k]]) j++;
    const rank = (k + j + 2) / 2;
    for (let t = k; t <= j; t++) if (y[idx[t]] === 1) {
      pos++;
      sumPos += rank;
    }
    k = j + 1;
  }
  const neg = y.length - pos;
  return (sumPos - (pos * (pos + 1)) / 2) / (pos * neg);
}

const { cols, y } = generate();
const slice = (a, s, e) => a.subarray(s, e);
const train = { rows, columns: cols.map((c) => slice(c, 0, rows)) };
const test = { rows: testRows, columns: cols.map((c) => slice(c, rows, total)) };
const params = { max_iter: 100, learning_rate: 0.1, max_leaf_nodes: 31, min_samples_leaf: 20, max_bins: 255, threads };

// CPU time beside wall time: on a shared machine the wall time mostly measures the other processes.
const c0 = process.cpuUsage();
const t0 = performance.now();
const model = GbdtModel.fit({ train, y: slice(y, 0, rows) }, params);
const gnnctlSeconds = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(c0);
const gnnctlCpu = (cpu.user + cpu.system) / 1e6;
const gnnctlAuroc = auroc(slice(y, rows, total), model.predict(test));

let sklearn = null;
if (!flag('no-sklearn')) {
  const dir = join(CACHE, 'gbdt');
  mkdirSync(dir, { recursive: true });
  const xFile = join(dir, `x-${total}x${features}.f32`);
  const yFile = join(dir, `y-${total}.f32`);
  if (!existsSync(xFile)) {
    // Row-major float32, what numpy.fromfile(...).reshape(total, features) reads.
    const x = new Float32Array(total * features);
    for (let f = 0; f < features; f++) for (let i = 0; i < total; i++) x[i * features + f] = cols[f][i];
    writeFileSync(xFile, x);
  }
  writeFileSync(yFile, y);
  const script = `
import json, time, numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import roc_auc_score
x = np.fromfile(${JSON.stringify(xFile)}, dtype=np.float32).reshape(${total}, ${features})
y = np.fromfile(${JSON.stringify(yFile)}, dtype=np.float32)
m = HistGradientBoostingClassifier(max_iter=100, learning_rate=0.1, max_leaf_nodes=31, min_samples_leaf=20, max_bins=255, early_stopping=False, random_state=0)
t = time.perf_counter(); c = time.process_time(); m.fit(x[:${rows}], y[:${rows}]); s = time.perf_counter() - t; cs = time.process_time() - c
print(json.dumps({"seconds": s, "cpu_seconds": cs, "auroc": roc_auc_score(y[${rows}:], m.predict_proba(x[${rows}:])[:, 1])}))
`;
  const r = spawnSync(python, ['-c', script], { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (r.status === 0) sklearn = JSON.parse(r.stdout.trim().split('\n').pop());
  else sklearn = { error: (r.stderr || r.error?.message || '').trim().split('\n').slice(-1)[0] };
}

const out = {
  rows,
  test_rows: testRows,
  features,
  gnnctl: { seconds: +gnnctlSeconds.toFixed(2), cpu_seconds: +gnnctlCpu.toFixed(2), auroc: +gnnctlAuroc.toFixed(5), threads: model.history.threads, trees: model.trees.length },
  sklearn: sklearn && !sklearn.error ? { seconds: +sklearn.seconds.toFixed(2), cpu_seconds: +sklearn.cpu_seconds.toFixed(2), auroc: +sklearn.auroc.toFixed(5) } : sklearn,
};
if (sklearn && !sklearn.error) {
  out.auroc_delta = +(gnnctlAuroc - sklearn.auroc).toFixed(5);
  out.time_ratio = +(gnnctlSeconds / sklearn.seconds).toFixed(2);
  out.cpu_time_ratio = +(gnnctlCpu / sklearn.cpu_seconds).toFixed(2);
}
out.load_average = (await import('node:os')).loadavg().map((v) => +v.toFixed(1));
console.log(JSON.stringify(out, null, 2));
