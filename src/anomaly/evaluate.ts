/**
 * Detection quality against labelled incidents, per detector (TAGAE and the baselines):
 *
 * - an alert episode is a run of consecutive alerting snapshots; it is a true alarm when it starts
 *   inside an incident or within `grace` seconds after it ends (`evaluation_grace_seconds`, default 0:
 *   the window itself — faults ~8 minutes apart would otherwise lend each other their alerts), else a
 *   false alarm;
 * - recall: incidents with at least one alerting snapshot inside [start, end + grace);
 * - chance recall: the mean recall of the same alerts shifted in time (circularly, by 20 offsets spread
 *   over the series): what alerting this often catches by luck;
 * - AUROC of the snapshot score against "inside an incident's window";
 * - precision: true alarm episodes / all episodes;
 * - false alarms per day of scored time; detection delay: first alert − incident start, per kind;
 * - the static baseline pages per service: each service's episode outside an incident counts (see
 *   `evaluatePerService`); TAGAE and the flat autoencoder page once per snapshot-level episode;
 * - at the static baseline's recall: the false alarms of a fixed threshold on TAGAE's (and the flat
 *   model's) score set as high as it can be while reaching that recall — the comparison "at equal recall".
 */
import type { Incident } from './source.js';

export interface DetectorSeries {
  ts: number[];
  score: number[];
  alert: boolean[];
}

export interface KindQuality {
  incidents: number;
  detected: number;
  recall: number;
  mean_delay_seconds: number | null;
}

export interface DetectorQuality {
  alerts: number;
  episodes: number;
  false_alarms: number;
  false_alarms_per_day: number;
  precision: number | null;
  recall: number | null;
  /** recall of the alerts shifted in time (null without incidents) */
  chance_recall: number | null;
  /** the snapshot score against in-window labels (null without both classes) */
  auroc: number | null;
  by_kind: Record<string, KindQuality>;
}

/** Area under the ROC curve of `score` for `positive` (ties count half); null without both classes. */
export function auroc(score: readonly number[], positive: readonly boolean[]): number | null {
  const order = score.map((_, i) => i).sort((a, b) => score[a]! - score[b]!);
  let pos = 0;
  let rankSum = 0;
  for (let k = 0; k < order.length; ) {
    let j = k;
    while (j < order.length && score[order[j]!] === score[order[k]!]) j++;
    const rank = (k + j + 1) / 2; // mean 1-based rank of the tie group
    for (let m = k; m < j; m++) {
      if (positive[order[m]!]) {
        pos++;
        rankSum += rank;
      }
    }
    k = j;
  }
  const neg = order.length - pos;
  if (pos === 0 || neg === 0) return null;
  return (rankSum - (pos * (pos + 1)) / 2) / (pos * neg);
}

/** Recall of the alerts circularly shifted by `shifts` offsets spread over the series, averaged. */
export function chanceRecall(series: DetectorSeries, incidents: Incident[], grace: number, shifts = 20): number | null {
  const n = series.ts.length;
  if (n < 2) return null;
  let sum = 0;
  let count = 0;
  for (let j = 1; j <= shifts; j++) {
    const off = Math.floor((j * n) / (shifts + 1));
    if (off === 0) continue;
    const alert = series.alert.map((_, k) => series.alert[(k + off) % n]!);
    const r = evaluate({ ...series, alert }, incidents, grace, 1, false).recall;
    if (r === null) return null;
    sum += r;
    count++;
  }
  return count ? sum / count : null;
}

function inside(t: number, inc: Incident, grace: number): boolean {
  return t >= inc.start && t < inc.end + grace;
}

export function evaluate(series: DetectorSeries, incidents: Incident[], grace: number, days: number, withChance = true): DetectorQuality {
  let episodes = 0;
  let falseAlarms = 0;
  let alerts = 0;
  for (let k = 0; k < series.ts.length; k++) {
    if (!series.alert[k]) continue;
    alerts++;
    if (k > 0 && series.alert[k - 1]) continue;
    episodes++;
    if (!incidents.some((inc) => inside(series.ts[k]!, inc, grace))) falseAlarms++;
  }
  const scored = incidents.filter((inc) => inc.end > (series.ts[0] ?? Infinity) && inc.start <= (series.ts[series.ts.length - 1] ?? -Infinity));
  const byKind: Record<string, KindQuality> = {};
  let detected = 0;
  for (const inc of scored) {
    const q = (byKind[inc.kind] ??= { incidents: 0, detected: 0, recall: 0, mean_delay_seconds: null });
    q.incidents++;
    const first = series.ts.findIndex((t, k) => series.alert[k] && inside(t, inc, grace));
    if (first >= 0) {
      q.detected++;
      detected++;
      const delay = Math.max(0, series.ts[first]! - inc.start);
      q.mean_delay_seconds = ((q.mean_delay_seconds ?? 0) * (q.detected - 1) + delay) / q.detected;
    }
  }
  for (const q of Object.values(byKind)) q.recall = q.detected / q.incidents;
  return {
    alerts,
    episodes,
    false_alarms: falseAlarms,
    false_alarms_per_day: days > 0 ? falseAlarms / days : 0,
    precision: episodes ? (episodes - falseAlarms) / episodes : null,
    recall: scored.length ? detected / scored.length : null,
    chance_recall: withChance && scored.length ? chanceRecall(series, incidents, grace) : null,
    auroc: withChance ? auroc(series.score, series.ts.map((t) => incidents.some((inc) => t >= inc.start && t < inc.end))) : null,
    by_kind: byKind,
  };
}

/**
 * Quality of per-service rules (the static baseline): each service's rule pages on its own, so every
 * service's alert episode that starts outside an incident is a false alarm; recall and delay come from
 * the union (an incident is caught when any rule fires within it).
 */
export function evaluatePerService(ts: number[], alerting: Map<string, Set<number>>, incidents: Incident[], grace: number, days: number, score?: number[]): DetectorQuality {
  const union = ts.map((_, k) => [...alerting.values()].some((set) => set.has(k)));
  const q = evaluate({ ts, score: score ?? union.map(Number), alert: union }, incidents, grace, days);
  let episodes = 0;
  let falseAlarms = 0;
  for (const set of alerting.values()) {
    for (const k of set) {
      if (set.has(k - 1)) continue;
      episodes++;
      if (!incidents.some((inc) => inside(ts[k]!, inc, grace))) falseAlarms++;
    }
  }
  return { ...q, episodes, false_alarms: falseAlarms, false_alarms_per_day: days > 0 ? falseAlarms / days : 0, precision: episodes ? (episodes - falseAlarms) / episodes : null };
}

/**
 * The false alarms of a fixed threshold on `score` set as high as it can be while reaching `recall`
 * (null when no threshold does). Recall only grows as the threshold falls, so a binary search over the
 * distinct scores finds it in O(log n) evaluations.
 */
export function falseAlarmsAtRecall(series: DetectorSeries, incidents: Incident[], grace: number, recall: number): { threshold: number; false_alarms: number; recall: number } | null {
  const candidates = [...new Set(series.score)].sort((a, b) => b - a);
  const judge = (th: number): DetectorQuality => evaluate({ ...series, alert: series.score.map((s) => s >= th) }, incidents, grace, 1, false);
  let lo = 0;
  let hi = candidates.length - 1;
  if (hi < 0 || (judge(candidates[hi]!).recall ?? 0) + 1e-12 < recall) return null;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((judge(candidates[mid]!).recall ?? 0) + 1e-12 >= recall) hi = mid;
    else lo = mid + 1;
  }
  const q = judge(candidates[lo]!);
  return { threshold: candidates[lo]!, false_alarms: q.false_alarms, recall: q.recall ?? 0 };
}
