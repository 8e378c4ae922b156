import { describe, expect, it } from 'vitest';
import { alertingDetector, applyDetector, chooseDetector, validationIncidents } from '../../src/anomaly/detector_choice.js';
import type { DetectorSeries } from '../../src/anomaly/evaluate.js';
import type { Incident } from '../../src/anomaly/source.js';
import type { ScoreRow } from '../../src/anomaly/writer.js';

const STEP = 60;
const ts = Array.from({ length: 400 }, (_, k) => k * STEP);
// four faults of 10 minutes; the later two are the test stretch
const incidents: Incident[] = [50, 150, 250, 350].map((k) => ({ start: k * STEP, end: (k + 10) * STEP, kind: 'latency' }));
const inFault = (t: number): boolean => incidents.some((i) => t >= i.start && t < i.end);

function series(score: (t: number, k: number) => number): DetectorSeries {
  const s = ts.map(score);
  return { ts, score: s, alert: s.map(() => false) };
}

describe('detector choice on validation faults', () => {
  it('keeps only the earlier half of the faults (all of them when fewer than 2)', () => {
    expect(validationIncidents(incidents).map((i) => i.start)).toEqual([50 * STEP, 150 * STEP]);
    expect(validationIncidents(incidents.slice(0, 1))).toHaveLength(1);
  });

  it('picks the detector that separates the validation faults, at a threshold that catches them', () => {
    const noisy = series((_, k) => (k * 7919) % 13);
    // high inside the validation faults only: what it does on the test faults cannot matter
    const sharp = series((t, k) => (inFault(t) && t < 200 * STEP ? 20 + (k % 3) : (k * 31) % 5));
    const c = chooseDetector({ tagae: noisy, rolling_family: sharp }, validationIncidents(incidents), 0)!;
    expect(c.method).toBe('rolling_family');
    // the highest threshold every validation fault still reaches (each window has a 22)
    expect(c.threshold).toBe(22);
    expect(c.rule).toBe('target_recall');
    expect(c.validation.recall).toBe(1);
    expect(c.chosen_on.incidents).toBe(2);
    expect(c.candidates.rolling_family!.auroc).toBe(1);
    expect(c.candidates.tagae!.auroc!).toBeLessThan(1);
  });

  it('returns null when no fault lies in the replayed stretch', () => {
    expect(chooseDetector({ tagae: series(() => 1) }, [{ start: 1e9, end: 1e9 + 60, kind: 'x' }], 0)).toBeNull();
  });

  it('an explicit anomaly.detector wins over the fit-time choice, which wins over TAGAE at τ', () => {
    const choice = chooseDetector({ tagae: series((t) => (inFault(t) ? 5 : 1)) }, incidents, 0)!;
    expect(alertingDetector({ detector: { method: 'zscore', threshold: 3 } }, choice)).toEqual({ method: 'zscore', threshold: 3, source: 'config' });
    expect(alertingDetector({}, choice)).toEqual({ method: 'tagae', threshold: 5, source: 'fit' });
    expect(alertingDetector({}, null)).toEqual({ method: 'tagae', threshold: null, source: 'default' });
  });

  it('rewrites the score, threshold and alert of each row from the chosen series', () => {
    const rows: ScoreRow[] = [0, 60, 120].map((t) => ({ ts: t, score: 9, threshold: 1, alert: true, top_services: [], top_edges: [] }));
    const rolling = { ts: [0, 60, 120], score: [0.5, 2, 3], alert: [false, false, false] };
    const out = applyDetector(rows, { method: 'rolling_family', threshold: 2, source: 'fit' }, { rolling_family: rolling });
    expect(out.map((r) => [r.score, r.threshold, r.alert])).toEqual([[0.5, 2, false], [2, 2, true], [3, 2, true]]);
    expect(applyDetector(rows, { method: 'tagae', threshold: null, source: 'default' }, {})).toBe(rows);
    expect(() => applyDetector(rows, { method: 'zscore', threshold: 1, source: 'config' }, {})).toThrow(/zscore/);
  });
});
