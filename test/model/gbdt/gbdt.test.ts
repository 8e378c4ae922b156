import { describe, expect, it } from 'vitest';
import { BinMapper, GbdtModel, MISSING_BIN, type GbdtData } from '../../../src/model/gbdt/index.js';
import { BinaryLogLoss, L1Loss, L2Loss, LambdaRankLoss, meanNdcg, type GbdtLoss } from '../../../src/model/gbdt/losses.js';
import { findBestSplit } from '../../../src/model/gbdt/split.js';
import { FEATURE_SLOTS } from '../../../src/model/gbdt/histogram.js';
import { Rng } from '../../../src/core/rng.js';

/** Gradients are float32, so leaf values are exact to ~1e-7, not to the bit. */
function expectValues(actual: Float64Array, expected: number[]): void {
  expect(actual.length).toBe(expected.length);
  expected.forEach((v, i) => expect(actual[i]!).toBeCloseTo(v, 6));
}

function data(...columns: number[][]): GbdtData {
  return { rows: columns[0]!.length, columns: columns.map((c) => Float64Array.from(c)) };
}

/** Rows of a noisy binary problem: 6 numeric features, 2 informative, an interaction and some NaN. */
function synthetic(n: number, seed: number): { d: GbdtData; y: Float64Array } {
  const rng = new Rng(seed);
  const cols = Array.from({ length: 6 }, () => new Float64Array(n));
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    for (const c of cols) c[i] = rng.next() * 2 - 1;
    if (rng.next() < 0.05) cols[2]![i] = NaN;
    const z = 2 * cols[0]![i]! - 1.5 * cols[1]![i]! + 3 * cols[0]![i]! * cols[3]![i]!;
    y[i] = rng.next() < 1 / (1 + Math.exp(-z)) ? 1 : 0;
  }
  return { d: { rows: n, columns: cols }, y };
}

describe('bin mapper', () => {
  it('puts few distinct values in their own bins with midpoint edges, NaN in the missing bin', () => {
    const m = BinMapper.fit(data([3, 1, 2, 2, NaN, 1]), ['numeric'], 255, 1000, 0);
    expect(Array.from(m.values[0]!)).toEqual([1.5, 2.5]);
    expect(Array.from(m.transform(data([1, 2, 3, NaN, 1.5, 100])))).toEqual([0, 1, 2, MISSING_BIN, 0, 2]);
  });

  it('caps numeric features at max_bins quantile bins', () => {
    const v = Array.from({ length: 1000 }, (_, i) => i);
    const m = BinMapper.fit(data(v), ['numeric'], 10, 1000, 0);
    expect(m.valueBins(0)).toBe(10);
    const bins = m.transform(data(v));
    const counts = new Array(10).fill(0);
    for (const b of bins) counts[b]++;
    for (const c of counts) expect(Math.abs(c - 100)).toBeLessThanOrEqual(1);
  });

  it('bins categories by frequency; unseen categories share the missing bin', () => {
    const m = BinMapper.fit(data([7, 7, 7, 3, 3, 9]), ['categorical'], 255, 1000, 0);
    expect(Array.from(m.values[0]!)).toEqual([7, 3, 9]);
    expect(Array.from(m.transform(data([9, 3, 7, 42, NaN])))).toEqual([2, 1, 0, MISSING_BIN, MISSING_BIN]);
  });
});

describe('split finding', () => {
  it('finds the exact best threshold and gain on a hand-built histogram', () => {
    // One feature, bins 0..3 with (gradient, hessian): the best cut is between bins 1 and 2.
    const hist = new Float64Array(FEATURE_SLOTS);
    const g = [-4, -3, 2, 5];
    const h = [2, 2, 2, 2];
    g.forEach((v, b) => {
      hist[b * 2] = v;
      hist[b * 2 + 1] = h[b]!;
    });
    const s = findBestSplit(hist, 0, { g: 0, h: 8, count: 8 }, ['numeric'], [4], { l2: 1, minSamplesLeaf: 1, minHessianLeaf: 0 })!;
    expect(s.bin).toBe(1);
    // G_L = −7, H_L = 4; G_R = 7, H_R = 4; λ = 1; parent G = 0.
    expect(s.gain).toBeCloseTo(49 / 5 + 49 / 5, 12);
    expect(s.left).toEqual({ g: -7, h: 4, count: 4 });
  });

  it('respects min_samples_leaf', () => {
    const hist = new Float64Array(FEATURE_SLOTS);
    [-10, 1, 1, 1, 1, 1, 1, 1, 1, 2].forEach((v, b) => {
      hist[b * 2] = v;
      hist[b * 2 + 1] = 1;
    });
    const rules = { l2: 0, minSamplesLeaf: 3, minHessianLeaf: 0 };
    const s = findBestSplit(hist, 0, { g: 0, h: 10, count: 10 }, ['numeric'], [10], rules)!;
    expect(s.bin).toBe(2);
  });

  it('recovers a step function exactly with one split (l2, learning rate 1)', () => {
    const x = Array.from({ length: 100 }, (_, i) => i % 10);
    const y = x.map((v) => (v >= 6 ? 5 : 0));
    const m = GbdtModel.fit({ train: data(x), y }, { loss: 'l2', learning_rate: 1, max_leaf_nodes: 2, max_iter: 1, min_samples_leaf: 1 });
    const t = m.trees[0]!;
    expect(t.feature[0]).toBe(0);
    expect(m.mapper.values[0]![t.bin[0]!]).toBe(5.5);
    expectValues(m.predict(data([0, 5, 5.4, 5.6, 6, 9])), [0, 0, 0, 5, 5, 5]);
  });
});

describe('losses', () => {
  const raw = Float64Array.from([-2, -0.3, 0, 0.7, 3]);
  const y = Float64Array.from([0, 1, 1, 0, 1]);
  const fd = (f: (r: Float64Array) => number, i: number, e: number): number => {
    const a = Float64Array.from(raw);
    const b = Float64Array.from(raw);
    a[i] = a[i]! + e;
    b[i] = b[i]! - e;
    return ((f(a) - f(b)) / (2 * e)) * raw.length;
  };

  it.each<[string, GbdtLoss]>([
    ['binary', new BinaryLogLoss()],
    ['l2', new L2Loss()],
  ])('%s gradients and hessians match finite differences of the loss', (_name, loss) => {
    const g = new Float32Array(5);
    const h = new Float32Array(5);
    loss.gradients(y, raw, g, h);
    // L2's validation loss is the mean of (f − y)², whose derivative is twice the gradient (½ convention).
    const scale = loss.name === 'l2' ? 2 : 1;
    for (let i = 0; i < 5; i++) {
      expect(g[i]! * scale).toBeCloseTo(fd((r) => loss.validationLoss(y, r, null), i, 1e-5), 4);
      const dg = (r: Float64Array): number => {
        const gg = new Float32Array(5);
        loss.gradients(y, r, gg, new Float32Array(5));
        return gg[i]! / raw.length;
      };
      // Gradients are float32: a wider step keeps their rounding out of the difference.
      expect(h[i]!).toBeCloseTo(fd(dg, i, 1e-2), 3);
    }
  });

  it('l1 gradient is the sign of the residual and its leaves refit to the median', () => {
    const loss = new L1Loss();
    const g = new Float32Array(5);
    const h = new Float32Array(5);
    loss.gradients(y, raw, g, h);
    expect(Array.from(g)).toEqual([-1, -1, -1, 1, 1]);
    expect(Array.from(h)).toEqual([1, 1, 1, 1, 1]);
    expect(loss.refitLeaf(y, raw, Uint32Array.from([0, 1, 3]))).toBe(1.3);
    expect(loss.baseline(Float64Array.from([5, 1, 3, 100]))).toBe(4);
  });

  it('lambdarank pushes a relevant row up and its gradients sum to zero per group', () => {
    const loss = new LambdaRankLoss(Int32Array.from([3, 2]), 0);
    const yy = Float64Array.from([0, 2, 1, 1, 0]);
    const rr = Float64Array.from([1, 0, 0.5, 0, 0]);
    const g = new Float32Array(5);
    const h = new Float32Array(5);
    loss.gradients(yy, rr, g, h);
    expect(g[1]!).toBeLessThan(0);
    expect(g[0]!).toBeGreaterThan(0);
    expect(g[0]! + g[1]! + g[2]!).toBeCloseTo(0, 6);
    expect(g[3]! + g[4]!).toBeCloseTo(0, 6);
    for (const v of h) expect(v).toBeGreaterThan(0);
    expect(meanNdcg(yy, Float64Array.from([0, 2, 1, 1, 0]), Int32Array.from([3, 2]), 0)).toBeCloseTo(1, 12);
  });
});

describe('missing values and categories', () => {
  it('routes missing values to the side whose rows they resemble', () => {
    // NaN rows have the high label, like x > 0.5: the split sends them right.
    const x: number[] = [];
    const y: number[] = [];
    for (let i = 0; i < 300; i++) {
      const kind = i % 3;
      x.push(kind === 0 ? 0.1 : kind === 1 ? 0.9 : NaN);
      y.push(kind === 0 ? 0 : 10);
    }
    const m = GbdtModel.fit({ train: data(x), y }, { loss: 'l2', learning_rate: 1, max_leaf_nodes: 2, max_iter: 1, min_samples_leaf: 1 });
    expect(m.trees[0]!.missingLeft[0]).toBe(0);
    expectValues(m.predict(data([NaN, 0.1, 0.9])), [10, 0, 10]);
  });

  it('sends missing values seen only at prediction to the larger child', () => {
    const x = Array.from({ length: 100 }, (_, i) => (i < 70 ? 0 : 1));
    const y = x.map((v) => v * 3);
    const m = GbdtModel.fit({ train: data(x), y }, { loss: 'l2', learning_rate: 1, max_leaf_nodes: 2, max_iter: 1, min_samples_leaf: 1 });
    expectValues(m.predict(data([NaN])), [0]);
  });

  it('splits a categorical feature on the set of categories, not an order', () => {
    // Codes 0..5; categories 1 and 4 carry the label: no threshold on the codes separates them.
    const c = Array.from({ length: 600 }, (_, i) => i % 6);
    const y = c.map((v) => (v === 1 || v === 4 ? 1 : 0));
    const m = GbdtModel.fit({ train: data(c), y, kinds: ['categorical'] }, { loss: 'l2', learning_rate: 1, max_leaf_nodes: 2, max_iter: 1 });
    const t = m.trees[0]!;
    const left = [...t.catLeft.get(0)!.entries()].filter(([, v]) => v === 1).map(([b]) => m.mapper.values[0]![b]);
    expect(new Set(left)).toSatisfy((s: Set<number>) => (s.size === 2 && s.has(1) && s.has(4)) || (s.size === 4 && !s.has(1) && !s.has(4)));
    expectValues(m.predict(data([0, 1, 2, 3, 4, 5])), [0, 1, 0, 0, 1, 0]);
  });
});

describe('boosting', () => {
  it('early stopping stops `early_stopping_rounds` after the best validation round and keeps the trees up to it', () => {
    const tr = synthetic(2000, 1);
    const va = synthetic(1000, 2);
    const m = GbdtModel.fit({ train: tr.d, y: tr.y, valid: { data: va.d, y: va.y } }, { max_iter: 300, learning_rate: 0.5, early_stopping_rounds: 5 });
    const h = m.history!;
    const v = h.valid_loss;
    let best = Infinity;
    let bestRound = 0;
    v.forEach((x, i) => {
      if (x < best - 1e-7) {
        best = x;
        bestRound = i + 1;
      }
    });
    expect(h.stopped_early).toBe(true);
    expect(h.best_round).toBe(bestRound);
    expect(h.rounds).toBe(bestRound + 5);
    expect(m.trees.length).toBe(bestRound);
    // The kept model scores the validation loss of its best round.
    const p = m.predictRaw(va.d);
    expect(new BinaryLogLoss().validationLoss(va.y, p)).toBeCloseTo(best, 9);
  });

  it('learns a binary problem: validation AUROC well above chance', () => {
    const tr = synthetic(4000, 3);
    const va = synthetic(2000, 4);
    const m = GbdtModel.fit({ train: tr.d, y: tr.y }, { max_iter: 60 });
    expect(auroc(va.y, m.predict(va.d))).toBeGreaterThan(0.8);
    expect(m.featureImportance()[0]!.feature).toMatch(/^f[03]$/);
  });

  it('is deterministic, round-trips through JSON, and gives the same trees on two threads', () => {
    const tr = synthetic(3000, 5);
    const a = GbdtModel.fit({ train: tr.d, y: tr.y }, { max_iter: 15 });
    const b = GbdtModel.fit({ train: tr.d, y: tr.y }, { max_iter: 15 });
    const two = GbdtModel.fit({ train: tr.d, y: tr.y }, { max_iter: 15, threads: 2 });
    expect(two.history!.threads).toBe(2);
    const ja = JSON.stringify({ ...a.toJSON(), history: null, params: null });
    expect(JSON.stringify({ ...b.toJSON(), history: null, params: null })).toBe(ja);
    expect(JSON.stringify({ ...two.toJSON(), history: null, params: null })).toBe(ja);
    const back = GbdtModel.fromJSON(JSON.parse(JSON.stringify(a.toJSON())));
    expect(Array.from(back.predict(tr.d))).toEqual(Array.from(a.predict(tr.d)));
  });

  it('l1 regression fits the conditional median, robust to outliers', () => {
    const rng = new Rng(7);
    const x = Array.from({ length: 2000 }, () => rng.next());
    const y = x.map((v) => (v > 0.5 ? 10 : 0) + (rng.next() < 0.1 ? 1000 : 0));
    const m = GbdtModel.fit({ train: data(x), y }, { loss: 'l1', max_iter: 50 });
    const p = m.predict(data([0.2, 0.8]));
    expect(p[0]!).toBeCloseTo(0, 0);
    expect(p[1]!).toBeCloseTo(10, 0);
  });

  it('lambdarank raises NDCG of groups whose relevance depends on a feature', () => {
    const rng = new Rng(9);
    const groups = Int32Array.from({ length: 200 }, () => 10);
    const x = Array.from({ length: 2000 }, () => rng.next());
    const noise = Array.from({ length: 2000 }, () => rng.next());
    const y = Float64Array.from(x, (v) => (v > 0.8 ? 2 : v > 0.5 ? 1 : 0));
    const m = GbdtModel.fit({ train: data(x, noise), y, groups }, { loss: 'lambdarank', max_iter: 20, min_samples_leaf: 5 });
    const before = meanNdcg(y, Float64Array.from(noise), groups, 10);
    const after = meanNdcg(y, m.predict(data(x, noise)), groups, 10);
    expect(after).toBeGreaterThan(0.99);
    expect(after).toBeGreaterThan(before);
  });

  it('rejects bad parameters and mismatched labels with typed errors', () => {
    expect(() => GbdtModel.fit({ train: data([1, 2, 3]), y: [0, 1, 0] }, { max_bins: 300 })).toThrow(/invalid gradient-boosted tree parameters/);
    expect(() => GbdtModel.fit({ train: data([1, 2, 3]), y: [0, 1] })).toThrow(/2 labels for 3 rows/);
    expect(() => GbdtModel.fit({ train: data([1, 2, 3]), y: [0, 2, 1] })).toThrow(/binary labels must be 0 or 1/);
  });
});

function auroc(y: Float64Array, p: Float64Array): number {
  const idx = Array.from(p.keys()).sort((a, b) => p[a]! - p[b]!);
  let rank = 0;
  let pos = 0;
  let sumPos = 0;
  for (const i of idx) {
    rank++;
    if (y[i] === 1) {
      pos++;
      sumPos += rank;
    }
  }
  const neg = y.length - pos;
  return (sumPos - (pos * (pos + 1)) / 2) / (pos * neg);
}
