/**
 * The detector alerts follow, and the choice `anomaly fit` makes of it (`model/detector.json`).
 *
 * With labelled faults, `fit` replays the labels' validation stretch — the earlier half of the faults in
 * time (splitTime, as score's operating points; all of them when fewer than 2) — through the new run,
 * chooses each detector's threshold there by operating_point.ts's rule and keeps the detector with the
 * best validation AUROC (TAGAE wins a tie). The later half stays a test no choice saw. `score` and `watch`
 * then alert on it when the config sets no `anomaly.detector`; an explicit config wins; a run without a
 * choice (no labels) alerts on TAGAE at its calibrated sliding τ.
 */
import type { AnomalyConfig } from '../config/anomaly_schema.js';
import { ArtifactError } from '../core/errors.js';
import { isoSeconds } from '../core/duration.js';
import { auroc, type DetectorSeries } from './evaluate.js';
import { chooseThreshold, splitTime, type StretchQuality } from './operating_point.js';
import { readRunSidecar, writeRunSidecar } from './run_sidecar.js';
import type { Incident } from './source.js';
import type { ScoreRow } from './writer.js';

export const DETECTOR_FILE = 'detector.json';

/** The detectors `anomaly.detector` can name (the config's enum). */
export const DETECTOR_METHODS = ['tagae', 'zscore', 'rolling_family', 'tagae_rolling', 'combined'] as const;
export type DetectorMethod = (typeof DETECTOR_METHODS)[number];

export interface DetectorChoice {
  version: 1;
  method: DetectorMethod;
  threshold: number;
  rule: 'target_recall' | 'recall_over_chance';
  /** the validation faults the choice saw and the stretch replayed for it */
  chosen_on: { incidents: number; from: string; until: string };
  validation: StretchQuality;
  /** every candidate's validation-chosen threshold and validation AUROC */
  candidates: Record<string, { threshold: number; auroc: number | null; recall: number | null }>;
}

/** What alerts follow: `config` (anomaly.detector), `fit` (the run's detector.json) or `default` (TAGAE at its sliding τ, threshold null). */
export interface AlertingDetector {
  method: DetectorMethod;
  threshold: number | null;
  source: 'config' | 'fit' | 'default';
}

/** The validation faults of `incidents`: those starting before the split (all of them when fewer than 2). */
export function validationIncidents(incidents: readonly Incident[]): Incident[] {
  const split = splitTime(incidents);
  return split === null ? [...incidents] : incidents.filter((i) => i.start < split);
}

/** Chooses among `series` (replayed over the validation stretch) on `incidents`; null when no detector has a threshold. */
export function chooseDetector(series: Partial<Record<DetectorMethod, DetectorSeries>>, incidents: Incident[], grace: number): DetectorChoice | null {
  const ts = Object.values(series)[0]?.ts ?? [];
  const seen = incidents.filter((i) => i.end > (ts[0] ?? Infinity) && i.start <= (ts[ts.length - 1] ?? -Infinity));
  if (seen.length === 0) return null;
  let best: { method: DetectorMethod; auroc: number; pick: NonNullable<ReturnType<typeof chooseThreshold>> } | null = null;
  const candidates: DetectorChoice['candidates'] = {};
  for (const method of DETECTOR_METHODS) {
    const sr = series[method];
    if (!sr) continue;
    const pick = chooseThreshold(sr, seen, grace);
    if (!pick) continue;
    const inWindow = sr.ts.map((t) => seen.some((i) => t >= i.start && t < i.end));
    const a = auroc(sr.score, inWindow);
    candidates[method] = { threshold: pick.threshold, auroc: a, recall: pick.quality.recall };
    if (!best || (a ?? -1) > best.auroc) best = { method, auroc: a ?? -1, pick };
  }
  if (!best) return null;
  return {
    version: 1,
    method: best.method,
    threshold: best.pick.threshold,
    rule: best.pick.rule,
    chosen_on: { incidents: seen.length, from: isoSeconds(ts[0]!), until: isoSeconds(ts[ts.length - 1]!) },
    validation: best.pick.quality,
    candidates,
  };
}

export function writeDetectorChoice(runDir: string, c: DetectorChoice): void {
  writeRunSidecar(runDir, DETECTOR_FILE, c);
}

/** The run's fit-time choice, or null when it has none (fitted without labelled faults). */
export function readDetectorChoice(runDir: string): DetectorChoice | null {
  return readRunSidecar<DetectorChoice>(
    runDir,
    DETECTOR_FILE,
    (c) => (c.version !== 1 || !(DETECTOR_METHODS as readonly string[]).includes(c.method) || typeof c.threshold !== 'number' ? 'not a version-1 detector choice' : null),
    "the run's chosen detector",
    'fit the run again, or set anomaly.detector in the config',
  );
}

/** An explicit `anomaly.detector` wins; then the run's fit-time choice; else TAGAE at its sliding τ. */
export function alertingDetector(a: Pick<AnomalyConfig, 'detector'>, choice: DetectorChoice | null): AlertingDetector {
  if (a.detector) return { method: a.detector.method, threshold: a.detector.threshold, source: 'config' };
  if (choice) return { method: choice.method, threshold: choice.threshold, source: 'fit' };
  return { method: 'tagae', threshold: null, source: 'default' };
}

/**
 * Rows judged by `d`: its score, its fixed threshold and score ≥ threshold in place of TAGAE's (the
 * default detector leaves them as they are).
 */
export function applyDetector(rows: ScoreRow[], d: AlertingDetector, series: Partial<Record<DetectorMethod, DetectorSeries>>): ScoreRow[] {
  if (d.threshold === null) return rows;
  const th = d.threshold;
  const sr = series[d.method];
  if (!sr) {
    throw new ArtifactError(`anomaly.detector ${d.method} has no score in this run (fitted without z-score statistics)`, { where: 'anomaly.detector.method', value: d.method, hint: 'pick tagae or a rolling detector, or fit the run again' });
  }
  const at = new Map(sr.ts.map((t, k) => [t, sr.score[k]!]));
  return rows.map((r) => {
    const score = at.get(r.ts) ?? Number.NaN;
    return { ...r, score, threshold: th, alert: score >= th };
  });
}
