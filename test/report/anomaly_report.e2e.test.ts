/**
 * `gnnctl report <anomaly run>` end to end through the real binary: fit and score a tiny generated mesh
 * (with root-cause labels), then render its report and check that every section shows the run's own
 * numbers — those `anomaly score --json` printed and those in the Parquet scores.
 */
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateMesh } from '../../src/datasets/mesh/generate.js';
import { setQuiet } from '../../src/core/log.js';
import { gnnctlJson, type JsonRun } from '../anomaly/gnnctl_json.js';
import { duckRows } from '../helpers/graph.js';
import { checkWellFormed, elementById, findElements, textOf } from './wellformed.js';

const root = mkdtempSync(join(tmpdir(), 'gnnctl-anomaly-report-'));
const artifacts = join(root, 'artifacts');
let runId: string;
let score: Record<string, any>;
let report: Record<string, unknown>;
let html: string;

const gnnctl = (args: string[]): JsonRun => gnnctlJson(args, root);
const query = duckRows;

/** The `data-value` of the element tagged `data-metric="tag"`. */
function value(tag: string): string {
  const el = findElements(html, 'span', { 'data-metric': tag })[0] ?? findElements(html, 'strong', { 'data-metric': tag })[0];
  expect(el, tag).toBeDefined();
  return el!.attrs['data-value']!;
}

beforeAll(() => {
  setQuiet(true);
  const mesh = generateMesh({ out: join(root, 'mesh'), services: 12, hours: 12, step: 600, seed: 5 });
  const config = mesh.files.config;
  writeFileSync(config, readFileSync(config, 'utf8').replace('labels: { path: incidents.csv }', 'labels: { path: incidents.csv, root_cause_column: root_service }'));
  appendFileSync(config, '  warmup_snapshots: 8\n  window: 3\n  epochs: 2\n  threshold_window: 50\n  hidden: 8\n  embedding_dim: 8\n');
  const fit = gnnctl(['anomaly', 'fit', '-c', config, '--artifacts', artifacts]);
  expect(fit.status, fit.stderr).toBe(0);
  runId = String(fit.json.run_id);
  const before = gnnctl(['report', runId, '--artifacts', artifacts]);
  expect(before.status).toBe(5);
  expect(String(before.json.hint)).toContain('gnnctl anomaly score');
  const s = gnnctl(['anomaly', 'score', '-c', config, '--artifacts', artifacts, '--run', runId]);
  expect(s.status, s.stderr).toBe(0);
  score = s.json;
  const r = gnnctl(['report', runId, '--artifacts', artifacts]);
  expect(r.status, r.stderr).toBe(0);
  report = r.json;
  html = readFileSync(String(report.path), 'utf8');
}, 240_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('gnnctl report <anomaly run>', () => {
  it('writes one self-contained, well-formed page with every anomaly section', () => {
    expect(report).toMatchObject({ run_id: runId, kind: 'anomaly', path: join(artifacts, 'runs', runId, 'report.html') });
    expect(existsSync(String(report.path))).toBe(true);
    expect(checkWellFormed(html)).toEqual([]);
    expect(html).not.toMatch(/https?:\/\/|<script/i);
    const ids = findElements(html, 'section').map((e) => e.attrs.id);
    expect(ids).toEqual(['headline', 'timeline', 'detection', 'false-alarms', 'root-cause', 'service-graph', 'details']);
  });

  it('draws the score timeline from the Parquet scores: every snapshot, every alert, every labelled fault window', async () => {
    const rows = await query(`SELECT score, alert FROM '${join(artifacts, 'runs', runId, 'scores.parquet')}' ORDER BY ts`);
    const alerts = rows.filter((r) => r.alert).length;
    expect(rows).toHaveLength(score.snapshots);
    expect(alerts).toBe(score.alerts);
    const chart = elementById(html, 'score-timeline')!;
    expect(findElements(chart, 'path', { 'data-series': 'score' })[0]!.attrs['data-n']).toBe(String(rows.length));
    expect(findElements(chart, 'g', { class: 'alerts' })[0]!.attrs['data-n']).toBe(String(alerts));
    expect(findElements(chart, 'circle').length).toBe(alerts + 1); // + the legend's dot
    const incidents = JSON.parse(readFileSync(join(artifacts, 'runs', runId, 'score_report.json'), 'utf8')).incidents;
    expect(incidents.length).toBe(score.evaluation.incidents);
    expect(findElements(chart, 'rect', { class: 'fault-window' }).length).toBe(incidents.length);
    expect(value('timeline.windows')).toBe(String(incidents.length));
  });

  it('names the detector the alerts follow, as `anomaly score` chose it', () => {
    const record = JSON.parse(readFileSync(join(artifacts, 'runs', runId, 'score_report.json'), 'utf8'));
    expect(record.detector).toEqual(score.detector);
    const intro = textOf(elementById(html, 'timeline')!);
    if (score.detector.source === 'default') {
      expect(intro).toContain('sliding quantile of recent scores');
    } else {
      expect(value('timeline.detector')).toBe(score.detector.method);
      expect(intro).toContain(score.detector.source === 'fit' ? 'chosen on the validation faults at fit' : 'set by anomaly.detector');
    }
  });

  it('shows detection and false alarms per day of every detector, as `anomaly score` measured them', () => {
    const ev = score.evaluation;
    expect(Number(value('tagae.recall'))).toBe(ev.tagae.recall);
    expect(Number(value('tagae.false_alarms_per_day'))).toBe(ev.tagae.false_alarms_per_day);
    expect(value('recommended.detection')).toBe(ev.recommended_method.detection);
    for (const d of ['tagae', 'static', 'flat', 'zscore', 'rolling_family', 'tagae_rolling', 'combined']) {
      expect(Number(value(`detection.${d}.false_alarms`)), d).toBe(ev[d].false_alarms);
      expect(Number(value(`detection.${d}.recall`)), d).toBe(ev[d].recall);
    }
    // every detector's validation-chosen threshold, judged on the later faults
    for (const [d, op] of Object.entries(ev.operating_points) as [string, { test: { recall: number | null } }][]) {
      expect(Number(value(`operating_point.${d}.test_recall`)), d).toBe(op.test.recall);
    }
    const bars = findElements(elementById(html, 'false-alarms-chart')!, 'rect', { class: 'bar' });
    expect(Object.fromEntries(bars.map((b) => [b.attrs['data-bar'], Number(b.attrs['data-value'])]))).toEqual({
      tagae: ev.tagae.false_alarms_per_day,
      static: ev.static.false_alarms_per_day,
      flat: ev.flat.false_alarms_per_day,
      zscore: ev.zscore.false_alarms_per_day,
      rolling_family: ev.rolling_family.false_alarms_per_day,
      tagae_rolling: ev.tagae_rolling.false_alarms_per_day,
      combined: ev.combined.false_alarms_per_day,
    });
  });

  it('puts the root-cause AC@1 / AC@3 of every method beside the baselines, with the recommended one', () => {
    const rc = score.evaluation.root_cause;
    expect(rc).not.toBeNull();
    expect(Object.keys(rc.methods)).toEqual(expect.arrayContaining(['tagae', 'tagae_graph', 'zscore', 'static', 'flat']));
    for (const [m, q] of Object.entries(rc.methods) as [string, { ac_at_1: number; ac_at_3: number }][]) {
      expect(Number(value(`root_cause.${m}.ac_at_1`)), m).toBe(q.ac_at_1);
      expect(Number(value(`root_cause.${m}.ac_at_3`)), m).toBe(q.ac_at_3);
    }
    expect(value('recommended.root_cause')).toBe(score.evaluation.recommended_method.root_cause);
    const best = findElements(elementById(html, 'root-cause-table')!, 'tr', { class: 'best' });
    expect(best.map((r) => r.attrs['data-method'])).toEqual([rc.recommended_method]);
    // one row per labelled fault, naming its root cause
    const faults = elementById(html, 'root-cause-faults')!;
    expect(findElements(faults, 'tr').length).toBe(rc.incidents + 1);
    for (const f of rc.rankings) expect(faults).toContain(`<code>${f.root_cause}</code>`);
  });

  it('draws the call graph around the strongest alert, centred on its top root-cause service', async () => {
    const [top] = await query(`SELECT epoch(ts) AS t, root_causes FROM '${join(artifacts, 'runs', runId, 'scores.parquet')}' WHERE alert ORDER BY score DESC LIMIT 1`);
    const centre = (top!.root_causes as string[])[0]!;
    expect(value('alert_graph.service')).toBe(centre);
    expect(Date.parse(value('alert_graph.ts')) / 1000).toBe(Number(top!.t));
    const g = elementById(html, 'alert-graph')!;
    const services = findElements(g, 'g', { class: 'service' }).map((e) => e.attrs['data-service']);
    expect(services[0]).toBe(centre);
    expect(services.length).toBeGreaterThan(1);
    // every drawn call touches a drawn service, and at least one touches the centre
    const calls = findElements(g, 'line', { class: 'call' }).map((e) => [e.attrs['data-source']!, e.attrs['data-destination']!]);
    expect(calls.length).toBeGreaterThan(0);
    for (const [a, b] of calls) expect(services).toEqual(expect.arrayContaining([a, b]));
    expect(calls.some(([a, b]) => a === centre || b === centre)).toBe(true);
  });
});
