/**
 * The no-graph baseline's model: an MLP on the entity's own columns (numeric, and categorical one-hot up
 * to ONE_HOT_MAX values) plus the DuckDB aggregates of `baseline.ts`, fitted on the same examples as the
 * deep model, so the lift is measured against a tuned tabular model.
 */
import type { TrainingTables } from './examples.js';
import type { TableFeatures } from '../model/features.js';
import { fitMlp, standardizeColumns } from '../model/mlp.js';
import type { Metrics } from '../task/metrics.js';
import { objectiveFor, type ObjectiveKind } from '../task/objective/objective.js';
import type { Examples } from '../task/task_spec.js';
import { Rng } from '../core/rng.js';

/** The objective's metrics of predictions against labels. */
export function evaluate(kind: ObjectiveKind, labels: Float32Array, preds: Float32Array): Metrics {
  return objectiveFor(kind).metrics(labels, preds);
}

/**
 * Rows of the training split the baseline fits on: all of them up to `max`, else a seeded uniform sample
 * of `max` (ascending). Fitting on every row is the largest single-threaded part of a large run
 * (docs/scale.md); the sample bounds it. It is not free: at 250k of medium fraud's 1.86M rows the
 * baseline's test AUROC falls 0.0145 (its validation curve still rising: fewer optimizer steps, not too
 * few rows), hence a default of 1M, reported in metrics.json
 * (`baseline.train_rows`) and the report. Validation and test are always scored in full, so the lift
 * compares the same examples.
 */
export function baselineRows(n: number, max: number, seed: number): Int32Array | null {
  if (n <= max) return null;
  const idx = Int32Array.from({ length: n }, (_, i) => i);
  const rng = new Rng((seed ^ 0x5bd1e995) >>> 0);
  // Partial Fisher-Yates: the first `max` slots are a uniform sample without replacement.
  for (let i = 0; i < max; i++) {
    const j = i + rng.int(n - i);
    const t = idx[i]!;
    idx[i] = idx[j]!;
    idx[j] = t;
  }
  return idx.subarray(0, max).sort();
}

/**
 * What the baseline fits on: the training examples (a seeded sample above `maxTrainRows`), validation
 * and test in full, with their DuckDB aggregates row-aligned. Small enough to post to a worker thread.
 */
export interface BaselineInputs {
  train: Examples;
  val: Examples;
  test: Examples;
  /** aggregate names and, per split, [rows × names.length] */
  names: string[];
  trainAgg: Float32Array;
  valAgg: Float32Array;
  testAgg: Float32Array;
}

export function baselineInputs(tables: TrainingTables, maxTrainRows: number, seed: number): BaselineInputs {
  const sql = tables.baseline!;
  const rows = baselineRows(tables.train.nodes.length, maxTrainRows, seed);
  if (!rows) return { train: tables.train, val: tables.val, test: tables.test, names: sql.names, trainAgg: sql.train, valAgg: sql.val, testAgg: sql.test };
  const k = sql.names.length;
  const trainAgg = new Float32Array(rows.length * k);
  for (let i = 0; i < rows.length; i++) trainAgg.set(sql.train.subarray(rows[i]! * k, (rows[i]! + 1) * k), i * k);
  const ex = tables.train;
  return {
    train: { nodes: pick(ex.nodes, rows), anchors: pick(ex.anchors, rows), labels: pick(ex.labels, rows) },
    val: tables.val,
    test: tables.test,
    names: sql.names,
    trainAgg,
    valAgg: sql.val,
    testAgg: sql.test,
  };
}

export interface BaselineResult {
  val: Metrics;
  test: Metrics;
  testPred: Float32Array;
  features: string[];
  /** training examples it was fitted on */
  train_rows: number;
  /** seconds the fit took (where it ran: a worker thread or this one) */
  seconds: number;
}

/** The no-graph baseline on the same examples: own features (numeric encoding + small categoricals one-hot) + DuckDB aggregates. */
export function fitBaseline(
  own: TableFeatures,
  x: BaselineInputs,
  kind: ObjectiveKind,
  seed: number,
  onProgress?: (rowsSeen: number, rowsMax: number, note: string) => void,
): BaselineResult {
  const t0 = performance.now();
  const k = x.names.length;
  const build = (ex: Examples, agg: Float32Array) => {
    const o = ownMatrix(own, ex);
    const d = o.d + k;
    const n = ex.nodes.length;
    const X = new Float32Array(n * d);
    for (let i = 0; i < n; i++) {
      X.set(o.X.subarray(i * o.d, (i + 1) * o.d), i * d);
      X.set(agg.subarray(i * k, (i + 1) * k), i * d + o.d);
    }
    return { X, d };
  };
  const tr = build(x.train, x.trainAgg);
  const va = build(x.val, x.valAgg);
  const te = build(x.test, x.testAgg);
  standardizeColumns(tr.X, tr.d, [va.X, te.X]);
  const r = fitMlp(tr.d, { X: tr.X, y: x.train.labels }, { X: va.X, y: x.val.labels }, [va.X, te.X], { kind, seed, onProgress });
  const [valPred, testPred] = r.predictions as [Float32Array, Float32Array];
  return {
    val: evaluate(kind, x.val.labels, valPred),
    test: evaluate(kind, x.test.labels, testPred),
    testPred,
    features: [...ownFeatureNames(own), ...x.names],
    train_rows: x.train.nodes.length,
    seconds: (performance.now() - t0) / 1000,
  };
}

function pick<T extends Int32Array | Float64Array | Float32Array>(a: T, rows: Int32Array): T {
  const C = a.constructor as { new (n: number): T };
  const out = new C(rows.length);
  for (let i = 0; i < rows.length; i++) out[i] = a[rows[i]!]!;
  return out;
}

const ONE_HOT_MAX = 50;

function ownMatrix(f: TableFeatures, ex: Examples): { X: Float32Array; d: number } {
  const n = ex.nodes.length;
  const num = new Float32Array(n * f.num_dim);
  const cat = new Int32Array(n * f.catCount);
  f.gather(ex.nodes, (i) => ex.anchors[i]!, null, num, cat);
  const small = f.spec.categorical.map((c, i) => ({ i, size: c.vocab.length + 2 })).filter((c) => c.size <= ONE_HOT_MAX);
  const oneHot = small.reduce((a, c) => a + c.size, 0);
  // The deep model's activity inputs are left out: the baseline has its own DuckDB aggregates.
  const own = f.num_dim - f.activityDim;
  const d = own + oneHot;
  const X = new Float32Array(n * d);
  for (let r = 0; r < n; r++) {
    X.set(num.subarray(r * f.num_dim, r * f.num_dim + own), r * d);
    let o = r * d + own;
    for (const c of small) {
      const code = cat[r * f.catCount + c.i]! - f.catOffsets[c.i]!;
      X[o + code] = 1;
      o += c.size;
    }
  }
  return { X, d: Math.max(d, 0) };
}

function ownFeatureNames(f: TableFeatures): string[] {
  const names: string[] = [];
  for (const c of f.spec.numeric) names.push(c.name, `${c.name}:null`);
  for (const c of f.spec.timestamps) names.push(`${c}:age`, `${c}:null`);
  if (f.spec.has_time) names.push('time:log_age', 'time:age_years', 'time:week_sin', 'time:week_cos', 'time:hour_sin', 'time:hour_cos', 'time:dow_sin', 'time:dow_cos', 'time:recent_1h', 'time:recent_1d', 'time:recent_7d', 'time:recent_30d');
  for (const c of f.spec.categorical) if (c.vocab.length + 2 <= ONE_HOT_MAX) names.push(`${c.name}:one_hot(${c.vocab.length + 2})`);
  return names;
}
