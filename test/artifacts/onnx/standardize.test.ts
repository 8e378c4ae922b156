import { describe, expect, it } from 'vitest';
import { OnnxGraphBuilder, standardize } from '../../../src/artifacts/onnx/index.js';
import { f32, runModel } from './ort_helpers.js';

describe('standardize', () => {
  const mean = Float32Array.of(10, -1, 0.5);
  const std = Float32Array.of(2, 0.3, 7);

  function build(shape: (string | number)[]) {
    const g = new OnnxGraphBuilder();
    const x = g.addInput('x', 'FLOAT', shape);
    const { value, isNull } = standardize(g, x, { mean, std });
    g.addOutput('value', 'FLOAT', shape, { from: value });
    g.addOutput('is_null', 'FLOAT', shape, { from: isNull });
    return g;
  }

  /** value = NaN ? 0 : fround(fround(x − mean) / std), computed exactly as float32 arithmetic does. */
  function js(x: Float32Array, F: number) {
    const value = new Float32Array(x.length);
    const isNull = new Float32Array(x.length);
    x.forEach((v, i) => {
      const f = i % F;
      if (Number.isNaN(v)) isNull[i] = 1;
      else value[i] = Math.fround(Math.fround(v - mean[f]!) / std[f]!);
    });
    return { value, isNull };
  }

  it('standardizes, zeroes NaN and flags it, bit-identical to float32 JS math', async () => {
    const xs = Float32Array.of(12, NaN, 4, NaN, NaN, NaN, -3.25, 0.7, Infinity, 1e30, -1e-30, 0.5);
    const out = await runModel(build(['batch', 3]), { x: f32(xs, [4, 3]) });
    const expected = js(xs, 3);
    expect(Array.from(out.value!.data as Float32Array)).toEqual(Array.from(expected.value));
    expect(Array.from(out.is_null!.data as Float32Array)).toEqual([0, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0]);
    expect((out.value!.data as Float32Array)[8]).toBe(Infinity); // only NaN counts as missing
    expect(Array.from(out.value!.data as Float32Array).some(Number.isNaN)).toBe(false);
  });

  it('broadcasts over an RTI column [batch, seq, F], including seq = 0', async () => {
    const g = build(['batch', 'seq', 3]);
    const xs = Float32Array.of(10, -1, 0.5, NaN, 2, 3);
    const out = await runModel(g, { x: f32(xs, [1, 2, 3]) });
    expect(Array.from(out.value!.data as Float32Array)).toEqual(Array.from(js(xs, 3).value));
    expect(Array.from(out.value!.data as Float32Array).slice(0, 3)).toEqual([0, 0, 0]);
    const empty = await runModel(g, { x: f32([], [2, 0, 3]) });
    expect(empty.value!.dims).toEqual([2, 0, 3]);
  });

  it('refuses a zero or non-finite std', () => {
    const g = new OnnxGraphBuilder();
    const x = g.addInput('x', 'FLOAT', ['batch', 2]);
    expect(() => standardize(g, x, { mean: Float32Array.of(0, 0), std: Float32Array.of(1, 0) })).toThrow(/std\[1\] must be finite and > 0/);
    expect(() => standardize(g, x, { mean: Float32Array.of(0), std: Float32Array.of(1, 1) })).toThrow(/mean has 1 features but std has 2/);
  });
});
