/**
 * Re-baselining after a pod replacement: a replaced pod settles at a new level, and against the fitted
 * baselines it would look anomalous for good. After a `pod_replaced` event the service is held out for
 * `rebaseline_snapshots` while its new level is collected, then judged against it — for TAGAE's
 * per-service error (the detector, with a stub reconstruction) and for the z-score baseline (on metrics
 * read from CSV with a replica rename, as `score` reads them).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anomalySchema } from '../../src/config/anomaly_schema.js';
import { loadConfig } from '../../src/config/load.js';
import { withDuck } from '../../src/data/duck.js';
import { Detector, emptyState, POD_REPLACED } from '../../src/anomaly/detector.js';
import { summariseAdjacency } from '../../src/anomaly/adjacency.js';
import type { FeatureStats } from '../../src/anomaly/features.js';
import { eventsBetween } from '../../src/anomaly/fit.js';
import type { SnapshotGraph } from '../../src/anomaly/graph.js';
import type { Reconstruction } from '../../src/anomaly/model.js';
import type { SnapshotScorer } from '../../src/anomaly/scorer.js';
import { loadEvents, loadSnapshots, type Snapshot } from '../../src/anomaly/source.js';
import { fitZScore, zScores, ZScoreRebaseliner } from '../../src/anomaly/zscore_baseline.js';

const stats = { node: [{ name: 'mem', log: false, mean: 0, std: 1 }], edge: [] } as unknown as FeatureStats;

/** Reconstructs every feature as 0 and no calls: a service's feature error is its standardised value squared. */
class ZeroScorer implements SnapshotScorer {
  readonly runtime = 'onnx' as const;
  reconstruct(g: SnapshotGraph): Promise<Reconstruction> {
    const adj = new Float32Array(g.n * g.n);
    return Promise.resolve({ adjacency: adj, summary: summariseAdjacency(adj, g.n), features: new Float32Array(g.n), z: new Float32Array(g.n * 2), newServices: 0 });
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

const services = ['cart', 'front'];
const snap = (ts: number, cart: number): Snapshot => ({ ts, services, features: Float32Array.from([cart, 1]), src: new Int32Array(0), dst: new Int32Array(0), rate: new Float32Array(0), edgeFeatures: new Float32Array(0) });

async function cartErrors(rebaseline: number): Promise<{ r: number[]; top: string[]; detector: Detector }> {
  const cfg = anomalySchema.parse({ metrics: { path: 'm.csv' }, calls: { path: 'c.csv' }, structure_weight: 0, suppress_snapshots: 1, window: 1, rebaseline_snapshots: rebaseline });
  // fitted when cart's memory read 1 (feature error 1) like front's
  const detector = new Detector(new ZeroScorer(), stats, cfg, { services: { cart: [1, 1], front: [1, 1] }, median: [1, 1] }, emptyState('t', Array.from({ length: 20 }, () => 1)));
  const r: number[] = [];
  const top: string[] = [];
  for (let k = 0; k < 12; k++) {
    // the pod is replaced at k = 2 and the new one sits at 3 (feature error 9) from then on
    const s = snap(60 * k, k < 2 ? 1 : 3);
    const out = await detector.step(s, k === 2 ? [{ ts: s.ts, service: 'cart', kind: POD_REPLACED }] : [], { evidence: true });
    r.push(out.service_scores![0]!);
    top.push(out.top_services[0]!);
  }
  return { r, top, detector };
}

describe('TAGAE baselines after a pod replacement', () => {
  it('without re-baselining, the replaced service stays 9× its baseline and first in every list', async () => {
    const { r, top } = await cartErrors(0);
    expect(r.slice(4)).toEqual(Array.from({ length: 8 }, () => 9));
    expect(top.slice(4).every((s) => s === 'cart')).toBe(true);
  });

  it('with it, the service is held out for the warm-up, then judged against its new level', async () => {
    const { r, top, detector } = await cartErrors(4);
    // k = 2..5: the new warm-up (cart suppressed, front tops the list); from k = 6 on: 9 / 9
    expect(top.slice(2, 6)).toEqual(['front', 'front', 'front', 'front']);
    expect(r.slice(6)).toEqual(Array.from({ length: 6 }, () => 1));
    expect(detector.state.rebaselined).toEqual({ cart: [0, 9] });
    expect(detector.state.rebaselining).toEqual({});
    expect(detector.state.suppressed.cart).toBeUndefined();
  });

  it('the re-baselining survives the window state written to disk and read back (watch restarts)', async () => {
    const { detector } = await cartErrors(4);
    const cfg = anomalySchema.parse({ metrics: { path: 'm.csv' }, calls: { path: 'c.csv' }, structure_weight: 0, window: 1, rebaseline_snapshots: 4 });
    const restored = new Detector(new ZeroScorer(), stats, cfg, { services: { cart: [1, 1], front: [1, 1] }, median: [1, 1] }, JSON.parse(JSON.stringify(detector.exportState())));
    const out = await restored.step(snap(60 * 20, 3), [], { evidence: true });
    expect(out.service_scores![0]).toBe(1);
  });
});

describe('z-score baselines after a pod replacement, on metrics read from CSV', () => {
  it('the replaced pod is held out (z = 0) for the warm-up, then scored against its own new level', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gnnctl-rebaseline-'));
    const lines: string[] = [];
    for (let k = 0; k < 20; k++) {
      const t = `2026-01-05 00:${String(k).padStart(2, '0')}:05`;
      // memory of cart's first pod ~100 Mi; its replacement from minute 10 on sits at ~400 Mi
      lines.push(k < 10 ? `${t},cart-7b598fc7d-xxxxx,${100 + (k % 3)}` : `${t},cart-7b598fc7d-bbbbb,${400 + (k % 3)}`);
      lines.push(`${t},front-579b9bff58-t2dbm,${50 + (k % 2)}`);
    }
    writeFileSync(join(dir, 'metrics.csv'), `ts,pod,mem\n${lines.join('\n')}\n`);
    writeFileSync(join(dir, 'calls.csv'), 'ts,source,destination,requests_per_second\n2026-01-05 00:00:00,front,cart,1\n');
    writeFileSync(join(dir, 'config.yaml'), 'name: rebaseline\nanomaly:\n  metrics: { path: metrics.csv, service_column: pod, service_from: strip_replica }\n  calls: { path: calls.csv }\n  snapshot_seconds: 60\n');
    const cfg = loadConfig(join(dir, 'config.yaml'), {});
    const { snaps, events } = await withDuck(async ({ conn }) => ({ snaps: (await loadSnapshots(conn, cfg, {})).snapshots, events: await loadEvents(conn, cfg, {}) }));
    expect(events.map((e) => [e.service, e.kind])).toEqual([['cart', 'pod_replaced']]);
    const fitted = fitZScore(snaps.slice(0, 8), ['mem']);
    const batches = eventsBetween(events, snaps);
    const rebaseliner = new ZScoreRebaseliner(fitted, 5);
    const held: boolean[] = [];
    const z: number[] = [];
    snaps.forEach((s, k) => {
      rebaseliner.onEvents(batches[k]!);
      const warming = rebaseliner.observe(s);
      held.push(warming('cart'));
      z.push(zScores(rebaseliner.stats, s)[s.services.indexOf('cart')]!);
    });
    const plain = snaps.map((s) => zScores(fitted, s)[s.services.indexOf('cart')]!);
    // minutes 10–13 are the new pod's warm-up (the 5th sample completes it); the fitted stats call it 50 (capped) for good
    expect(held.map((h, k) => (h ? k : -1)).filter((k) => k >= 0)).toEqual([10, 11, 12, 13]);
    expect(plain.slice(10).every((v) => v === 50)).toBe(true);
    expect(Math.max(...z.slice(14))).toBeLessThan(3);
    // front was not replaced: its statistics are the fitted ones
    expect(rebaseliner.stats.services.front).toEqual(fitted.services.front);
  });
});
