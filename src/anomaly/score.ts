/**
 * `gnnctl anomaly score`: replay a period through a fitted run — TAGAE and both baselines side by side —
 * write the per-snapshot scores to Parquet and, when the config has labelled incidents, report precision,
 * recall, false alarms per day and detection delay per incident kind for each detector.
 *
 * Scoring starts from the run's window state when it continues right after the normal period; from any
 * other time it first primes the window with the W − 1 snapshots before `from` (encoded, not judged).
 * Feature statistics, baselines and the threshold's first window all come from the run.
 */
import { join } from 'node:path';
import type { Config } from '../config/load.js';
import { selectBackend, type BackendRequest } from '../compute/backend.js';
import { withDuck } from '../data/duck.js';
import { DataError } from '../core/errors.js';
import { isoSeconds } from '../core/duration.js';
import { parseIsoTime } from '../core/time.js';
import { info } from '../core/log.js';
import { Detector, emptyState } from './detector.js';
import { standardise } from './features.js';
import { FlatDetector } from './flat_autoencoder.js';
import { evaluate, evaluatePerService, falseAlarmsAtRecall, type DetectorQuality, type DetectorSeries } from './evaluate.js';
import { eventsBetween } from './events_between.js';
import { loadRun, openScorer, scoringConfig, type AnomalyRun } from './run.js';
import type { ScorerRuntime, SnapshotScorer } from './scorer.js';
import { anomalyConfig, loadEvents, loadIncidents, loadSnapshots, snapshotTimes, type Incident, type PlannedEvent, type Snapshot } from './source.js';
import { staticAlerts, staticRatios } from './static_baseline.js';
import { evaluateRootCause, type Evidence, type RootCauseReport } from './root_cause_eval.js';
import { RecentSignals } from './recent_signals.js';
import { edgeZScores, fitEdgeZScore, type EdgeZScoreStats } from './zscore_baseline.js';
import { SlidingThreshold } from './threshold.js';
import { writeScores, type ScoreRow } from './writer.js';
import { writeScoreRecord } from './score_record.js';
import { ROLLING_METHODS, RollingDetector, type RollingMethod } from './rolling_reference.js';
import { chooseOperatingPoint, type OperatingPoint } from './operating_point.js';
import { alertingDetector, applyDetector, readDetectorChoice, type AlertingDetector, type DetectorMethod } from './detector_choice.js';

export interface ScoreOptions {
  run: string;
  from?: number;
  to?: number;
  out?: string;
  backend?: BackendRequest;
  /** the runtime that reconstructs snapshots: onnx (default, the run's model/tagae.onnx) or tfjs */
  runtime?: ScorerRuntime;
}

export interface ScoreReport {
  run_id: string;
  runtime: ScorerRuntime;
  out: string;
  from: string;
  to: string;
  snapshots: number;
  /** alerting snapshots of the detector below */
  alerts: number;
  /** the detector the `alert` column (and score, threshold) of the scores follows: anomaly.detector (`config`), the run's fit-time choice (`fit`), else TAGAE at its sliding τ (`default`) */
  detector: AlertingDetector;
  threshold_first: number;
  threshold_last: number;
  new_services: number;
  /** pods replaced in the scored period (new pod names under metrics.service_from): recorded as events, which suppress */
  pod_replacements: { ts: string; service: string }[];
  /** alerting snapshots within a planned scale-out's suppression window (the target is 0) */
  scale_out_alerts: Record<string, number>;
  evaluation?: {
    incidents: number;
    days: number;
    grace_seconds: number;
    tagae: DetectorQuality;
    static: DetectorQuality | null;
    flat: DetectorQuality;
    /** the per-service z-score baseline (null: a run fitted before it existed) */
    zscore: DetectorQuality | null;
    /** the drift-following detectors (rolling_reference.ts), each alerting above the threshold quantile of its own past scores */
    rolling_family: DetectorQuality;
    tagae_rolling: DetectorQuality;
    combined: DetectorQuality;
    /** per detector, a fixed threshold chosen on the earlier half of the incidents and its figures on the later half (operating_point.ts) */
    operating_points: Record<string, OperatingPoint>;
    /** the detector to run (`anomaly.detector` in the config): the best validation AUROC, at its validation-chosen threshold */
    recommended_detector: { method: string; threshold: number; validation_auroc: number | null } | null;
    /** root-cause rankings of every method, when the labels name root causes */
    root_cause: RootCauseReport | null;
    /** the method to use on this data: detection by validation AUROC (operating_point.ts), root cause by validation AC@1 (root_cause_eval.ts) */
    recommended_method: { detection: string; root_cause: string | null };
    /** at the static baseline's recall: false alarms of a fixed threshold on each score */
    at_static_recall: { recall: number; static_false_alarms: number; tagae: number | null; flat: number | null; false_alarm_reduction_vs_static: number | null } | null;
  };
  seconds: number;
}

export async function scoreAnomaly(cfg: Config, opts: ScoreOptions): Promise<ScoreReport> {
  const t0 = performance.now();
  const current = anomalyConfig(cfg);
  await selectBackend(opts.backend ?? 'auto');
  const run = loadRun(cfg.artifactsDir, opts.run);
  const a = scoringConfig(current, run);
  const runtime = opts.runtime ?? 'onnx';
  let scorer: SnapshotScorer | undefined;
  try {
    scorer = await openScorer(run, runtime);
    const from = opts.from ?? parseIsoTime(run.manifest.fit.until)!;
    const W = run.manifest.model.window;
    const { snaps, prime, events, incidents } = await loadPeriod(cfg, run, from, opts.to);
    if (snaps.length === 0) {
      throw new DataError(`no snapshots to score from ${isoSeconds(from)}${opts.to !== undefined ? ` to ${isoSeconds(opts.to)}` : ''}`, { where: 'anomaly.metrics', hint: 'check --from/--to against the data\'s time range' });
    }
    const res = await replay(run, scorer, a, snaps, prime, events);
    const detector = alertingDetector(a, readDetectorChoice(run.dir));
    const rows = applyDetector(res.rows, detector, detectorSeries(res));
    const out = opts.out ?? join(run.dir, 'scores.parquet');
    writeScores(out, rows, { run_id: run.manifest.id, gnnctl_kind: 'anomaly_scores', detector_method: detector.method, detector_threshold: String(detector.threshold ?? 'sliding'), detector_source: detector.source });

    const scaleOut: Record<string, number> = { tagae: 0, static: 0, flat: 0 };
    const added = events.filter((e) => e.kind === 'service_added');
    const horizon = (a.suppress_snapshots + W) * medianStep(snaps);
    rows.forEach((r, k) => {
      if (!added.some((e) => r.ts >= e.ts && r.ts < e.ts + horizon)) return;
      if (r.alert) scaleOut.tagae!++;
      if (res.staticSeries && res.staticSeries.alert[k]) scaleOut.static!++;
      if (res.flatSeries.alert[k]) scaleOut.flat!++;
    });
    const report: ScoreReport = {
      run_id: run.manifest.id,
      runtime,
      out,
      from: isoSeconds(snaps[0]!.ts),
      to: isoSeconds(snaps[snaps.length - 1]!.ts),
      snapshots: snaps.length,
      alerts: rows.filter((r) => r.alert).length,
      detector,
      threshold_first: rows[0]!.threshold,
      threshold_last: rows[rows.length - 1]!.threshold,
      new_services: res.newServices,
      pod_replacements: events.filter((e) => e.kind === 'pod_replaced' && e.ts >= snaps[0]!.ts).map((e) => ({ ts: isoSeconds(e.ts), service: e.service })),
      scale_out_alerts: scaleOut,
      seconds: 0,
    };
    if (incidents) report.evaluation = evaluation(res, incidents, snaps, a.evaluation_grace_seconds);
    report.seconds = Math.round((performance.now() - t0) / 100) / 10;
    writeScoreRecord(run.dir, report, incidents ?? null, snaps, rows);
    return report;
  } finally {
    await scorer?.close();
    run.model.params.dispose();
    run.flat.params.dispose();
  }
}

/**
 * Snapshots of [from, to) and what scoring them needs: the W − 1 snapshots before `from` to prime the
 * window (null when `from` continues the run's window state), planned events and the labelled incidents.
 */
export async function loadPeriod(cfg: Config, run: AnomalyRun, from: number, to: number | undefined): Promise<{ snaps: Snapshot[]; prime: Snapshot[] | null; events: PlannedEvent[]; incidents: Incident[] | undefined }> {
  const fitUntil = parseIsoTime(run.manifest.fit.until)!;
  const W = run.manifest.model.window;
  return withDuck(async ({ conn }) => {
    const before = await snapshotTimes(conn, cfg, { until: from });
    const primeFrom = before.length >= W - 1 ? before[before.length - (W - 1)] : before[0];
    const continuing = Math.abs(from - fitUntil) < 1e-6 && run.state.last_ts !== null;
    const loaded = await loadSnapshots(conn, cfg, { from: continuing ? from : (primeFrom ?? from), until: to }, { featureColumns: run.manifest.feature_columns, edgeFeatureColumns: run.manifest.edge_feature_columns });
    const all = loaded.snapshots;
    const firstScored = all.findIndex((s) => s.ts >= from);
    const evs = await loadEvents(conn, cfg, { from: (primeFrom ?? from) - 1e6, until: to });
    return { snaps: firstScored < 0 ? [] : all.slice(firstScored), prime: continuing ? null : all.slice(0, Math.max(0, firstScored)), events: evs, incidents: await loadIncidents(conn, cfg) };
  });
}

/** The series each `anomaly.detector` method alerts on. */
export function detectorSeries(res: Replay): Partial<Record<DetectorMethod, DetectorSeries>> {
  return { tagae: res.tagaeSeries, ...(res.zscoreSeries ? { zscore: res.zscoreSeries } : {}), ...res.rolling };
}

function medianStep(snaps: Snapshot[]): number {
  const d = snaps.slice(1).map((s, k) => s.ts - snaps[k]!.ts).sort((x, y) => x - y);
  return d[Math.floor(d.length / 2)] ?? 60;
}

export interface Replay {
  rows: ScoreRow[];
  tagaeSeries: DetectorSeries;
  staticSeries: DetectorSeries | null;
  /** service → indices of the snapshots where its static rule fired */
  staticByService: Map<string, Set<number>>;
  flatSeries: DetectorSeries;
  zscoreSeries: DetectorSeries | null;
  rolling: Record<RollingMethod, DetectorSeries>;
  evidence: Evidence;
  newServices: number;
}

/** Scores `snaps` with TAGAE, the static thresholds and the flat autoencoder. */
export async function replay(run: AnomalyRun, scorer: SnapshotScorer, a: Config['anomaly'] & object, snaps: Snapshot[], prime: Snapshot[] | null, events: PlannedEvent[]): Promise<Replay> {
  const state = prime === null ? structuredClone(run.state) : emptyState(run.manifest.id, run.baselines.warmup_scores);
  const detector = new Detector(scorer, run.stats, a, run.baselines.tagae, state);
  for (const s of prime ?? []) await detector.step(s, [], { prime: true });
  const batches = eventsBetween(events, snaps, prime === null ? (run.state.last_ts ?? undefined) : prime[prime.length - 1]?.ts);
  const flat = new FlatDetector(run.flat, run.baselines.flat, a.score_services, new SlidingThreshold(a.threshold_quantile, a.threshold_window, [...run.baselines.flat_warmup_scores]));
  const cols = run.manifest.feature_columns;
  const rows: ScoreRow[] = [];
  const ts: number[] = [];
  const tagae: DetectorSeries = { ts, score: [], alert: [] };
  const stat: DetectorSeries | null = run.baselines.static ? { ts, score: [], alert: [] } : null;
  const flatS: DetectorSeries = { ts, score: [], alert: [] };
  let newServices = 0;
  const byService = new Map<string, Set<number>>();
  const edgeStats = edgeZScoreStats(run, snaps);
  const signals = new RecentSignals(run, a.rebaseline_snapshots, edgeStats);
  const zSeries: DetectorSeries | null = run.baselines.zscore ? { ts, score: [], alert: [] } : null;
  const zThreshold = new SlidingThreshold(a.threshold_quantile, a.threshold_window, [...(run.baselines.zscore_warmup_scores ?? [])]);
  const evidence: Evidence = [];
  const rollingDetector = new RollingDetector(run.baselines.zscore ?? null, cols);
  const rolling = Object.fromEntries(ROLLING_METHODS.map((m) => [m, { ts, score: [] as number[], alert: [] as boolean[] }])) as Record<RollingMethod, DetectorSeries>;
  // Label-free alerts of the rolling scores: above the threshold quantile of their own past scores (no fitted window to start from).
  const rollingThresholds = Object.fromEntries(ROLLING_METHODS.map((m) => [m, new SlidingThreshold(a.threshold_quantile, a.threshold_window, [])])) as Record<RollingMethod, SlidingThreshold>;
  for (let k = 0; k < snaps.length; k++) {
    const s = snaps[k]!;
    const r = await detector.step(s, batches[k]!, { evidence: true });
    const ev: Evidence[number] = { tagae: r.service_scores! };
    evidence.push(ev);
    const sig = signals.observe(s, batches[k]!);
    if (sig) {
      const e = edgeZScores(edgeStats, s);
      ev.zscore = sig.z;
      ev.telemetry = sig.z.map((x, i) => x + e[i]!);
      ev.signals = sig.deviations;
      const top = Math.max(0, ...sig.z);
      zSeries!.score.push(top);
      zSeries!.alert.push(zThreshold.judge(top).alert);
    }
    rows.push({ ts: r.ts, score: r.score, threshold: r.threshold, alert: r.alert, top_services: r.top_services, top_edges: r.top_edges, root_causes: signals.rootCauses(s, r.service_scores!, a.top_k) });
    ts.push(r.ts);
    const rs = rollingDetector.step(s, batches[k]!, r.score);
    for (const m of ROLLING_METHODS) {
      rolling[m].score.push(rs[m]);
      rolling[m].alert.push(rollingThresholds[m].judge(rs[m]).alert);
    }
    tagae.score.push(r.score);
    tagae.alert.push(r.alert);
    newServices = Math.max(newServices, r.new_services);
    if (stat) {
      const sa = staticAlerts(run.baselines.static!, s, cols);
      ev.static = staticRatios(run.baselines.static!, s, cols);
      stat.score.push(sa.score);
      stat.alert.push(sa.score > 1);
      for (const svc of sa.services) {
        let set = byService.get(svc);
        if (!set) byService.set(svc, (set = new Set()));
        set.add(k);
      }
    }
    const f = flat.step(s.services, standardise(s.features, run.stats.node), new Set(batches[k]!.map((e) => e.service)));
    ev.flat = f.service_scores;
    flatS.score.push(f.score);
    flatS.alert.push(f.alert);
    if ((k + 1) % 100 === 0) info(`anomaly score: ${k + 1}/${snaps.length} snapshots`);
  }
  return { rows, tagaeSeries: tagae, staticSeries: stat, staticByService: byService, flatSeries: flatS, zscoreSeries: zSeries, rolling, evidence, newServices };
}

/**
 * Call-edge statistics for the `telemetry` ranking: the normal period's where it had values for an edge;
 * for an edge it never saw with values (traces kept only around incidents), the median and spread over
 * the scored period itself — label-free, and robust to the minority of minutes a fault touches that edge.
 */
function edgeZScoreStats(run: AnomalyRun, snaps: Snapshot[]): EdgeZScoreStats {
  const fitted = run.baselines.edge_zscore ?? { columns: run.manifest.edge_feature_columns, edges: {} };
  const scored = fitEdgeZScore(snaps, run.manifest.edge_feature_columns);
  return { columns: fitted.columns, edges: { ...scored.edges, ...fitted.edges } };
}

function evaluation(res: Replay, incidents: Incident[], snaps: Snapshot[], grace: number): ScoreReport['evaluation'] {
  const step = medianStep(snaps);
  const days = (snaps[snaps.length - 1]!.ts - snaps[0]!.ts + step) / 86400;
  const tagae = evaluate(res.tagaeSeries, incidents, grace, days);
  const stat = res.staticSeries ? evaluatePerService(res.staticSeries.ts, res.staticByService, incidents, grace, days, res.staticSeries.score) : null;
  const flat = evaluate(res.flatSeries, incidents, grace, days);
  const zscore = res.zscoreSeries ? evaluate(res.zscoreSeries, incidents, grace, days) : null;
  const rollingQ = Object.fromEntries(ROLLING_METHODS.map((m) => [m, evaluate(res.rolling[m], incidents, grace, days)])) as Record<RollingMethod, DetectorQuality>;
  const rootCause = evaluateRootCause(snaps, res.evidence, incidents);
  const series: [string, DetectorSeries | null][] = [['tagae', res.tagaeSeries], ['static', res.staticSeries], ['flat', res.flatSeries], ['zscore', res.zscoreSeries], ...ROLLING_METHODS.map((m): [string, DetectorSeries] => [m, res.rolling[m]])];
  const operatingPoints: Record<string, OperatingPoint> = {};
  for (const [name, sr] of series) {
    const op = sr ? chooseOperatingPoint(sr, incidents, grace) : null;
    if (op) operatingPoints[name] = op;
  }
  // Chosen on the validation stretch only (the earlier half of the incidents); the first listed wins a tie.
  let detection = 'tagae';
  for (const [name, op] of Object.entries(operatingPoints)) if ((op.validation.auroc ?? -1) > (operatingPoints[detection]?.validation.auroc ?? -1)) detection = name;
  const chosen = operatingPoints[detection];
  const recommendedDetector = chosen ? { method: detection, threshold: chosen.threshold, validation_auroc: chosen.validation.auroc } : null;
  let atRecall: NonNullable<ScoreReport['evaluation']>['at_static_recall'] = null;
  if (stat && stat.recall !== null && stat.recall > 0) {
    const t = falseAlarmsAtRecall(res.tagaeSeries, incidents, grace, stat.recall);
    const f = falseAlarmsAtRecall(res.flatSeries, incidents, grace, stat.recall);
    atRecall = {
      recall: stat.recall,
      static_false_alarms: stat.false_alarms,
      tagae: t?.false_alarms ?? null,
      flat: f?.false_alarms ?? null,
      false_alarm_reduction_vs_static: t && stat.false_alarms > 0 ? 1 - t.false_alarms / stat.false_alarms : null,
    };
  }
  const inRange = incidents.filter((i) => i.end > snaps[0]!.ts && i.start <= snaps[snaps.length - 1]!.ts).length;
  return { incidents: inRange, days, grace_seconds: grace, tagae, static: stat, flat, zscore, ...rollingQ, operating_points: operatingPoints, recommended_detector: recommendedDetector, root_cause: rootCause, recommended_method: { detection, root_cause: rootCause?.recommended_method ?? null }, at_static_recall: atRecall };
}
