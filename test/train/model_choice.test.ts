/**
 * The `model.kind: auto` rule (src/train/model_choice.ts): the best on validation unless a cheaper
 * candidate ties with it within the paired bootstrap interval; cost order gbdt < hybrid < gnn.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/rng.js';
import { auroc, regressionMetrics } from '../../src/task/metrics.js';
import { chooseModel, COST_ORDER, type CandidateKind, type CandidateScore } from '../../src/train/model_choice.js';

const BINARY = { name: 'auroc', higherIsBetter: true };
const MAE = { name: 'mae', higherIsBetter: false };

/** n binary labels and predictions whose AUROC grows with `signal` (0: noise). */
function binarySample(n: number, seed: number): { labels: Float32Array; predict: (signal: number, noiseSeed: number) => Float32Array } {
  const rng = new Rng(seed);
  const labels = Float32Array.from({ length: n }, () => (rng.next() < 0.3 ? 1 : 0));
  return {
    labels,
    predict: (signal, noiseSeed) => {
      const r = new Rng(noiseSeed);
      return Float32Array.from(labels, (y) => 1 / (1 + Math.exp(-(signal * (y - 0.5) + (r.next() - 0.5) * 2))));
    },
  };
}

function candidate(kind: CandidateKind, labels: Float32Array, pred: Float32Array): CandidateScore {
  return { kind, val_score: auroc(labels, pred), val_pred: pred };
}

describe('chooseModel', () => {
  it('cost order: trees, then hybrid, then the GNN', () => {
    expect(COST_ORDER).toEqual(['gbdt', 'hybrid', 'gnn']);
  });

  it('keeps the GNN when it is ahead of both tree models beyond the interval', () => {
    const s = binarySample(800, 1);
    const r = chooseModel({ kind: 'binary', metric: BINARY, labels: s.labels, seed: 7, candidates: [candidate('gnn', s.labels, s.predict(4, 2)), candidate('gbdt', s.labels, s.predict(0.5, 3)), candidate('hybrid', s.labels, s.predict(1, 4))] });
    expect(r.chosen).toBe('gnn');
    expect(r.best).toBe('gnn');
    expect(r.val_lift_vs_best.gbdt![0]).toBeGreaterThan(0);
    expect(r.val_lift_vs_best.hybrid![0]).toBeGreaterThan(0);
    expect(r.chosen_reason).toMatch(/GNN is the best on validation/);
  });

  it('takes the trees when the GNN is ahead by less than the interval (a tie goes to the cheaper)', () => {
    const s = binarySample(300, 5);
    const gnn = s.predict(1.6, 11);
    // The same scores with a little noise: a hair behind the GNN on the point estimate.
    const r0 = new Rng(12);
    const gbdt = Float32Array.from(gnn, (p) => p + (r0.next() - 0.5) * 0.02);
    const cands = [candidate('gnn', s.labels, gnn), candidate('gbdt', s.labels, gbdt)];
    if (cands[1]!.val_score > cands[0]!.val_score) cands[1]!.val_score = cands[0]!.val_score - 1e-4; // keep the GNN ahead on the point score
    const r = chooseModel({ kind: 'binary', metric: BINARY, labels: s.labels, seed: 7, candidates: cands });
    expect(r.best).toBe('gnn');
    expect(r.chosen).toBe('gbdt');
    const lift = r.val_lift_vs_best.gbdt!;
    expect(lift[0]).toBeLessThanOrEqual(0);
    expect(lift[1]).toBeGreaterThanOrEqual(0);
    expect(r.chosen_reason).toMatch(/tie with the best, the GNN/);
  });

  it('prefers the hybrid over the GNN on a tie when the trees alone are clearly behind', () => {
    const s = binarySample(600, 9);
    const gnn = s.predict(3, 21);
    const r0 = new Rng(22);
    const hybrid = Float32Array.from(gnn, (p) => p + (r0.next() - 0.5) * 0.01);
    const cands = [candidate('gnn', s.labels, gnn), candidate('hybrid', s.labels, hybrid), candidate('gbdt', s.labels, s.predict(0.3, 23))];
    cands[1]!.val_score = Math.min(cands[1]!.val_score, cands[0]!.val_score - 1e-4);
    const r = chooseModel({ kind: 'binary', metric: BINARY, labels: s.labels, seed: 3, candidates: cands });
    expect(r.chosen).toBe('hybrid');
    expect(r.val_lift_vs_best.gbdt![0]).toBeGreaterThan(0);
  });

  it('keeps the trees when they are the best outright', () => {
    const s = binarySample(1000, 13);
    const r = chooseModel({ kind: 'binary', metric: BINARY, labels: s.labels, seed: 1, candidates: [candidate('gnn', s.labels, s.predict(0.2, 31)), candidate('gbdt', s.labels, s.predict(3, 32))] });
    expect(r.chosen).toBe('gbdt');
    expect(r.best).toBe('gbdt');
    expect(r.val_lift_vs_best.gnn![0]).toBeGreaterThan(0);
  });

  it('regression: judged on MAE (lower is better), the lift signed so positive means the best is ahead', () => {
    const rng = new Rng(4);
    const labels = Float32Array.from({ length: 800 }, () => rng.next() * 10);
    const good = Float32Array.from(labels, (y) => y + (rng.next() - 0.5) * 0.5);
    const bad = Float32Array.from(labels, (y) => y + (rng.next() - 0.5) * 6);
    const score = (p: Float32Array) => -regressionMetrics(labels, p).mae;
    const r = chooseModel({ kind: 'regression', metric: MAE, labels, seed: 2, candidates: [{ kind: 'gnn', val_score: score(bad), val_pred: bad }, { kind: 'gbdt', val_score: score(good), val_pred: good }] });
    expect(r.chosen).toBe('gbdt');
    expect(r.val_lift_vs_best.gnn![0]).toBeGreaterThan(0);
    expect(r.chosen_reason).toMatch(/mae 0\.\d+/);
  });

  it('no validation score at all (one class): the GNN stays', () => {
    const labels = new Float32Array(50);
    const p = new Float32Array(50).fill(0.5);
    const r = chooseModel({ kind: 'binary', metric: BINARY, labels, seed: 1, candidates: [{ kind: 'gbdt', val_score: Number.NaN, val_pred: p }, { kind: 'gnn', val_score: Number.NaN, val_pred: p }] });
    expect(r.chosen).toBe('gnn');
    expect(r.chosen_reason).toMatch(/no candidate has a validation auroc/);
  });
});
