import { describe, expect, it } from 'vitest';
import { INT64_MIN, NS_PER_UNIT, OnnxGraphBuilder, relativeTime, type RelativeTimeOptions } from '../../../src/artifacts/onnx/index.js';
import { i64, openSession, runModel } from './ort_helpers.js';

const DAY = 86_400_000_000_000n;
const anchor = 1_710_000_000_000_000_000n; // 2024-03-09T16:00:00Z in ns

/** The formula training uses (TF.js has no int64): fround(Number(anchor − t) / nsPerUnit), 0 if padded. */
function js(t: bigint, a: bigint, o: RelativeTimeOptions = {}): { value: number; mask: number } {
  const valid = t !== (o.sentinel ?? INT64_MIN) && !(o.maskFuture && t > a);
  return valid ? { value: Math.fround(Number(a - t) / NS_PER_UNIT[o.unit ?? 'days']), mask: 1 } : { value: 0, mask: 0 };
}

function build(options: RelativeTimeOptions = {}): Uint8Array {
  const g = new OnnxGraphBuilder();
  const t = g.addInput('rti:t_dat', 'INT64', ['batch', 'seq', 1]);
  const a = g.addInput('anchor_time', 'INT64', ['batch', 1]);
  const { value, mask } = relativeTime(g, t, a, { tRank: 3, ...options });
  g.addOutput('value', 'FLOAT', ['batch', 'seq', 1], { from: value });
  g.addOutput('mask', 'FLOAT', ['batch', 'seq', 1], { from: mask });
  return g.toBytes();
}

describe('relativeTime', () => {
  it('computes float days bit-identically to the JS formula and masks INT64_MIN padding', async () => {
    // Two requests of different lengths padded to 4 with the sentinel; the second has its own anchor.
    const anchors = [anchor, anchor + 3n * DAY + 12345n];
    const ts = [
      [anchor - DAY, anchor - 7n * DAY - 1n, anchor - 1n, INT64_MIN],
      [anchor - 400n * DAY - 999_999_999n, INT64_MIN, INT64_MIN, INT64_MIN],
    ];
    const out = await runModel(build(), { 'rti:t_dat': i64(ts.flat(), [2, 4, 1]), anchor_time: i64(anchors, [2, 1]) });
    const expected = ts.flatMap((row, b) => row.map((t) => js(t, anchors[b]!)));
    expect(Array.from(out.value!.data as Float32Array)).toEqual(expected.map((e) => e.value));
    expect(Array.from(out.mask!.data as Float32Array)).toEqual([1, 1, 1, 0, 1, 0, 0, 0]);
    expect((out.value!.data as Float32Array)[0]).toBe(1);
    expect(Array.from(out.value!.data as Float32Array).every(Number.isFinite)).toBe(true);
  });

  it('never overflows: all-padding rows, extreme anchors, future times', async () => {
    const anchors = [2n ** 62n, -(2n ** 62n), anchor];
    const ts = [
      [INT64_MIN, INT64_MIN],
      [INT64_MIN, -(2n ** 62n) - DAY],
      [anchor + 2n * DAY, anchor],
    ];
    const out = await runModel(build(), { 'rti:t_dat': i64(ts.flat(), [3, 2, 1]), anchor_time: i64(anchors, [3, 1]) });
    const values = Array.from(out.value!.data as Float32Array);
    expect(values).toEqual(ts.flatMap((row, b) => row.map((t) => js(t, anchors[b]!).value)));
    expect(values.slice(0, 2)).toEqual([0, 0]);
    expect(values[3]).toBe(1);
    expect(values[4]).toBe(-2); // a future element is kept (negative) unless maskFuture
  });

  it('masks future elements with maskFuture', async () => {
    const ts = [anchor + 1n, anchor, anchor - DAY, INT64_MIN];
    const out = await runModel(build({ maskFuture: true }), { 'rti:t_dat': i64(ts, [1, 4, 1]), anchor_time: i64([anchor], [1, 1]) });
    expect(Array.from(out.mask!.data as Float32Array)).toEqual([0, 1, 1, 0]);
    expect(Array.from(out.value!.data as Float32Array)).toEqual([0, 0, 1, 0]);
  });

  for (const unit of ['days', 'hours', 'minutes', 'seconds'] as const) {
    it(`unit=${unit}`, async () => {
      const ts = [anchor - 90n * 60n * 1_000_000_000n, anchor - 123_456_789_012_345n];
      const out = await runModel(build({ unit }), { 'rti:t_dat': i64(ts, [1, 2, 1]), anchor_time: i64([anchor], [1, 1]) });
      expect(Array.from(out.value!.data as Float32Array)).toEqual(ts.map((t) => js(t, anchor, { unit }).value));
    });
  }

  it('handles sequence length 0 and batch 1 vs batch N', async () => {
    const session = await openSession(build());
    try {
      const empty = await session.run({ 'rti:t_dat': i64([], [2, 0, 1]), anchor_time: i64([anchor, anchor], [2, 1]) });
      expect(empty.value!.dims).toEqual([2, 0, 1]);
      const ts = [anchor - DAY, anchor - 2n * DAY, anchor - 5n, INT64_MIN];
      const anchors = [anchor, anchor + DAY];
      const batched = await session.run({ 'rti:t_dat': i64(ts, [2, 2, 1]), anchor_time: i64(anchors, [2, 1]) });
      for (let b = 0; b < 2; b++) {
        const one = await session.run({ 'rti:t_dat': i64(ts.slice(2 * b, 2 * b + 2), [1, 2, 1]), anchor_time: i64([anchors[b]!], [1, 1]) });
        expect(Array.from(one.value!.data as Float32Array)).toEqual(Array.from((batched.value!.data as Float32Array).subarray(2 * b, 2 * b + 2)));
      }
    } finally {
      await session.release();
    }
  });

  it('accepts a custom sentinel and an anchor that already broadcasts', async () => {
    const g = new OnnxGraphBuilder();
    const t = g.addInput('t', 'INT64', ['n']);
    const a = g.addInput('a', 'INT64', [1]);
    const { value, mask } = relativeTime(g, t, a, { sentinel: -1n, unit: 'seconds' });
    g.addOutput('value', 'FLOAT', ['n'], { from: value });
    g.addOutput('mask', 'FLOAT', ['n'], { from: mask });
    const out = await runModel(g, { t: i64([-1n, 0n], [2]), a: i64([5_000_000_000n], [1]) });
    expect(Array.from(out.value!.data as Float32Array)).toEqual([0, 5]);
    expect(Array.from(out.mask!.data as Float32Array)).toEqual([0, 1]);
  });
});
