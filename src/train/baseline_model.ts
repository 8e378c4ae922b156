/**
 * The no-graph baseline's model: an MLP on the entity's own columns (numeric, and categorical one-hot up
 * to ONE_HOT_MAX values) plus the DuckDB aggregates of `baseline.ts`, fitted on the same examples as the
 * deep model, so the lift is measured against a tuned tabular model.
 */
import type { TrainingTables } from './examples.js';
import type { DeepModel } from '../model/deep_model.js';
import type { TableFeatures } from '../model/features.js';
import { fitMlp, standardizeColumns } from '../model/mlp.js';
import type { TaskSpec } from '../config/load.js';
import type { Metrics } from '../task/metrics.js';
import { objectiveFor, type ObjectiveKind } from '../task/objective/objective.js';
import type { Examples } from '../task/task_spec.js';

/** The objective's metrics of predictions against labels. */
export function evaluate(kind: ObjectiveKind, labels: Float32Array, preds: Float32Array): Metrics {
  return objectiveFor(kind).metrics(labels, preds);
}

/** The no-graph baseline on the same examples: own features (numeric encoding + small categoricals one-hot) + DuckDB aggregates. */
export function fitBaseline(model: DeepModel, task: TaskSpec, tables: TrainingTables, kind: ObjectiveKind, seed: number) {
  const sql = tables.baseline!;
  const own = model.features[task.query.entity.table]!;
  const build = (ex: Examples, agg: Float32Array) => {
    const o = ownMatrix(own, ex);
    const d = o.d + sql.names.length;
    const n = ex.nodes.length;
    const X = new Float32Array(n * d);
    for (let i = 0; i < n; i++) {
      X.set(o.X.subarray(i * o.d, (i + 1) * o.d), i * d);
      X.set(agg.subarray(i * sql.names.length, (i + 1) * sql.names.length), i * d + o.d);
    }
    return { X, d };
  };
  const tr = build(tables.train, sql.train);
  const va = build(tables.val, sql.val);
  const te = build(tables.test, sql.test);
  standardizeColumns(tr.X, tr.d, [va.X, te.X]);
  const r = fitMlp(tr.d, { X: tr.X, y: tables.train.labels }, { X: va.X, y: tables.val.labels }, [va.X, te.X], { kind, seed });
  const [valPred, testPred] = r.predictions as [Float32Array, Float32Array];
  return {
    val: evaluate(kind, tables.val.labels, valPred),
    test: evaluate(kind, tables.test.labels, testPred),
    testPred,
    features: [...ownFeatureNames(own), ...sql.names],
  };
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
