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
 *   the task's entity table only, per reverse edge to a table with a time column (its "activity"):
 *     log1p of the rows in the last 7, 30 and 90 days and of all rows, log1p(days since the last row) / 5,
 *     log1p(days since the first row) / 5, a no-rows flag, and for each numeric column of those rows the
 *     sums over the last 30 and 90 days as sign · log1p(|sum| / std)
 * The activity inputs are what the no-graph baseline reads (counts over windows, recency, monetary), taken
 * from the time-sorted CSR with binary searches, so they exist at any anchor (training, embed, predict)
 * and see only rows with time ≤ anchor. They make the graph model see at least what the baseline sees,
 * whatever the fanout and the sampling: with `last` on bursty data the sampled neighbours are one sitting
 * and tell neither total activity nor tenure (docs/quality.md).
 * Categorical codes: 0 = null, 1 = out of vocabulary, 2 + i = vocab[i], offset per column into one
 * embedding table per node type.
 * A fact-row task's target column with `label_delay` (task_spec.ts `TargetColumn`) is read like any
 * column of its role where the row's time + label_delay ≤ the anchor, and as null elsewhere: the row's
 * own label (time = anchor, label_delay > 0) never, other rows' once they would have arrived.
 */
import type { CategoricalReference, NumericReference } from '../artifacts/graph_manifest.js';
import type { EdgeType, Graph, NodeTable } from '../graph/graph.js';
import type { TargetColumn } from '../task/task_spec.js';
import { warn } from '../core/log.js';
import { upperBound } from './sampler.js';

export const TIME_FEATURES = 12;
const KERNEL_DAYS = [1 / 24, 1, 7, 30];
const DAY = 86400;
/** activity windows (days) for counts; sums use the last two */
const ACTIVITY_COUNT_DAYS = [7, 30, 90];
const ACTIVITY_SUM_DAYS = [30, 90];
/** the count window each sum window is (its start is searched once) */
const SUM_WINDOWS = ACTIVITY_SUM_DAYS.map((d) => ACTIVITY_COUNT_DAYS.indexOf(d));
/** `writeActivity`'s scratch: each count window's first CSR position */
const windowStart = new Int32Array(ACTIVITY_COUNT_DAYS.length);
/** per activity edge: counts per window + all, recency, tenure, no-rows flag */
const ACTIVITY_BASE = ACTIVITY_COUNT_DAYS.length + 4;

/** Past-window aggregates of an entity over one reverse edge (see the module comment). */
export interface ActivitySpec {
  /** reverse edge from the entity's table to a table with a time column */
  edge: string;
  /** numeric columns of that table summed per window, with the fitted std as their unit */
  sums: { name: string; std: number }[];
}

export interface TableFeatureSpec {
  /**
   * standardisation, and the column's deciles on the fit window (drift reference; absent in 0.1 runs);
   * `label_delay` (seconds): a fact-row target column, read only where time + label_delay ≤ anchor
   */
  numeric: { name: string; mean: number; std: number; reference?: NumericReference; label_delay?: number }[];
  /** vocabulary (codes 0 null, 1 OOV, 2 + i), and each code's share on the fit window; `label_delay` as above */
  categorical: { name: string; vocab: string[]; reference?: CategoricalReference; label_delay?: number }[];
  timestamps: string[];
  has_time: boolean;
  /** the task's entity table: past-window aggregates per reverse edge (absent in runs made before them) */
  activity?: ActivitySpec[];
}

export interface FeatureSpec {
  tables: Record<string, TableFeatureSpec>;
  /** the time the encoders were fitted up to (epoch seconds; null when the data has no time column) */
  fit_until?: number | null;
  /**
   * the task's target columns the encoders do not read as plain inputs, and why: left out, or read
   * after `label_delay` (an entity task's history columns are plain inputs and are not listed)
   */
  excluded: TargetColumn[];
}

export function numericDim(t: TableFeatureSpec): number {
  return 2 * t.numeric.length + 2 * t.timestamps.length + (t.has_time ? TIME_FEATURES : 0) + activityDim(t);
}

/** Width of the activity inputs, which come last in the numeric vector. */
export function activityDim(t: TableFeatureSpec): number {
  return (t.activity ?? []).reduce((a, s) => a + ACTIVITY_BASE + ACTIVITY_SUM_DAYS.length * s.sums.length, 0);
}

/** Sizes of each categorical column's code space (vocab + null + OOV). */
export function categoricalSizes(t: TableFeatureSpec): number[] {
  return t.categorical.map((c) => c.vocab.length + 2);
}

/**
 * The spec a new run fits: the graph's statistics, minus the task's target columns (`TargetColumn`: an
 * entity task's history columns stay, a fact target with label_delay stays behind its delay); the entity
 * table `root` also gets activity inputs over each reverse edge to a table with a time column.
 */
export function featureSpecFromGraph(graph: Graph, targets: TargetColumn[], root?: string): FeatureSpec {
  const tables: Record<string, TableFeatureSpec> = {};
  const excluded = targets.filter((e) => !e.history);
  const target = (t: string, c: string): TargetColumn | undefined => excluded.find((e) => e.table === t && e.column === c);
  // Activity sums are windowed totals of every row up to the anchor: a delayed label has no place there.
  const skip = (t: string, c: string): boolean => target(t, c) !== undefined;
  const keep = (t: string, c: string): boolean => {
    const e = target(t, c);
    return e === undefined || e.label_delay !== undefined;
  };
  const delay = (t: string, c: string): { label_delay?: number } => {
    const d = target(t, c)?.label_delay;
    return d === undefined ? {} : { label_delay: d };
  };
  for (const [name, t] of Object.entries(graph.tables)) {
    tables[name] = {
      numeric: t.numeric.filter((c) => keep(name, c.meta.name)).map((c) => ({ name: c.meta.name, mean: c.meta.mean, std: c.meta.std, reference: c.meta.reference, ...delay(name, c.meta.name) })),
      categorical: t.categorical.filter((c) => keep(name, c.meta.name)).map((c) => ({ name: c.meta.name, vocab: c.meta.vocab, reference: c.meta.reference, ...delay(name, c.meta.name) })),
      timestamps: t.timestamps.filter((c) => !skip(name, c.name)).map((c) => c.name),
      has_time: t.time !== null,
    };
    if (name === root) {
      tables[name]!.activity = graph.edges
        .filter((e) => e.kind === 'rev' && e.src === name && graph.tables[e.dst]!.time !== null)
        .map((e) => ({ edge: e.name, sums: graph.tables[e.dst]!.numeric.filter((c) => !skip(e.dst, c.meta.name)).map((c) => ({ name: c.meta.name, std: c.meta.std })) }));
    }
  }
  return { tables, fit_until: graph.manifest.fit_until, excluded };
}

/** An activity spec bound to a graph: the CSR, the child times and prefix sums of the summed columns. */
interface BoundActivity {
  spec: ActivitySpec;
  edge: EdgeType | null;
  time: Float64Array | null;
  /** per summed column: prefix sums over the CSR's neighbour order (length edges + 1), NaN read as 0 */
  prefix: Float64Array[];
}

function bindActivity(graph: Graph | undefined, table: string, spec: ActivitySpec): BoundActivity {
  const edge = graph?.edges.find((e) => e.name === spec.edge && e.kind === 'rev' && e.src === table) ?? null;
  const child = edge ? graph!.tables[edge.dst] : undefined;
  if (!edge || !child?.time) {
    warn(`${table}: edge ${spec.edge} is gone from the data; the model reads its activity inputs as no rows`);
    return { spec, edge: null, time: null, prefix: [] };
  }
  // A summed column gone from the data (--allow-schema-drift) sums to 0 in every window.
  const prefix = spec.sums.map((s) => (child.numeric.some((c) => c.meta.name === s.name) ? graph!.prefixSum(edge, s.name) : new Float64Array(edge.indices!.length + 1)));
  return { spec, edge, time: child.time, prefix };
}

/** Writes one node's activity inputs at an anchor (see the module comment); returns the next offset. */
function writeActivity(out: Float32Array, o: number, a: BoundActivity, v: number, anchor: number): number {
  const sums = a.spec.sums.length;
  const width = ACTIVITY_BASE + ACTIVITY_SUM_DAYS.length * sums;
  if (!a.edge || !a.time) {
    out.fill(0, o, o + width);
    out[o + ACTIVITY_COUNT_DAYS.length + 3] = 1;
    return o + width;
  }
  const indices = a.edge.indices!;
  const start = a.edge.indptr![v]!;
  const end = upperBound(indices, a.time, start, a.edge.indptr![v + 1]!, anchor);
  // One search per window: the sums' windows are count windows too.
  for (let w = 0; w < ACTIVITY_COUNT_DAYS.length; w++) {
    const lo = upperBound(indices, a.time, start, end, anchor - ACTIVITY_COUNT_DAYS[w]! * DAY);
    windowStart[w] = lo;
    out[o++] = Math.log1p(end - lo);
  }
  out[o++] = Math.log1p(end - start);
  const none = end === start;
  out[o++] = none ? 0 : Math.log1p(Math.max(0, anchor - a.time[indices[end - 1]!]!) / DAY) / 5;
  out[o++] = none ? 0 : Math.log1p(Math.max(0, anchor - a.time[indices[start]!]!) / DAY) / 5;
  out[o++] = none ? 1 : 0;
  for (const w of SUM_WINDOWS) {
    const lo = windowStart[w]!;
    for (let c = 0; c < sums; c++) {
      const std = a.spec.sums[c]!.std;
      const sum = (a.prefix[c]![end]! - a.prefix[c]![lo]!) / (std > 0 ? std : 1);
      out[o++] = Math.sign(sum) * Math.log1p(Math.abs(sum));
    }
  }
  return o;
}

/** A table's features bound to a graph: the arrays, with codes remapped to the spec's vocabularies. */
export class TableFeatures {
  readonly spec: TableFeatureSpec;
  /** the table's node count (node ids are 0 … rows − 1) */
  readonly rows: number;
  readonly num_dim: number;
  readonly catCount: number;
  private readonly num: Float32Array[];
  private readonly ts: Float64Array[];
  private readonly codes: Int32Array[];
  private readonly time: Float64Array | null;
  private readonly activity: BoundActivity[];
  /** per numeric / categorical column: its label_delay (seconds), or null for a plain input */
  private readonly numDelay: (number | null)[];
  private readonly catDelay: (number | null)[];
  /** the rows' times, for the label_delay test (null: the table has none, and a delayed column reads as null) */
  private readonly rowTime: Float64Array | null;
  /** per categorical column, the offset of its code space in the type's embedding table */
  readonly catOffsets: Int32Array;
  /** the trailing activity inputs' width (the no-graph baseline leaves them out: it has its own) */
  readonly activityDim: number;
  /** whether a node's inputs depend on the anchor (then batches encode a node once per anchor) */
  readonly timeDependent: boolean;

  /** `graph` is needed only for activity inputs (the entity table of the run). */
  constructor(table: NodeTable, spec: TableFeatureSpec, graph?: Graph) {
    this.spec = spec;
    this.rows = table.rows;
    this.num_dim = numericDim(spec);
    this.activityDim = activityDim(spec);
    this.activity = (spec.activity ?? []).map((a) => bindActivity(graph, table.name, a));
    this.numDelay = spec.numeric.map((c) => c.label_delay ?? null);
    this.catDelay = spec.categorical.map((c) => c.label_delay ?? null);
    this.rowTime = table.time;
    const delayed = this.numDelay.some((d) => d !== null) || this.catDelay.some((d) => d !== null);
    this.timeDependent = spec.has_time || spec.timestamps.length > 0 || this.activity.length > 0 || delayed;
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
        if (Number.isNaN(x) || (this.numDelay[c] !== null && !this.arrived(v, this.numDelay[c]!, anchor))) {
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
      for (const a of this.activity) o = writeActivity(num, o, a, v, anchor);
      const co = (row0 + i) * k;
      for (let c = 0; c < k; c++) {
        const hidden = this.catDelay[c] !== null && !this.arrived(v, this.catDelay[c]!, anchor);
        cat[co + c] = this.catOffsets[c]! + (hidden ? 0 : this.codes[c]![v]!);
      }
    }
  }

  /** Whether row v's label, known `delay` seconds after the row's time, has arrived by `anchor`. */
  private arrived(v: number, delay: number, anchor: number): boolean {
    return this.rowTime !== null && delay > 0 && this.rowTime[v]! + delay <= anchor;
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
  return Object.fromEntries(Object.entries(spec.tables).map(([name, t]) => [name, new TableFeatures(graph.table(name), t, graph)]));
}

/**
 * The target columns an inherited spec (fine-tuning) reads with less protection than the task needs: a
 * column it must never read, or a delayed label read plainly or sooner than `label_delay`. History
 * columns are plain inputs: the sampler alone keeps their label rows out.
 */
export function leakedTargets(spec: FeatureSpec, targets: TargetColumn[]): TargetColumn[] {
  return targets.filter((e) => {
    const t = spec.tables[e.table];
    if (e.history || t === undefined) return false;
    if (t.timestamps.includes(e.column)) return true;
    const read = [...t.numeric, ...t.categorical].filter((c) => c.name === e.column);
    return read.some((c) => e.label_delay === undefined || c.label_delay === undefined || c.label_delay < e.label_delay);
  });
}
