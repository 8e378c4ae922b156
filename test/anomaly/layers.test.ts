/**
 * The anomaly model's layers and graph plumbing: shapes, finite gradients for every weight, invariance
 * to the order of edges (GATv2) and of nodes (permuting nodes permutes outputs), no tensor leaks; the
 * alignment of services across snapshots (new services start from their neighbours, removed ones drop).
 */
import { tf } from '../../src/core/tf.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { alignment, buildGraph } from '../../src/anomaly/graph.js';
import { fitFeatureStats } from '../../src/anomaly/features.js';
import { GatV2Conv } from '../../src/anomaly/layers/gatv2.js';
import { InnerProductDecoder } from '../../src/anomaly/layers/inner_product_decoder.js';
import { Params } from '../../src/anomaly/layers/params.js';
import { TemporalAttention } from '../../src/anomaly/layers/temporal_attention.js';
import { Tagae } from '../../src/anomaly/model.js';
import type { Snapshot } from '../../src/anomaly/source.js';
import { Rng } from '../../src/core/rng.js';

beforeAll(async () => {
  await selectBackend('wasm');
});

function randn(rng: Rng, n: number): Float32Array {
  return Float32Array.from({ length: n }, () => rng.normal());
}

/** A random snapshot: n services, each calling 1–3 others. */
function snapshot(rng: Rng, n: number, ts = 0, names?: string[]): Snapshot {
  const src: number[] = [];
  const dst: number[] = [];
  for (let i = 0; i < n; i++) {
    const k = 1 + rng.int(3);
    const seen = new Set<number>();
    for (let j = 0; j < k; j++) {
      const d = rng.int(n);
      if (d === i || seen.has(d)) continue;
      seen.add(d);
      src.push(i);
      dst.push(d);
    }
  }
  return {
    ts,
    services: names ?? Array.from({ length: n }, (_, i) => `s${i}`),
    features: Float32Array.from({ length: n * 3 }, () => Math.abs(rng.normal()) * 10),
    src: Int32Array.from(src),
    dst: Int32Array.from(dst),
    rate: Float32Array.from(src, () => 1 + rng.next() * 9),
    edgeFeatures: Float32Array.from({ length: src.length }, () => rng.next() * 20),
  };
}

describe('GATv2Conv', () => {
  const rng = new Rng(1);
  const n = 7;
  const m = 20;
  const x = randn(rng, n * 5);
  const src = Int32Array.from({ length: m }, () => rng.int(n));
  const dst = Int32Array.from({ length: m }, (_, e) => (e < n ? e : rng.int(n))); // every node receives
  const attr = randn(rng, m * 3);

  it.each([
    [true, 2, 4, 8],
    [false, 3, 4, 4],
  ])('concat=%s heads=%i: shape, edge-order invariance, finite gradients, no leaks', (concat, heads, channels, width) => {
    const params = new Params(new Rng(2));
    const layer = new GatV2Conv(params, 'g', { inDim: 5, edgeDim: 3, heads, channels, concat });
    const run = (perm: number[]): Float32Array =>
      tf.tidy(() => {
        const p = Int32Array.from(perm);
        const pa = new Float32Array(m * 3);
        perm.forEach((e, k) => pa.set(attr.subarray(e * 3, e * 3 + 3), k * 3));
        const out = layer.apply(tf.tensor2d(x, [n, 5]), tf.tensor1d(Int32Array.from(p, (e) => src[e]!), 'int32'), tf.tensor1d(Int32Array.from(p, (e) => dst[e]!), 'int32'), tf.tensor2d(pa, [m, 3]));
        expect(out.shape).toEqual([n, width]);
        return out.dataSync() as Float32Array;
      });
    const before = tf.memory().numTensors;
    const a = run([...Array(m).keys()]);
    const b = run(new Rng(3).shuffle([...Array(m).keys()]));
    expect(tf.memory().numTensors).toBe(before);
    for (let i = 0; i < a.length; i++) expect(b[i]).toBeCloseTo(a[i]!, 5);
    const grads = tf.variableGrads(() => tf.tidy(() => tf.sum(tf.square(layer.apply(tf.tensor2d(x, [n, 5]), tf.tensor1d(src, 'int32'), tf.tensor1d(dst, 'int32'), tf.tensor2d(attr, [m, 3])))) as tf.Scalar), params.list());
    for (const [name, g] of Object.entries(grads.grads)) {
      const v = g.dataSync();
      expect(v.every(Number.isFinite), name).toBe(true);
      if (!name.includes('bias')) expect(v.some((z) => z !== 0), name).toBe(true);
    }
    tf.dispose([grads.value, ...Object.values(grads.grads)]);
    params.dispose();
  });
});

describe('TemporalAttention and InnerProductDecoder', () => {
  it('shapes; a permutation of nodes permutes the outputs; one snapshot alone works', () => {
    const rng = new Rng(4);
    const params = new Params(new Rng(5));
    const ta = new TemporalAttention(params, 't', { dim: 6, keyDim: 4, window: 3 });
    const dec = new InnerProductDecoder(params, 'd', 6, 3);
    const zs = randn(rng, 3 * 5 * 6);
    const perm = [4, 2, 0, 1, 3];
    const permuted = new Float32Array(zs.length);
    for (let l = 0; l < 3; l++) perm.forEach((p, i) => permuted.set(zs.subarray((l * 5 + p) * 6, (l * 5 + p + 1) * 6), (l * 5 + i) * 6));
    const [h, hp, adj, adjP, feat, one] = tf.tidy(() => {
      const h1 = ta.apply(tf.tensor3d(zs, [3, 5, 6]));
      const h2 = ta.apply(tf.tensor3d(permuted, [3, 5, 6]));
      return [h1.arraySync(), h2.arraySync(), dec.dense(h1).arraySync(), dec.dense(h2).arraySync(), dec.features(h1).shape, ta.apply(tf.tensor3d(zs.subarray(0, 30), [1, 5, 6])).shape];
    }) as [number[][], number[][], number[][], number[][], number[], number[]];
    expect(h.length).toBe(5);
    perm.forEach((p, i) => h[p]!.forEach((v, c) => expect(hp[i]![c]).toBeCloseTo(v, 5)));
    perm.forEach((p, i) => perm.forEach((q, j) => expect(adjP[i]![j]).toBeCloseTo(adj[p]![q]!, 5)));
    expect(adj.flat().every((v) => v > 0 && v < 1)).toBe(true);
    expect(feat).toEqual([5, 3]);
    expect(one).toEqual([5, 6]);
    expect(() => new InnerProductDecoder(params, 'odd', 5, 3)).toThrow(/even/);
    params.dispose();
  });
});

describe('snapshot graphs', () => {
  it('edge weights are each source\'s share of its outgoing traffic; self-loops and reverse edges for message passing', () => {
    const s = snapshot(new Rng(6), 12);
    const stats = fitFeatureStats([s], ['a', 'b', 'c'], ['lat']);
    const g = buildGraph(s, stats);
    const out = new Map<number, number>();
    g.src.forEach((v, e) => out.set(v, (out.get(v) ?? 0) + g.share[e]!));
    for (const total of out.values()) expect(total).toBeCloseTo(1, 5);
    expect(g.mpSrc.length).toBe(2 * s.src.length + 12);
    const x = g.x;
    for (let f = 0; f < 3; f++) {
      let mean = 0;
      for (let i = 0; i < 12; i++) mean += x[i * 3 + f]! / 12;
      expect(Math.abs(mean)).toBeLessThan(1e-5); // standardised on this very snapshot
    }
  });

  it('aligns services across snapshots: kept ones one-hot, new ones from their neighbours, removed ones dropped', () => {
    const past = { index: new Map([['a', 0], ['b', 1], ['gone', 2]]), n: 3 };
    const now = { services: ['b', 'new', 'a', 'lonely'], neighbours: [[1], [0, 2], [1], []] };
    const al = alignment(now, past);
    expect(Array.from(al.matrix)).toEqual([0, 1, 0, 0.5, 0.5, 0, 1, 0, 0, 0, 0, 0]);
    expect(Array.from(al.fallback)).toEqual([0, 0, 0, 1]);
    expect(al.newServices).toBe(2);
  });
});

describe('TAGAE', () => {
  it('trains (loss falls) and reconstructs without leaking tensors, with services joining and leaving', () => {
    const rng = new Rng(7);
    const base = snapshot(rng, 10);
    const snaps = Array.from({ length: 6 }, (_, t) => ({ ...base, ts: t * 60, features: base.features.map((v) => v * (1 + 0.05 * rng.normal())) }));
    const stats = fitFeatureStats(snaps, ['a', 'b', 'c'], ['lat']);
    const graphs = snaps.map((s) => buildGraph(s, stats));
    const model = new Tagae({ featDim: 3, edgeExtra: 1, hidden: 8, heads: 2, embeddingDim: 8, window: 3, structureWeight: 0.5, negativeRatio: 5, allPairsMaxNodes: 64, seed: 1 });
    const opt = tf.train.adam(0.01);
    const losses: number[] = [];
    for (let ep = 0; ep < 30; ep++) losses.push(model.trainStep(opt, [graphs[5]!, graphs[4]!, graphs[3]!]));
    expect(losses[losses.length - 1]!).toBeLessThan(0.5 * losses[0]!);
    const before = tf.memory().numTensors;
    const r1 = model.reconstruct(graphs[3]!, []);
    const past = [{ ts: 180, services: graphs[3]!.services, index: graphs[3]!.index, n: 10, z: r1.z }];
    const changed = buildGraph(snapshot(new Rng(8), 11, 240, ['s0', 's1', 's2', 's3', 's4', 's5', 's6', 's7', 's8', 'x-new', 'y-new']), stats);
    const r2 = model.reconstruct(changed, past);
    expect(r2.adjacency.length).toBe(121);
    expect(r2.features.length).toBe(33);
    expect(r2.newServices).toBe(2);
    expect(Array.from(r2.adjacency).every(Number.isFinite)).toBe(true);
    expect(tf.memory().numTensors).toBe(before);
    opt.dispose();
    model.params.dispose();
  });
});
