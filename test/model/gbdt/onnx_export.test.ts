import { describe, expect, it } from 'vitest';
import { GbdtModel, type GbdtData, type GbdtLossName } from '../../../src/model/gbdt/index.js';
import { gbdtToOnnx } from '../../../src/model/gbdt/onnx_export.js';
import { Rng } from '../../../src/core/rng.js';
import { f32, runModel } from '../../artifacts/onnx/ort_helpers.js';

/** Float32 columns (what the ONNX input holds): 3 numeric with NaN, 1 categorical code in 0..7. */
function rows(n: number, seed: number, unseen = false): GbdtData {
  const rng = new Rng(seed);
  const cols = Array.from({ length: 4 }, () => new Float32Array(n));
  for (let i = 0; i < n; i++) {
    for (let f = 0; f < 3; f++) cols[f]![i] = rng.next() < 0.1 ? NaN : rng.next() * 4 - 2;
    // Prediction rows also carry codes the model never saw (8, 9) and missing codes.
    const c = Math.floor(rng.next() * (unseen ? 10 : 8));
    cols[3]![i] = unseen && rng.next() < 0.05 ? NaN : c;
  }
  return { rows: n, columns: cols };
}

function labels(d: GbdtData, loss: GbdtLossName, seed: number): Float64Array {
  const rng = new Rng(seed);
  const [a, b, c, k] = d.columns as Float32Array[];
  return Float64Array.from({ length: d.rows }, (_, i) => {
    const x = Number.isNaN(a![i]!) ? 1 : a![i]!;
    const z = x * 1.5 - (Number.isNaN(b![i]!) ? 0 : b![i]! * b![i]!) + ([1, 4, 6].includes(k![i]!) ? 2 : -1) + (c![i]! > 0.5 ? 1 : 0);
    return loss === 'binary' ? (rng.next() < 1 / (1 + Math.exp(-z)) ? 1 : 0) : z + rng.next();
  });
}

function rowMajor(d: GbdtData): Float32Array {
  const F = d.columns.length;
  const out = new Float32Array(d.rows * F);
  for (let f = 0; f < F; f++) for (let i = 0; i < d.rows; i++) out[i * F + f] = d.columns[f]![i]!;
  return out;
}

describe('GBDT → ONNX TreeEnsemble parity through onnxruntime', () => {
  it.each<[GbdtLossName, string]>([
    ['binary', 'probability'],
    ['l2', 'prediction'],
    ['l1', 'prediction'],
  ])('%s: onnxruntime matches predict within 1e-5 on rows with missing values and unseen categories', async (loss, output) => {
    const train = rows(3000, 1);
    const model = GbdtModel.fit(
      { train, y: labels(train, loss, 2), kinds: ['numeric', 'numeric', 'numeric', 'categorical'] },
      { loss, max_iter: 30, max_leaf_nodes: 15, min_samples_leaf: 10 },
    );
    expect(model.trees.some((t) => t.catLeft.size > 0)).toBe(true);
    const test = rows(500, 3, true);
    const expected = model.predict(test);
    const out = await runModel(gbdtToOnnx(model), { features: f32(rowMajor(test), [test.rows, 4]) });
    const got = out[output]!.data as Float32Array;
    expect(got.length).toBe(test.rows);
    let maxDelta = 0;
    for (let i = 0; i < test.rows; i++) maxDelta = Math.max(maxDelta, Math.abs(got[i]! - expected[i]!) / Math.max(1, Math.abs(expected[i]!)));
    expect(maxDelta).toBeLessThanOrEqual(1e-5);
  });
});
