/**
 * Reference distributions of feature columns, fitted on the same rows as the encoders (the fit window):
 * numeric columns as deciles (9 interior edges; 10 bins plus a null bucket), categorical columns as the
 * share of each code (null, out-of-vocabulary, each vocabulary value). A run copies them into its
 * `features.json`; `gnnctl check` compares today's data against them (population stability index).
 */
import type { NumericReference } from '../artifacts/graph_manifest.js';

/** Sorting more than this many values for the deciles is wasted work: a strided sample is as good. */
const MAX_SORTED = 1 << 20;

export function numericReference(values: Float32Array, fit: Uint8Array | null): NumericReference {
  let n = 0;
  for (let i = 0; i < values.length; i++) if ((!fit || fit[i]) && !Number.isNaN(values[i]!)) n++;
  const stride = Math.max(1, Math.ceil(n / MAX_SORTED));
  const sample = new Float32Array(Math.ceil(n / stride));
  let k = 0;
  let seen = 0;
  for (let i = 0; i < values.length; i++) {
    if ((fit && !fit[i]) || Number.isNaN(values[i]!)) continue;
    if (seen++ % stride === 0) sample[k++] = values[i]!;
  }
  const sorted = sample.subarray(0, k).sort();
  const edges: number[] = [];
  for (let q = 1; q < 10; q++) {
    if (sorted.length === 0) break;
    const e = sorted[Math.min(sorted.length - 1, Math.floor((q * sorted.length) / 10))]!;
    if (edges.length === 0 || e > edges[edges.length - 1]!) edges.push(e);
  }
  return { edges, shares: numericShares(values, fit, edges) };
}

/** Shares of `values` (rows where `rows` is set, or all) in the bins of `edges`, null share last. */
export function numericShares(values: Float32Array, rows: Uint8Array | null, edges: number[]): number[] {
  const counts = new Float64Array(edges.length + 2);
  let total = 0;
  for (let i = 0; i < values.length; i++) {
    if (rows && !rows[i]) continue;
    total++;
    const x = values[i]!;
    if (Number.isNaN(x)) {
      counts[edges.length + 1]!++;
      continue;
    }
    let lo = 0;
    let hi = edges.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (x <= edges[mid]!) hi = mid;
      else lo = mid + 1;
    }
    counts[lo]!++;
  }
  return Array.from(counts, (c) => (total ? c / total : 0));
}

/** Shares of each code (0 null, 1 OOV, 2 + i vocab) among `rows` (or all). */
export function categoricalShares(codes: Int32Array, size: number, rows: Uint8Array | null): number[] {
  const counts = new Float64Array(size);
  let total = 0;
  for (let i = 0; i < codes.length; i++) {
    if (rows && !rows[i]) continue;
    counts[codes[i]!]!++;
    total++;
  }
  return Array.from(counts, (c) => (total ? c / total : 0));
}

/**
 * Population stability index Σ (p − q) · ln(p / q) between a current and a reference distribution.
 * Empty buckets get a floor of 1e-4 so a bucket that appears or vanishes counts, but finitely. The usual
 * reading: < 0.1 stable, 0.1–0.25 moderate shift, > 0.25 significant shift.
 */
export function psi(current: number[], reference: number[]): number {
  const floor = 1e-4;
  let s = 0;
  for (let i = 0; i < reference.length; i++) {
    const p = Math.max(current[i] ?? 0, floor);
    const q = Math.max(reference[i]!, floor);
    s += (p - q) * Math.log(p / q);
  }
  return s;
}
