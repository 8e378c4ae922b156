import { describe, expect, it } from 'vitest';
import { auroc, averagePrecision, binaryMetrics, calibration, prCurve, regressionMetrics, rocCurve } from '../../src/task/metrics.js';

describe('AUROC against hand-computed values', () => {
  // AUROC = P(score of a random positive > score of a random negative), ties counted ½.
  const cases: { name: string; labels: number[]; scores: number[]; expected: number }[] = [
    { name: 'perfect ranking', labels: [1, 1, 0, 0], scores: [0.9, 0.8, 0.3, 0.1], expected: 1 },
    { name: 'reversed ranking', labels: [0, 0, 1, 1], scores: [0.9, 0.8, 0.3, 0.1], expected: 0 },
    { name: 'all scores tied', labels: [1, 0, 1, 0, 0], scores: [0.5, 0.5, 0.5, 0.5, 0.5], expected: 0.5 },
    // pairs (pos, neg): (.9,.9) ½, (.9,.5) 1, (.5,.9) 0, (.5,.5) ½, (.1,.9) 0, (.1,.5) 0 → 2/6
    { name: 'ties across classes', labels: [1, 0, 1, 0, 1], scores: [0.9, 0.9, 0.5, 0.5, 0.1], expected: 2 / 6 },
    // pos {.8, .4}, neg {.6, .2, .4}: (.8: 3 wins) + (.4: beats .2, ties .4, loses .6 → 1.5) = 4.5 / 6
    { name: 'one tie, unsorted input', labels: [0, 1, 0, 1, 0], scores: [0.6, 0.8, 0.2, 0.4, 0.4], expected: 4.5 / 6 },
    { name: 'labels as probabilities above/below ½', labels: [0.9, 0.1], scores: [2, 1], expected: 1 },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(auroc(c.labels, c.scores)).toBeCloseTo(c.expected, 12);
    });
  }

  it('is undefined (NaN) with a single class', () => {
    expect(auroc([1, 1], [0.2, 0.3])).toBeNaN();
    expect(auroc([0, 0], [0.2, 0.3])).toBeNaN();
  });

  it('matches the pairwise definition on random data with many ties', () => {
    let s = 12345;
    const rand = (): number => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
    const labels = Array.from({ length: 300 }, () => (rand() < 0.3 ? 1 : 0));
    const scores = Array.from({ length: 300 }, () => Math.round(rand() * 10) / 10);
    let wins = 0;
    let pairs = 0;
    for (let i = 0; i < 300; i++) {
      for (let j = 0; j < 300; j++) {
        if (labels[i] !== 1 || labels[j] !== 0) continue;
        pairs++;
        wins += scores[i]! > scores[j]! ? 1 : scores[i] === scores[j] ? 0.5 : 0;
      }
    }
    expect(auroc(labels, scores)).toBeCloseTo(wins / pairs, 12);
  });
});

describe('average precision (sklearn: Σ (Rₙ − Rₙ₋₁) Pₙ over distinct thresholds)', () => {
  const cases: { name: string; labels: number[]; scores: number[]; expected: number }[] = [
    { name: 'perfect ranking', labels: [1, 1, 0, 0], scores: [0.9, 0.8, 0.3, 0.1], expected: 1 },
    // thresholds .9: P 1/1 R 1/2; .3: P 2/3 R 1 → ½·1 + ½·⅔
    { name: 'one negative between the positives', labels: [1, 0, 1, 0], scores: [0.9, 0.8, 0.3, 0.1], expected: 0.5 + 1 / 3 },
    // .9: tp1 fp1 (P ½, R ⅓); .5: tp2 fp2 (P ½, R ⅔); .1: tp3 fp2 (P ⅗, R 1)
    { name: 'ties grouped at each threshold', labels: [1, 0, 1, 0, 1], scores: [0.9, 0.9, 0.5, 0.5, 0.1], expected: (0.5 + 0.5 + 0.6) / 3 },
    { name: 'all tied: the positive rate', labels: [1, 0, 0, 0], scores: [0.3, 0.3, 0.3, 0.3], expected: 0.25 },
    { name: 'positives ranked last', labels: [0, 0, 1], scores: [0.9, 0.8, 0.1], expected: 1 / 3 },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(averagePrecision(c.labels, c.scores)).toBeCloseTo(c.expected, 12);
    });
  }

  it('is undefined (NaN) without positives', () => {
    expect(averagePrecision([0, 0], [0.1, 0.2])).toBeNaN();
  });
});

describe('binaryMetrics: accuracy and F1 at threshold 0.5 (≥ 0.5 is positive), rounded to 4 digits', () => {
  it('counts a probability of exactly 0.5 as a positive prediction', () => {
    // labels 1 1 0 0 1 0; predicted 1 0 1 0 1 1 → tp 2, fp 2, fn 1, tn 1
    const m = binaryMetrics([1, 1, 0, 0, 1, 0], [0.9, 0.2, 0.5, 0.1, 0.7, 0.6]);
    expect(m.accuracy).toBe(0.5);
    expect(m.f1).toBe(Math.round(((2 * 2) / (2 * 2 + 2 + 1)) * 1e4) / 1e4);
    expect(m.positive_rate).toBe(0.5);
    expect(m.n).toBe(6);
    // pos {.9, .2, .7}, neg {.5, .1, .6}: .9 → 3, .7 → 3, .2 → 1: 7/9
    expect(m.auroc).toBe(Math.round((7 / 9) * 1e4) / 1e4);
  });

  it('F1 is 0 when nothing is predicted positive and there are no positives', () => {
    const m = binaryMetrics([0, 0], [0.1, 0.2]);
    expect(m.f1).toBe(0);
    expect(m.accuracy).toBe(1);
    expect(m.auroc).toBeNaN();
  });
});

describe('regressionMetrics', () => {
  it('MAE, RMSE and R² against hand-computed values', () => {
    // errors .5, 0, −1, 1 → MAE 2.5/4; MSE 2.25/4 → RMSE .75; mean 2.5, SST 5 → R² = 1 − 2.25/5
    expect(regressionMetrics([1, 2, 3, 4], [1.5, 2, 2, 5])).toEqual({ mae: 0.625, rmse: 0.75, r2: 0.55, n: 4 });
  });

  it('a perfect prediction has R² 1; predicting the mean has R² 0; constant labels leave R² undefined', () => {
    expect(regressionMetrics([1, 2, 3], [1, 2, 3])).toEqual({ mae: 0, rmse: 0, r2: 1, n: 3 });
    expect(regressionMetrics([1, 2, 3], [2, 2, 2]).r2).toBe(0);
    expect(regressionMetrics([2, 2], [1, 3]).r2).toBeNaN();
  });

});

describe('curves for reports', () => {
  it('ROC runs from (0, 0) to (1, 1) with one point per distinct score', () => {
    expect(rocCurve([1, 0, 1, 0], [0.9, 0.8, 0.8, 0.1])).toEqual([[0, 0], [0, 0.5], [0.5, 1], [1, 1]]);
  });

  it('PR has one (recall, precision) point per distinct score', () => {
    expect(prCurve([1, 0, 1, 0], [0.9, 0.8, 0.8, 0.1])).toEqual([[0.5, 1], [1, 0.6667], [1, 0.5]]);
  });

  it('ROC is thinned to at most `max` points, keeping both ends', () => {
    const n = 1000;
    const pts = rocCurve(Array.from({ length: n }, (_, i) => i % 2), Array.from({ length: n }, (_, i) => i / n), 50);
    expect(pts).toHaveLength(50);
    expect(pts[0]).toEqual([0, 0]);
    expect(pts[49]).toEqual([1, 1]);
  });

  it('calibration bins mean predicted vs observed rates, skipping empty bins', () => {
    expect(calibration([0, 1, 1, 0], [0.05, 0.15, 0.95, 1.0], 10)).toEqual([
      { bin: 0, predicted: 0.05, observed: 0, count: 1 },
      { bin: 1, predicted: 0.15, observed: 1, count: 1 },
      { bin: 9, predicted: 0.975, observed: 0.5, count: 2 },
    ]);
  });
});

describe('recall and precision at a fixed false-positive rate', () => {
  it('takes the lowest threshold whose FPR stays within the bound, ties flagged together', async () => {
    const { atFalsePositiveRates } = await import('../../src/task/metrics.js');
    // 100 negatives scored 0..0.99 and 10 positives: 5 above every negative, 5 tied with the top negative.
    const labels: number[] = [];
    const scores: number[] = [];
    for (let i = 0; i < 100; i++) (labels.push(0), scores.push(i / 100));
    for (let i = 0; i < 5; i++) (labels.push(1), scores.push(2));
    for (let i = 0; i < 5; i++) (labels.push(1), scores.push(0.99));
    const m = atFalsePositiveRates(labels, scores);
    // FPR 1%: the 5 clean positives plus the tie group at 0.99 (1 negative = 1% FPR) → 10 TP, 1 FP.
    expect(m.recall_at_fpr_1).toBe(1);
    expect(m.precision_at_fpr_1).toBeCloseTo(10 / 11, 4);
    // FPR 5%: four more negatives (0.95..0.98) flagged, no more positives.
    expect(m.recall_at_fpr_5).toBe(1);
    expect(m.precision_at_fpr_5).toBeCloseTo(10 / 15, 4);
  });

  it('a ranking with no positive above any negative has zero recall at 1%', async () => {
    const { atFalsePositiveRates } = await import('../../src/task/metrics.js');
    const m = atFalsePositiveRates([1, 0, 0, 0], [0.1, 0.9, 0.8, 0.7]);
    expect(m.recall_at_fpr_1).toBe(0);
  });
});
