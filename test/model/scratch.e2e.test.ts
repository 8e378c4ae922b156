import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { Rng } from '../../src/core/rng.js';
import type { Graph } from '../../src/graph/graph.js';
import { buildBatchArrays } from '../../src/model/batch.js';
import { Scratch } from '../../src/model/scratch.js';
import { randomDeepModel } from '../helpers/deep_model.js';
import { tinyPipelineGraph } from '../helpers/tiny_graph.js';
import type { SynthFixture } from '../helpers/synth.js';

describe('Scratch', () => {
  it('hands out zeroed, non-overlapping, aligned arrays, and the same memory again after reset', () => {
    const s = new Scratch();
    const a = s.int32(10);
    const b = s.uint8(3);
    const c = s.float32(5);
    a.fill(7);
    b.fill(8);
    c.fill(9);
    expect([...a]).toEqual(new Array(10).fill(7));
    expect([...b]).toEqual([8, 8, 8]);
    expect([...c]).toEqual(new Array(5).fill(9));
    expect(c.byteOffset % 8).toBe(0);
    s.reset();
    const a2 = s.int32(10);
    expect(a2.buffer).toBe(a.buffer);
    expect(a2.byteOffset).toBe(a.byteOffset);
    // Zeroed as `new Int32Array` would be, though the last batch wrote 7s there.
    expect([...a2]).toEqual(new Array(10).fill(0));
    expect([...s.uint8(3)]).toEqual([0, 0, 0]);
  });

  it('grows past its buffer without touching the arrays already handed out', () => {
    const s = new Scratch();
    const small = s.float32(1000).fill(1.5);
    const big = s.float32(1 << 20);
    expect(big.buffer).not.toBe(small.buffer);
    expect(big.length).toBe(1 << 20);
    expect(small.every((v) => v === 1.5)).toBe(true);
    // The next batch fits in the grown buffer.
    s.reset();
    expect(s.float32(1000).buffer).toBe(big.buffer);
  });
});

describe('sampling and batch arrays from a Scratch', () => {
  let fx: SynthFixture;
  let graph: Graph;
  beforeAll(async () => {
    await selectBackend('wasm');
    ({ fx, graph } = await tinyPipelineGraph());
  });
  afterAll(() => fx?.cleanup());

  it('equal the arrays allocated fresh, batch after batch (a smaller batch after a larger one sees no stale values)', () => {
    const model = randomDeepModel(graph, 'customers', [6, 3]);
    try {
      const n = graph.table('customers').rows;
      const [lo, hi] = graph.manifest.time_range!;
      const scratch = new Scratch();
      const fresh = new Rng(11);
      const reused = new Rng(11);
      for (const [size, k] of [[300, 0], [37, 1], [300, 2], [5, 3]] as const) {
        const seeds = Int32Array.from({ length: size }, (_, i) => (i * 13 + k) % n);
        const anchors = Float64Array.from({ length: size }, (_, i) => lo + ((hi - lo) * ((i % 7) + 1)) / 8);
        const expected = buildBatchArrays(model.plan, model.sampler.sample(seeds, anchors, fresh), model.features);
        scratch.reset();
        const got = buildBatchArrays(model.plan, model.sampler.sample(seeds, anchors, reused, scratch), model.features, 'visible', undefined, scratch);
        const plain = (x: unknown): unknown => JSON.parse(JSON.stringify(x, (_, v) => (ArrayBuffer.isView(v) ? Array.from(v as Int32Array) : v)));
        expect(plain(got)).toEqual(plain(expected));
        expect(got.types.transactions!.rows).toBeGreaterThan(0);
      }
    } finally {
      model.dispose();
    }
  });
});
