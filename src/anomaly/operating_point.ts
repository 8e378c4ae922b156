/**
 * A detector's operating point chosen on validation faults: the labelled incidents are split in time
 * (the earlier half is validation, as for the root-cause recommendation), a fixed threshold on the
 * snapshot score is chosen on the validation stretch only, and its recall, chance recall and
 * false-alarm episodes are reported on the later (test) stretch it never saw.
 *
 * The rule: the highest threshold whose validation recall reaches `TARGET_RECALL` while staying
 * `MIN_MARGIN` above chance recall (fewest alerts that still catch the faults an SRE asked for — alerting
 * on every snapshot reaches any recall, at chance); when no threshold does, the one with the largest
 * margin of recall over chance recall. The test stretch is a different mix of normal and faulty minutes, so its
 * chance recall is shown beside its recall.
 */
import { auroc, evaluate, type DetectorSeries } from './evaluate.js';
import { wilsonInterval } from './root_cause.js';
import type { Incident } from './source.js';

/** The recall target a threshold is chosen to reach on the validation faults (issue 35's detection target). */
export const TARGET_RECALL = 0.9;

/** Recall above chance recall a target-reaching threshold must keep on the validation stretch. */
export const MIN_MARGIN = 0.2;

/** Candidate thresholds tried on the validation stretch: the distinct scores, thinned to at most this many. */
const MAX_CANDIDATES = 400;

export interface StretchQuality {
  incidents: number;
  recall: number | null;
  /** 95% Wilson interval of the recall over the stretch's incidents */
  recall_interval: [number, number] | null;
  chance_recall: number | null;
  false_alarms: number;
  auroc: number | null;
}

export interface OperatingPoint {
  threshold: number;
  rule: 'target_recall' | 'recall_over_chance';
  /** the time the stretches split at (ISO seconds are the caller's business: epoch seconds here) */
  split_ts: number;
  validation: StretchQuality;
  test: StretchQuality;
  /** the whole scored period at that threshold (validation included: not a test figure) */
  all: StretchQuality;
}

function slice(series: DetectorSeries, from: number, until: number): DetectorSeries {
  const idx = series.ts.flatMap((t, k) => (t >= from && t < until ? [k] : []));
  return { ts: idx.map((k) => series.ts[k]!), score: idx.map((k) => series.score[k]!), alert: idx.map((k) => series.alert[k]!) };
}

function quality(series: DetectorSeries, incidents: Incident[], grace: number): StretchQuality {
  const q = evaluate(series, incidents, grace, 1);
  const inWindow = series.ts.map((t) => incidents.some((i) => t >= i.start && t < i.end));
  const n = Object.values(q.by_kind).reduce((sum, k) => sum + k.incidents, 0);
  return { incidents: incidents.length, recall: q.recall, recall_interval: q.recall !== null && n > 0 ? wilsonInterval(q.recall, n) : null, chance_recall: q.chance_recall, false_alarms: q.false_alarms, auroc: auroc(series.score, inWindow) };
}

/** Where the incidents split into validation and test: midway between the last validation start and the first test start. */
export function splitTime(incidents: readonly Incident[]): number | null {
  const sorted = [...incidents].sort((a, b) => a.start - b.start);
  if (sorted.length < 2) return null;
  const half = Math.ceil(sorted.length / 2);
  return (Math.min(sorted[half - 1]!.end, sorted[half]!.start) + sorted[half]!.start) / 2;
}

/** The validation-chosen threshold of `series` and its figures on both stretches (null: too few incidents). */
export function chooseOperatingPoint(series: DetectorSeries, incidents: Incident[], grace: number): OperatingPoint | null {
  const scored = incidents.filter((i) => i.end > (series.ts[0] ?? Infinity) && i.start <= (series.ts[series.ts.length - 1] ?? -Infinity));
  const split = splitTime(scored);
  if (split === null) return null;
  const val = slice(series, -Infinity, split);
  const test = slice(series, split, Infinity);
  const valInc = scored.filter((i) => i.start < split);
  const testInc = scored.filter((i) => i.start >= split);
  const pick = chooseThreshold(val, valInc, grace);
  if (pick === null) return null;
  return {
    threshold: pick.threshold,
    rule: pick.rule,
    split_ts: split,
    validation: pick.quality,
    test: quality({ ...test, alert: test.score.map((x) => x >= pick.threshold) }, testInc, grace),
    all: quality({ ...series, alert: series.score.map((x) => x >= pick.threshold) }, scored, grace),
  };
}

/** The rule above on one stretch and its faults: the chosen threshold and its figures there (null: no finite score). */
export function chooseThreshold(series: DetectorSeries, incidents: Incident[], grace: number): { threshold: number; rule: OperatingPoint['rule']; quality: StretchQuality } | null {
  const distinct = [...new Set(series.score.filter((x) => Number.isFinite(x)))].sort((a, b) => b - a);
  if (distinct.length === 0) return null;
  const stride = Math.max(1, Math.ceil(distinct.length / MAX_CANDIDATES));
  let target: { th: number; q: StretchQuality } | null = null;
  let margin: { th: number; q: StretchQuality; m: number } | null = null;
  // Highest first: the first threshold reaching the target is the highest that does.
  for (let c = 0; c < distinct.length; c += stride) {
    // alert when score >= th: the candidate's own snapshots alert
    const th = distinct[c]!;
    const q = quality({ ...series, alert: series.score.map((x) => x >= th) }, incidents, grace);
    const m = (q.recall ?? 0) - (q.chance_recall ?? 0);
    if (!margin || m > margin.m) margin = { th, q, m };
    if ((q.recall ?? 0) >= TARGET_RECALL && m >= MIN_MARGIN) {
      target = { th, q };
      break;
    }
  }
  const pick = target ?? margin!;
  return { threshold: pick.th, rule: target ? 'target_recall' : 'recall_over_chance', quality: pick.q };
}
