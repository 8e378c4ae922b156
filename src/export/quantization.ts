/**
 * What `export --quantize int8` costs: the quantized model against the same graph in FLOAT32, both in
 * onnxruntime, on the task's test rows (the distillation's test split, with their labels). The FLOAT32
 * graph is itself held to the strict TF.js parity (1e-4), so the figures here are the quantization's
 * alone: the largest score change and the change of the task's main metric (AUROC for binary tasks).
 */
import * as ort from 'onnxruntime-node';
import { ArtifactError } from '../core/errors.js';
import { round } from '../core/number.js';
import type { Graph } from '../graph/graph.js';
import type { StudentSpec } from '../model/student/spec.js';
import { objectiveFor } from '../task/objective/objective.js';
import type { Examples, HopPath } from '../task/task_spec.js';
import { feeds, rawRequests } from './parity.js';
import type { EntityRows, EntityTable, Quantize } from './student_onnx.js';

/**
 * Export refuses an INT8 model whose scores move more than this from the FLOAT32 model's on any test
 * row. Per-row INT8 moves each embedding value by at most max|row| / 254; through the projection and the
 * head that measured ≤ 3e-3 on the bundled fraud model, so 0.02 leaves room for other data while still
 * catching a broken quantized graph (a wrong scale or row is off by far more).
 */
export const INT8_MAX_ABS_DIFF = 0.02;

/** Test rows scored for the report; more changes the AUROC by less than its own sampling noise. */
const MAX_TEST_ROWS = 20_000;

export interface QuantizationReport {
  mode: Quantize;
  /** entity tables (vectors, fallback rows and scales) in FLOAT32 and as exported */
  embedding_table_bytes: { fp32: number; quantized: number };
  /** fp32 bytes / quantized bytes */
  size_ratio: number;
  test_rows: number;
  /** largest |score_int8 − score_fp32| over the test rows */
  max_abs_diff: number;
  mean_abs_diff: number;
  /** the task's main metric (auroc | mae) of both models on the test rows, and int8 − fp32 */
  metric: string;
  fp32: number;
  quantized: number;
  delta: number;
  /** the gate max_abs_diff was held to */
  tolerance: number;
}

export async function quantizationReport(args: {
  graph: Graph;
  spec: StudentSpec;
  hops: HopPath[];
  realTimeOffset: number;
  test: Examples;
  entities: (EntityTable | EntityRows)[];
  fp32Model: string;
  quantizedModel: string;
  mode: Quantize;
  tableBytes: { fp32: number; quantized: number };
}): Promise<QuantizationReport> {
  const { graph, spec, test } = args;
  const n = Math.min(test.nodes.length, MAX_TEST_ROWS);
  // The newest test rows when there are more than we score (the ones nearest to what will be served).
  const lo = test.nodes.length - n;
  const nodes = test.nodes.slice(lo);
  const labels = test.labels.slice(lo);
  const anchors = spec.time_column ? undefined : test.anchors.slice(lo);
  const { requests } = await rawRequests(graph, spec, args.hops, args.realTimeOffset, nodes, args.entities, anchors);
  const output = objectiveFor(spec.output.kind).outputName;
  const score = async (path: string): Promise<Float32Array> => {
    const s = await ort.InferenceSession.create(path, { intraOpNumThreads: 1 });
    try {
      const out = new Float32Array(n);
      for (let i = 0; i < n; i += 512) {
        const j = Math.min(n, i + 512);
        out.set((await s.run(feeds(spec, requests, i, j)))[output]!.data as Float32Array, i);
      }
      return out;
    } finally {
      await s.release();
    }
  };
  const a = await score(args.fp32Model);
  const b = await score(args.quantizedModel);
  let maxAbs = 0;
  let sumAbs = 0;
  for (let i = 0; i < n; i++) {
    const d = Math.abs(a[i]! - b[i]!);
    if (!Number.isFinite(b[i]!) || Number.isNaN(d)) throw new ArtifactError(`the ${args.mode} model scores a non-finite value on test row ${i}`, { hint: 'this is a bug in gnnctl export; export without --quantize meanwhile' });
    maxAbs = Math.max(maxAbs, d);
    sumAbs += d;
  }
  const objective = objectiveFor(spec.output.kind);
  const metric = objective.mainMetric.name;
  const m32 = (objective.metrics(labels, a) as unknown as Record<string, number>)[metric]!;
  const m8 = (objective.metrics(labels, b) as unknown as Record<string, number>)[metric]!;
  const report: QuantizationReport = {
    mode: args.mode,
    embedding_table_bytes: args.tableBytes,
    size_ratio: round(args.tableBytes.fp32 / Math.max(1, args.tableBytes.quantized), 3),
    test_rows: n,
    max_abs_diff: maxAbs,
    mean_abs_diff: n ? sumAbs / n : 0,
    metric,
    fp32: round(m32, 6),
    quantized: round(m8, 6),
    delta: round(m8 - m32, 6),
    tolerance: INT8_MAX_ABS_DIFF,
  };
  if (!(maxAbs <= INT8_MAX_ABS_DIFF)) {
    throw new ArtifactError(`the ${args.mode} model moves a test score by ${maxAbs.toExponential(2)} from the FLOAT32 model (tolerance ${INT8_MAX_ABS_DIFF})`, {
      hint: 'export without --quantize, or report it with the run folder if the embeddings look ordinary',
    });
  }
  return report;
}
