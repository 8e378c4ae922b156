/**
 * The dynamic batcher with a fake model (output = sum of each row's inputs), so batch formation can be
 * observed directly: which requests ran together, and that each got its own rows.
 */
import { describe, expect, it } from 'vitest';
import { DynamicBatcher } from '../../src/serve/batcher.js';
import type { HostTensor } from '../../src/serve/datatypes.js';
import type { InferRequest } from '../../src/serve/decode.js';
import { modelSpecFromConfig } from '../../src/serve/model_spec.js';

function spec(options: { maxBatch?: number; delayUs?: number | null; preferred?: number[]; outputDims?: number[]; maxQueue?: number } = {}) {
  return modelSpecFromConfig(
    {
      platform: 'onnxruntime_onnx',
      max_batch_size: options.maxBatch ?? 8,
      input: [{ name: 'x', data_type: 'TYPE_FP32', dims: [-1] }],
      output: [{ name: 'y', data_type: 'TYPE_FP32', dims: options.outputDims ?? [1] }],
      ...(options.delayUs === null ? {} : { dynamic_batching: { max_queue_delay_microseconds: options.delayUs ?? 0, preferred_batch_size: options.preferred, ...(options.maxQueue ? { default_queue_policy: { max_queue_size: options.maxQueue } } : {}) } }),
    },
    'm',
  );
}

function request(values: number[][], batchKey = ''): InferRequest {
  const len = values[0]!.length;
  return {
    inputs: new Map([['x', { datatype: 'FP32', shape: [values.length, len], data: Float32Array.from(values.flat()) }]]),
    batch: values.length,
    batchKey,
  };
}

/** A fake run: y[b] = Σ x[b, :] (padding with 0 keeps sums equal); records each batch's shape. */
function fakeRun(batches: number[][], fail?: (x: HostTensor) => boolean) {
  return async (feeds: Map<string, HostTensor>): Promise<Map<string, HostTensor>> => {
    const x = feeds.get('x')!;
    batches.push([...x.shape]);
    if (fail?.(x)) throw new Error('bad row');
    const [rows, len] = x.shape as [number, number];
    const y = new Float32Array(rows);
    for (let r = 0; r < rows; r++) for (let k = 0; k < len; k++) y[r]! += (x.data as Float32Array)[r * len + k]!;
    return new Map([['y', { datatype: 'FP32' as const, shape: [rows, 1], data: y }]]);
  };
}

const y = (m: Map<string, HostTensor>) => [...(m.get('y')!.data as Float32Array)];

describe('DynamicBatcher', () => {
  it('merges requests that arrive together, padding their lengths, and answers each with its rows', async () => {
    const batches: number[][] = [];
    const b = new DynamicBatcher({ spec: spec(), run: fakeRun(batches) });
    const out = await Promise.all([b.submit(request([[1, 2, 3]])), b.submit(request([[10]])), b.submit(request([[1, 1], [2, 2]]))]);
    expect(batches).toEqual([[4, 3]]);
    expect(out.map(y)).toEqual([[6], [10], [2, 4]]);
  });

  it('never exceeds max_batch_size and keeps arrival order', async () => {
    const batches: number[][] = [];
    const b = new DynamicBatcher({ spec: spec({ maxBatch: 4 }), run: fakeRun(batches) });
    const out = await Promise.all([1, 2, 3, 4, 5, 6].map((v) => b.submit(request([[v]]))));
    expect(batches.map((s) => s[0])).toEqual([4, 2]);
    expect(out.map(y)).toEqual([[1], [2], [3], [4], [5], [6]]);
  });

  it('waits up to max_queue_delay for more requests', async () => {
    const batches: number[][] = [];
    // The delay counts from the first request's arrival, so the bound is taken from there: a loaded
    // machine can only make the wait longer (a 10 ms sleep once took 42 ms, and 0.5 s leaves it room).
    const b = new DynamicBatcher({ spec: spec({ delayUs: 500_000 }), run: fakeRun(batches) });
    const t0 = performance.now();
    const first = b.submit(request([[1]]));
    await new Promise((r) => setTimeout(r, 10));
    const second = b.submit(request([[2]]));
    await Promise.all([first, second]);
    expect(batches).toEqual([[2, 1]]);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(490);
  });

  it('runs a preferred batch size without waiting', async () => {
    const batches: number[][] = [];
    const b = new DynamicBatcher({ spec: spec({ delayUs: 5_000_000, preferred: [2] }), run: fakeRun(batches) });
    const t0 = performance.now();
    await Promise.all([b.submit(request([[1]])), b.submit(request([[2]]))]);
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(batches).toEqual([[2, 1]]);
  });

  it('does not merge requests with different batch keys', async () => {
    const batches: number[][] = [];
    const b = new DynamicBatcher({ spec: spec(), run: fakeRun(batches) });
    const out = await Promise.all([b.submit(request([[1]], 'a')), b.submit(request([[2, 2]], 'b')), b.submit(request([[3]], 'a'))]);
    expect(batches).toEqual([[2, 1], [1, 2]]);
    expect(out.map(y)).toEqual([[1], [4], [3]]);
  });

  it('runs every request alone without dynamic_batching', async () => {
    const batches: number[][] = [];
    const b = new DynamicBatcher({ spec: spec({ delayUs: null }), run: fakeRun(batches) });
    await Promise.all([b.submit(request([[1]])), b.submit(request([[2]]))]);
    expect(batches).toEqual([[1, 1], [1, 1]]);
  });

  it('isolates a request that makes its batch fail', async () => {
    const batches: number[][] = [];
    const b = new DynamicBatcher({ spec: spec(), run: fakeRun(batches, (x) => [...(x.data as Float32Array)].includes(-1)) });
    const results = await Promise.allSettled([b.submit(request([[1]])), b.submit(request([[-1]])), b.submit(request([[3]]))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[0] as PromiseFulfilledResult<Map<string, HostTensor>>).value.get('y')!.data).toEqual(Float32Array.of(1));
    expect(batches).toEqual([[3, 1], [1, 1], [1, 1], [1, 1]]);
  });

  it('refuses requests beyond max_queue_size with 503', async () => {
    const b = new DynamicBatcher({ spec: spec({ delayUs: 10_000, maxQueue: 2 }), run: fakeRun([]) });
    const results = await Promise.allSettled([1, 2, 3].map((v) => b.submit(request([[v]]))));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ status: 503, message: expect.stringMatching(/queue is full \(max_queue_size 2\)/) });
  });

  it('drain() runs the queue at once and resolves when idle', async () => {
    const batches: number[][] = [];
    const b = new DynamicBatcher({ spec: spec({ delayUs: 60_000_000 }), run: fakeRun(batches) });
    const p = b.submit(request([[1]]));
    await new Promise((r) => setTimeout(r, 5));
    expect(batches).toEqual([]);
    await b.drain();
    expect(y(await p)).toEqual([1]);
  });
});

describe('deadlines', () => {
  it('a request still queued at its deadline is rejected with 504 and never runs; the others run', async () => {
    const batches: number[][] = [];
    const b = new DynamicBatcher({ spec: spec({ maxBatch: 8, delayUs: 200_000 }), run: fakeRun(batches) });
    const late = b.submit(request([[1, 2]]), performance.now() + 20);
    const onTime = b.submit(request([[3, 4]]), performance.now() + 60_000);
    await expect(late).rejects.toMatchObject({ status: 504, reason: 'REJECTED', message: expect.stringMatching(/deadline passed after [\d.]+ ms in the queue/) });
    const y = await onTime;
    expect(y.get('y')!.data).toEqual(Float32Array.of(7));
    expect(batches).toEqual([[1, 2]]);
  });
});
