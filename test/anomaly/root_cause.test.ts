/**
 * Root-cause ranking on hand-made call graphs whose answer is clear by eye, and the AC@k arithmetic.
 */
import { describe, expect, it } from 'vitest';
import { propagate, rankServices, rootCauseQuality } from '../../src/anomaly/root_cause.js';
import { evaluateRootCause } from '../../src/anomaly/root_cause_eval.js';
import type { Snapshot } from '../../src/anomaly/source.js';
import { fitZScore, zScores } from '../../src/anomaly/zscore_baseline.js';

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
