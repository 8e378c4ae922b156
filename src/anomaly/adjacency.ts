/**
 * Reading Â = sigmoid(H_src H_dstᵀ) whichever form the runtime gave it in: the dense [n × n] matrix
 * (TF.js, ONNX models fitted before the factored outputs) or the decoder's factors H (onnxruntime; see
 * `FactoredAdjacency`). The detector reads Â only at the observed pairs, on the diagonal and in the few
 * rows that can hold a top pair, so the factored form is evaluated there and nowhere else.
 */
import type { AdjacencySummary, FactoredAdjacency } from './model.js';

export type Adjacency = Float32Array | FactoredAdjacency;

const sigmoid = (l: number): number => 1 / (1 + Math.exp(-l));

/**
 * Â at the sorted pairs `pair` (row i's at rowStart[i] … rowStart[i + 1] − 1) into `pairs`, and Â's
 * diagonal into `diagonal`: row by row, so the factored form loads each source half once.
 */
export function adjacencyAtPairs(adj: Adjacency, n: number, pair: Float64Array, rowStart: Int32Array, pairs: Float64Array, diagonal: Float64Array): { pairs: Float64Array; diagonal: Float64Array } {
  if (adj instanceof Float32Array) {
    for (let k = 0; k < pair.length; k++) pairs[k] = adj[pair[k]!]!;
    for (let i = 0; i < n; i++) diagonal[i] = adj[i * n + i]!;
    return { pairs, diagonal };
  }
  const { h, dim } = adj;
  const half = dim / 2;
  for (let i = 0; i < n; i++) {
    const a = i * dim;
    for (let k = rowStart[i]! - 1; k < rowStart[i + 1]!; k++) {
      // k = rowStart[i] − 1 stands for the diagonal
      const j = k < rowStart[i]! ? i : pair[k]! - i * n;
      const b = j * dim + half;
      let s = 0;
      for (let c = 0; c < half; c++) s += h[a + c]! * h[b + c]!;
      const v = sigmoid(s);
      if (k < rowStart[i]!) diagonal[i] = v;
      else pairs[k] = v;
    }
  }
  return { pairs, diagonal };
}

/**
 * Row i of Â into `out` [n], as logits for the factored form (`logits` true) — sigmoid is monotonic, so a
 * caller ranking a row compares logits and takes the sigmoid of the few that pass — or as values for
 * the dense one (`logits` false).
 */
export function adjacencyRow(adj: Adjacency, n: number, i: number, out: Float64Array): { logits: boolean } {
  if (adj instanceof Float32Array) {
    for (let j = 0; j < n; j++) out[j] = adj[i * n + j]!;
    return { logits: false };
  }
  const { h, dim } = adj;
  const half = dim / 2;
  const a = i * dim;
  for (let j = 0; j < n; j++) {
    const b = j * dim + half;
    let s = 0;
    for (let c = 0; c < half; c++) s += h[a + c]! * h[b + c]!;
    out[j] = s;
  }
  return { logits: true };
}

/** The dense [n × n] Â (checks and tests; the detector never needs it whole). */
export function denseAdjacency(adj: Adjacency, n: number): Float32Array {
  if (adj instanceof Float32Array) return adj;
  const out = new Float32Array(n * n);
  const row = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    adjacencyRow(adj, n, i, row);
    for (let j = 0; j < n; j++) out[i * n + j] = sigmoid(row[j]!);
  }
  return out;
}

/** Row and column sums of Â² and row maxima of Â, in one pass (float64 sums; what onnxruntime computes in its graph). */
export function summariseAdjacency(adj: Adjacency, n: number): AdjacencySummary {
  const dense = denseAdjacency(adj, n);
  const rowSq = new Float64Array(n);
  const colSq = new Float64Array(n);
  const rowMax = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const o = i * n;
    let row = 0;
    let max = -Infinity;
    for (let j = 0; j < n; j++) {
      const v = dense[o + j]!;
      const e = v * v;
      row += e;
      colSq[j]! += e;
      if (v > max) max = v;
    }
    rowSq[i] = row;
    rowMax[i] = max;
  }
  return { rowSq, colSq, rowMax };
}

/** The logit of a probability (−∞ at 0, +∞ at 1). */
export function logitOf(v: number): number {
  return Math.log(v) - Math.log1p(-v);
}
