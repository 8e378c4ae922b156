/**
 * The baseline MLP on small data: a training set smaller than one batch must still get enough optimizer
 * steps to learn (a 1,000-example churn task once got one step per epoch and scored below a coin).
 */
import { tf } from '../../src/core/tf.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { binaryMetrics } from '../../src/task/metrics.js';
import { fitMlp } from '../../src/model/mlp.js';
import { Rng } from '../../src/core/rng.js';

beforeAll(async () => {
  await tf.setBackend('cpu');
});

/** n rows, d features; the label is 1 with probability sigmoid(2·x0 − 1.5·x1 + 1.5), the rest is noise. */
function data(n: number, d: number, seed: number): { X: Float32Array; y: Float32Array } {
  const rng = new Rng(seed);
  const X = new Float32Array(n * d);
  const y = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    for (let c = 0; c < d; c++) X[i * d + c] = rng.normal();
    const z = 2 * X[i * d]! - 1.5 * X[i * d + 1]! + 1.5;
    y[i] = rng.next() < 1 / (1 + Math.exp(-z)) ? 1 : 0;
  }
  return { X, y };
}

describe('fitMlp on fewer rows than one batch', () => {
  it('learns the signal and the base rate from 600 rows (batch 1024)', () => {
    const d = 12;
    const train = data(600, d, 1);
    const val = data(300, d, 2);
    const test = data(2000, d, 3);
    const r = fitMlp(d, train, val, [test.X], { kind: 'binary', seed: 0 });
    const p = r.predictions[0]!;
    expect(binaryMetrics(test.y, p).auroc).toBeGreaterThan(0.8);
    // predicted probabilities average near the positive rate: the output moved from its 0.5 start
    const rate = test.y.reduce((a, b) => a + b, 0) / test.y.length;
    const mean = p.reduce((a, b) => a + b, 0) / p.length;
    expect(Math.abs(mean - rate)).toBeLessThan(0.05);
    // 600 rows, batch 1024: still 16 steps an epoch (was 1), for every epoch run before early stopping
    expect(r.steps % 16).toBe(0);
    expect(r.steps).toBeGreaterThanOrEqual(16 * 5);
  });
});
