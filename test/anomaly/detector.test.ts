/**
 * The detector's per-service errors and top edges against the plain definition (every ordered pair
 * walked with a target matrix), on a reconstruction given by a stub scorer: repeated calls, a self-call,
 * suppressed services and all-pairs graphs included.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/core/rng.js';
import { anomalySchema } from '../../src/config/anomaly_schema.js';
import { Detector, emptyState } from '../../src/anomaly/detector.js';
import { denseAdjacency, summariseAdjacency } from '../../src/anomaly/adjacency.js';
import { buildGraph, type SnapshotGraph } from '../../src/anomaly/graph.js';
import type { FeatureStats } from '../../src/anomaly/features.js';
import type { AdjacencySummary, Reconstruction } from '../../src/anomaly/model.js';
import type { SnapshotScorer } from '../../src/anomaly/scorer.js';
import type { Snapshot } from '../../src/anomaly/source.js';

const F = 3;
const stats = { node: Array.from({ length: F }, (_, i) => ({ name: `f${i}`, log: false, mean: 0, std: 1 })), edge: [] } as unknown as FeatureStats;

/** The definition: s_i = mean over observed pairs ∋ i of (Â − A)² + mean over non-edge pairs ∋ i of Â². */
function reference(g: SnapshotGraph, adj: Float32Array, xHat: Float32Array, suppressed: Set<string>, k: number) {
  const n = g.n;
  const target = new Map<number, number>();
  for (let e = 0; e < g.src.length; e++) target.set(g.src[e]! * n + g.dst[e]!, g.share[e]!);
  const os = new Float64Array(n), oc = new Float64Array(n), ns = new Float64Array(n), nc = new Float64Array(n);
  const pairs: [number, number][] = [];
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      if (i === j) continue;
      const p = i * n + j;
      const t = target.get(p);
      const e = (adj[p]! - (t ?? 0)) ** 2;
      for (const v of [i, j]) {
        if (t !== undefined) (os[v]! += e), oc[v]!++;
        else (ns[v]! += e), nc[v]!++;
      }
      if (!suppressed.has(g.services[i]!) && !suppressed.has(g.services[j]!)) pairs.push([e, p]);
    }
  }
  const structure = Array.from({ length: n }, (_, i) => (oc[i]! ? os[i]! / oc[i]! : 0) + (nc[i]! ? ns[i]! / nc[i]! : 0));
  const feature = Array.from({ length: n }, (_, i) => {
    let s = 0;
    for (let c = 0; c < F; c++) s += (xHat[i * F + c]! - g.x[i * F + c]!) ** 2;
    return s / F;
  });
  pairs.sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  return { structure, feature, top: pairs.slice(0, k).map(([, p]) => `${g.services[Math.floor(p / n)]}->${g.services[p % n]}`) };
}

class StubScorer implements SnapshotScorer {
  readonly runtime = 'onnx' as const;
  constructor(private readonly rec: (g: SnapshotGraph) => Reconstruction) {}
  reconstruct(g: SnapshotGraph): Promise<Reconstruction> {
    return Promise.resolve(this.rec(g));
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

describe('Detector: per-service errors and top edges', () => {
  it.each([
    [30, 120, false, false],
    [12, 132, false, false], // every ordered pair is an edge
    [25, 80, true, false], // with suppressed services
    [30, 120, false, true],
    [12, 132, false, true],
    [25, 80, true, true],
  ])('n = %i, %i calls, suppression %s, float32 summary from the runtime %s: equal to walking every pair', async (n, calls, suppress, given) => {
    const rng = new Rng(n + calls);
    const services = Array.from({ length: n }, (_, i) => `s${i}`);
    const src: number[] = [];
    const dst: number[] = [];
    const all = n * (n - 1) <= calls;
    for (let i = 0; i < n && all; i++) for (let j = 0; j < n; j++) if (i !== j) src.push(i), dst.push(j);
    while (src.length < calls) src.push(rng.int(n)), dst.push(rng.int(n)); // repeats and self-calls included
    const snap = {
      ts: 60,
      services,
      features: Float32Array.from({ length: n * F }, () => rng.next()),
      src: Int32Array.from(src),
      dst: Int32Array.from(dst),
      rate: Float32Array.from(src, () => 1 + rng.int(20)),
      edgeFeatures: new Float32Array(0),
    } as Snapshot;
    const adj = Float32Array.from({ length: n * n }, () => Math.round(rng.next() * 1000) / 1000); // ties on purpose
    const xHat = Float32Array.from({ length: n * F }, () => rng.next());
    const cfg = anomalySchema.parse({ metrics: { path: 'm.csv' }, calls: { path: 'c.csv' }, top_k: 7 });
    // As onnxruntime gives it: float32 row/column sums and maxima beside Â (otherwise the detector's own).
    const f32 = (s: AdjacencySummary): AdjacencySummary => ({ rowSq: Float32Array.from(s.rowSq), colSq: Float32Array.from(s.colSq), rowMax: Float32Array.from(s.rowMax) });
    const summary = given ? f32(summariseAdjacency(adj, n)) : undefined;
    const detector = new Detector(new StubScorer((g) => ({ adjacency: adj, summary, features: xHat, z: new Float32Array(g.n * 2), newServices: 0 })), stats, cfg, null, emptyState('t', []));
    const events = suppress ? [{ ts: 60, service: 's3', kind: 'deploy' }] : [];
    const r = await detector.step(snap, events as never, { keepRaw: true });
    const g = buildGraph(snap, stats);
    const sup = new Set(suppress ? ['s3', ...g.neighbours[3]!.map((j) => services[j]!)] : []);
    const want = reference(g, adj, xHat, sup, 7);
    r.raw!.structure.forEach((v, i) => expect(v).toBeCloseTo(want.structure[i]!, 6));
    r.raw!.feature.forEach((v, i) => expect(v).toBeCloseTo(want.feature[i]!, 6));
    expect(r.top_edges).toEqual(want.top);
    expect(r.suppressed_services).toBe(sup.size);
  });

  it.each([
    [40, 150, false],
    [25, 80, true],
  ])('Â as the decoder\'s factors (onnxruntime), n = %i, %i calls, suppression %s: equal to walking every pair of the dense Â', async (n, calls, suppress) => {
    const rng = new Rng(n * calls);
    const services = Array.from({ length: n }, (_, i) => `s${i}`);
    const src = Int32Array.from({ length: calls }, () => rng.int(n));
    const dst = Int32Array.from({ length: calls }, () => rng.int(n));
    const snap = { ts: 60, services, features: Float32Array.from({ length: n * F }, () => rng.next()), src, dst, rate: Float32Array.from(src, () => 1 + rng.int(20)), edgeFeatures: new Float32Array(0) } as Snapshot;
    const dim = 8;
    const factored = { h: Float32Array.from({ length: n * dim }, () => rng.next() * 2 - 1), dim };
    const dense = denseAdjacency(factored, n);
    const s = summariseAdjacency(dense, n);
    const summary = { rowSq: Float32Array.from(s.rowSq), colSq: Float32Array.from(s.colSq), rowMax: Float32Array.from(s.rowMax) };
    const xHat = Float32Array.from({ length: n * F }, () => rng.next());
    const cfg = anomalySchema.parse({ metrics: { path: 'm.csv' }, calls: { path: 'c.csv' }, top_k: 7 });
    const detector = new Detector(new StubScorer((g) => ({ adjacency: factored, summary, features: xHat, z: new Float32Array(g.n * 2), newServices: 0 })), stats, cfg, null, emptyState('t', []));
    const r = await detector.step(snap, suppress ? ([{ ts: 60, service: 's3', kind: 'deploy' }] as never) : [], { keepRaw: true });
    const g = buildGraph(snap, stats);
    const sup = new Set(suppress ? ['s3', ...g.neighbours[3]!.map((j) => services[j]!)] : []);
    const want = reference(g, dense, xHat, sup, 7);
    r.raw!.structure.forEach((v, i) => expect(v).toBeCloseTo(want.structure[i]!, 6));
    expect(r.top_edges).toEqual(want.top);
  });
});
