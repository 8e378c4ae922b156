/**
 * Gradient histograms: for a node's rows and each feature, per bin the sum of gradients, the sum of
 * hessians and the row count (three float64 slots per bin, 256 bins per feature, features one after the
 * other). A split's statistics are prefix sums of these, and a child's histogram is its parent's minus its
 * sibling's, so only the smaller child of each split is ever built from rows (LightGBM's subtraction trick).
 */
import { BINS } from './bin_mapper.js';

/** float64 slots per feature in a histogram: (gradient sum, hessian sum) × 256 bins. */
export const FEATURE_SLOTS = BINS * 2;

/**
 * The kernel: adds rows `rows[start..end)` of features [f0, f1) into `hist` at `offset`. `og`/`oh` hold the
 * node's gradients and hessians at the same positions as `rows` (gathered once per node, so every feature
 * reads them sequentially). Bins keep no row count: as in LightGBM, a side's count is estimated from its
 * hessian share (exact for the constant-hessian losses), which saves a third of the memory traffic.
 * Four features go per pass over the rows, so each row's gradient is loaded once per four features
 * (measured ≈ 1.5× faster than one feature per pass).
 *
 * Self-contained on purpose (no imports, no closures): the histogram worker runs this function's source
 * text, so one implementation serves both threads.
 */
export function buildHistogramRange(
  binned: Uint8Array,
  n: number,
  rows: Uint32Array,
  start: number,
  end: number,
  og: Float32Array,
  oh: Float32Array,
  hist: Float64Array,
  offset: number,
  f0: number,
  f1: number,
): void {
  const slots = 512;
  hist.fill(0, offset + f0 * slots, offset + f1 * slots);
  let f = f0;
  for (; f + 4 <= f1; f += 4) {
    const h0 = offset + f * slots;
    const h1 = h0 + slots;
    const h2 = h1 + slots;
    const h3 = h2 + slots;
    const c0 = f * n;
    const c1 = c0 + n;
    const c2 = c1 + n;
    const c3 = c2 + n;
    for (let i = start; i < end; i++) {
      const r = rows[i]!;
      const g = og[i]!;
      const hh = oh[i]!;
      let b = h0 + (binned[c0 + r]! << 1);
      hist[b] = hist[b]! + g;
      hist[b + 1] = hist[b + 1]! + hh;
      b = h1 + (binned[c1 + r]! << 1);
      hist[b] = hist[b]! + g;
      hist[b + 1] = hist[b + 1]! + hh;
      b = h2 + (binned[c2 + r]! << 1);
      hist[b] = hist[b]! + g;
      hist[b + 1] = hist[b + 1]! + hh;
      b = h3 + (binned[c3 + r]! << 1);
      hist[b] = hist[b]! + g;
      hist[b + 1] = hist[b + 1]! + hh;
    }
  }
  for (; f < f1; f++) {
    const h0 = offset + f * slots;
    const c0 = f * n;
    for (let i = start; i < end; i++) {
      const b = h0 + (binned[c0 + rows[i]!]! << 1);
      hist[b] = hist[b]! + og[i]!;
      hist[b + 1] = hist[b + 1]! + oh[i]!;
    }
  }
}

/** `hist[into] = hist[parent] − hist[sibling]`, over whole histograms of `features` features. */
export function subtractHistogram(hist: Float64Array, parent: number, sibling: number, into: number, features: number): void {
  const len = features * FEATURE_SLOTS;
  for (let k = 0; k < len; k++) hist[into + k] = hist[parent + k]! - hist[sibling + k]!;
}

/** Builds a node's histogram over all features; the serial and the two-thread builders implement it. */
export interface HistogramBuilder {
  /** Where histogram `slot` starts in `hist`. */
  readonly hist: Float64Array;
  build(start: number, end: number, slot: number): void;
  close(): void;
}

/** The shared state every builder reads: binned features, the row partition and the ordered gradients. */
export interface HistogramInputs {
  binned: Uint8Array;
  rows: number;
  features: number;
  partition: Uint32Array;
  og: Float32Array;
  oh: Float32Array;
}

export function histogramSlots(features: number, count: number, shared: boolean): Float64Array {
  const len = features * FEATURE_SLOTS * count;
  return shared ? new Float64Array(new SharedArrayBuffer(len * 8)) : new Float64Array(len);
}

export class SerialHistogramBuilder implements HistogramBuilder {
  readonly hist: Float64Array;

  constructor(
    private readonly inp: HistogramInputs,
    slots: number,
  ) {
    this.hist = histogramSlots(inp.features, slots, false);
  }

  build(start: number, end: number, slot: number): void {
    const { binned, rows, features, partition, og, oh } = this.inp;
    buildHistogramRange(binned, rows, partition, start, end, og, oh, this.hist, slot * features * FEATURE_SLOTS, 0, features);
  }

  close(): void {}
}
