/**
 * The arithmetic of relational aggregates (graph/aggregates.ts) in one pass over sorted rows: the child
 * rows of every key sorted by time, the examples ("probes") of every key sorted by anchor. A probe reads
 * the rows dated in [anchor − window, anchor) — strictly before, so rows at the anchor's own second (a
 * fact row itself, its same-second siblings) are never read — and both ends of that range only move
 * forward as the anchor grows, so each aggregate costs O(rows + probes): counts, sums and means from
 * prefix sums restarted at every key (so rows dated after an anchor cannot change its value), extremes
 * from a monotone queue, the last value and the recency from the range's end; the mean of the last n
 * non-missing values from the same prefix sums and a start pointer that only moves forward. A join of every example
 * with every earlier row of its key costs the square of a key's row count instead.
 */

export interface SweepExpr {
  fn: 'count' | 'since' | 'last' | 'sum' | 'avg' | 'min' | 'max' | 'share' | 'last_n';
  /** last_n: how many of the latest non-missing values before the anchor are averaged (the window is ignored) */
  n?: number;
  /** the data column aggregated (share: a 0/1 indicator column); -1 for count and since */
  input: number;
  /** the column whose non-NaN values mark the rows counted (a second hop's parent id); -1: every row */
  rows: number;
  /** seconds before the anchor; null: all history */
  window: number | null;
  /** the value of an example whose key has no rows: 0 (counts, sums) or NaN */
  missing: 'zero' | 'null';
}

/** Child rows sorted by (key, time); NaN marks a missing value. */
export interface SweepData {
  key: Int32Array;
  t: Float64Array;
  columns: Float64Array[];
}

/** Examples sorted by (key, anchor); `out` is each one's row in the result. */
export interface SweepProbes {
  key: Int32Array;
  anchor: Float64Array;
  out: Int32Array;
}

const DAY = 86400;

/** One Float64Array of `rows` values per expression (rows no probe writes keep the missing value). */
export function sweepAggregates(data: SweepData, probes: SweepProbes, exprs: readonly SweepExpr[], rows: number): Float64Array[] {
  const result = exprs.map((e) => new Float64Array(rows).fill(e.missing === 'zero' ? 0 : Number.NaN));
  const n = data.key.length;
  const P = probes.key.length;
  const maxBlock = longestRun(data.key);
  const maxProbes = longestRun(probes.key);
  const used = [...new Set(exprs.flatMap((e) => [e.input, e.rows]).filter((c) => c >= 0))];
  const psum = new Map(used.map((c) => [c, new Float64Array(maxBlock + 1)]));
  const pcnt = new Map(used.map((c) => [c, new Float64Array(maxBlock + 1)]));
  const lastOf = new Map(exprs.filter((e) => e.fn === 'last').map((e) => [e.input, new Int32Array(maxBlock + 1)]));
  const windows = [...new Set(exprs.map((e) => e.window))];
  // Per probe of the current key: the end of its range and, per window, the start (all history: 0).
  const hiOf = new Int32Array(maxProbes);
  const loOf = windows.map(() => new Int32Array(maxProbes));
  const queue = new Int32Array(maxBlock);
  const { t } = data;

  let d = 0;
  for (let p0 = 0; p0 < P; ) {
    const key = probes.key[p0]!;
    let p1 = p0;
    while (p1 < P && probes.key[p1] === key) p1++;
    while (d < n && data.key[d]! < key) d++;
    const b0 = d;
    while (d < n && data.key[d] === key) d++;
    const len = d - b0;
    const m = p1 - p0;
    if (len === 0) {
      p0 = p1;
      continue;
    }
    // Block-relative prefix sums and counts of non-missing values; the last non-missing row before each end.
    for (const c of used) {
      const col = data.columns[c]!;
      const s = psum.get(c)!;
      const k = pcnt.get(c)!;
      for (let j = 0; j < len; j++) {
        const v = col[b0 + j]!;
        const ok = v === v;
        s[j + 1] = s[j]! + (ok ? v : 0);
        k[j + 1] = k[j]! + (ok ? 1 : 0);
      }
    }
    for (const [c, last] of lastOf) {
      const col = data.columns[c]!;
      last[0] = -1;
      for (let j = 0; j < len; j++) last[j + 1] = col[b0 + j]! === col[b0 + j]! ? j : last[j]!;
    }
    let hi = 0;
    for (let i = 0; i < m; i++) {
      const anchor = probes.anchor[p0 + i]!;
      while (hi < len && t[b0 + hi]! < anchor) hi++;
      hiOf[i] = hi;
    }
    windows.forEach((win, w) => {
      const lo = loOf[w]!;
      let l = 0;
      for (let i = 0; i < m; i++) {
        if (win !== null) {
          const from = probes.anchor[p0 + i]! - win;
          while (l < hiOf[i]! && t[b0 + l]! < from) l++;
        }
        lo[i] = Math.min(l, hiOf[i]!);
      }
    });
    exprs.forEach((x, e) => {
      const out = result[e]!;
      const lo = loOf[windows.indexOf(x.window)]!;
      const rc = x.rows >= 0 ? pcnt.get(x.rows)! : null;
      const sum = x.input >= 0 ? psum.get(x.input)! : null;
      const cnt = x.input >= 0 ? pcnt.get(x.input)! : null;
      const o = probes.out;
      switch (x.fn) {
        case 'count':
          for (let i = 0; i < m; i++) out[o[p0 + i]!] = rc ? rc[hiOf[i]!]! - rc[lo[i]!]! : hiOf[i]! - lo[i]!;
          break;
        case 'since':
          for (let i = 0; i < m; i++) out[o[p0 + i]!] = hiOf[i]! > 0 ? (probes.anchor[p0 + i]! - t[b0 + hiOf[i]! - 1]!) / DAY : Number.NaN;
          break;
        case 'last': {
          const last = lastOf.get(x.input)!;
          const col = data.columns[x.input]!;
          for (let i = 0; i < m; i++) {
            const j = last[hiOf[i]!]!;
            out[o[p0 + i]!] = j >= lo[i]! ? col[b0 + j]! : Number.NaN;
          }
          break;
        }
        case 'sum':
        case 'avg': {
          const none = x.fn === 'sum' && x.missing === 'zero' ? 0 : Number.NaN;
          for (let i = 0; i < m; i++) {
            const k = cnt![hiOf[i]!]! - cnt![lo[i]!]!;
            const v = sum![hiOf[i]!]! - sum![lo[i]!]!;
            out[o[p0 + i]!] = k > 0 ? (x.fn === 'sum' ? v : v / k) : none;
          }
          break;
        }
        case 'last_n': {
          // Any start with cnt[j] = cnt[hi] − n bounds the same values; the first such j only grows with hi.
          const n = x.n ?? 1;
          let j = 0;
          for (let i = 0; i < m; i++) {
            const hi = hiOf[i]!;
            const from = cnt![hi]! - n;
            while (cnt![j]! < from) j++;
            const k = cnt![hi]! - cnt![j]!;
            out[o[p0 + i]!] = k > 0 ? (sum![hi]! - sum![j]!) / k : Number.NaN;
          }
          break;
        }
        case 'share':
          for (let i = 0; i < m; i++) {
            const r = rc ? rc[hiOf[i]!]! - rc[lo[i]!]! : hiOf[i]! - lo[i]!;
            out[o[p0 + i]!] = r > 0 ? (sum![hiOf[i]!]! - sum![lo[i]!]!) / r : Number.NaN;
          }
          break;
        default:
          slidingExtreme(data.columns[x.input]!, b0, lo, hiOf, m, x.fn === 'min', queue, out, o, p0);
      }
    });
    p0 = p1;
  }
  return result;
}

/** The longest run of equal values in a sorted array. */
function longestRun(a: Int32Array): number {
  let best = 0;
  for (let i = 0; i < a.length; ) {
    let j = i;
    while (j < a.length && a[j] === a[i]) j++;
    best = Math.max(best, j - i);
    i = j;
  }
  return best;
}

/**
 * The min (or max) of `col[b0 + lo[i] .. b0 + hi[i])` ignoring NaN for each of a key's `m` probes, from a
 * monotone queue of block positions: both ends never decrease, so each row enters and leaves it once.
 */
function slidingExtreme(col: Float64Array, b0: number, lo: Int32Array, hi: Int32Array, m: number, min: boolean, q: Int32Array, out: Float64Array, o: Int32Array, p0: number): void {
  let h = 0;
  let tl = 0;
  let pushed = 0;
  for (let i = 0; i < m; i++) {
    for (; pushed < hi[i]!; pushed++) {
      const v = col[b0 + pushed]!;
      if (v !== v) continue;
      while (tl > h && (min ? col[b0 + q[tl - 1]!]! >= v : col[b0 + q[tl - 1]!]! <= v)) tl--;
      q[tl++] = pushed;
    }
    while (tl > h && q[h]! < lo[i]!) h++;
    out[o[p0 + i]!] = tl > h ? col[b0 + q[h]!]! : Number.NaN;
  }
}
