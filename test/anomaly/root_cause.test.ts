/**
 * Root-cause ranking on hand-made call graphs whose answer is clear by eye, and the AC@k arithmetic.
 */
import { describe, expect, it } from 'vitest';
import { propagate, rankServices, rootCauseQuality, wilsonInterval } from '../../src/anomaly/root_cause.js';
import { recentShares, shareScores, signalDeviations, signalFamilies, signalFamily } from '../../src/anomaly/signal_share.js';
import { fitFamilyWeights, weightedScores } from '../../src/anomaly/signal_weights.js';
import { evaluateRootCause } from '../../src/anomaly/root_cause_eval.js';
import type { Snapshot } from '../../src/anomaly/source.js';
import { fitEdgeZScore, fitZScore, zScores } from '../../src/anomaly/zscore_baseline.js';

// frontend → checkout → payment; frontend → catalog
const services = ['catalog', 'checkout', 'frontend', 'payment'];
const src = Int32Array.from([2, 1, 2]);
const dst = Int32Array.from([1, 3, 0]);

describe('propagate', () => {
  it('moves blame from callers that inherit a slow callee to the callee', () => {
    // payment is slow; checkout and frontend inherit its latency and look even worse by their own metrics
    const evidence = [0, 5, 6, 4];
    expect(rankServices(services, evidence)[0]).toBe('frontend');
    const pi = propagate({ services, evidence, src, dst });
    expect(rankServices(services, pi)[0]).toBe('payment');
    expect(pi.reduce((s, x) => s + x, 0)).toBeCloseTo(1, 9);
  });

  it('leaves a fault that stays at the caller with the caller', () => {
    const pi = propagate({ services, evidence: [0.1, 0.2, 8, 0.1], src, dst });
    expect(rankServices(services, pi)[0]).toBe('frontend');
  });

  it('no evidence: all zero, ranking by name', () => {
    const pi = propagate({ services, evidence: [0, 0, 0, 0], src, dst });
    expect([...pi]).toEqual([0, 0, 0, 0]);
    expect(rankServices(services, pi)).toEqual(services);
  });
});

describe('AC@k', () => {
  it('counts the root cause at rank 1, within 3, and averages AC@1..5', () => {
    const q = rootCauseQuality([
      { kind: 'cpu', root_cause: 'a', ranking: ['a', 'b', 'c'] },
      { kind: 'cpu', root_cause: 'c', ranking: ['a', 'b', 'c'] },
      { kind: 'net', root_cause: 'z', ranking: ['a', 'b', 'c', 'd', 'e', 'z'] },
    ]);
    expect(q.ac_at_1).toBeCloseTo(1 / 3);
    expect(q.ac_at_3).toBeCloseTo(2 / 3);
    expect(q.avg_at_5).toBeCloseTo((1 + 1 + 2 + 2 + 2) / 3 / 5);
    expect(q.by_kind.cpu).toMatchObject({ incidents: 2, ac_at_1: 0.5, ac_at_3: 1 });
  });
});

describe('evaluateRootCause', () => {
  const snap = (ts: number, features: number[]): Snapshot => ({ ts, services, features: Float32Array.from(features), src, dst, rate: Float32Array.from([1, 1, 1]), edgeFeatures: new Float32Array(0) });
  it('ranks each method over the window, and recommends the better one', () => {
    const normal = Array.from({ length: 20 }, (_, k) => snap(k * 60, [1 + (k % 2) * 0.1, 1, 1, 1]));
    const z = fitZScore(normal, ['latency']);
    // payment's own latency triples; its callers' rise less
    const window = [snap(2000, [1, 2, 2, 3]), snap(2060, [1, 2, 2, 3])];
    const ev = window.map((s) => ({ zscore: zScores(z, s), static: Float64Array.from([0, 0, 9, 0]) }));
    const r = evaluateRootCause(window, ev, [{ start: 2000, end: 2120, kind: 'latency', root_cause: 'payment' }])!;
    expect(r.incidents).toBe(1);
    expect(r.methods.zscore!.ac_at_1).toBe(1);
    expect(r.methods.static!.ac_at_1).toBe(0);
    expect(r.rankings[0]!.top.zscore![0]).toBe('payment');
    expect(r.recommended_method).toBe('zscore');
  });
});

describe('evaluateRootCause: validation picks, test reports', () => {
  const snap = (ts: number): Snapshot => ({ ts, services, features: new Float32Array(4), src, dst, rate: Float32Array.from([1, 1, 1]), edgeFeatures: new Float32Array(0) });
  it('recommends the method best on the earlier half, even when another wins the later half', () => {
    // 8 incidents, one snapshot each; static names the root cause in the first four, zscore in the last four
    const snaps = Array.from({ length: 8 }, (_, k) => snap(k * 600));
    const truth = (k: number): string => services[k % 4]!;
    const oneHot = (name: string): Float64Array => Float64Array.from(services, (s) => (s === name ? 1 : 0));
    const wrong = (k: number): string => services[(k + 1) % 4]!;
    const ev = snaps.map((_, k) => ({ static: oneHot(k < 4 ? truth(k) : wrong(k)), zscore: oneHot(k < 4 ? wrong(k) : truth(k)) }));
    const incidents = snaps.map((s, k) => ({ start: s.ts, end: s.ts + 60, kind: 'x', root_cause: truth(k) }));
    const r = evaluateRootCause(snaps, ev, incidents)!;
    expect(r.selection.validation_incidents).toBe(4);
    expect(r.selection.test_incidents).toBe(4);
    expect(r.selection.validation.static!.ac_at_1).toBe(1);
    expect(r.selection.test.zscore!.ac_at_1).toBe(1);
    expect(r.methods.zscore!.ac_at_1).toBe(0.5);
    expect(r.recommended_method).toBe('static');
  });

  it('AC@k carries a Wilson interval around it', () => {
    expect(wilsonInterval(0.5, 0)).toEqual([0, 1]);
    const [lo, hi] = wilsonInterval(0.7, 56);
    expect(lo).toBeCloseTo(0.57, 2);
    expect(hi).toBeCloseTo(0.8, 2);
    const q = rootCauseQuality([{ kind: 'k', root_cause: 'a', ranking: ['a'] }]);
    expect(q.ac_at_1_interval[0]).toBeCloseTo(0.207, 3);
    expect(q.ac_at_1_interval[1]).toBe(1);
  });
});

describe('signals: each signal family votes once, shared among the services that deviate in it', () => {
  it('groups percentiles of one quantity into one family', () => {
    expect(signalFamily('PodServerLatencyP99(s)')).toBe('PodServerLatency(s)');
    expect(signalFamily('latency_p50_ms')).toBe('latency_ms');
    expect(signalFamily('cpu')).toBe('cpu');
    const f = signalFamilies(['cpu', 'lat_p50', 'lat_p99', 'mem'], ['latency_p50_ms', 'latency_p99_ms', 'gap_p50_ms']);
    expect(f.names).toEqual(['cpu', 'lat', 'mem', 'latency_ms:in', 'gap_ms:in']);
    expect(f.node).toEqual([[0], [1, 2], [3]]);
    expect(f.edge).toEqual([[0, 1], [2]]);
  });

  it('a service alone in one family outranks services that share a larger but common deviation', () => {
    // memory moves on every service by a lot (a redeploy); only payment's CPU moves
    const dev = [Float64Array.from([0, 0, 0, 3]), Float64Array.from([40, 40, 40, 40])];
    const score = shareScores(dev, 4);
    expect([...score]).toEqual([0.25, 0.25, 0.25, 1.25]);
    expect(rankServices(services, score)[0]).toBe('payment');
  });

  it('deviations: node columns by |z| against the normal period, edge columns by the increase on calls received', () => {
    const cols = ['cpu', 'lat_p50', 'lat_p99'];
    const row = (ts: number, v: number[], edge: number[]): Snapshot => ({ ts, services, features: Float32Array.from(v), src, dst, rate: Float32Array.from([1, 1, 1]), edgeFeatures: Float32Array.from(edge) });
    const normal = Array.from({ length: 10 }, (_, k) => row(k * 60, Array.from({ length: 12 }, () => 10 + (k % 2)), [5 + (k % 2), 5, 5]));
    const zs = fitZScore(normal, cols);
    const es = fitEdgeZScore(normal, ['gap_p50_ms']);
    const fam = signalFamilies(cols, ['gap_p50_ms']);
    // checkout's lat_p99 doubles; the call checkout → payment takes 10 ms longer between the services
    const v = Array.from({ length: 12 }, () => 10);
    v[1 * 3 + 2] = 20;
    const d = signalDeviations(fam, zs, es, row(1000, v, [5, 15, 5]));
    expect(fam.names).toEqual(['cpu', 'lat', 'gap_ms:in']);
    // scale: max(1.4826 × MAD 0.5, 5% of the median 10.5) = 0.741; the family takes the larger of p50, p99
    expect(d[1]![1]).toBeCloseTo(9.5 / 0.7413, 2);
    expect(d[1]![3]).toBeCloseTo(0.5 / 0.7413, 2);
    // edge 1 is checkout → payment: the gap's increase is payment's (median 5, scale 5% of it: 10 / 0.25)
    expect(d[2]![3]).toBeCloseTo(40, 5);
    expect(d[2]![1]).toBe(0);
  });
});

describe('signals_learned: family weights fitted on labelled faults', () => {
  // three services; family 0 always points at a decoy, family 1 at the root cause, family 2 is flat
  const incident = (target: number, decoy: number): { shares: Float64Array[]; target: number } => ({
    shares: [Float64Array.from([0, 1, 2], (i) => (i === decoy ? 0.9 : 0.05)), Float64Array.from([0, 1, 2], (i) => (i === target ? 0.6 : 0.2)), Float64Array.from([1 / 3, 1 / 3, 1 / 3])],
    target,
  });
  const train = [incident(0, 1), incident(1, 2), incident(2, 0), incident(0, 2), incident(1, 0)];

  it('weights the family that points at the root cause above the one that points elsewhere', () => {
    const w = fitFamilyWeights(train, 3);
    expect(w[1]!).toBeGreaterThan(1);
    expect(w[0]!).toBeLessThan(1);
    // unweighted, the decoy family's 0.9 wins; weighted, the root cause does
    const held = incident(2, 1);
    expect(rankServices(['a', 'b', 'c'], shareScores(held.shares, 3))[0]).toBe('b');
    expect(rankServices(['a', 'b', 'c'], weightedScores(held.shares, w, 3))[0]).toBe('c');
  });

  it('no usable faults: every weight 1 (the unweighted signals)', () => {
    expect([...fitFamilyWeights([], 3)]).toEqual([1, 1, 1]);
    expect([...fitFamilyWeights([{ shares: incident(0, 1).shares, target: -1 }], 3)]).toEqual([1, 1, 1]);
  });
});

describe('recentShares: the ranking an alert carries', () => {
  it('sums each family over the recent snapshots before sharing it out, services that come and go included', () => {
    const r = recentShares([
      { services: ['a', 'b'], deviations: [Float64Array.from([1, 0]), Float64Array.from([0, 0])] },
      { services: ['b', 'c'], deviations: [Float64Array.from([1, 0]), Float64Array.from([2, 2])] },
    ]);
    expect(r.services).toEqual(['a', 'b', 'c']);
    // family 0: a 1, b 1, c 0 → ½, ½, 0; family 1: b 2, c 2 → 0, ½, ½
    expect([...r.score]).toEqual([0.5, 1, 0.5]);
    expect(rankServices(r.services, r.score)[0]).toBe('b');
  });
});
