/**
 * The one test helper every layer goes through (as PyG's layer tests do): a layer is described by how to
 * build it and how to make its inputs, and `checkLayer` registers the same checks for all of them.
 *
 * Every layer: output shape, finite outputs, finite (and not all zero) gradients for every weight, no
 * tensor left behind by a forward pass or a gradient computation.
 * Layers over sampled neighbours (`neighbours`): invariance to the order of neighbours within each node's
 * block; padded (masked) positions change neither the output nor the gradients, whatever they hold
 * (huge values included); a node with no valid neighbour gets a finite output.
 * Row-wise layers (`rowwise`): permuting the input rows permutes the output rows the same way.
 */
import { tf } from '../../src/core/tf.js';
import { expect, it } from 'vitest';
import { ParamStore } from '../../src/model/params.js';
import type { NeighbourBlock } from '../../src/model/sage_conv.js';
import { Rng } from '../../src/core/rng.js';

/**
 * One edge type's sampled neighbours as plain arrays, in the layers' block layout: a table of child rows
 * [m × C] and, per neighbour position (n·fanout of them), the row it reads and a 0/1 mask.
 */
export interface BlockData {
  fanout: number;
  /** child rows, [m × C] */
  table: Float32Array;
  m: number;
  /** row of each neighbour position; any value where the mask is 0 */
  index: Int32Array;
  mask: Float32Array;
}

/** A layer's inputs as plain arrays (tensors are made inside each check, so nothing leaks between them). */
export interface LayerInput {
  n: number;
  /** [n × width] float rows (node states, or numeric features) */
  x: Float32Array;
  /** categorical codes [n × k] (NodeEncoder) */
  codes?: Int32Array;
  /** neighbour blocks, one per incoming edge type (null: that edge type has no sampled slot) */
  blocks?: (BlockData | null)[];
}

export interface LayerUnderTest {
  /** the test name: the layer and its parameters */
  name: string;
  /** creates the weights once and returns the forward function (called inside tf.tidy) */
  build(params: ParamStore): (input: LayerInput) => tf.Tensor2D;
  input(rng: Rng): LayerInput;
  /** output width */
  out: number;
  /** the layer aggregates sampled neighbours: run the neighbour checks */
  neighbours?: boolean;
  /** each output row depends on its input row only: run the row-permutation check */
  rowwise?: boolean;
}

const TOL = 1e-5;

/** Rows of a block's table that only padded positions point at (randomBlock). */
const JUNK_ROWS = 3;

/** NeighbourBlock tensors from plain arrays: mean weights = mask / count, degree = log(1 + count). */
export function blockTensors(b: BlockData, n: number, channels: number): NeighbourBlock {
  const f = b.fanout;
  const weights = new Float32Array(n * f);
  const degree = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let count = 0;
    for (let j = 0; j < f; j++) count += b.mask[i * f + j]!;
    degree[i] = Math.log1p(count);
    for (let j = 0; j < f; j++) weights[i * f + j] = count > 0 ? b.mask[i * f + j]! / count : 0;
  }
  return {
    table: tf.tensor2d(b.table, [b.m, channels]),
    index: tf.tensor1d(b.index, 'int32'),
    fanout: f,
    weights: tf.tensor1d(weights),
    mask: tf.tensor1d(b.mask),
    degree: tf.tensor2d(degree, [n, 1]),
  };
}

/**
 * Random neighbour block: row 0 has no valid neighbour, every other row 1..fanout of them at random
 * positions. Valid positions read random rows among the first n·fanout table rows (rows may be shared, as
 * an article bought in many sampled transactions is); padded positions read the last JUNK_ROWS rows,
 * which nothing valid reads.
 */
export function randomBlock(rng: Rng, n: number, fanout: number, channels: number): BlockData {
  const real = n * fanout;
  const m = real + JUNK_ROWS;
  const table = Float32Array.from({ length: m * channels }, () => rng.normal());
  const mask = new Float32Array(n * fanout);
  const index = new Int32Array(n * fanout);
  for (let i = 1; i < n; i++) {
    const valid = 1 + rng.int(fanout);
    for (let j = 0; j < valid; j++) mask[i * fanout + j] = 1;
    rng.shuffle(mask.subarray(i * fanout, (i + 1) * fanout));
  }
  for (let p = 0; p < n * fanout; p++) index[p] = mask[p] ? rng.int(real) : real + rng.int(JUNK_ROWS);
  return { fanout, table, m, index, mask };
}

function run(forward: (input: LayerInput) => tf.Tensor2D, input: LayerInput): Float32Array {
  const out = tf.tidy(() => forward(input));
  const v = out.dataSync() as Float32Array;
  out.dispose();
  return v.slice();
}

function expectClose(a: Float32Array, b: Float32Array, what: string): void {
  expect(a.length, what).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!) / Math.max(1, Math.abs(b[i]!)));
  expect(worst, what).toBeLessThanOrEqual(TOL);
}

/** Permutes the positions of each row's neighbours (index and mask entries together). */
function permuteNeighbours(input: LayerInput, rng: Rng): LayerInput {
  const blocks = input.blocks!.map((b) => {
    if (!b) return null;
    const f = b.fanout;
    const index = new Int32Array(b.index.length);
    const mask = new Float32Array(b.mask.length);
    for (let i = 0; i < input.n; i++) {
      const perm = rng.shuffle(Array.from({ length: f }, (_, j) => j));
      perm.forEach((src, dst) => {
        mask[i * f + dst] = b.mask[i * f + src]!;
        index[i * f + dst] = b.index[i * f + src]!;
      });
    }
    return { ...b, index, mask };
  });
  return { ...input, blocks };
}

/** What padding may hold: values in the rows only padding reads, or indices pointing anywhere. */
type Padding = { rows: (k: number) => number } | { index: (p: number, b: BlockData) => number };

function pad(input: LayerInput, channels: number, padding: Padding): LayerInput {
  const blocks = input.blocks!.map((b) => {
    if (!b) return null;
    if ('rows' in padding) {
      const table = b.table.slice();
      for (let k = (b.m - JUNK_ROWS) * channels; k < table.length; k++) table[k] = padding.rows(k);
      return { ...b, table };
    }
    const index = b.index.slice();
    for (let p = 0; p < index.length; p++) if (!b.mask[p]) index[p] = padding.index(p, b);
    return { ...b, index };
  });
  return { ...input, blocks };
}

/**
 * Registers the checks for one layer. `channels` is the width of neighbour rows (the layer's input width
 * for convs). Call inside a `describe` whose `beforeAll` selected the backend.
 */
export function checkLayer(layer: LayerUnderTest, channels = layer.out): void {
  const setup = () => {
    const params = new ParamStore(42);
    const forward = layer.build(params);
    const input = layer.input(new Rng(7));
    return { params, forward, input };
  };

  it(`${layer.name}: output shape [n, ${layer.out}], finite values`, () => {
    const { params, forward, input } = setup();
    const out = tf.tidy(() => forward(input));
    expect(out.shape).toEqual([input.n, layer.out]);
    expect(Array.from(out.dataSync()).every(Number.isFinite)).toBe(true);
    out.dispose();
    params.dispose();
  });

  it(`${layer.name}: finite gradients for every weight, some non-zero; no tensor leaks`, () => {
    const { params, forward, input } = setup();
    const before = tf.memory().numTensors;
    run(forward, input);
    expect(tf.memory().numTensors).toBe(before);
    const probe = Float32Array.from({ length: input.n * layer.out }, (_, i) => Math.sin(i + 1));
    const { value, grads } = tf.variableGrads(() => tf.tidy(() => tf.sum(forward(input).mul(tf.tensor2d(probe, [input.n, layer.out])))) as tf.Scalar, [...params.vars.values()]);
    let nonZero = 0;
    for (const [name, g] of Object.entries(grads)) {
      const v = g.dataSync();
      expect(Array.from(v).every(Number.isFinite), `gradient of ${name}`).toBe(true);
      if (v.some((x) => x !== 0)) nonZero++;
    }
    expect(nonZero).toBeGreaterThan(0);
    value.dispose();
    for (const g of Object.values(grads)) g.dispose();
    expect(tf.memory().numTensors).toBe(before);
    params.dispose();
  });

  if (layer.rowwise) {
    it(`${layer.name}: permuting input rows permutes output rows`, () => {
      const { params, forward, input } = setup();
      const perm = new Rng(3).shuffle(Array.from({ length: input.n }, (_, i) => i));
      const width = input.x.length / input.n;
      const x = new Float32Array(input.x.length);
      perm.forEach((src, dst) => x.set(input.x.subarray(src * width, (src + 1) * width), dst * width));
      let codes: Int32Array | undefined;
      if (input.codes) {
        const k = input.codes.length / input.n;
        codes = new Int32Array(input.codes.length);
        perm.forEach((src, dst) => codes!.set(input.codes!.subarray(src * k, (src + 1) * k), dst * k));
      }
      const a = run(forward, input);
      const b = run(forward, { ...input, x, codes });
      const expected = new Float32Array(a.length);
      perm.forEach((src, dst) => expected.set(a.subarray(src * layer.out, (src + 1) * layer.out), dst * layer.out));
      expectClose(b, expected, 'permuted rows');
      params.dispose();
    });
  }

  if (layer.neighbours) {
    it(`${layer.name}: invariant to the order of neighbours within each node's block`, () => {
      const { params, forward, input } = setup();
      const a = run(forward, input);
      for (const seed of [1, 2, 3]) expectClose(run(forward, permuteNeighbours(input, new Rng(seed))), a, `permutation ${seed}`);
      params.dispose();
    });

    const paddings: [string, Padding][] = [
      ['zeros', { rows: () => 0 }],
      ['random values', { rows: (k) => Math.sin(k * 12.9898) * 100 }],
      ['+1e30', { rows: () => 1e30 }],
      ['-1e30', { rows: () => -1e30 }],
      ['alternating ±1e30', { rows: (k) => (k % 2 ? 1e30 : -1e30) }],
      ['indices of real neighbour rows', { index: (p) => (p * 7) % 5 }],
      ['indices outside the table', { index: (p, b) => (p % 2 ? -1 : b.m + 7) }],
    ];
    it.each(paddings)(`${layer.name}: padded positions holding %s change neither output nor gradients`, (_, padding) => {
      const { params, forward, input } = setup();
      const base = run(forward, input);
      const padded = pad(input, channels, padding);
      expectClose(run(forward, padded), base, 'output');
      // the gradients of the weights are those of the unpadded input
      const probe = Float32Array.from({ length: input.n * layer.out }, (_, i) => Math.cos(i));
      const grads = (inp: LayerInput) => {
        const { value: v, grads: g } = tf.variableGrads(() => tf.tidy(() => tf.sum(forward(inp).mul(tf.tensor2d(probe, [inp.n, layer.out])))) as tf.Scalar, [...params.vars.values()]);
        v.dispose();
        const out = Object.fromEntries(Object.entries(g).map(([k, t]) => [k, (t.dataSync() as Float32Array).slice()]));
        for (const t of Object.values(g)) t.dispose();
        return out;
      };
      const g0 = grads(input);
      const g1 = grads(padded);
      for (const k of Object.keys(g0)) expectClose(g1[k]!, g0[k]!, `gradient of ${k}`);
      params.dispose();
    });

    it(`${layer.name}: a node with no valid neighbour gets a finite output (and so does a batch of them)`, () => {
      const { params, forward, input } = setup();
      // row 0 of every block has no valid neighbour (randomBlock)
      for (const b of input.blocks!) if (b) expect(Array.from(b.mask.subarray(0, b.fanout)).every((m) => m === 0)).toBe(true);
      const a = run(forward, input);
      expect(Array.from(a.subarray(0, layer.out)).every(Number.isFinite)).toBe(true);
      const none = { ...input, blocks: input.blocks!.map((b) => (b ? { ...b, mask: new Float32Array(b.mask.length) } : null)) };
      expect(Array.from(run(forward, none)).every(Number.isFinite)).toBe(true);
      params.dispose();
    });
  }
}
