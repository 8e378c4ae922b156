/**
 * The tree export's ONNX graph (`outputShape: 'column'`, the served `score` [batch, 1]) on the rows its
 * parity check draws (every threshold, values just beside them, NaN, unseen categorical codes): onnxruntime
 * gives the trees' own predictions for a binary and an L1 regression model with a categorical feature.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/rng.js';
import { parityRows } from '../../src/export/tree_version.js';
import { GbdtModel, gbdtOnnxGraph, type GbdtLossName } from '../../src/model/gbdt/index.js';
import { f32, runModel } from '../artifacts/onnx/ort_helpers.js';

function fitted(loss: GbdtLossName): GbdtModel {
  const n = 2000;
  const rng = new Rng(5);
  const cols = Array.from({ length: 3 }, () => new Float32Array(n));
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    cols[0]![i] = rng.next() < 0.1 ? NaN : rng.next() * 10;
    cols[1]![i] = rng.next() * 100 - 50;
    cols[2]![i] = 1 + Math.floor(rng.next() * 6);
    const z = (Number.isNaN(cols[0]![i]!) ? 3 : cols[0]![i]! / 2) - 2 + ([2, 5].includes(cols[2]![i]!) ? 2 : -1) + cols[1]![i]! / 50;
    y[i] = loss === 'binary' ? (rng.next() < 1 / (1 + Math.exp(-z)) ? 1 : 0) : 100 * z + rng.next();
  }
  return GbdtModel.fit({ train: { rows: n, columns: cols }, y, kinds: ['numeric', 'numeric', 'categorical'] }, { loss, max_iter: 25, max_leaf_nodes: 15, min_samples_leaf: 10 });
}

describe('tree export graph on the parity rows', () => {
  it.each<GbdtLossName>(['binary', 'l1'])('%s: score [n, 1] equals predict within 1e-5 (relative past 1)', async (loss) => {
    const model = fitted(loss);
    const rows = 400;
    const x = parityRows(model, 3, rows, 1);
    expect(x.some((v) => Number.isNaN(v))).toBe(true);
    expect(x.some((v, i) => i % 3 === 2 && v === 7)).toBe(true); // an unseen category code (max + 1)
    const columns = Array.from({ length: 3 }, (_, f) => Float64Array.from({ length: rows }, (_, i) => x[i * 3 + f]!));
    const expected = model.predict({ rows, columns });
    const out = await runModel(gbdtOnnxGraph(model, { inputName: 'features', outputName: 'score', outputShape: 'column' }), { features: f32(x, [rows, 3]) });
    expect(out.score!.dims).toEqual([rows, 1]);
    const got = out.score!.data as Float32Array;
    let max = 0;
    for (let i = 0; i < rows; i++) max = Math.max(max, Math.abs(got[i]! - expected[i]!) / Math.max(1, Math.abs(expected[i]!)));
    expect(max).toBeLessThanOrEqual(1e-5);
    expect(new Set(got).size).toBeGreaterThan(5);
  });
});
