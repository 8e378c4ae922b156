/**
 * The HTML report of an anomaly run (`gnnctl report <anomaly run>`), from its manifest, the
 * `score_report.json` of its last `gnnctl anomaly score` and the Parquet scores that names. Same page,
 * cards, tables and charts as the train report; sections:
 *
 * | id             | shows                                                                            |
 * |----------------|----------------------------------------------------------------------------------|
 * | `headline`     | recall vs chance, false alarms per day, AUROC, AC@1; the recommended methods      |
 * | `timeline`     | score and τ over the scored period, alerts, labelled fault windows                |
 * | `detection`    | every detector (TAGAE, static, flat, z-score): recall, chance, precision, AUROC   |
 * | `false-alarms` | false alarms per day per detector                                                 |
 * | `root-cause`   | AC@1 / AC@3 / Avg@5 per ranking method; each fault's top services per method     |
 * | `service-graph`| the call graph around the strongest alert's top root-cause service                |
 * | `details`      | fit and score periods, columns, timings, resolved anomaly config                  |
 */
import { barChart } from './charts/bar.js';
import { COLORS } from './charts/frame.js';
import { scoreTimeline } from './charts/score_timeline.js';
import { serviceGraph } from './charts/service_graph.js';
import { esc, fmtInt, fmtMetric, fmtPercent, fmtSeconds, fmtTime, MISSING } from './format.js';
import { card, cards, chips, code, facts, figure, note, section, table } from './html.js';
import type { AnomalyDetectorQuality, AnomalyEvaluation, AnomalyReportData } from './anomaly_model.js';
import { page } from './page.js';

export interface RenderedAnomalyReport {
  html: string;
  runId: string;
  kind: 'anomaly';
  sections: string[];
}

const DETECTORS = [
  ['tagae', 'TAGAE'],
  ['static', 'static thresholds'],
  ['flat', 'flat autoencoder'],
  ['zscore', 'per-service z-score'],
  ['rolling_family', 'rolling reference, per-family maxima'],
  ['tagae_rolling', 'TAGAE against its rolling reference'],
  ['combined', 'rolling families or TAGAE rolling'],
] as const;

export function renderAnomalyReport(d: AnomalyReportData, now: Date, version: string): RenderedAnomalyReport {
  const sections: { id: string; title: string; html: string }[] = [];
  const add = (id: string, title: string, html: string | null): void => {
    if (html !== null) sections.push({ id, title, html });
  };
  const ev = d.record.evaluation ?? null;
  add('headline', 'Headline', headline(d, ev));
  add('timeline', 'Score timeline', timelineSection(d));
  if (ev) {
    add('detection', 'Detection vs baselines', detectionSection(ev));
    add('false-alarms', 'False alarms per day', falseAlarmsSection(ev));
    add('root-cause', 'Root cause', rootCauseSection(ev));
  }
  add('service-graph', 'Service graph around an alert', serviceGraphSection(d));
  add('details', 'Run details', detailsSection(d));
  const m = d.manifest;
  const html = page({
    title: `anomaly report · ${m.id}`,
    description: `gnnctl anomaly run ${m.id} (${m.status})`,
    header: header(d, now, version, sections),
    sections: sections.map((s) => s.html),
  });
  return { html, runId: m.id, kind: 'anomaly', sections: ['header', ...sections.map((s) => s.id)] };
}

function header(d: AnomalyReportData, now: Date, version: string, toc: { id: string; title: string }[]): string {
  const m = d.manifest;
  const r = d.record;
  const fit = obj(m.fit);
  const metrics = obj(m.metrics);
  const nav = toc.map((t) => `<li><a href="#${esc(t.id)}">${esc(t.title)}</a></li>`).join('');
  const pairs: [string, string | null][] = [
    ['Kind', 'anomaly detection (TAGAE beside static, flat and z-score baselines)'],
    ['Status', `<span class="status status-${esc(m.status)}">${esc(m.status)}</span>`],
    ['Fitted on', typeof fit.from === 'string' ? esc(`${fmtTime(fit.from)} → ${fmtTime(String(fit.until))}`) : null],
    ['Scored', esc(`${fmtTime(r.from)} → ${fmtTime(r.to)} (${fmtInt(r.snapshots)} snapshots, ${r.runtime})`)],
    ['Services', typeof metrics.services === 'number' ? esc(fmtInt(metrics.services)) : null],
    ['Backend', esc(m.backend)],
    ['Seed', esc(m.seed)],
    ['Scores', code(r.scores_path)],
    ['gnnctl', esc(m.gnnctl === version ? m.gnnctl : `${m.gnnctl} (report by ${version})`)],
  ];
  return (
    `<header id="header"><p class="eyebrow">gnnctl report · Anomaly detection run</p><h1>anomaly · report</h1>` +
    `<p class="run-id">${code(m.id)} <span class="status status-${esc(m.status)}">${esc(m.status)}</span></p>` +
    facts(pairs) +
    `<nav aria-label="Sections"><ol>${nav}</ol></nav>` +
    `<p class="generated">Generated ${esc(fmtTime(now.toISOString()))} by gnnctl ${esc(version)} from <code>manifest.json</code>, <code>score_report.json</code> and the scores.</p></header>`
  );
}

function tagged(metric: string, v: number | null | undefined, text: string): string {
  return `<span data-metric="${esc(metric)}" data-value="${v ?? ''}">${esc(text)}</span>`;
}

function headline(d: AnomalyReportData, ev: AnomalyEvaluation | null): string {
  const r = d.record;
  const items = [
    card({ label: 'Alerting snapshots', valueHtml: tagged('alerts', r.alerts, fmtInt(r.alerts)), subHtml: `of ${esc(fmtInt(r.snapshots))} scored; τ ${esc(r.threshold_first.toPrecision(4))} → ${esc(r.threshold_last.toPrecision(4))}` }),
  ];
  if (!ev) {
    const summary = 'The scored period has no labelled incidents (anomaly.labels), so recall, false alarms and root-cause accuracy cannot be measured; the timeline shows where TAGAE alerted.';
    return section('headline', 'Headline', cards(items) + `<p class="summary">${esc(summary)}</p>`);
  }
  const t = ev.tagae;
  const rc = ev.root_cause;
  const recRc = ev.recommended_method.root_cause;
  const tagaeRc = rc?.methods.tagae_graph ?? rc?.methods.tagae ?? null;
  const bestRc = recRc ? rc?.methods[recRc] : undefined;
  items.unshift(
    card({ label: 'TAGAE recall', valueHtml: tagged('tagae.recall', t.recall, fmtPercent(t.recall, 0)), subHtml: `of ${esc(fmtInt(ev.incidents))} labelled faults; by chance ${tagged('tagae.chance_recall', t.chance_recall, fmtPercent(t.chance_recall, 0))}`, emphasis: true, tone: t.recall !== null && t.chance_recall !== null ? (t.recall > t.chance_recall ? 'good' : 'bad') : 'neutral' }),
    card({ label: 'False alarms per day', valueHtml: tagged('tagae.false_alarms_per_day', t.false_alarms_per_day, t.false_alarms_per_day.toFixed(1)), subHtml: `${esc(fmtInt(t.false_alarms))} false-alarm episodes in ${esc(ev.days.toFixed(2))} days${ev.static ? `; static ${esc(ev.static.false_alarms_per_day.toFixed(1))}/day` : ''}` }),
    card({ label: 'TAGAE AUROC', valueHtml: tagged('tagae.auroc', t.auroc, fmtMetric(t.auroc, 3)), subHtml: `snapshot score vs in-window labels; z-score ${esc(fmtMetric(ev.zscore?.auroc, 3))}` }),
    card({ label: 'Root cause AC@1', valueHtml: tagged('root_cause.recommended.ac_at_1', bestRc?.ac_at_1, bestRc ? fmtPercent(bestRc.ac_at_1, 0) : MISSING), subHtml: recRc ? `${esc(recRc)} (recommended); TAGAE ${esc(tagaeRc ? fmtPercent(tagaeRc.ac_at_1, 0) : MISSING)}` : 'no root-cause labels (anomaly.labels.root_cause_column)' }),
  );
  const det = ev.recommended_method.detection;
  const parts = [
    `Recommended on this data: detection <strong data-metric="recommended.detection" data-value="${esc(det)}">${esc(det)}</strong> (highest AUROC on the validation faults)${ev.recommended_detector ? `, alerting at ${esc(fmtMetric(ev.recommended_detector.threshold, 3))} (set ${code('anomaly.detector')} for watch)` : ''}`,
    recRc ? `, root cause <strong data-metric="recommended.root_cause" data-value="${esc(recRc)}">${esc(recRc)}</strong> (best AC@1, then AC@3)` : '',
    '.',
  ];
  let warn = '';
  const beaten = [det !== 'tagae' ? `detection (${det})` : '', recRc && !recRc.startsWith('tagae') ? `root cause (${recRc})` : ''].filter(Boolean);
  if (beaten.length) warn = note(`TAGAE is not the best method on this data for ${esc(beaten.join(' and '))}: use the recommended one.`, 'warn');
  return section('headline', 'Headline', cards(items) + `<p class="summary">${parts.join('')}</p>` + warn);
}

function timelineSection(d: AnomalyReportData): string {
  const s = d.series;
  const windows = d.record.incidents.map((i) => ({ start: Date.parse(i.start) / 1000, end: Date.parse(i.end) / 1000, label: `${i.kind}${i.root_cause ? ` at ${i.root_cause}` : ''}: ${fmtTime(i.start)} → ${fmtTime(i.end)}` }));
  const alerts = s.alert.filter(Boolean).length;
  const svgHtml = scoreTimeline({
    id: 'score-timeline',
    title: 'Snapshot score against the threshold',
    desc: `${s.ts.length} snapshots, ${alerts} alerting, ${windows.length} labelled fault windows.`,
    ts: s.ts,
    score: s.score,
    threshold: s.threshold,
    alert: s.alert,
    windows,
  });
  const det = d.record.detector;
  const alertedBy =
    det && det.source !== 'default'
      ? `<span data-metric="timeline.detector" data-value="${esc(det.method)}">${esc(det.method)}</span>'s score at a fixed threshold of ${esc(det.threshold === null ? 'its own sliding τ' : fmtMetric(det.threshold, 3))} (${det.source === 'fit' ? 'chosen on the validation faults at fit' : 'set by anomaly.detector'})`
      : 'TAGAE\'s snapshot score (errors relative to each service\'s warm-up baseline) against the threshold τ (a sliding quantile of recent scores)';
  return section(
    'timeline',
    'Score timeline',
    figure(svgHtml, `${esc(fmtInt(s.ts.length))} snapshots, <span data-metric="timeline.alerts" data-value="${alerts}">${esc(fmtInt(alerts))}</span> alerting, <span data-metric="timeline.windows" data-value="${windows.length}">${esc(fmtInt(windows.length))}</span> labelled fault windows (shaded). Hover for times.`, 'full'),
    `Alerts follow ${alertedBy}. A dot is an alert; an alert outside every shaded window is a false alarm.`,
  );
}

function detectors(ev: AnomalyEvaluation): [string, string, AnomalyDetectorQuality][] {
  return DETECTORS.flatMap(([key, label]) => {
    const q = ev[key];
    return q ? [[key, label, q] as [string, string, AnomalyDetectorQuality]] : [];
  });
}

function detectionSection(ev: AnomalyEvaluation): string {
  const rows = detectors(ev).map(([key, label, q]) => [
    `${esc(label)}${key === ev.recommended_method.detection ? '<span class="tag">recommended</span>' : ''}`,
    tagged(`detection.${key}.recall`, q.recall, fmtPercent(q.recall, 0)),
    esc(fmtPercent(q.chance_recall, 0)),
    esc(fmtPercent(q.precision, 0)),
    tagged(`detection.${key}.false_alarms`, q.false_alarms, fmtInt(q.false_alarms)),
    esc(q.false_alarms_per_day.toFixed(1)),
    tagged(`detection.${key}.auroc`, q.auroc, fmtMetric(q.auroc, 3)),
    esc(Object.entries(q.by_kind).map(([k, v]) => `${k} ${v.detected}/${v.incidents}${v.mean_delay_seconds !== null ? ` @${fmtSeconds(v.mean_delay_seconds)}` : ''}`).join(', ') || MISSING),
  ]);
  const tbl = table({
    id: 'detection-table',
    caption: `${ev.incidents} labelled faults over ${ev.days.toFixed(2)} days; an alert counts inside a fault's window${ev.grace_seconds ? ` + ${ev.grace_seconds} s` : ''}`,
    columns: [{ label: 'Detector' }, { label: 'Recall', numeric: true }, { label: 'Chance recall', numeric: true }, { label: 'Precision', numeric: true }, { label: 'False alarms', numeric: true }, { label: 'Per day', numeric: true }, { label: 'AUROC', numeric: true }, { label: 'Detected per kind (mean delay)' }],
    rows,
    rowAttrs: (i) => `data-detector="${esc(detectors(ev)[i]![0])}"${detectors(ev)[i]![0] === ev.recommended_method.detection ? ' class="best"' : ''}`,
  });
  return section('detection', 'Detection vs baselines', tbl + operatingPointsTable(ev), 'Chance recall: the same alerts shifted in time — what alerting this often catches by luck. The static thresholds page per service, so each service\'s episode outside a fault is a false alarm.');
}

/** Each detector at a fixed threshold chosen on the earlier half of the faults, judged on the later half. */
function operatingPointsTable(ev: AnomalyEvaluation): string {
  const ops = detectors(ev).flatMap(([key, label]) => (ev.operating_points[key] ? [[key, label, ev.operating_points[key]!] as const] : []));
  if (ops.length === 0) return '';
  const first = ops[0]![2];
  return table({
    id: 'operating-points-table',
    caption: `Fixed thresholds chosen on the ${first.validation.incidents} earlier faults (highest reaching recall 0.9 there, else the largest margin over chance), judged on the ${first.test.incidents} later ones`,
    columns: [{ label: 'Detector' }, { label: 'Threshold', numeric: true }, { label: 'Validation recall / chance', numeric: true }, { label: 'Validation false alarms', numeric: true }, { label: 'Test recall / chance', numeric: true }, { label: 'Test false alarms', numeric: true }, { label: 'Test AUROC', numeric: true }],
    rows: ops.map(([key, label, op]) => [
      `${esc(label)}${key === ev.recommended_detector?.method ? '<span class="tag">recommended</span>' : ''}`,
      esc(fmtMetric(op.threshold, 3)),
      `${esc(fmtPercent(op.validation.recall, 0))} / ${esc(fmtPercent(op.validation.chance_recall, 0))}`,
      esc(fmtInt(op.validation.false_alarms)),
      `${tagged(`operating_point.${key}.test_recall`, op.test.recall, fmtPercent(op.test.recall, 0))} / ${esc(fmtPercent(op.test.chance_recall, 0))}`,
      esc(fmtInt(op.test.false_alarms)),
      esc(fmtMetric(op.test.auroc, 3)),
    ]),
  });
}

function falseAlarmsSection(ev: AnomalyEvaluation): string {
  const colour: Record<string, string> = { tagae: COLORS.model, static: COLORS.baseline, flat: COLORS.teacher, zscore: COLORS.sample };
  const svgHtml = barChart({
    id: 'false-alarms-chart',
    title: 'False alarms per day',
    desc: detectors(ev).map(([, label, q]) => `${label} ${q.false_alarms_per_day.toFixed(1)}`).join(', '),
    bars: detectors(ev).map(([key, label, q]) => ({ key, label, value: q.false_alarms_per_day, color: colour[key] ?? COLORS.muted, note: `(${q.false_alarms} episodes)` })),
    xLabel: 'false-alarm episodes per day of scored time',
    format: (v) => v.toFixed(1),
  });
  return section('false-alarms', 'False alarms per day', figure(svgHtml, undefined, 'medium'), 'Alert episodes (runs of alerting snapshots) that start outside every labelled fault window, per day of scored time.');
}

function rootCauseSection(ev: AnomalyEvaluation): string | null {
  const rc = ev.root_cause;
  if (!rc) {
    return section('root-cause', 'Root cause', `<p class="summary">No labelled fault names its root-cause service, so AC@k cannot be measured: set ${code('anomaly.labels.root_cause_column')}.</p>`);
  }
  const methods = Object.entries(rc.methods);
  const tbl = table({
    id: 'root-cause-table',
    caption: `Root-cause accuracy over ${rc.incidents} labelled faults (AC@k: the injected service among the first k)`,
    columns: [{ label: 'Method' }, { label: 'AC@1 (95% interval)', numeric: true }, { label: 'AC@3 (95% interval)', numeric: true }, { label: 'Avg@5', numeric: true }, { label: 'AC@1 per kind' }],
    rows: methods.map(([m, q]) => [
      `${esc(m)}${m === rc.recommended_method ? '<span class="tag">recommended</span>' : ''}`,
      tagged(`root_cause.${m}.ac_at_1`, q.ac_at_1, `${fmtMetric(q.ac_at_1, 2)}${interval(q.ac_at_1_interval)}`),
      tagged(`root_cause.${m}.ac_at_3`, q.ac_at_3, `${fmtMetric(q.ac_at_3, 2)}${interval(q.ac_at_3_interval)}`),
      tagged(`root_cause.${m}.avg_at_5`, q.avg_at_5, fmtMetric(q.avg_at_5, 2)),
      esc(Object.entries(q.by_kind).map(([k, v]) => `${k} ${v.ac_at_1.toFixed(2)}`).join(', ') || MISSING),
    ]),
    rowAttrs: (i) => `data-method="${esc(methods[i]![0])}"${methods[i]![0] === rc.recommended_method ? ' class="best"' : ''}`,
  });
  const shown = [...new Set([rc.recommended_method, 'tagae_graph', 'zscore', 'static'].filter((m): m is string => m !== null && m in rc.methods))];
  const ranked = (top: string[] | undefined, truth: string): string =>
    top ? top.slice(0, 3).map((s, i) => (s === truth ? `<strong>${i + 1}. ${esc(s)} ✓</strong>` : `${i + 1}. ${esc(s)}`)).join('<br>') : MISSING;
  const per = table({
    id: 'root-cause-faults',
    caption: 'Each fault: the first three services per method (✓ the labelled root cause)',
    columns: [{ label: 'Fault start' }, { label: 'Kind' }, { label: 'Root cause' }, ...shown.map((m) => ({ label: m }))],
    rows: rc.rankings.map((f) => [esc(fmtTime(new Date(f.start * 1000).toISOString())), esc(f.kind), code(f.root_cause), ...shown.map((m) => ranked(f.top[m], f.root_cause))]),
    className: 'compact',
  });
  const sel = rc.selection;
  const chosen = sel && rc.recommended_method ? sel.test[rc.recommended_method] : undefined;
  const selection = sel
    ? `<p class="summary">The recommendation is chosen on the ${sel.validation_incidents} earliest faults (validation)${chosen ? `; on the ${sel.test_incidents} later ones (test) ${esc(rc.recommended_method!)} has AC@1 ${fmtMetric(chosen.ac_at_1, 2)}${interval(chosen.ac_at_1_interval)}, AC@3 ${fmtMetric(chosen.ac_at_3, 2)}${interval(chosen.ac_at_3_interval)}` : ''}. Differences inside the intervals are not differences.</p>`
    : '';
  return section('root-cause', 'Root cause', tbl + selection + per, 'Each method ranks services by its evidence summed over the fault\'s window; <code>*_graph</code> methods propagate it through the call graph, preferring the service whose own signals explain its neighbours\'; <code>signals</code> gives each signal family (CPU, memory, server latency, the calls a service receives, …) one vote, shared among the services that deviate in it.');
}

function interval(i: [number, number] | undefined): string {
  return i ? ` <span class="muted">[${i[0].toFixed(2)}, ${i[1].toFixed(2)}]</span>` : '';
}

function serviceGraphSection(d: AnomalyReportData): string {
  const g = d.record.alert_graph;
  if (!g) return section('service-graph', 'Service graph around an alert', '<p class="summary">No snapshot alerted in the scored period.</p>');
  const svgHtml = serviceGraph({
    id: 'alert-graph',
    title: `Calls around ${g.service} at the strongest alert`,
    desc: `${g.service} and ${g.nodes.length - 1} services it calls or is called by, ${g.edges.length} calls, at ${g.ts}.`,
    nodes: g.nodes,
    edges: g.edges,
  });
  const caption = `The strongest alert, <span data-metric="alert_graph.ts" data-value="${esc(g.ts)}">${esc(fmtTime(g.ts))}</span> (score ${esc(g.score.toPrecision(4))}${g.threshold !== null ? ` against τ ${esc(g.threshold.toPrecision(4))}` : ''}), ranked <strong data-metric="alert_graph.service" data-value="${esc(g.service)}">${esc(g.service)}</strong> first as root cause. Arrows point from caller to callee; width by calls per second; #k is a service's place in the root-cause ranking.`;
  return section('service-graph', 'Service graph around an alert', figure(svgHtml, caption, 'medium'));
}

function detailsSection(d: AnomalyReportData): string {
  const m = d.manifest;
  const fit = obj(m.fit);
  const timings = obj(m.timings);
  const features = Array.isArray(m.feature_columns) ? m.feature_columns.map(String) : [];
  const edgeFeatures = Array.isArray(m.edge_feature_columns) ? m.edge_feature_columns.map(String) : [];
  const tbl = table({
    caption: 'Stage timings',
    columns: [{ label: 'Stage' }, { label: 'Time', numeric: true }],
    rows: Object.entries(timings).filter(([, v]) => typeof v === 'number').map(([k, v]) => [esc(k.replace(/_seconds$/, '')), esc(fmtSeconds(v as number))]),
    className: 'compact',
  });
  const parts = [
    facts([
      ['Train snapshots', typeof fit.train_snapshots === 'number' ? esc(fmtInt(fit.train_snapshots)) : null],
      ['Warm-up snapshots', typeof fit.warmup_snapshots === 'number' ? esc(fmtInt(fit.warmup_snapshots)) : null],
      ['New services scored', esc(fmtInt(d.record.new_services))],
    ]),
    `<h3>Node features (${features.length})</h3>${chips(features)}`,
    `<h3>Edge features (${edgeFeatures.length})</h3>${chips(edgeFeatures)}`,
    tbl,
  ];
  const config = `<details class="config"><summary>Resolved anomaly config recorded in the manifest</summary><pre>${esc(JSON.stringify(m.config, null, 2) ?? 'null')}</pre></details>`;
  return section('details', 'Run details', parts.join('') + config);
}

function obj(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
