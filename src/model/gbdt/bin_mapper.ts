/**
 * Feature binning, fitted once per model: each numeric feature's values map to at most 255 quantile bins
 * (bin b holds edges[b−1] < x ≤ edges[b]), each categorical feature's most frequent values to one bin
 * each, and missing values (NaN) — and categories too rare for a bin of their own, or unseen in training —
 * to bin 255. Trees split on bins, so training never sorts a column, and the same mapper bins the rows a
 * model predicts on. Edges are float32 values and inputs are rounded to float32 before comparing: an ONNX
 * `TreeEnsemble*` compares float32 inputs with float32 thresholds, and this makes both sides agree bit for bit.
 */
import { DataError } from '../../core/errors.js';
import { Rng } from '../../core/rng.js';

export const MISSING_BIN = 255;
/** Bins per feature in a histogram: 255 value bins and the missing bin. */
export const BINS = 256;

export type FeatureKind = 'numeric' | 'categorical';

/** Column-major input: `columns[f][i]` is feature f of row i; NaN is missing. Categories are numeric codes. */
export interface GbdtData {
  rows: number;
  columns: ArrayLike<number>[];
}

export interface BinMapperJSON {
  kinds: FeatureKind[];
  /** numeric: upper bin edges; categorical: the category value of each bin. */
  values: number[][];
}

export class BinMapper {
  /** Per feature: numeric upper edges (ascending float32 values), or categorical bin → category value. */
  readonly values: Float64Array[];
  private readonly catIndex: (Map<number, number> | null)[];

  constructor(
    readonly kinds: FeatureKind[],
    values: ArrayLike<number>[],
  ) {
    this.values = values.map((v) => Float64Array.from(v));
    this.catIndex = kinds.map((k, f) => (k === 'categorical' ? new Map(Array.from(this.values[f] ?? [], (c, b) => [c, b])) : null));
  }

  get features(): number {
    return this.kinds.length;
  }

  /** Value bins of feature f (the missing bin not counted). */
  valueBins(f: number): number {
    const v = this.values[f]!;
    return this.kinds[f] === 'numeric' ? v.length + 1 : v.length;
  }

  /**
   * Fits the bins on `data`: numeric edges at the midpoints of distinct values when there are few, else at
   * quantiles of a seeded subsample of `sample` rows (scikit-learn's rule); categories by frequency.
   */
  static fit(data: GbdtData, kinds: FeatureKind[], maxBins: number, sample: number, seed: number): BinMapper {
    if (kinds.length !== data.columns.length) {
      throw new DataError('feature kinds and columns differ in count', { value: `${kinds.length} kinds, ${data.columns.length} columns`, hint: 'pass one kind per feature column' });
    }
    const n = data.rows;
    let idx: Uint32Array | null = null;
    if (n > sample) {
      // A partial Fisher-Yates shuffle: the first `sample` slots are a uniform sample without replacement.
      const all = new Uint32Array(n);
      for (let i = 0; i < n; i++) all[i] = i;
      const rng = new Rng(seed);
      for (let i = 0; i < sample; i++) {
        const j = i + Math.floor(rng.next() * (n - i));
        const t = all[i]!;
        all[i] = all[j]!;
        all[j] = t;
      }
      idx = all.subarray(0, sample).sort();
    }
    const values = kinds.map((kind, f) => {
      const col = data.columns[f]!;
      if (col.length < n) throw new DataError(`feature ${f} has ${col.length} values for ${n} rows`, { hint: 'give every column one value per row' });
      return kind === 'numeric' ? numericEdges(col, idx, n, maxBins) : categoryBins(col, n, maxBins);
    });
    return new BinMapper(kinds, values);
  }

  /** The bin of value x of feature f. */
  bin(f: number, x: number): number {
    if (Number.isNaN(x)) return MISSING_BIN;
    const cat = this.catIndex[f];
    if (cat) return cat.get(x) ?? MISSING_BIN;
    const e = this.values[f]!;
    const v = Math.fround(x);
    let lo = 0;
    let hi = e.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (e[mid]! < v) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** All rows binned, column-major (`out[f * rows + i]`); `shared` puts them in a SharedArrayBuffer for the worker. */
  transform(data: GbdtData, shared = false): Uint8Array {
    const n = data.rows;
    const F = this.features;
    if (data.columns.length !== F) {
      throw new DataError(`the model has ${F} features, the data ${data.columns.length}`, { hint: 'pass the columns the model was trained on, in the same order' });
    }
    const out = shared ? new Uint8Array(new SharedArrayBuffer(n * F)) : new Uint8Array(n * F);
    for (let f = 0; f < F; f++) {
      const col = data.columns[f]!;
      const base = f * n;
      const cat = this.catIndex[f];
      if (cat) {
        for (let i = 0; i < n; i++) out[base + i] = cat.get(col[i]!) ?? MISSING_BIN;
        continue;
      }
      const e = this.values[f]!;
      const m = e.length;
      for (let i = 0; i < n; i++) {
        const x = col[i]!;
        if (x !== x) {
          out[base + i] = MISSING_BIN;
          continue;
        }
        const v = Math.fround(x);
        let lo = 0;
        let hi = m;
        while (lo < hi) {
          const mid = (lo + hi) >>> 1;
          if (e[mid]! < v) lo = mid + 1;
          else hi = mid;
        }
        out[base + i] = lo;
      }
    }
    return out;
  }

  toJSON(): BinMapperJSON {
    return { kinds: [...this.kinds], values: this.values.map((v) => Array.from(v)) };
  }

  static fromJSON(j: BinMapperJSON): BinMapper {
    return new BinMapper(j.kinds, j.values);
  }
}

function numericEdges(col: ArrayLike<number>, idx: Uint32Array | null, n: number, maxBins: number): Float64Array {
  const m = idx ? idx.length : n;
  const vals = new Float64Array(m);
  let k = 0;
  for (let j = 0; j < m; j++) {
    const x = col[idx ? idx[j]! : j]!;
    if (x === x) vals[k++] = Math.fround(x);
  }
  const v = vals.subarray(0, k).sort();
  const distinct: number[] = [];
  for (let j = 0; j < k && distinct.length <= maxBins; j++) if (j === 0 || v[j] !== v[j - 1]) distinct.push(v[j]!);
  const edges: number[] = [];
  if (distinct.length <= maxBins) {
    for (let j = 0; j + 1 < distinct.length; j++) edges.push(Math.fround((distinct[j]! + distinct[j + 1]!) / 2));
  } else {
    // numpy's percentile with method="midpoint" at 100·i/maxBins, i = 1 … maxBins−1, as scikit-learn bins.
    for (let i = 1; i < maxBins; i++) {
      const pos = (i / maxBins) * (k - 1);
      const lo = Math.floor(pos);
      const hi = Math.ceil(pos);
      edges.push(Math.fround((v[lo]! + v[hi]!) / 2));
    }
  }
  const out: number[] = [];
  // An edge equal to the largest value would leave its right bin empty; duplicates merge bins.
  const maxV = k > 0 ? v[k - 1]! : -Infinity;
  for (const e of edges) if (e < maxV && (out.length === 0 || e > out[out.length - 1]!)) out.push(e);
  return Float64Array.from(out);
}

function categoryBins(col: ArrayLike<number>, n: number, maxBins: number): Float64Array {
  const counts = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const x = col[i]!;
    if (x === x) counts.set(x, (counts.get(x) ?? 0) + 1);
  }
  const cats = [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, maxBins);
  return Float64Array.from(cats.map((c) => c[0]));
}
