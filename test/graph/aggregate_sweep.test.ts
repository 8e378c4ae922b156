/**
 * The linear sweep of graph/aggregate_sweep.ts against the definition computed row by row: for every
 * probe, the rows of its key dated in [anchor − window, anchor) — ties at the anchor's own time left out —
 * counted, summed, averaged, their extremes, the last value, the mean of the last n values (windowless), the recency and a share, with missing values
 * and second-hop rows (a parent id column) on random data with many equal timestamps.
 */
import { describe, expect, it } from 'vitest';
import { sweepAggregates, type SweepExpr } from '../../src/graph/aggregate_sweep.js';
import { Rng } from '../../src/core/rng.js';

const DAY = 86400;

function fixture(seed: number) {
  const rng = new Rng(seed);
  const rows: { key: number; t: number; v: number; ind: number; parent: number }[] = [];
  for (let i = 0; i < 600; i++) {
    // Whole days only, so many rows (and probes) share a timestamp.
    rows.push({ key: Math.floor(rng.next() * 12), t: Math.floor(rng.next() * 60) * DAY, v: rng.next() < 0.2 ? Number.NaN : Math.round(rng.next() * 100) - 50, ind: rng.next() < 0.3 ? 1 : 0, parent: rng.next() < 0.25 ? Number.NaN : 1 });
  }
  rows.sort((a, b) => a.key - b.key || a.t - b.t);
  const probes: { key: number; anchor: number; out: number }[] = [];
  for (let i = 0; i < 300; i++) probes.push({ key: Math.floor(rng.next() * 14), anchor: Math.floor(rng.next() * 65) * DAY, out: i });
  probes.sort((a, b) => a.key - b.key || a.anchor - b.anchor || a.out - b.out);
  return { rows, probes };
}

function brute(rows: ReturnType<typeof fixture>['rows'], p: { key: number; anchor: number }, e: SweepExpr): number {
  const sel = rows.filter((r) => r.key === p.key && r.t < p.anchor && (e.window === null || r.t >= p.anchor - e.window));
  const counted = e.rows < 0 ? sel : sel.filter((r) => !Number.isNaN(r.parent));
  const vals = (e.input === 0 ? sel.map((r) => r.v) : sel.map((r) => r.ind)).filter((v) => !Number.isNaN(v));
  switch (e.fn) {
    case 'count':
      return counted.length;
    case 'since':
      return sel.length ? (p.anchor - Math.max(...sel.map((r) => r.t))) / DAY : Number.NaN;
    case 'last': {
      const withValue = sel.filter((r) => !Number.isNaN(r.v));
      return withValue.length ? withValue[withValue.length - 1]!.v : Number.NaN;
    }
    case 'sum':
      return vals.length ? vals.reduce((s, v) => s + v, 0) : e.missing === 'zero' ? 0 : Number.NaN;
    case 'avg':
      return vals.length ? vals.reduce((s, v) => s + v, 0) / vals.length : Number.NaN;
    case 'min':
      return vals.length ? Math.min(...vals) : Number.NaN;
    case 'max':
      return vals.length ? Math.max(...vals) : Number.NaN;
    case 'last_n': {
      // the latest n non-missing values of the key before the anchor, whatever the window
      const before = rows.filter((r) => r.key === p.key && r.t < p.anchor && !Number.isNaN(r.v)).slice(-e.n!);
      return before.length ? before.reduce((s, r) => s + r.v, 0) / before.length : Number.NaN;
    }
    case 'share':
      return counted.length ? counted.filter((r) => r.ind === 1).length / counted.length : Number.NaN;
  }
}

describe('sweepAggregates', () => {
  it('equals the row-by-row definition for every function, window and key (ties at the anchor excluded)', () => {
    const exprs: SweepExpr[] = [];
    for (const window of [7 * DAY, 30 * DAY, null]) {
      exprs.push({ fn: 'count', input: -1, rows: -1, window, missing: 'zero' });
      exprs.push({ fn: 'count', input: -1, rows: 2, window, missing: 'zero' });
      exprs.push({ fn: 'sum', input: 0, rows: -1, window, missing: 'zero' });
      for (const fn of ['avg', 'min', 'max'] as const) exprs.push({ fn, input: 0, rows: -1, window, missing: 'null' });
      exprs.push({ fn: 'share', input: 1, rows: -1, window, missing: 'null' });
      // A second hop's indicator is missing where the row reaches no parent.
      exprs.push({ fn: 'share', input: 3, rows: 2, window, missing: 'null' });
    }
    exprs.push({ fn: 'since', input: -1, rows: -1, window: null, missing: 'null' });
    exprs.push({ fn: 'last', input: 0, rows: -1, window: null, missing: 'null' });
    for (const n of [1, 5, 10]) exprs.push({ fn: 'last_n', n, input: 0, rows: -1, window: n === 5 ? 7 * DAY : null, missing: 'null' });
    for (const seed of [1, 2, 3]) {
      const { rows, probes } = fixture(seed);
      const got = sweepAggregates(
        { key: Int32Array.from(rows, (r) => r.key), t: Float64Array.from(rows, (r) => r.t), columns: [Float64Array.from(rows, (r) => r.v), Float64Array.from(rows, (r) => r.ind), Float64Array.from(rows, (r) => r.parent), Float64Array.from(rows, (r) => (Number.isNaN(r.parent) ? Number.NaN : r.ind))] },
        { key: Int32Array.from(probes, (p) => p.key), anchor: Float64Array.from(probes, (p) => p.anchor), out: Int32Array.from(probes, (p) => p.out) },
        exprs,
        probes.length,
      );
      let nonTrivial = 0;
      for (const p of probes) {
        exprs.forEach((e, k) => {
          const want = brute(rows, p, e);
          const v = got[k]![p.out]!;
          if (Number.isNaN(want)) expect(v, `${e.fn} ${e.window} probe ${p.out}`).toBeNaN();
          else expect(v, `${e.fn} ${e.window} probe ${p.out}`).toBeCloseTo(want, 9);
          if (!Number.isNaN(want) && want !== 0) nonTrivial++;
        });
      }
      expect(nonTrivial).toBeGreaterThan(probes.length * 5);
    }
  });

  it('leaves examples whose key has no rows at 0 for counts and sums and NaN otherwise', () => {
    const exprs: SweepExpr[] = [
      { fn: 'count', input: -1, rows: -1, window: null, missing: 'zero' },
      { fn: 'sum', input: 0, rows: -1, window: null, missing: 'zero' },
      { fn: 'avg', input: 0, rows: -1, window: null, missing: 'null' },
    ];
    const got = sweepAggregates({ key: Int32Array.of(1, 1), t: Float64Array.of(0, DAY), columns: [Float64Array.of(2, 4)] }, { key: Int32Array.of(0, 1, 2), anchor: Float64Array.of(DAY, 2 * DAY, DAY), out: Int32Array.of(0, 1, 2) }, exprs, 4);
    expect(Array.from(got[0]!)).toEqual([0, 2, 0, 0]);
    expect(Array.from(got[1]!)).toEqual([0, 6, 0, 0]);
    expect(Array.from(got[2]!).map((v) => (Number.isNaN(v) ? null : v))).toEqual([null, 3, null, null]);
  });
});
