/**
 * The root causes an alert carries, for `score` and `watch` alike: the `signals` ranking (signal_share.ts)
 * over the last W snapshots' deviations — weighted per family when the run saved learned weights that
 * beat the unweighted shares on its validation faults (family_weights.ts) — and TAGAE's errors propagated
 * through the call graph when the run has no z-score statistics or no snapshot has been seen yet.
 *
 * It owns the z-score statistics as scoring goes (replaced pods re-baselined, zscore_baseline.ts), so the
 * z-score detector and the ranking judge against the same medians.
 */
import type { PlannedEvent, Snapshot } from './source.js';
import type { AnomalyRun } from './run.js';
import { rankServices } from './root_cause.js';
import { snapshotRanking } from './root_cause_eval.js';
import { familyShares, familySums, shareScores, signalDeviations, signalFamilies, type SignalFamilies } from './signal_share.js';
import { weightedScores } from './signal_weights.js';
import { zScores, ZScoreRebaseliner, type EdgeZScoreStats } from './zscore_baseline.js';

export interface SignalStep {
  /** per service, its largest robust |z| (0 while held out after a pod replacement) */
  z: Float64Array;
  /** [families][services] deviations (signal_share.ts) */
  deviations: Float64Array[];
}

export class RecentSignals {
  private readonly rebaseliner: ZScoreRebaseliner | null;
  private readonly families: SignalFamilies;
  private readonly recent: { services: string[]; deviations: Float64Array[] }[] = [];
  private readonly window: number;
  /** per-family weights aligned with `families.names`, or null: unweighted shares */
  readonly weights: number[] | null;

  constructor(
    run: AnomalyRun,
    rebaselineSnapshots: number,
    private readonly edgeStats: EdgeZScoreStats | null,
  ) {
    this.rebaseliner = run.baselines.zscore ? new ZScoreRebaseliner(run.baselines.zscore, rebaselineSnapshots) : null;
    this.families = signalFamilies(run.manifest.feature_columns, run.manifest.edge_feature_columns);
    this.window = run.manifest.model.window;
    const fw = run.familyWeights;
    const aligned = fw?.use && fw.families.length === this.families.names.length && fw.families.every((f, i) => f === this.families.names[i]);
    this.weights = aligned ? fw!.weights : null;
  }

  /** The method `root_causes` come from. */
  get method(): 'signals' | 'signals_learned' | 'tagae_graph' {
    return this.rebaseliner === null ? 'tagae_graph' : this.weights ? 'signals_learned' : 'signals';
  }

  /** Records one snapshot (in order); null when the run has no z-score statistics. */
  observe(s: Snapshot, events: readonly PlannedEvent[]): SignalStep | null {
    if (!this.rebaseliner) return null;
    this.rebaseliner.onEvents(events);
    const warming = this.rebaseliner.observe(s);
    const held = s.services.map(warming);
    const z = zScores(this.rebaseliner.stats, s).map((x, i) => (held[i] ? 0 : x));
    const deviations = signalDeviations(this.families, this.rebaseliner.stats, this.edgeStats, s).map((row) => row.map((x, i) => (held[i] ? 0 : x)));
    this.recent.push({ services: s.services, deviations });
    if (this.recent.length > this.window) this.recent.shift();
    return { z, deviations };
  }

  /** The ranked services an alert at `s` names (at most k). */
  rootCauses(s: Snapshot, tagae: Float64Array, k: number): string[] {
    if (this.recent.length === 0) return snapshotRanking(s, tagae, true, k).map((x) => x.service);
    const { services, rows } = familySums(this.recent);
    const score = this.weights ? weightedScores(familyShares(rows), this.weights, services.length) : shareScores(rows, services.length);
    return rankServices(services, score).slice(0, k);
  }
}
