/**
 * Detectors that follow the data's drift: each judges the present against a trailing reference of the
 * past only — the snapshots in [t − `reference_seconds`, t − `gap_seconds`) — so they run online in
 * `watch` exactly as in `score`.
 *
 * - `rolling_family`: per (service, column) a robust z against the reference's median and spread
 *   (1.4826 × MAD, floored as in the z-score baseline); per signal family (signal_share.ts) the largest |z|
 *   over services; the snapshot score is the mean over families. A family where several services move
 *   at once still counts once, and memory that creeps up for hours moves its reference with it — the
 *   failure of the fitted z-score, whose medians come from another day's pods.
 * - `tagae_rolling`: TAGAE's snapshot score as a robust z against its own trailing reference.
 * - `combined`: the larger of the two.
 *
 * The gap keeps the last minutes — where an incident that has just begun lives — out of the reference,
 * so a fault cannot become its own normal within its window. While a service has fewer than
 * `min_reference` values in the reference (the first minutes of the data, after a gap in scraping) it is
 * judged against the normal period's fitted statistics; after a `pod_replaced` event its history is
 * dropped and it is held out (deviation 0) until the new pod has filled a reference of its own.
 */
import type { PlannedEvent, Snapshot } from './source.js';
import { signalFamily } from './signal_share.js';
import { robustReference, type ZScoreStats } from './zscore_baseline.js';

export interface RollingOptions {
  /** trailing reference length, seconds */
  reference_seconds: number;
  /** the most recent stretch left out of the reference, seconds */
  gap_seconds: number;
  /** history a reference must span (its oldest value at least gap + this old, seconds) before it replaces the fitted statistics */
  min_span_seconds: number;
}

/**
 * 2 hours back, the last 10 minutes left out, and at least 30 minutes of history before a reference is
 * trusted — in time rather than a count, so 1-minute and 5-minute scrapes get the same rule (at one
 * minute that is ~30 values; the first minutes of a day then lean on the fitted statistics rather than
 * on a handful of minutes an early fault may fill).
 */
export const ROLLING_DEFAULTS: RollingOptions = { reference_seconds: 7200, gap_seconds: 600, min_span_seconds: 1800 };

/** Fewest values a reference may hold, whatever its span. */
const MIN_VALUES = 3;

/** |z| is capped here, as in the z-score baseline (zscore_baseline.ts). */
const Z_CAP = 50;

export interface RollingScores {
  rolling_family: number;
  tagae_rolling: number;
  combined: number;
}

export const ROLLING_METHODS = ['rolling_family', 'tagae_rolling', 'combined'] as const;
export type RollingMethod = (typeof ROLLING_METHODS)[number];

interface Row {
  ts: number;
  x: Float32Array;
}

export class RollingDetector {
  private readonly history = new Map<string, Row[]>();
  /** services whose pod was replaced: fitted statistics no longer describe them */
  private readonly replaced = new Set<string>();
  private readonly tagaeHistory: { ts: number; v: number }[] = [];
  private readonly familyOf: number[];
  private readonly families: number;

  constructor(
    private readonly fitted: ZScoreStats | null,
    private readonly columns: string[],
    private readonly o: RollingOptions = ROLLING_DEFAULTS,
  ) {
    const names = [...new Set(columns.map(signalFamily))];
    this.familyOf = columns.map((c) => names.indexOf(signalFamily(c)));
    this.families = names.length;
  }

  /** Scores `s` against the past only, then adds it to the history. */
  step(s: Snapshot, events: readonly PlannedEvent[], tagaeScore: number): RollingScores {
    for (const e of events) {
      if (e.kind !== 'pod_replaced') continue;
      this.history.delete(e.service);
      this.replaced.add(e.service);
    }
    const F = this.columns.length;
    const dev = new Float64Array(this.families);
    s.services.forEach((name, i) => {
      let h = this.history.get(name);
      if (!h) this.history.set(name, (h = []));
      while (h.length && h[0]!.ts < s.ts - this.o.reference_seconds) h.shift();
      const ref = h.filter((r) => r.ts < s.ts - this.o.gap_seconds);
      const own = this.trusted(ref, s.ts);
      const fitted = this.replaced.has(name) ? undefined : this.fitted?.services[name];
      if (own) this.replaced.delete(name);
      for (let f = 0; f < F; f++) {
        const x = s.features[i * F + f]!;
        if (!Number.isFinite(x)) continue;
        const st = own ? robustReference(ref.map((r) => r.x[f]!)) : (fitted?.[f] ?? null);
        if (!st) continue;
        const z = Math.min(Z_CAP, Math.abs(x - st[0]) / st[1]);
        const fam = this.familyOf[f]!;
        if (z > dev[fam]!) dev[fam] = z;
      }
      h.push({ ts: s.ts, x: s.features.slice(i * F, (i + 1) * F) });
    });
    const family = this.families ? dev.reduce((a, b) => a + b, 0) / this.families : 0;
    const tagae = this.tagaeZ(s.ts, tagaeScore);
    return { rolling_family: family, tagae_rolling: tagae, combined: Math.max(family, tagae) };
  }

  private trusted(ref: readonly { ts: number }[], now: number): boolean {
    return ref.length >= MIN_VALUES && now - ref[0]!.ts >= this.o.gap_seconds + this.o.min_span_seconds;
  }

  private tagaeZ(ts: number, score: number): number {
    const h = this.tagaeHistory;
    while (h.length && h[0]!.ts < ts - this.o.reference_seconds) h.shift();
    const rows = h.filter((r) => r.ts < ts - this.o.gap_seconds);
    h.push({ ts, v: score });
    const st = this.trusted(rows, ts) ? robustReference(rows.map((r) => r.v)) : null;
    return st && Number.isFinite(score) ? Math.max(0, Math.min(Z_CAP, (score - st[0]) / st[1])) : 0;
  }
}
