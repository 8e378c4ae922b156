/**
 * `gnnctl anomaly watch`: score snapshots as they arrive and keep going across restarts.
 *
 * Every `interval` it reads the snapshots newer than the last one scored — from the configured tables
 * (re-read each poll, so appended rows or new files matching a glob are seen) or from a Prometheus HTTP
 * API — scores them in order, and after each one writes the window state (the last W − 1 embeddings, the
 * threshold window, suppression counters, the last time) to the state file atomically. A restarted watch
 * restores that file and continues where it stopped: nothing re-scored, nothing lost.
 *
 * From tables, the newest snapshot is left for the next poll: its rows may still be being written (a
 * scraper appends a snapshot service by service). From Prometheus, a watch whose state is older than
 * W steps starts at now − W·step (query_range cannot return years of 15 s steps).
 *
 * It serves `/metrics` (Prometheus text format) on a loopback address by default, and with
 * `--alertmanager URL` POSTs each alerting snapshot to `URL/api/v2/alerts` (and a resolution when the
 * alert clears), as Prometheus itself does.
 *
 * Each alert names its root causes as `score` does (recent_signals.ts): the `signals` ranking over the last
 * W snapshots — weighted when the run saved learned weights it chose on validation faults — or TAGAE's
 * errors propagated through the call graph for a run without z-score statistics. The recent deviations
 * live in memory: after a restart the first alert ranks on the snapshots seen since.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Config } from '../config/load.js';
import { selectBackend, type BackendRequest } from '../compute/backend.js';
import { withDuck } from '../data/duck.js';
import { ArtifactError, UsageError } from '../core/errors.js';
import { writeJsonAtomic } from '../core/atomic.js';
import { isoSeconds } from '../core/duration.js';
import { info, warn } from '../core/log.js';
import { Detector, type SnapshotScore, type WindowState } from './detector.js';
import { alertingDetector, readDetectorChoice, type AlertingDetector } from './detector_choice.js';
import { eventsBetween } from './events_between.js';
import { checkPrometheusConfig, readPrometheus } from './prometheus.js';
import { loadRun, openScorer, scoringConfig } from './run.js';
import type { ScorerRuntime, SnapshotScorer } from './scorer.js';
import { anomalyConfig, loadEvents, loadSnapshots, type Snapshot } from './source.js';
import { RecentSignals } from './recent_signals.js';
import { RollingDetector, type RollingScores } from './rolling_reference.js';

export interface WatchOptions {
  run: string;
  intervalMs: number;
  prometheus?: string;
  alertmanager?: string;
  port: number;
  host: string;
  stateFile?: string;
  maxTicks?: number;
  backend?: BackendRequest;
  /** the runtime that reconstructs snapshots: onnx (default, the run's model/tagae.onnx) or tfjs */
  runtime?: ScorerRuntime;
  /** stops the loop (SIGINT/SIGTERM in the command) */
  signal?: AbortSignal;
  /** called once /metrics listens (tests and embedders learn the port chosen for 0) */
  onListening?: (metricsUrl: string) => void;
}

export interface WatchResult {
  run_id: string;
  runtime: ScorerRuntime;
  state_file: string;
  restored: boolean;
  ticks: number;
  snapshots_scored: number;
  alerts: number;
  last_ts: string | null;
  metrics_url: string;
  alerts_posted: number;
  /** where alerts' root causes come from: signals, signals_learned (the run's saved weights) or tagae_graph */
  root_cause_method: 'signals' | 'signals_learned' | 'tagae_graph';
  /** the score alerts are decided on: `anomaly.detector` at its fixed threshold (`config`), else the run's fit-time choice (`fit`), else TAGAE at its sliding τ (`default`) */
  detector: AlertingDetector;
  /** the root causes of the last alerting snapshot, most likely first (null: no alert) */
  last_alert_root_causes: string[] | null;
}

export async function watchAnomaly(cfg: Config, opts: WatchOptions): Promise<WatchResult> {
  const current = anomalyConfig(cfg);
  await selectBackend(opts.backend ?? 'auto');
  const run = loadRun(cfg.artifactsDir, opts.run);
  const a = scoringConfig(current, run);
  const stateFile = opts.stateFile ?? join(run.dir, 'watch_state.json');
  let state: WindowState = structuredClone(run.state);
  let restored = false;
  if (existsSync(stateFile)) {
    let saved: WindowState;
    try {
      saved = JSON.parse(readFileSync(stateFile, 'utf8')) as WindowState;
    } catch (e) {
      throw new ArtifactError(`cannot read the watch state: ${(e as Error).message}`, { where: stateFile, hint: 'delete it to start from the end of the normal period' });
    }
    if (saved.version !== 1 || saved.run_id !== run.manifest.id) {
      throw new ArtifactError(`the watch state belongs to run ${JSON.stringify(saved.run_id)}, not ${run.manifest.id}`, { where: stateFile, hint: 'pass --state-file for this run, or delete the file' });
    }
    state = saved;
    restored = true;
  }
  const prom = opts.prometheus ? checkPrometheusConfig(a, run.manifest.feature_columns, run.manifest.edge_feature_columns) : null;
  const runtime = opts.runtime ?? 'onnx';
  let scorer: SnapshotScorer;
  try {
    scorer = await openScorer(run, runtime);
  } catch (e) {
    run.model.params.dispose();
    run.flat.params.dispose();
    throw e;
  }
  const detector = new Detector(scorer, run.stats, a, run.baselines.tagae, state);
  // Live data has no scored period to take unseen edges' statistics from: the normal period's only.
  const signals = new RecentSignals(run, a.rebaseline_snapshots, run.baselines.edge_zscore ?? null);
  // A configured detector judges its score against a fixed threshold; its trailing reference is in memory
  // (after a restart it leans on the normal period's statistics until the reference refills).
  const alertOn = alertingDetector(a, readDetectorChoice(run.dir));
  const chosen = alertOn.threshold === null ? null : { method: alertOn.method, threshold: alertOn.threshold };
  const rolling = chosen && chosen.method !== 'tagae' && chosen.method !== 'zscore' ? new RollingDetector(run.baselines.zscore ?? null, run.manifest.feature_columns) : null;
  let alerting = state.alert;
  const last: { score: SnapshotScore | null; rootCauses: string[]; seconds: number } = { score: null, rootCauses: [], seconds: Number.NaN };
  let lastAlertRootCauses: string[] | null = null;
  let alerts = 0;
  let posted = 0;
  let alertStart: number | null = state.alert && state.last_ts !== null ? state.last_ts : null;

  const server = await listen(opts.host, opts.port, () => metricsText(run.manifest.id, state, last.score, last.rootCauses, alerts, last.seconds, alerting)).catch(async (e: unknown) => {
    await scorer.close();
    run.model.params.dispose();
    run.flat.params.dispose();
    throw e;
  });
  const port = (server.address() as AddressInfo).port;
  const metricsUrl = `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}/metrics`;
  opts.onListening?.(metricsUrl);
  info(`anomaly watch: run ${run.manifest.id}, ${restored ? `restored ${stateFile} (last snapshot ${state.last_ts === null ? 'none' : isoSeconds(state.last_ts)})` : 'starting from the end of the normal period'}; ${metricsUrl}`);

  const post = async (score: SnapshotScore, rootCauses: string[], resolved: boolean): Promise<void> => {
    if (!opts.alertmanager) return;
    const url = new URL('api/v2/alerts', opts.alertmanager.endsWith('/') ? opts.alertmanager : `${opts.alertmanager}/`);
    const body = [
      {
        labels: { alertname: 'GnnctlMeshAnomaly', severity: 'warning', run_id: run.manifest.id, source: 'gnnctl' },
        annotations: {
          summary: `service-graph anomaly score ${score.score.toFixed(3)} above τ ${score.threshold.toFixed(3)}`,
          top_services: score.top_services.join(', '),
          top_edges: score.top_edges.join(', '),
          root_causes: rootCauses.join(', '),
          root_cause_method: signals.method,
        },
        startsAt: new Date((alertStart ?? score.ts) * 1000).toISOString(),
        ...(resolved ? { endsAt: new Date(score.ts * 1000).toISOString() } : {}),
      },
    ];
    try {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
      if (!res.ok) warn(`Alertmanager at ${url} answered HTTP ${res.status}`);
      else posted++;
    } catch (e) {
      warn(`cannot POST the alert to ${url}: ${(e as Error).message}`);
    }
  };

  const readNew = async (): Promise<Snapshot[]> => {
    const after = state.last_ts;
    if (prom) {
      const step = prom.prometheus.step;
      const now = Math.floor(Date.now() / 1000 / step) * step - step; // the last complete step
      const start = after === null || after < now - a.window * step ? now - a.window * step : after + step;
      return start > now ? [] : readPrometheus(opts.prometheus!, prom, start, now);
    }
    return withDuck(async ({ conn }) => {
      const loaded = await loadSnapshots(conn, cfg, { from: after === null ? undefined : after + 1e-3 }, { featureColumns: run.manifest.feature_columns, edgeFeatureColumns: run.manifest.edge_feature_columns });
      return loaded.snapshots.slice(0, -1);
    });
  };

  let ticks = 0;
  try {
    while (!opts.signal?.aborted) {
      const fresh = await readNew();
      if (fresh.length > 0) {
        const events = prom ? [] : await withDuck(({ conn }) => loadEvents(conn, cfg, { from: (state.last_ts ?? fresh[0]!.ts - 1) + 1e-3, until: fresh[fresh.length - 1]!.ts + 1e-3 }));
        const batches = eventsBetween(events, fresh, state.last_ts ?? undefined);
        for (const [k, s] of fresh.entries()) {
          const wasAlert = alerting;
          const t0 = performance.now();
          const tagae = await detector.step(s, batches[k]!, { evidence: true });
          const sig = signals.observe(s, batches[k]!);
          const r = chosen ? judged(chosen, tagae, sig ? Math.max(0, ...sig.z) : 0, rolling?.step(s, batches[k]!, tagae.score)) : tagae;
          alerting = r.alert;
          const rootCauses = signals.rootCauses(s, r.service_scores!, a.top_k);
          last.seconds = (performance.now() - t0) / 1000;
          last.score = r;
          last.rootCauses = rootCauses;
          writeJsonAtomic(stateFile, detector.exportState());
          if (r.alert) {
            alerts++;
            if (!wasAlert) alertStart = r.ts;
            lastAlertRootCauses = rootCauses;
            await post(r, rootCauses, false);
          } else if (wasAlert) {
            await post(r, rootCauses, true);
            alertStart = null;
          }
          info(`${isoSeconds(r.ts)} score ${r.score.toFixed(3)} τ ${r.threshold.toFixed(3)}${r.alert ? `  ALERT root causes ${rootCauses.join(', ')} (${signals.method}); top errors ${r.top_services.join(', ')}` : ''}`);
        }
      }
      ticks++;
      if (opts.maxTicks !== undefined && ticks >= opts.maxTicks) break;
      await sleep(opts.intervalMs, opts.signal);
    }
  } finally {
    await new Promise<void>((res) => server.close(() => res()));
    server.closeAllConnections();
    await scorer.close();
    run.model.params.dispose();
    run.flat.params.dispose();
  }
  return {
    run_id: run.manifest.id,
    runtime,
    state_file: stateFile,
    restored,
    ticks,
    snapshots_scored: state.snapshots_scored,
    alerts,
    last_ts: state.last_ts === null ? null : isoSeconds(state.last_ts),
    metrics_url: metricsUrl,
    alerts_posted: posted,
    root_cause_method: signals.method,
    detector: alertOn,
    last_alert_root_causes: lastAlertRootCauses,
  };
}

/** TAGAE's snapshot result with the configured detector's score, threshold and decision in its place. */
function judged(chosen: { method: string; threshold: number }, r: SnapshotScore, zscore: number, rolling: RollingScores | undefined): SnapshotScore {
  const score = chosen.method === 'tagae' ? r.score : chosen.method === 'zscore' ? zscore : (rolling?.[chosen.method as keyof RollingScores] ?? 0);
  return { ...r, score, threshold: chosen.threshold, alert: score >= chosen.threshold };
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((res) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      res();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

function listen(host: string, port: number, render: () => string): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/metrics') {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(render());
    } else if (req.method === 'GET' && path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    } else {
      res.writeHead(404, { 'content-type': 'application/json' }).end(`${JSON.stringify({ error: `unknown route ${req.method} ${req.url}; anomaly watch serves GET /metrics and /healthz` })}\n`);
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => reject(new UsageError(`cannot listen on ${host}:${port}: ${e.code ?? e.message}`, { where: '--port', value: port, hint: 'pick another port, or 0 for a free one' })));
    server.listen(port, host, () => resolve(server));
  });
}

function metricsText(runId: string, state: WindowState, s: SnapshotScore | null, rootCauses: string[], alerts: number, seconds: number, alerting: boolean): string {
  const run = `run_id="${runId}"`;
  const g = (name: string, help: string, value: number, type = 'gauge'): string => `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${name}{${run}} ${Number.isFinite(value) ? value : value > 0 ? '+Inf' : 'NaN'}\n`;
  let out = '';
  out += g('gnnctl_anomaly_score', 'Anomaly score of the last snapshot (mean of the top-k relative service errors).', s?.score ?? Number.NaN);
  out += g('gnnctl_anomaly_threshold', 'Alert threshold τ the last snapshot was judged against.', s?.threshold ?? Number.NaN);
  out += g('gnnctl_anomaly_alert', '1 while the last snapshot alerts, else 0.', alerting ? 1 : 0);
  out += g('gnnctl_anomaly_last_snapshot_timestamp_seconds', 'Time of the last snapshot scored.', state.last_ts ?? Number.NaN);
  out += g('gnnctl_anomaly_snapshots_scored_total', 'Snapshots scored by this run\'s watch (across restarts).', state.snapshots_scored, 'counter');
  out += g('gnnctl_anomaly_alerting_snapshots_total', 'Alerting snapshots since this process started.', alerts, 'counter');
  out += g('gnnctl_anomaly_scoring_duration_seconds', 'Wall time of scoring the last snapshot (graph, reconstruction, errors).', seconds);
  out += g('gnnctl_anomaly_suppressed_services', 'Services whose scores planned changes suppress.', Object.keys(state.suppressed).length);
  if (s && s.top_services.length) {
    out += '# HELP gnnctl_anomaly_top_service Rank of the services contributing most to the last score (1 = most).\n# TYPE gnnctl_anomaly_top_service gauge\n';
    s.top_services.forEach((svc, i) => (out += `gnnctl_anomaly_top_service{${run},service="${svc.replace(/["\\\n]/g, '_')}"} ${i + 1}\n`));
  }
  if (s?.alert && rootCauses.length) {
    out += '# HELP gnnctl_anomaly_root_cause Rank of the services the alerting last snapshot names as root causes (1 = most likely).\n# TYPE gnnctl_anomaly_root_cause gauge\n';
    rootCauses.forEach((svc, i) => (out += `gnnctl_anomaly_root_cause{${run},service="${svc.replace(/["\\\n]/g, '_')}"} ${i + 1}\n`));
  }
  return out;
}
