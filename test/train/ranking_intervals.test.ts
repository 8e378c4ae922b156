import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/rng.js';
import { chooseRanking, meanInterval, perUserRanking } from '../../src/train/ranking_intervals.js';
import { rankingMetrics } from '../../src/task/metrics.js';

/** n users' AP@k with a given mean: a share `p` of users at 1, the rest at 0 (seeded order). */
function scores(n: number, p: number, seed: number): Float64Array {
  const rng = new Rng(seed);
  const x = new Float64Array(n);
  for (let i = 0; i < Math.round(n * p); i++) x[i] = 1;
  return rng.shuffle(x);
}

describe('per-user ranking scores', () => {
  it('average to rankingMetrics\' figures', () => {
    const labels = { offsets: Int32Array.from([0, 2, 3, 3]), items: Int32Array.from([5, 7, 1]) };
    const ranked = Int32Array.from([7, 9, 5, 1, 2, 3, 4, 6, 8]);
    const p = perUserRanking(labels, ranked, 3);
    const m = rankingMetrics(labels, ranked, 3);
    expect(p.map_at_k[0]).toBeCloseTo((1 + 2 / 3) / 2, 5);
    expect(p.map_at_k[1]).toBe(1);
    expect(p.map_at_k[2]).toBe(0);
    expect((p.map_at_k[0]! + p.map_at_k[1]! + p.map_at_k[2]!) / 3).toBeCloseTo(m.map_at_k, 4);
    expect((p.recall_at_k[0]! + p.recall_at_k[1]!) / 3).toBeCloseTo(m.recall_at_k, 4);
  });
});

describe('paired bootstrap of a mean difference', () => {
  it('holds the point lift and is narrower than the unpaired spread when users are correlated', () => {
    const base = scores(2000, 0.3, 1);
    const better = Float64Array.from(base, (x, i) => (i % 20 === 0 ? 1 : x));
    const lift = meanInterval(better, 7, base)!;
    const point = better.reduce((a, b) => a + b) / 2000 - base.reduce((a, b) => a + b) / 2000;
    expect(lift[0]).toBeGreaterThan(0);
    expect(lift[0]).toBeLessThanOrEqual(point);
    expect(lift[1]).toBeGreaterThanOrEqual(point);
    expect(meanInterval(new Float64Array(0), 1)).toBeNull();
    expect(meanInterval(base, 1, new Float64Array(3))).toBeNull();
  });
});

describe('the served list: more complex only beyond the paired interval', () => {
  const n = 3000;
  const heur = scores(n, 0.3, 2);
  it('keeps the heuristic on a tie within noise, even when the model leads on the point score', () => {
    // the model differs from the heuristic on 40 users, 21 up and 19 down: a point lead, no clear win
    const model = Float64Array.from(heur);
    let up = 0;
    let down = 0;
    for (let i = 0; i < n && (up < 21 || down < 19); i++) {
      if (heur[i] === 0 && up < 21) (model[i] = 1), up++;
      else if (heur[i] === 1 && down < 19) (model[i] = 0), down++;
    }
    const c = chooseRanking(
      [
        { name: 'model', tier: 1, val_ap: model },
        { name: 'repeat', tier: 0, val_ap: heur },
        { name: 'popularity', tier: 0, val_ap: scores(n, 0.2, 3) },
      ],
      12,
      5,
    );
    expect(c.chosen).toBe('repeat');
    expect(c.simple_best).toBe('repeat');
    expect(c.val_lift.model![0]).toBeLessThanOrEqual(0);
    expect(c.val_lift.model![1]).toBeGreaterThan(0);
    expect(c.chosen_reason).toMatch(/^repeat is kept .*model vs repeat \+0\.0007 \[95% -?\d\.\d{4}, \d\.\d{4}\], not above 0/);
  });
  it('serves the complex list on a clear win, and the re-ranker must then beat the model', () => {
    const model = Float64Array.from(heur, (x, i) => (i % 10 === 0 ? 1 : x));
    const reranker = Float64Array.from(model, (x, i) => (i % 10 === 1 && i % 7 === 0 ? 1 : x));
    const c = chooseRanking(
      [
        { name: 'reranker', tier: 2, val_ap: reranker },
        { name: 'model', tier: 1, val_ap: model },
        { name: 'repeat', tier: 0, val_ap: heur },
      ],
      12,
      5,
    );
    expect(c.val_lift.model![0]).toBeGreaterThan(0);
    expect(c.chosen).toBe(c.val_lift.reranker![0] > 0 ? 'reranker' : 'model');
    expect(c.chosen_reason).toContain('model beats repeat by');
    // a clearly better re-ranker over a tied model is judged against the heuristic, and served
    const strong = Float64Array.from(heur, (x, i) => (i % 5 === 0 ? 1 : x));
    const d = chooseRanking(
      [
        { name: 'repeat', tier: 0, val_ap: heur },
        { name: 'model', tier: 1, val_ap: Float64Array.from(heur) },
        { name: 'reranker', tier: 2, val_ap: strong },
      ],
      12,
      5,
    );
    expect(d).toMatchObject({ chosen: 'reranker', simple_best: 'repeat' });
    expect(d.val_lift.reranker![0]).toBeGreaterThan(0);
  });
});
