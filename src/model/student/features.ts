/**
 * The student's input features, computed in TypeScript for a batch of examples from the graph's arrays —
 * exactly the formulas of `spec.ts`, which the exported ONNX graph computes from raw request values.
 * Float32 rounding follows the ONNX side: standardization in float32, time differences in float64
 * rounded once to float32.
 */
import type { Graph, NodeTable } from '../../graph/graph.js';
import { remapCodes } from '../features.js';
import { DELTA_CAP_DAYS, MINUTES_PER_DAY, MINUTE_RECENCY_SCALE, LOG_RATIO_CLIP, LOG_RATIO_EPS, elementNumericDim, factNumericDim, type CategoricalSpec, type NumericSpec, type RtiSpec, type StudentSpec } from './spec.js';

const DAY = 86400;

interface BoundColumns {
  num: Float32Array[];
  numSpec: NumericSpec[];
  codes: Int32Array[];
  catSpec: CategoricalSpec[];
}

function bind(table: NodeTable, numeric: NumericSpec[], categorical: CategoricalSpec[]): BoundColumns {
  return {
    num: numeric.map((c) => table.numeric.find((x) => x.meta.name === c.column)!.values),
    numSpec: numeric,
    codes: categorical.map((c) => {
      const col = table.categorical.find((x) => x.meta.name === c.column)!;
      return remapCodes(col.codes, col.meta.vocab, c.vocab);
    }),
    catSpec: categorical,
  };
}

/** The arrays one batch of student inputs is built from. */
export interface StudentData {
  /** fact node per example */
  nodes: Int32Array;
  /** example time (epoch seconds) = the request's anchor_time */
  anchors: Float64Array;
  /** per embedding key: [examples × dim] values (read one example's row at a time) and missing flags */
  embeddings: { values: { subarray(begin: number, end: number): Float32Array }; missing: Float32Array }[];
  /** per hop path: element nodes [examples × maxLength], −1 none */
  rti: Int32Array[];
}

export interface StudentBatch {
  n: number;
  factNum: Float32Array;
  factCat: Int32Array;
  emb: Float32Array[];
  missing: Float32Array[];
  /** per path: [n × N × elementNumericDim], [n × N × catCount], mask [n × N] */
  rtiNum: Float32Array[];
  rtiCat: Int32Array[];
  rtiMask: Float32Array[];
}

export class StudentFeatures {
  private readonly fact: BoundColumns;
  /** the fact row's time; null for entity tasks (the clock reads the example's anchor) */
  private readonly factTime: Float64Array | null;
  private readonly factFk: Map<string, Int32Array>;
  private readonly paths: { spec: RtiSpec; cols: BoundColumns; time: Float64Array; fks: Int32Array[]; ratioIdx: number[] }[];

  constructor(graph: Graph, readonly spec: StudentSpec) {
    const ft = graph.table(spec.fact_table);
    this.fact = bind(ft, spec.numeric, spec.categorical);
    this.factTime = spec.time_column ? ft.time! : null;
    this.factFk = new Map(graph.edges.filter((e) => e.kind === 'fk' && e.src === spec.fact_table).map((e) => [e.meta.column, e.parent!]));
    this.paths = spec.rti.map((r) => {
      const ct = graph.table(r.child_table);
      const childFk = new Map(graph.edges.filter((e) => e.kind === 'fk' && e.src === r.child_table).map((e) => [e.meta.column, e.parent!]));
      return {
        spec: r,
        cols: bind(ct, r.numeric, r.categorical),
        time: ct.time!,
        fks: r.same_keys.map((k) => childFk.get(k.column)!),
        // Each ratio column's index among the fact's numeric columns and the element's.
        ratioIdx: r.ratios.map((c) => spec.numeric.findIndex((x) => x.column === c)),
      };
    });
  }

  batch(data: StudentData, rows: ArrayLike<number>): StudentBatch {
    const n = rows.length;
    const s = this.spec;
    const fd = factNumericDim(s);
    const factNum = new Float32Array(n * fd);
    const factCat = new Int32Array(n * s.categorical.length);
    for (let i = 0; i < n; i++) {
      const r = rows[i]!;
      const v = data.nodes[r]!;
      let o = i * fd;
      o = writeNumeric(factNum, o, this.fact, v);
      const t = this.factTime ? this.factTime[v]! : data.anchors[r]!;
      o = writeClock(factNum, o, t);
      for (let c = 0; c < s.categorical.length; c++) factCat[i * s.categorical.length + c] = s.categorical[c]!.offset + this.fact.codes[c]![v]!;
    }
    const emb: Float32Array[] = [];
    const missing: Float32Array[] = [];
    s.embeddings.forEach((k, j) => {
      const src = data.embeddings[j]!;
      const d = k.dim;
      const e = new Float32Array(n * d);
      const m = new Float32Array(n);
      for (let i = 0; i < n; i++) {
        const r = rows[i]!;
        e.set(src.values.subarray(r * d, (r + 1) * d), i * d);
        m[i] = src.missing[r]!;
      }
      emb.push(e);
      missing.push(m);
    });
    const rtiNum: Float32Array[] = [];
    const rtiCat: Int32Array[] = [];
    const rtiMask: Float32Array[] = [];
    this.paths.forEach((p, pi) => {
      const N = p.spec.max_length;
      const ed = elementNumericDim(p.spec);
      const kc = p.spec.categorical.length;
      const num = new Float32Array(n * N * ed);
      const cat = new Int32Array(n * N * kc);
      const mask = new Float32Array(n * N);
      const elems = data.rti[pi]!;
      for (let i = 0; i < n; i++) {
        const r = rows[i]!;
        const v = data.nodes[r]!;
        const anchor = data.anchors[r]!;
        for (let j = 0; j < N; j++) {
          const el = elems[r * N + j]!;
          if (el < 0) continue;
          const slot = i * N + j;
          mask[slot] = 1;
          let o = slot * ed;
          o = writeNumeric(num, o, p.cols, el);
          const delta = Math.max(0, Math.fround((anchor - p.time[el]!) / DAY));
          num[o++] = Math.log1p(delta) / 5;
          num[o++] = Math.min(delta, DELTA_CAP_DAYS) / DELTA_CAP_DAYS;
          // float32 product, as ONNX computes it
          if (p.spec.minute_recency) num[o++] = Math.log1p(Math.fround(delta * MINUTES_PER_DAY)) / MINUTE_RECENCY_SCALE;
          p.ratioIdx.forEach((fi, k) => {
            const xf = this.fact.num[fi]![v]!;
            const xe = p.cols.num[p.spec.numeric.findIndex((x) => x.column === p.spec.ratios[k])]![el]!;
            num[o++] = logRatio(xf, xe);
          });
          p.spec.same_keys.forEach((key, k) => {
            const pf = this.factFk.get(key.column)![v]!;
            const pe = p.fks[k]![el]!;
            num[o++] = pf >= 0 && pf === pe ? 1 : 0;
          });
          for (let c = 0; c < kc; c++) cat[slot * kc + c] = p.spec.categorical[c]!.offset + p.cols.codes[c]![el]!;
        }
      }
      rtiNum.push(num);
      rtiCat.push(cat);
      rtiMask.push(mask);
    });
    return { n, factNum, factCat, emb, missing, rtiNum, rtiCat, rtiMask };
  }
}

function writeNumeric(out: Float32Array, o: number, cols: BoundColumns, v: number): number {
  for (let c = 0; c < cols.num.length; c++) {
    const x = cols.num[c]![v]!;
    const m = cols.numSpec[c]!;
    if (Number.isNaN(x)) {
      out[o++] = 0;
      out[o++] = 1;
    } else {
      // float32 arithmetic, as ONNX does it: (x − mean) / std with float32 operands.
      out[o++] = Math.fround(Math.fround(x - Math.fround(m.mean)) / Math.fround(m.std));
      out[o++] = 0;
    }
  }
  return o;
}

/** Hour-of-day and day-of-week of an epoch-seconds time, as sin/cos pairs. */
export function writeClock(out: Float32Array, o: number, t: number): number {
  const hour = Math.fround((((t % DAY) + DAY) % DAY) / 3600);
  const dow = Math.floor(t / DAY) % 7;
  out[o++] = Math.sin((2 * Math.PI * hour) / 24);
  out[o++] = Math.cos((2 * Math.PI * hour) / 24);
  out[o++] = Math.sin((2 * Math.PI * dow) / 7);
  out[o++] = Math.cos((2 * Math.PI * dow) / 7);
  return o;
}

export function logRatio(xf: number, xe: number): number {
  if (Number.isNaN(xf) || Number.isNaN(xe)) return 0;
  const r = Math.fround(Math.fround(Math.log(Math.fround(Math.abs(xf) + LOG_RATIO_EPS))) - Math.fround(Math.log(Math.fround(Math.abs(xe) + LOG_RATIO_EPS))));
  return Math.max(-LOG_RATIO_CLIP, Math.min(LOG_RATIO_CLIP, r));
}
