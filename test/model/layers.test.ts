import { tf } from '../../src/core/tf.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { GatConv } from '../../src/model/gat_conv.js';
import { LayerNorm } from '../../src/model/layer_norm.js';
import { NodeEncoder } from '../../src/model/node_encoder.js';
import { ParamStore } from '../../src/model/params.js';
import { SageConv } from '../../src/model/sage_conv.js';
import { blockTensors, checkLayer, randomBlock, type LayerUnderTest } from '../helpers/layer_check.js';

beforeAll(async () => {
  await selectBackend('wasm');
});

const N = 6;

function sage(channels: number, fanouts: (number | null)[]): LayerUnderTest {
  const edges = fanouts.map((_, i) => `e${i}`);
  return {
    name: `SageConv(channels=${channels}, fanouts=[${fanouts.map((f) => f ?? 'none')}])`,
    out: channels,
    neighbours: true,
    build(params) {
      const conv = new SageConv(params, 'sage', { channels, edges });
      return (input) => conv.apply([{ self: tf.tensor2d(input.x, [input.n, channels]), blocks: input.blocks!.map((b) => (b ? blockTensors(b, input.n, channels) : null)) }]);
    },
    input: (rng) => ({
      n: N,
      x: Float32Array.from({ length: N * channels }, () => rng.normal()),
      blocks: fanouts.map((f) => (f === null ? null : randomBlock(rng, N, f, channels))),
    }),
  };
}

function gat(channels: number, heads: number, fanouts: (number | null)[]): LayerUnderTest {
  const edges = fanouts.map((_, i) => `e${i}`);
  return {
    name: `GatConv(channels=${channels}, heads=${heads}, fanouts=[${fanouts.map((f) => f ?? 'none')}])`,
    out: channels,
    neighbours: true,
    build(params) {
      const conv = new GatConv(params, 'gat', { channels, heads, edges });
      return (input) => conv.apply(tf.tensor2d(input.x, [input.n, channels]), input.blocks!.map((b) => (b ? blockTensors(b, input.n, channels) : null)));
    },
    input: (rng) => ({
      n: N,
      x: Float32Array.from({ length: N * channels }, () => rng.normal()),
      blocks: fanouts.map((f) => (f === null ? null : randomBlock(rng, N, f, channels))),
    }),
  };
}

function layerNorm(dim: number): LayerUnderTest {
  return {
    name: `LayerNorm(dim=${dim})`,
    out: dim,
    rowwise: true,
    build(params) {
      const norm = new LayerNorm(params, 'ln', dim);
      return (input) => norm.apply(tf.tensor2d(input.x, [input.n, dim]));
    },
    input: (rng) => ({ n: N, x: Float32Array.from({ length: N * dim }, () => rng.normal() * 3 + 1) }),
  };
}

function encoder(numDim: number, catSizes: number[], catDim: number, channels: number): LayerUnderTest {
  return {
    name: `NodeEncoder(numDim=${numDim}, catSizes=[${catSizes}], catDim=${catDim}, channels=${channels})`,
    out: channels,
    rowwise: true,
    build(params) {
      const enc = new NodeEncoder(params, 'enc', { num_dim: numDim, cat_sizes: catSizes, cat_dim: catDim, channels });
      return (input) => enc.apply(tf.tensor2d(input.x, [input.n, numDim]), tf.tensor2d(input.codes!, [input.n, catSizes.length], 'int32'));
    },
    input: (rng) => {
      const offsets = catSizes.map((_, i) => catSizes.slice(0, i).reduce((a, b) => a + b, 0));
      return {
        n: N,
        x: Float32Array.from({ length: N * numDim }, () => rng.normal()),
        // codes offset per column; every row uses null (0), OOV (1) or a vocabulary code
        codes: Int32Array.from({ length: N * catSizes.length }, (_, k) => offsets[k % catSizes.length]! + ((k + rng.int(7)) % catSizes[k % catSizes.length]!)),
      };
    },
  };
}

const LAYERS: LayerUnderTest[] = [
  sage(8, [4, 1]),
  sage(8, [3, null]),
  sage(4, [1]),
  gat(8, 2, [4, 3]),
  gat(8, 4, [5, null]),
  gat(4, 1, [1]),
  layerNorm(8),
  encoder(5, [4, 3], 2, 8),
  encoder(3, [], 2, 8),
  encoder(0, [6], 3, 8),
];

describe('every layer passes the shared layer checks', () => {
  for (const layer of LAYERS) checkLayer(layer);
});

describe('layer-specific behaviour', () => {
  it('SageConv aggregates the masked mean and the log degree: W_self·h + W_e·mean + w_deg·log(1 + count)', () => {
    const params = new ParamStore(1);
    const C = 4;
    const conv = new SageConv(params, 's', { channels: C, edges: ['e'] });
    const n = 2;
    const f = 3;
    // table rows: v, w, junk; row 0 reads (v, w, junk) with the junk masked; row 1 reads (v) only
    const v = [1, -2, 3, 0.5];
    const w = [3, 0, -1, 1.5];
    const table = Float32Array.from([...v, ...w, 9, 9, 9, 9]);
    const block = { fanout: f, table, m: 3, index: Int32Array.of(0, 1, 2, 2, 0, 2), mask: Float32Array.of(1, 1, 0, 0, 1, 0) };
    const set = (name: string, value: tf.Tensor): void => {
      params.get(name).assign(value);
      value.dispose();
    };
    // Isolate each term through the weights: first the mean alone, then the degree alone.
    set('s/w_self', tf.zeros([C, C]));
    set('s/w_e0', tf.eye(C));
    set('s/w_deg0', tf.zeros([1, C]));
    const mean = tf.tidy(() => conv.apply([{ self: tf.ones([n, C]), blocks: [blockTensors(block, n, C)] }]));
    expect(mean.arraySync()).toEqual([v.map((a, i) => (a + w[i]!) / 2), v]);
    set('s/w_e0', tf.zeros([C, C]));
    set('s/w_deg0', tf.ones([1, C]));
    const deg = tf.tidy(() => conv.apply([{ self: tf.ones([n, C]), blocks: [blockTensors(block, n, C)] }]));
    const rows = deg.arraySync() as number[][];
    expect(rows[0]![0]).toBeCloseTo(Math.log(3), 6);
    expect(rows[1]![0]).toBeCloseTo(Math.log(2), 6);
    mean.dispose();
    deg.dispose();
    params.dispose();
  });

  it('GatConv attention is a convex combination: equal neighbours give the same message whatever their positions', () => {
    const params = new ParamStore(5);
    const C = 4;
    const conv = new GatConv(params, 'g', { channels: C, heads: 2, edges: ['e'] });
    const f = 4;
    const v = [0.3, -1, 2, 0.1];
    // two identical rows; both nodes have two valid neighbours (same degree term) at different positions
    const table = Float32Array.from([...v, ...v, 5, 5, 5, 5]);
    const block = { fanout: f, table, m: 3, index: Int32Array.of(0, 1, 2, 2, 2, 0, 2, 0), mask: Float32Array.of(1, 1, 0, 0, 0, 1, 0, 1) };
    const out = tf.tidy(() => conv.apply(tf.zeros([2, C]), [blockTensors(block, 2, C)]));
    const [a, b] = out.arraySync() as number[][];
    for (let c = 0; c < C; c++) expect(a![c]).toBeCloseTo(b![c]!, 5);
    out.dispose();
    params.dispose();
  });

  it('GatConv refuses channels not divisible by heads, naming both', () => {
    const params = new ParamStore(1);
    expect(() => new GatConv(params, 'g', { channels: 6, heads: 4, edges: ['e'] })).toThrow(/channels \(6\) must be divisible by heads \(4\)/);
    params.dispose();
  });

  it('LayerNorm normalizes each row to mean 0, variance 1 (γ = 1, β = 0); a constant row stays finite', () => {
    const params = new ParamStore(1);
    const norm = new LayerNorm(params, 'ln', 4);
    const out = tf.tidy(() => norm.apply(tf.tensor2d([[1, 2, 3, 4], [5, 5, 5, 5]])));
    const [a, b] = out.arraySync() as number[][];
    const mean = a!.reduce((s, x) => s + x, 0) / 4;
    const variance = a!.reduce((s, x) => s + (x - mean) ** 2, 0) / 4;
    expect(mean).toBeCloseTo(0, 6);
    expect(variance).toBeCloseTo(1, 4);
    expect(b).toEqual([0, 0, 0, 0]);
    out.dispose();
    params.dispose();
  });

  it('NodeEncoder without features is a learned constant (its bias)', () => {
    const params = new ParamStore(1);
    const enc = new NodeEncoder(params, 'enc', { num_dim: 0, cat_sizes: [], cat_dim: 4, channels: 3 });
    params.get('enc/b').assign(tf.tensor1d([1, 2, 3]));
    const out = tf.tidy(() => enc.apply(tf.zeros([2, 0]), tf.zeros([2, 0], 'int32') as tf.Tensor2D));
    expect(out.arraySync()).toEqual([[1, 2, 3], [1, 2, 3]]);
    out.dispose();
    params.dispose();
  });

  it('NodeEncoder.applyThrough(x, V) is apply(x)·V, in value and in every weight gradient', () => {
    const params = new ParamStore(4);
    const enc = new NodeEncoder(params, 'enc', { num_dim: 3, cat_sizes: [5, 4], cat_dim: 2, channels: 6 });
    params.get('enc/b').assign(tf.randomNormal([6], 0, 1, 'float32', 5));
    const v = tf.variable(tf.randomNormal([6, 6], 0, 1, 'float32', 6));
    const num = tf.randomNormal([7, 3], 0, 1, 'float32', 7) as tf.Tensor2D;
    const cat = tf.tensor2d([0, 1, 4, 2, 3, 0, 1, 1, 2, 3, 4, 0, 0, 2], [7, 2], 'int32');
    const vars = [...params.vars.values(), v];
    const a = tf.variableGrads(() => tf.matMul(enc.apply(num, cat), v).square().sum() as tf.Scalar, vars);
    const b = tf.variableGrads(() => enc.applyThrough(num, cat, v as tf.Tensor2D).square().sum() as tf.Scalar, vars);
    expect(b.value.dataSync()[0]).toBeCloseTo(a.value.dataSync()[0]!, 3);
    for (const name of Object.keys(a.grads)) {
      const ga = a.grads[name]!.dataSync();
      const gb = b.grads[name]!.dataSync();
      for (let i = 0; i < ga.length; i++) expect(gb[i]).toBeCloseTo(ga[i]!, 3);
    }
    tf.dispose([a.value, b.value, ...Object.values(a.grads), ...Object.values(b.grads), v, num, cat]);
    params.dispose();
  });

  it('ParamStore weights round-trip through serialize/load, and an embedding table can grow', () => {
    const a = new ParamStore(1);
    a.normal('enc/emb', [3, 2], 1);
    a.glorot('w', [2, 2]);
    const { index, blob } = a.serialize();
    const b = new ParamStore(2);
    b.normal('enc/emb', [5, 2], 1);
    b.glorot('w', [2, 2]);
    const fresh = b.get('enc/emb').dataSync().slice();
    expect(() => b.load(index, blob)).toThrow(/saved weight enc\/emb has shape \[3,2\] but the model needs \[5,2\]/);
    b.load(index, blob, { allowGrow: true });
    const grown = b.get('enc/emb').dataSync();
    expect(Array.from(grown.subarray(0, 6))).toEqual(Array.from(a.get('enc/emb').dataSync()));
    expect(Array.from(grown.subarray(6))).toEqual(Array.from(fresh.subarray(6)));
    expect(Array.from(b.get('w').dataSync())).toEqual(Array.from(a.get('w').dataSync()));
    a.dispose();
    b.dispose();
  });
});
