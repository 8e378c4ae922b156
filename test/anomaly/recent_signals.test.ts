/**
 * The root causes `score` and `watch` attach to an alert (recent_signals.ts): the `signals` shares over the
 * last W snapshots, weighted only by saved weights whose families match the run's and that the run chose
 * to use, TAGAE's propagated errors for a run without z-score statistics, and replaced pods held out.
 */
import { describe, expect, it } from 'vitest';
import { RecentSignals } from '../../src/anomaly/recent_signals.js';
import type { FamilyWeights } from '../../src/anomaly/family_weights.js';
import type { AnomalyRun } from '../../src/anomaly/run.js';
import type { Snapshot } from '../../src/anomaly/source.js';
import type { ZScoreStats } from '../../src/anomaly/zscore_baseline.js';

const services = ['a', 'b', 'c'];
const columns = ['cpu', 'memory'];
// every service: median 1, spread 0.1 on both columns
const zscore: ZScoreStats = { columns, services: Object.fromEntries(services.map((s) => [s, [[1, 0.1], [1, 0.1]] as [number, number][]])) };

function fakeRun(o: { zscore?: ZScoreStats; weights?: Partial<FamilyWeights> | null }): AnomalyRun {
  const familyWeights = o.weights ? ({ version: 1, families: columns, weights: [1, 1], use: true, method: 'signals_learned', fitted_on: { incidents: 4, from: '', until: '' }, validation_ac_at_1: { signals: 0.5, signals_learned: 0.75 }, ...o.weights } as FamilyWeights) : null;
  return { manifest: { feature_columns: columns, edge_feature_columns: [], model: { window: 3 } }, baselines: { zscore: o.zscore }, familyWeights } as unknown as AnomalyRun;
}

// a: memory far off (z capped at 50), CPU barely (z 1); b: CPU well off (z 20); c: at its level.
const snap = (ts: number): Snapshot => ({ ts, services, features: Float32Array.from([1.1, 6, 3, 1, 1, 1]), src: new Int32Array(0), dst: new Int32Array(0), rate: new Float32Array(0), edgeFeatures: new Float32Array(0) });
const tagae = Float64Array.from([0.1, 0.2, 5]);

describe('RecentSignals', () => {
  it('ranks by unweighted shares: a wins the memory vote and a sliver of CPU', () => {
    const r = new RecentSignals(fakeRun({ zscore }), 30, null);
    const step = r.observe(snap(0), [])!;
    expect([...step.z]).toEqual([50, 20, 0].map((x) => expect.closeTo(x, 4)));
    expect(r.method).toBe('signals');
    expect(r.rootCauses(snap(0), tagae, 2)).toEqual(['a', 'b']);
  });

  it('ranks by the saved weights when the run uses them: CPU only names b', () => {
    const r = new RecentSignals(fakeRun({ zscore, weights: { weights: [1, 0] } }), 30, null);
    r.observe(snap(0), []);
    expect(r.method).toBe('signals_learned');
    expect(r.rootCauses(snap(0), tagae, 1)).toEqual(['b']);
  });

  it('ignores weights the run chose not to use, or fitted on other families', () => {
    for (const weights of [{ weights: [1, 0], use: false }, { weights: [1, 0], families: ['cpu', 'disk'] }]) {
      const r = new RecentSignals(fakeRun({ zscore, weights }), 30, null);
      r.observe(snap(0), []);
      expect(r.method).toBe('signals');
      expect(r.rootCauses(snap(0), tagae, 1)).toEqual(['a']);
    }
  });

  it('holds a replaced pod out of the ranking while its new level is collected', () => {
    const r = new RecentSignals(fakeRun({ zscore }), 30, null);
    r.observe(snap(0), [{ ts: 0, service: 'a', kind: 'pod_replaced' }]);
    expect(r.rootCauses(snap(0), tagae, 1)).toEqual(['b']);
  });

  it('falls back to TAGAE\'s errors without z-score statistics', () => {
    const r = new RecentSignals(fakeRun({}), 30, null);
    expect(r.observe(snap(0), [])).toBeNull();
    expect(r.method).toBe('tagae_graph');
    expect(r.rootCauses(snap(0), tagae, 1)).toEqual(['c']);
  });
});
