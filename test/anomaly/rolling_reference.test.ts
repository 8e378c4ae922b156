/**
 * The drift-following detectors judge each snapshot against a trailing reference of the past only: a level
 * that creeps for hours stops counting, a jump within the gap counts, the first minutes lean on the fitted
 * statistics, and a replaced pod is held out until its new level fills a reference.
 */
import { describe, expect, it } from 'vitest';
import { RollingDetector } from '../../src/anomaly/rolling_reference.js';
import { robustReference } from '../../src/anomaly/zscore_baseline.js';
import type { Snapshot } from '../../src/anomaly/source.js';
import type { ZScoreStats } from '../../src/anomaly/zscore_baseline.js';

const columns = ['cpu', 'mem_p50', 'mem_p99'];
const services = ['cart', 'front'];
const snap = (ts: number, cart: number[], front: number[]): Snapshot => ({ ts, services, features: Float32Array.from([...cart, ...front]), src: new Int32Array(0), dst: new Int32Array(0), rate: new Float32Array(0), edgeFeatures: new Float32Array(0) });
const opts = { reference_seconds: 600, gap_seconds: 120, min_span_seconds: 240 };
const fitted: ZScoreStats = { columns, services: { cart: [[10, 1], [100, 1], [100, 1]], front: [[10, 1], [100, 1], [100, 1]] } };

describe('robustReference', () => {
  it('is the median and 1.4826 × MAD, floored at 5% of the median, NaN skipped', () => {
    expect(robustReference([1, 2, 3, 4, 100, Number.NaN])).toEqual([3, 1.4826]);
    expect(robustReference([200, 200, 200])).toEqual([200, 10]);
    expect(robustReference([Number.NaN])).toBeNull();
  });
});

describe('RollingDetector', () => {
  it('follows a slow drift that the fitted statistics call anomalous, and still sees a jump', () => {
    const d = new RollingDetector(fitted, columns, opts);
    let last = { rolling_family: 0, tagae_rolling: 0, combined: 0 };
    // memory creeps from 100 to 160 over 30 minutes (the fitted median says 100, spread 5)
    for (let k = 0; k < 30; k++) last = d.step(snap(k * 60, [10, 100 + 2 * k, 100 + 2 * k], [10, 100, 100]), [], 1);
    // the trailing reference [t − 10 min, t − 2 min) has a median 12 below: z ≈ 12 / 7.6 per family
    expect(last.rolling_family).toBeLessThan(1);
    // the fitted statistics alone: |158 − 100| / 1, capped at 50, for memory; 0 for CPU: mean 25
    const fixed = new RollingDetector(fitted, columns, { ...opts, min_span_seconds: 1e9 });
    expect(fixed.step(snap(0, [10, 158, 158], [10, 100, 100]), [], 1).rolling_family).toBe(25);
    // a CPU jump on one service: the CPU family's largest |z| over services, memory's stays small
    const jump = d.step(snap(30 * 60, [30, 160, 160], [10, 100, 100]), [], 1);
    expect(jump.rolling_family).toBeGreaterThan(5);
    expect(jump.combined).toBe(Math.max(jump.rolling_family, jump.tagae_rolling));
  });

  it('uses the fitted statistics until a service\'s reference spans min_span_seconds beyond the gap', () => {
    const d = new RollingDetector(fitted, columns, opts);
    // at 0 nothing is in the reference: cpu 13 against the fitted (10, 1) → 3; memory 0 → family mean 1.5
    expect(d.step(snap(0, [13, 100, 100], [10, 100, 100]), [], 1).rolling_family).toBeCloseTo(1.5, 5);
    const none = new RollingDetector(null, columns, opts);
    expect(none.step(snap(0, [13, 100, 100], [10, 100, 100]), [], 1).rolling_family).toBe(0);
  });

  it('holds a replaced pod out until its new level fills a reference, then judges against it', () => {
    const d = new RollingDetector(fitted, columns, opts);
    for (let k = 0; k < 10; k++) d.step(snap(k * 60, [10, 100, 100], [10, 100, 100]), [], 1);
    const event = [{ ts: 600, service: 'cart', kind: 'pod_replaced' }];
    // the new pod uses 300 Mi: held out (no fitted fallback), so no deviation
    expect(d.step(snap(600, [10, 300, 300], [10, 100, 100]), event, 1).rolling_family).toBe(0);
    let r = { rolling_family: 1, tagae_rolling: 0, combined: 0 };
    for (let k = 11; k < 20; k++) r = d.step(snap(k * 60, [10, 300, 300], [10, 100, 100]), [], 1);
    // its own reference now: 300 is normal
    expect(r.rolling_family).toBe(0);
  });

  it('normalises the TAGAE score against its own trailing scores', () => {
    const d = new RollingDetector(null, columns, opts);
    let r = { rolling_family: 0, tagae_rolling: 0, combined: 0 };
    for (let k = 0; k < 12; k++) r = d.step(snap(k * 60, [10, 100, 100], [10, 100, 100]), [], k % 2 ? 4 : 6);
    expect(r.tagae_rolling).toBe(0); // within its spread
    r = d.step(snap(12 * 60, [10, 100, 100], [10, 100, 100]), [], 5 + 10 * 1.4826);
    // reference median 5, MAD 1 → spread 1.4826: z = 10
    expect(r.tagae_rolling).toBeCloseTo(10, 5);
  });
});
