/**
 * Node features: how a node of a table becomes a numeric vector and categorical codes, at an anchor time.
 *
 * The `FeatureSpec` is fitted once (from the graph build's statistics) and saved with the run, so that
 * embedding and fine-tuning re-apply exactly the same encoding to newer graphs (GraphStorm's lesson):
 * numeric columns are standardized with the run's mean/std, categorical values are mapped through the
 * run's vocabularies (values the run never saw → the OOV code), whatever the newer graph fitted.
 *
 * Per node, the numeric vector is:
 *   for each numeric column:   clip((x − mean) / std, ±10), null flag
 *   for each timestamp column: signed log1p(|anchor − x| in days) / 5, null flag
 *   if the table has a time column (Δ = anchor − node time, in days, ≥ 0):
 *     log1p(Δ) / 5, Δ / 365, sin/cos(2πΔ/7), the node time's hour of day and day of week as sin/cos,
 *     and recency kernels exp(−Δ/τ) for τ = 1 hour, 1 day, 7 days, 30 days
 * The kernels matter because encoders are linear and the first layer averages encoder outputs: a mean of
 * exp(−Δ/τ) over a node's neighbours is a decayed count of its recent neighbours ("5 purchases of this
 * article in the last hour"), which no mean of Δ or log Δ can express.
 * Categorical codes: 0 = null, 1 = out of vocabulary, 2 + i = vocab[i], offset per column into one
 * embedding table per node type.
 */
import type { CategoricalReference, NumericReference } from '../artifacts/graph_manifest.js';
import type { Graph, NodeTable } from '../graph/graph.js';
import { warn } from '../core/log.js';

export const TIME_FEATURES = 12;
const KERNEL_DAYS = [1 / 24, 1, 7, 30];
const DAY = 86400;

export interface TableFeatureSpec {
  /** standardisation, and the column's deciles on the fit window (drift reference; absent in 0.1 runs) */
  numeric: { name: string; mean: number; std: number; reference?: NumericReference }[];
  /** vocabulary (codes 0 null, 1 OOV, 2 + i), and each code's share on the fit window */
  categorical: { name: string; vocab: string[]; reference?: CategoricalReference }[];
  timestamps: string[];
  has_time: boolean;
}

export interface FeatureSpec {
  tables: Record<string, TableFeatureSpec>;
  /** the time the encoders were fitted up to (epoch seconds; null when the data has no time column) */
  fit_until?: number | null;
  /** columns left out of every input, and why (the target column, above all) */
  excluded: { table: string; column: string; reason: string }[];
}

export function numericDim(t: TableFeatureSpec): number {
  return 2 * t.numeric.length + 2 * t.timestamps.length + (t.has_time ? TIME_FEATURES : 0);
}

/** Sizes of each categorical column's code space (vocab + null + OOV). */
export function categoricalSizes(t: TableFeatureSpec): number[] {
  return t.categorical.map((c) => c.vocab.length + 2);
}

/** The spec a new run fits: the graph's statistics, minus excluded columns. */
export function featureSpecFromGraph(graph: Graph, exclude: { table: string; column: string; reason: string }[]): FeatureSpec {
  const tables: Record<string, TableFeatureSpec> = {};
  const skip = (t: string, c: string): boolean => exclude.some((e) => e.table === t && e.column === c);
  for (const [name, t] of Object.entries(graph.tables)) {
    tables[name] = {
      numeric: t.numeric.filter((c) => !skip(name, c.meta.name)).map((c) => ({ name: c.meta.name, mean: c.meta.mean, std: c.meta.std, reference: c.meta.reference })),
      categorical: t.categorical.filter((c) => !skip(name, c.meta.name)).map((c) => ({ name: c.meta.name, vocab: c.meta.vocab, reference: c.meta.reference })),
      timestamps: t.timestamps.filter((c) => !skip(name, c.name)).map((c) => c.name),
      has_time: t.time !== null,
    };
  }
  return { tables, fit_until: graph.manifest.fit_until, excluded: exclude };
}

/** A table's features bound to a graph: the arrays, with codes remapped to the spec's vocabularies. */
export class TableFeatures {
  readonly spec: TableFeatureSpec;
  readonly num_dim: number;
  readonly catCount: number;
  private readonly num: Float32Array[];
  private readonly ts: Float64Array[];
  private readonly codes: Int32Array[];
  private readonly time: Float64Array | null;
  /** per categorical column, the offset of its code space in the type's embedding table */
  readonly catOffsets: Int32Array;

  constructor(table: NodeTable, spec: TableFeatureSpec) {
    this.spec = spec;
    this.num_dim = numericDim(spec);
    this.catCount = spec.categorical.length;
    this.time = spec.has_time ? table.time : null;
    // A column the run reads but the graph lacks can only happen with --allow-schema-drift: it is read
    // as missing in every row (null flag / null code), which is what the model saw for absent values.
    const gone = (kind: string, name: string): void => warn(`${table.name}.${name} (${kind}) is gone from the data; the model reads it as missing in every row`);
    this.num = spec.numeric.map((c) => {
      const col = table.numeric.find((x) => x.meta.name === c.name);
      if (!col) gone('numerical', c.name);
      return col?.values ?? new Float32Array(table.rows).fill(Number.NaN);
    });
    this.ts = spec.timestamps.map((name) => {
      const col = table.timestamps.find((x) => x.name === name);
      if (!col) gone('timestamp', name);
      return col?.values ?? new Float64Array(table.rows).fill(Number.NaN);
    });
    this.codes = spec.categorical.map((c) => {
      const col = table.categorical.find((x) => x.meta.name === c.name);
      if (!col) gone('categorical', c.name);
      return col ? remapCodes(col.codes, col.meta.vocab, c.vocab) : new Int32Array(table.rows);
    });
    const sizes = categoricalSizes(spec);
    this.catOffsets = new Int32Array(sizes.length);
    for (let i = 1; i < sizes.length; i++) this.catOffsets[i] = this.catOffsets[i - 1]! + sizes[i - 1]!;
  }

  /**
   * Writes the features of `nodes[i]` at `anchors[i]` into row `row0 + i` of `num` ([rows × numDim]) and
   * `cat` ([rows × catCount], offset codes). Rows with `valid[i] = 0` are left as zeros.
   */
  gather(nodes: Int32Array, anchorOf: (i: number) => number, valid: Uint8Array | null, num: Float32Array, cat: Int32Array, row0 = 0): void {
    const d = this.num_dim;
    const k = this.catCount;
    for (let i = 0; i < nodes.length; i++) {
      if (valid && !valid[i]) continue;
      const v = nodes[i]!;
      const anchor = anchorOf(i);
      let o = (row0 + i) * d;
      for (let c = 0; c < this.num.length; c++) {
        const x = this.num[c]![v]!;
        if (Number.isNaN(x)) {
          num[o++] = 0;
          num[o++] = 1;
        } else {
          const m = this.spec.numeric[c]!;
          const z = (x - m.mean) / m.std;
          num[o++] = z > 10 ? 10 : z < -10 ? -10 : z;
          num[o++] = 0;
        }
      }
      for (let c = 0; c < this.ts.length; c++) {
        const x = this.ts[c]![v]!;
        if (Number.isNaN(x)) {
          num[o++] = 0;
          num[o++] = 1;
        } else {
          const days = (anchor - x) / DAY;
          num[o++] = (Math.sign(days) * Math.log1p(Math.abs(days))) / 5;
          num[o++] = 0;
        }
      }
      if (this.time) o = writeTimeFeatures(num, o, anchor, this.time[v]!);
      const co = (row0 + i) * k;
      for (let c = 0; c < k; c++) cat[co + c] = this.catOffsets[c]! + this.codes[c]![v]!;
    }
  }
}

/** The relative-time and cyclical features of a node time t seen from an anchor (see module comment). */
export function writeTimeFeatures(out: Float32Array, o: number, anchor: number, t: number): number {
  const delta = Math.max(0, (anchor - t) / DAY);
  out[o++] = Math.log1p(delta) / 5;
  out[o++] = delta / 365;
  out[o++] = Math.sin((2 * Math.PI * delta) / 7);
  out[o++] = Math.cos((2 * Math.PI * delta) / 7);
  const hour = (((t % DAY) + DAY) % DAY) / 3600;
  out[o++] = Math.sin((2 * Math.PI * hour) / 24);
  out[o++] = Math.cos((2 * Math.PI * hour) / 24);
  // 1970-01-01 was a Thursday; the phase does not matter to a learned model, only the period.
  const dow = ((t / DAY) % 7 + 7) % 7;
  out[o++] = Math.sin((2 * Math.PI * dow) / 7);
  out[o++] = Math.cos((2 * Math.PI * dow) / 7);
  for (const tau of KERNEL_DAYS) out[o++] = Math.exp(-delta / tau);
  return o;
}

/** Graph codes → spec codes (null stays 0; values the spec's vocabulary lacks become OOV = 1). */
export function remapCodes(codes: Int32Array, graphVocab: string[], specVocab: string[]): Int32Array {
  if (graphVocab.length === specVocab.length && graphVocab.every((v, i) => v === specVocab[i])) return codes;
  const index = new Map(specVocab.map((v, i) => [v, i + 2]));
  const map = new Int32Array(graphVocab.length + 2);
  map[0] = 0;
  map[1] = 1;
  graphVocab.forEach((v, i) => {
    map[i + 2] = index.get(v) ?? 1;
  });
  const out = new Int32Array(codes.length);
  for (let i = 0; i < codes.length; i++) out[i] = map[codes[i]!]!;
  return out;
}

export function bindFeatures(graph: Graph, spec: FeatureSpec): Record<string, TableFeatures> {
  return Object.fromEntries(Object.entries(spec.tables).map(([name, t]) => [name, new TableFeatures(graph.table(name), t)]));
}
