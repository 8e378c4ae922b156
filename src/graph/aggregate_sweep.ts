/**
 * The arithmetic of relational aggregates (graph/aggregates.ts) in one pass over sorted rows: the child
 * rows of every key sorted by time, the examples ("probes") of every key sorted by anchor. A probe reads
 * the rows dated in [anchor − window, anchor) — strictly before, so rows at the anchor's own second (a
 * fact row itself, its same-second siblings) are never read — and both ends of that range only move
 * forward as the anchor grows, so each aggregate costs O(rows + probes): counts, sums and means from
 * prefix sums restarted at every key (so rows dated after an anchor cannot change its value), extremes
 * from a monotone queue, the last value and the recency from the range's end. A join of every example
 * with every earlier row of its key costs the square of a key's row count instead.
 */

export interface SweepExpr {
  fn: 'count' | 'since' | 'last' | 'sum' | 'avg' | 'min' | 'max' | 'share';
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
  let maxBlock = 0;
  for (let i = 0; i < n; ) {
    let j = i;
    while (j < n && data.key[j] === data.key[i]) j++;
    maxBlock = Math.max(maxBlock, j - i);
    i = j;
  }
  const used = [...new Set(exprs.flatMap((e) => [e.input, e.rows]).filter((c) => c >= 0))];
  const psum = new Map(used.map((c) => [c, new Float64Array(maxBlock + 1)]));
  const pcnt = new Map(used.map((c) => [c, new Float64Array(maxBlock + 1)]));
  const lastOf = new Map(exprs.filter((e) => e.fn === 'last').map((e) => [e.input, new Int32Array(maxBlock + 1)]));
  const windows = [...new Set(exprs.map((e) => e.window))];
  const lo = new Int32Array(windows.length);
  const queues = exprs.map((e) => (e.fn === 'min' || e.fn === 'max' ? new Int32Array(maxBlock) : null));
  const qHead = new Int32Array(exprs.length);
  const qTail = new Int32Array(exprs.length);
  const qPushed = new Int32Array(exprs.length);
  // Per expression, resolved once: its window's slot and its prefix arrays.
  const winOf = exprs.map((e) => windows.indexOf(e.window));
  const sumOf = exprs.map((e) => (e.input >= 0 ? psum.get(e.input)! : null));
  const cntOf = exprs.map((e) => (e.input >= 0 ? pcnt.get(e.input)! : null));
  const rowsOf = exprs.map((e) => (e.rows >= 0 ? pcnt.get(e.rows)! : null));

  let d = 0;
  const P = probes.key.length;
  for (let p = 0; p < P; ) {
    const key = probes.key[p]!;
    let pEnd = p;
    while (pEnd < P && probes.key[pEnd] === key) pEnd++;
    while (d < n && data.key[d]! < key) d++;
    const b0 = d;
    while (d < n && data.key[d] === key) d++;
    const len = d - b0;
    if (len === 0) {
      p = pEnd;
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
    lo.fill(0);
    qHead.fill(0);
    qTail.fill(0);
    qPushed.fill(0);
    let hi = 0;
    for (; p < pEnd; p++) {
      const anchor = probes.anchor[p]!;
      const out = probes.out[p]!;
      while (hi < len && data.t[b0 + hi]! < anchor) hi++;
      for (let w = 0; w < windows.length; w++) {
        const win = windows[w]!;
        if (win === null) continue;
        let l = lo[w]!;
        while (l < hi && data.t[b0 + l]! < anchor - win) l++;
        lo[w] = l;
      }
      for (let e = 0; e < exprs.length; e++) {
        const x = exprs[e]!;
        const l = x.window === null ? 0 : lo[winOf[e]!]!;
        const rc = rowsOf[e] ?? null;
        const rowsIn = rc === null ? hi - l : rc[hi]! - rc[l]!;
        let v: number;
        switch (x.fn) {
          case 'count':
            v = rowsIn;
            break;
          case 'since':
            v = hi > 0 ? (anchor - data.t[b0 + hi - 1]!) / DAY : Number.NaN;
            break;
          case 'last': {
            const j = lastOf.get(x.input)![hi]!;
            v = j >= l ? data.columns[x.input]![b0 + j]! : Number.NaN;
            break;
          }
          case 'sum':
          case 'avg': {
            const k = cntOf[e]![hi]! - cntOf[e]![l]!;
            const s = sumOf[e]![hi]! - sumOf[e]![l]!;
            v = x.fn === 'sum' ? (k > 0 ? s : x.missing === 'zero' ? 0 : Number.NaN) : k > 0 ? s / k : Number.NaN;
            break;
          }
          case 'share':
            v = rowsIn > 0 ? (sumOf[e]![hi]! - sumOf[e]![l]!) / rowsIn : Number.NaN;
            break;
          default:
            v = slidingExtreme(data.columns[x.input]!, b0, l, hi, x.fn === 'min', queues[e]!, e, qHead, qTail, qPushed);
        }
        result[e]![out] = v;
      }
    }
  }
  return result;
}

/**
 * The min (or max) of `col[b0 + l .. b0 + hi)` ignoring NaN, from a monotone queue of block positions:
 * `hi` and `l` never decrease between calls within a block, so each row enters and leaves it once.
 */
function slidingExtreme(col: Float64Array, b0: number, l: number, hi: number, min: boolean, q: Int32Array, e: number, head: Int32Array, tail: Int32Array, pushed: Int32Array): number {
  let h = head[e]!;
  let t = tail[e]!;
  for (let j = pushed[e]!; j < hi; j++) {
    const v = col[b0 + j]!;
    if (v !== v) continue;
    while (t > h && (min ? col[b0 + q[t - 1]!]! >= v : col[b0 + q[t - 1]!]! <= v)) t--;
    q[t++] = j;
  }
  pushed[e] = Math.max(pushed[e]!, hi);
  while (t > h && q[h]! < l) h++;
  head[e] = h;
  tail[e] = t;
  return t > h ? col[b0 + q[h]!]! : Number.NaN;
}
