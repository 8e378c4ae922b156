/** `gnnctl anomaly fit | score | watch`: parse flags, load the config, call the stage, print. */
import { parseBackendRequest } from '../../compute/backend.js';
import { loadConfig } from '../../config/load.js';
import { UsageError } from '../../core/errors.js';
import { resolve } from 'node:path';
import { fitAnomaly, type FitResult } from '../../anomaly/fit.js';
import { scoreAnomaly, type ScoreReport } from '../../anomaly/score.js';
import { watchAnomaly, type WatchResult } from '../../anomaly/watch.js';
import { parseIsoTime } from '../../core/time.js';
import { choiceFlag, intFlag, optional, secondsFlag, timeFlag } from '../flags.js';
import type { DetectorQuality } from '../../anomaly/evaluate.js';
import type { CommandOutput } from '../run.js';

export interface AnomalyCommandOptions {
  config: string;
  run?: string;
  initFrom?: string;
  from?: string;
  until?: string;
  to?: string;
  out?: string;
  epochs?: unknown;
  backend?: string;
  runtime?: string;
  artifacts?: string;
  interval?: unknown;
  prometheus?: string;
  alertmanager?: string;
  port?: unknown;
  host?: string;
  stateFile?: string;
  maxTicks?: unknown;
  json?: boolean;
  quiet?: boolean;
  cwd?: string;
}

/** An optional ISO time flag → epoch seconds (the one time parser: core/time.ts). */
const runtimeFlag = choiceFlag('--runtime', ['onnx', 'tfjs'] as const);

function timeSeconds(flag: string, value: string | undefined): number | undefined {
  const text = optional(timeFlag(flag), value);
  return text === undefined ? undefined : parseIsoTime(text)!;
}

export async function anomalyFitCommand(opts: AnomalyCommandOptions): Promise<CommandOutput<FitResult>> {
  const from = timeSeconds('--from', opts.from);
  const until = timeSeconds('--until', opts.until);
  if (from !== undefined && until !== undefined && until <= from) throw new UsageError('--until must be after --from', { where: '--until', value: opts.until });
  const epochs = optional(intFlag('--epochs', 1), opts.epochs);
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  const r = await fitAnomaly(cfg, { from, until, epochs, initFrom: opts.initFrom, backend: parseBackendRequest(opts.backend) });
  const text = [
    `anomaly run ${r.run_id}${r.init_from ? ` (fine-tuned from ${r.init_from})` : ''}: fitted on ${r.train_snapshots} snapshots (${r.fit_from} .. ${r.fit_until}), warm-up ${r.warmup_snapshots}`,
    `  ${r.services} services, ${r.mean_edges} calls per snapshot; features ${r.feature_columns.join(', ')}`,
    ...(r.snapshots_without_edges > 0 ? [`  ${r.snapshots_without_edges} snapshots without call edges: ${r.empty_graph_action}`] : []),
    `  static baseline: ${r.static_baseline_columns.length ? r.static_baseline_columns.join(', ') : 'off (no latency/error column among the features)'}`,
    `  root-cause weights: ${r.root_cause_weights ? `${r.root_cause_weights.file} from ${r.root_cause_weights.incidents} labelled validation faults; alerts rank with ${r.root_cause_weights.method} (validation AC@1 ${r.root_cause_weights.validation_ac_at_1.signals_learned.toFixed(2)} learned, ${r.root_cause_weights.validation_ac_at_1.signals.toFixed(2)} unweighted)` : 'none (no labels naming a root cause): alerts rank with signals'}`,
    `  detector: ${r.detector ? `${r.detector.method} ≥ ${r.detector.threshold.toPrecision(6)} chosen on ${r.detector.incidents} labelled validation faults (${r.detector.rule}); score/watch alert on it unless anomaly.detector is set` : 'TAGAE at its sliding τ (no labelled faults to choose on)'}`,
    `  loss ${r.loss.map((l) => l.toFixed(4)).join(' → ')}; threshold τ = ${r.threshold.toFixed(3)} (flat baseline ${r.flat_threshold.toFixed(3)})`,
    `  ${r.run_dir} (${r.backend}, ${r.seconds} s)`,
  ].join('\n');
  return { result: r, text };
}

export async function anomalyScoreCommand(opts: AnomalyCommandOptions): Promise<CommandOutput<ScoreReport>> {
  const from = timeSeconds('--from', opts.from);
  const to = timeSeconds('--to', opts.to);
  if (from !== undefined && to !== undefined && to <= from) throw new UsageError('--to must be after --from', { where: '--to', value: opts.to });
  if (!opts.run) throw new UsageError('a run is required', { where: '--run', hint: 'pass the run id `gnnctl anomaly fit` printed, or latest' });
  const runtime = optional(runtimeFlag, opts.runtime);
  if (opts.out !== undefined && !/\.parquet$/i.test(opts.out)) throw new UsageError('the output must be a .parquet file', { where: '--out', value: opts.out, hint: 'e.g. --out scores.parquet' });
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  const r = await scoreAnomaly(cfg, { run: opts.run, from, to, out: opts.out === undefined ? undefined : resolve(opts.cwd ?? process.cwd(), opts.out), runtime, backend: parseBackendRequest(opts.backend) });
  const lines = [
    `scored ${r.snapshots} snapshots (${r.from} .. ${r.to}) with run ${r.run_id} (${r.runtime}): ${r.alerts} alerting on ${r.detector.method}${r.detector.threshold !== null ? ` ≥ ${r.detector.threshold.toPrecision(6)} (${r.detector.source === 'config' ? 'anomaly.detector' : 'chosen at fit'})` : ` > τ ${r.threshold_first.toFixed(3)} → ${r.threshold_last.toFixed(3)}`}`,
    `  ${r.out}`,
    `  alerts during planned scale-outs: TAGAE ${r.scale_out_alerts.tagae}, static ${r.scale_out_alerts.static}, flat ${r.scale_out_alerts.flat}`,
  ];
  const ev = r.evaluation;
  if (ev) {
    const fmt = (name: string, q: DetectorQuality | null): string =>
      q ? `  ${name.padEnd(7)} recall ${pct(q.recall)}  precision ${pct(q.precision)}  false alarms ${q.false_alarms} (${q.false_alarms_per_day.toFixed(1)}/day)  ${Object.entries(q.by_kind).map(([k, v]) => `${k} ${v.detected}/${v.incidents}${v.mean_delay_seconds !== null ? ` @${Math.round(v.mean_delay_seconds / 60)}m` : ''}`).join(', ')}` : `  ${name.padEnd(7)} (no latency/error columns for static thresholds)`;
    lines.push(`  ${ev.incidents} labelled incidents over ${ev.days.toFixed(1)} days (alerts count inside the window${ev.grace_seconds ? ` + ${ev.grace_seconds} s` : ''}):`, fmt('tagae', ev.tagae), fmt('static', ev.static), fmt('flat', ev.flat), ...(ev.zscore ? [fmt('zscore', ev.zscore)] : []), fmt('rolling_family', ev.rolling_family), fmt('tagae_rolling', ev.tagae_rolling), fmt('combined', ev.combined));
    const auc = (q: DetectorQuality | null): string => (q ? `${q.auroc?.toFixed(2) ?? 'n/a'} (chance recall ${pct(q.chance_recall)})` : 'n/a');
    lines.push(`  AUROC: tagae ${auc(ev.tagae)}, static ${auc(ev.static)}, flat ${auc(ev.flat)}, zscore ${auc(ev.zscore)}, rolling_family ${auc(ev.rolling_family)}, tagae_rolling ${auc(ev.tagae_rolling)}, combined ${auc(ev.combined)}`);
    const ops = Object.entries(ev.operating_points);
    if (ops.length) {
      lines.push('  at a threshold chosen on the earlier half of the incidents (recall / chance / false alarms: validation → test):');
      for (const [m, op] of ops) lines.push(`    ${m.padEnd(16)} ≥ ${op.threshold.toPrecision(4)}  ${pct(op.validation.recall)} / ${pct(op.validation.chance_recall)} / ${op.validation.false_alarms} → ${pct(op.test.recall)} / ${pct(op.test.chance_recall)} / ${op.test.false_alarms}`);
    }
    const rc = ev.root_cause;
    if (rc) {
      lines.push(`  root cause over ${rc.incidents} labelled incidents (AC@1 / AC@3 / Avg@5):`);
      for (const [m, q] of Object.entries(rc.methods)) lines.push(`    ${m.padEnd(16)} ${q.ac_at_1.toFixed(2)} / ${q.ac_at_3.toFixed(2)} / ${q.avg_at_5.toFixed(2)}`);
    }
    const d = ev.recommended_detector;
    if (d) lines.push(`  recommended detector (best validation AUROC): anomaly.detector: {method: ${d.method}, threshold: ${d.threshold.toPrecision(6)}}`);
    lines.push(`  recommended on this data: detection ${ev.recommended_method.detection}, root cause ${ev.recommended_method.root_cause ?? 'n/a (no root-cause labels)'}`);
    const s = ev.at_static_recall;
    if (s) lines.push(`  at the static recall ${pct(s.recall)}: false alarms static ${s.static_false_alarms}, TAGAE ${s.tagae ?? 'n/a'}, flat ${s.flat ?? 'n/a'}`);
  }
  return { result: r, text: lines.join('\n') };
}

function pct(x: number | null): string {
  return x === null ? 'n/a' : `${(100 * x).toFixed(0)}%`;
}

export async function anomalyWatchCommand(opts: AnomalyCommandOptions): Promise<CommandOutput<WatchResult>> {
  if (!opts.run) throw new UsageError('a run is required', { where: '--run', hint: 'pass the run id `gnnctl anomaly fit` printed, or latest' });
  const interval = secondsFlag('--interval')(opts.interval ?? '15s');
  if (interval <= 0) throw new UsageError('--interval must be above 0 (got "0")', { where: '--interval', value: opts.interval, hint: 'e.g. --interval 15s or --interval 1m' });
  const port = intFlag('--port', 0, 65535)(opts.port ?? '9464');
  const maxTicks = optional(intFlag('--max-ticks', 1), opts.maxTicks);
  const runtime = optional(runtimeFlag, opts.runtime);
  for (const [flag, url] of [['--prometheus', opts.prometheus], ['--alertmanager', opts.alertmanager]] as const) {
    if (url !== undefined && !/^https?:\/\/[^/\s]+/.test(url)) throw new UsageError('not an http(s) URL', { where: flag, value: url, hint: `e.g. ${flag} http://127.0.0.1:${flag === '--prometheus' ? 9090 : 9093}` });
  }
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const r = await watchAnomaly(cfg, {
      run: opts.run,
      intervalMs: interval * 1000,
      prometheus: opts.prometheus,
      alertmanager: opts.alertmanager,
      port,
      host: opts.host ?? '127.0.0.1',
      stateFile: opts.stateFile === undefined ? undefined : resolve(opts.cwd ?? process.cwd(), opts.stateFile),
      maxTicks,
      runtime,
      backend: parseBackendRequest(opts.backend),
      signal: stop.signal,
    });
    return { result: r, text: `watch stopped after ${r.ticks} polls: ${r.snapshots_scored} snapshots scored in total, ${r.alerts} alerting this session${r.last_alert_root_causes ? ` (last named ${r.last_alert_root_causes.join(', ')} by ${r.root_cause_method})` : ''}; alerting on ${r.detector.method}${r.detector.threshold !== null ? ` ≥ ${r.detector.threshold} (${r.detector.source === 'config' ? 'anomaly.detector' : 'chosen at fit'})` : ' > τ'}; last ${r.last_ts ?? 'none'}; state ${r.state_file}` };
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
