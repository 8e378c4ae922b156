/**
 * TAGAE in onnxruntime (`tagae_onnx.ts` through `OnnxScorer`) against the TF.js model it was exported
 * from: Â, X̂ and Z within 1e-4 at the start of a series (no past), with part of the window, with the full
 * window, with new services (neighbour-mean alignment and the current-embedding fallback) and removed
 * ones, and for a window of 1.
 */
import { tf } from '../../src/core/tf.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { Rng } from '../../src/core/rng.js';
import { buildGraph, type SnapshotGraph } from '../../src/anomaly/graph.js';
import { Tagae, type PastEmbedding, type TagaeArgs } from '../../src/anomaly/model.js';
import { OnnxScorer, TfjsScorer } from '../../src/anomaly/scorer.js';
import { denseAdjacency, summariseAdjacency } from '../../src/anomaly/adjacency.js';
import { tagaeOnnx } from '../../src/anomaly/tagae_onnx.js';
import { weightMap } from '../../src/artifacts/run_store.js';
import { onnx as onnx_ } from '../../src/artifacts/onnx/onnx_schema.js';
import type { FeatureStats } from '../../src/anomaly/features.js';
import type { Snapshot } from '../../src/anomaly/source.js';

const F = 5;
const FE = 2;
const stats: FeatureStats = {
  node: Array.from({ length: F }, (_, i) => ({ name: `f${i}`, log: i % 2 === 0, mean: 0.4, std: 0.3 })),
  edge: Array.from({ length: FE }, (_, i) => ({ name: `e${i}`, log: true, mean: 0.5, std: 0.3 })),
} as FeatureStats;

function snapshot(rng: Rng, ts: number, services: string[], edges: number): Snapshot {
  const n = services.length;
  const pairs = new Set<number>();
  while (pairs.size < Math.min(edges, n * (n - 1))) {
    const s = rng.int(n);
    const d = rng.int(n);
    if (s !== d) pairs.add(s * n + d);
  }
  const list = [...pairs];
  return {
    ts,
    services,
    features: Float32Array.from({ length: n * F }, () => rng.next() * 2),
    src: Int32Array.from(list, (p) => Math.floor(p / n)),
    dst: Int32Array.from(list, (p) => p % n),
    rate: Float32Array.from(list, () => 1 + rng.next() * 50),
    edgeFeatures: Float32Array.from({ length: list.length * FE }, () => rng.next()),
  } as Snapshot;
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const args = (window: number): TagaeArgs => ({ featDim: F, edgeExtra: FE, hidden: 8, heads: 2, embeddingDim: 8, window, structureWeight: 0.7, negativeRatio: 5, allPairsMaxNodes: 64, seed: 3 });

describe('TAGAE: TF.js and onnxruntime agree', () => {
  let model: Tagae;
  let onnx: OnnxScorer;
  let tfjs: TfjsScorer;
  const rng = new Rng(7);
  const names = Array.from({ length: 40 }, (_, i) => `svc-${i}`);
  const series: SnapshotGraph[] = [];

  beforeAll(async () => {
    await selectBackend('wasm');
    model = new Tagae(args(4));
    onnx = await OnnxScorer.fromModel(model);
    tfjs = new TfjsScorer(model);
    for (let t = 0; t < 4; t++) series.push(buildGraph(snapshot(rng, 60 * t, names, 150), stats));
  });
  afterAll(async () => {
    await onnx?.close();
    model?.params.dispose();
  });

  async function compare(now: SnapshotGraph, past: PastEmbedding[]): Promise<void> {
    const before = tf.memory().numTensors;
    const a = await tfjs.reconstruct(now, past);
    expect(tf.memory().numTensors).toBe(before);
    const b = await onnx.reconstruct(now, past);
    // onnxruntime hands over Â as the decoder's factors; densified, it is TF.js's Â.
    expect(b.adjacency).not.toBeInstanceOf(Float32Array);
    const bAdj = denseAdjacency(b.adjacency, now.n);
    expect(maxAbsDiff(a.adjacency as Float32Array, bAdj)).toBeLessThanOrEqual(1e-4);
    expect(maxAbsDiff(a.features, b.features)).toBeLessThanOrEqual(1e-4);
    expect(maxAbsDiff(a.z, b.z)).toBeLessThanOrEqual(1e-4);
    expect(b.newServices).toBe(a.newServices);
    // Â's reductions computed in the graph equal the detector's own walk of Â.
    const want = summariseAdjacency(bAdj, now.n);
    expect(b.summary).toBeDefined();
    for (const key of ['rowSq', 'colSq', 'rowMax'] as const) {
      for (let i = 0; i < now.n; i++) expect(Math.abs(b.summary![key][i]! - want[key][i]!)).toBeLessThanOrEqual(1e-5 * Math.max(1, want[key][i]!));
    }
    // Not trivially equal: the outputs vary across services.
    expect(new Set(Array.from(bAdj.subarray(0, 50), (v) => v.toFixed(4))).size).toBeGreaterThan(5);
  }

  const ring = async (graphs: SnapshotGraph[]): Promise<PastEmbedding[]> =>
    Promise.all(graphs.map(async (g) => ({ ts: g.ts, services: g.services, index: g.index, n: g.n, z: (await tfjs.reconstruct(g, [])).z })));

  it.each([0, 1, 3])('with %i past snapshots (the window is 4)', async (lags) => {
    await compare(series[3]!, (await ring(series.slice(0, 3).reverse())).slice(0, lags));
  });

  it('with new and removed services (neighbour-mean alignment, the fallback to the current embedding)', async () => {
    // 5 services leave, 6 arrive; two of the new ones have no call at all (nothing to align them with).
    const now = [...names.slice(5), ...Array.from({ length: 6 }, (_, i) => `new-${i}`)];
    const s = snapshot(rng, 300, now, 160);
    const isolated = new Set([now.length - 1, now.length - 2]);
    const keep = Array.from(s.src, (v, e) => !isolated.has(v) && !isolated.has(s.dst[e]!));
    const pick = <T extends Float32Array | Int32Array>(x: T, w = 1): T => x.filter((_, i) => keep[Math.floor(i / w)]) as T;
    const g = buildGraph({ ...s, src: pick(s.src), dst: pick(s.dst), rate: pick(s.rate), edgeFeatures: pick(s.edgeFeatures, FE) } as Snapshot, stats);
    const past = await ring(series.slice(1).reverse());
    const a = await tfjs.reconstruct(g, past);
    expect(a.newServices).toBe(6);
    await compare(g, past);
  });

  it('a model written before the factored outputs existed still scores (dense Â; the detector then walks it itself)', async () => {
    const m = onnx_.ModelProto.decode(tagaeOnnx(model.args, weightMap(model.params.export())));
    m.graph!.output = m.graph!.output!.filter((o) => !o.name!.startsWith('adjacency_'));
    const old = await OnnxScorer.open(onnx_.ModelProto.encode(m).finish(), model.args);
    try {
      const a = await onnx.reconstruct(series[1]!, []);
      const b = await old.reconstruct(series[1]!, []);
      expect(b.summary).toBeUndefined();
      expect(b.adjacency).toBeInstanceOf(Float32Array);
      expect(maxAbsDiff(denseAdjacency(a.adjacency, series[1]!.n), b.adjacency as Float32Array)).toBeLessThanOrEqual(1e-6);
      expect(maxAbsDiff(a.features, b.features)).toBe(0);
    } finally {
      await old.close();
    }
  });

  it('a window of 1 (no temporal history at all)', async () => {
    const m1 = new Tagae(args(1));
    const o1 = await OnnxScorer.fromModel(m1);
    try {
      const a = m1.reconstruct(series[0]!, []);
      const b = await o1.reconstruct(series[0]!, []);
      expect(maxAbsDiff(a.adjacency as Float32Array, denseAdjacency(b.adjacency, series[0]!.n))).toBeLessThanOrEqual(1e-4);
      expect(maxAbsDiff(a.features, b.features)).toBeLessThanOrEqual(1e-4);
    } finally {
      await o1.close();
      m1.params.dispose();
    }
  });
});
