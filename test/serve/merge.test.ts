import { describe, expect, it } from 'vitest';
import type { HostTensor } from '../../src/serve/datatypes.js';
import { mergeTensors, sliceRows } from '../../src/serve/merge.js';

const f32 = (shape: number[], data: number[]): HostTensor => ({ datatype: 'FP32', shape, data: Float32Array.from(data) });
const i64 = (shape: number[], data: bigint[]): HostTensor => ({ datatype: 'INT64', shape, data: BigInt64Array.from(data) });

describe('mergeTensors', () => {
  it('returns a single part as it is', () => {
    const t = f32([1, 2], [1, 2]);
    expect(mergeTensors([t], 0)).toBe(t);
  });

  it('concatenates equal shapes along the batch axis', () => {
    const m = mergeTensors([f32([1, 2], [1, 2]), f32([2, 2], [3, 4, 5, 6])], 0);
    expect(m.shape).toEqual([3, 2]);
    expect([...m.data]).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('pads RTI sequences [b, seq, 1] to the longest with the pad value', () => {
    const pad = -(2n ** 63n);
    const m = mergeTensors([i64([1, 2, 1], [1n, 2n]), i64([1, 0, 1], []), i64([2, 3, 1], [3n, 4n, 5n, 6n, 7n, 8n])], pad);
    expect(m.shape).toEqual([4, 3, 1]);
    expect([...(m.data as BigInt64Array)]).toEqual([1n, 2n, pad, pad, pad, pad, 3n, 4n, 5n, 6n, 7n, 8n]);
  });

  it('pads several variable dimensions, inner ones too', () => {
    // [1, 2, 2] and [1, 1, 3] → [2, 2, 3]
    const m = mergeTensors([f32([1, 2, 2], [1, 2, 3, 4]), f32([1, 1, 3], [5, 6, 7])], -1);
    expect(m.shape).toEqual([2, 2, 3]);
    expect([...m.data]).toEqual([1, 2, -1, 3, 4, -1, 5, 6, 7, -1, -1, -1]);
  });

  it('pads long runs (typed-array set path) and strings', () => {
    const long = Array.from({ length: 20 }, (_, i) => i);
    const m = mergeTensors([f32([1, 20], long), f32([1, 25], long.concat([20, 21, 22, 23, 24]))], 0.5);
    expect([...m.data].slice(0, 25)).toEqual([...long, 0.5, 0.5, 0.5, 0.5, 0.5]);
    const s = mergeTensors(
      [
        { datatype: 'BYTES', shape: [1, 1], data: ['a'] },
        { datatype: 'BYTES', shape: [1, 2], data: ['b', 'c'] },
      ],
      '',
    );
    expect(s.data).toEqual(['a', '', 'b', 'c']);
  });
});

describe('sliceRows', () => {
  it('cuts a request’s rows back out', () => {
    const t = f32([3, 2], [1, 2, 3, 4, 5, 6]);
    const s = sliceRows(t, 1, 2);
    expect(s.shape).toEqual([2, 2]);
    expect([...s.data]).toEqual([3, 4, 5, 6]);
  });
});
