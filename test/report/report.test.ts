import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reportCommand } from '../../src/cli/commands/report.js';
import { ArtifactError } from '../../src/core/errors.js';
import { countPathPoints } from '../../src/report/charts/line.js';
import { fmtAge, fmtBytes, fmtPercent, fmtSigned } from '../../src/report/format.js';
import { renderReport } from '../../src/report/index.js';
import { CONFIG, retailFixture } from '../helpers/fixtures.js';
import {
  DISTILL_ID,
  distillMetrics,
  RUNNING_ID,
  runsFixture,
  TRAIN_BINARY_ID,
  TRAIN_REGRESSION_ID,
  trainBinaryMetrics,
  trainRegressionMetrics,
  writeDistillRun,
  writeRunningRun,
  writeTrainBinaryRun,
  writeTrainRegressionRun,
  type RunsFixture,
} from './runs.js';
import { checkWellFormed, elementById, findElements, textOf } from './wellformed.js';

const NOW = new Date('2026-11-22T12:00:00Z');

/** The `d` of the series path `key` inside the chart `chartId`. */
function seriesPath(html: string, chartId: string, key: string): string {
  const chart = elementById(html, chartId);
  expect(chart, `chart #${chartId}`).not.toBeNull();
  const paths = findElements(chart!, 'path', { 'data-series': key });
  expect(paths, `series ${key} in #${chartId}`).toHaveLength(1);
  return paths[0]!.attrs.d!;
}

/** Text of the element tagged `data-metric="tag"`. */
function metricText(html: string, tag: string): string {
  const m = new RegExp(`<(\\w+)[^>]*data-metric="${tag.replace(/\./g, '\\.')}"[^>]*>([\\s\\S]*?)</\\1>`).exec(html);
  expect(m, `data-metric="${tag}"`).not.toBeNull();
  return textOf(m![2]!).trim();
}

/** The markup of the table row `data-epoch="epoch"` inside the table `tableId`. */
function findElementsRow(html: string, tableId: string, epoch: number): string {
  const table = elementById(html, tableId)!;
  const m = new RegExp(`<tr data-epoch="${epoch}"[^>]*>([\\s\\S]*?)</tr>`).exec(table);
  expect(m, `row ${epoch} of #${tableId}`).not.toBeNull();
  return m![1]!;
}

function sectionIds(html: string): string[] {
  return [...html.matchAll(/<(?:section|header) id="([^"]+)"/g)].map((m) => m[1]!);
}

function expectOffline(html: string): void {
  expect(html).not.toMatch(/https?:\/\//i);
  expect(html).not.toMatch(/<script|<link|<img|<iframe|<object|<embed/i);
  // no attribute loads anything: links only to anchors in the page
  const tags = html.match(/<[a-zA-Z][^>]*>/g) ?? [];
  expect(tags.filter((t) => /\s(?:src|srcset|action|data|poster|xlink:href)=|\shref="(?!#)/i.test(t))).toEqual([]);
  expect(html).not.toMatch(/url\(|@import/i);
}

let fx: RunsFixture;
beforeAll(() => {
  fx = runsFixture();
  writeTrainBinaryRun(fx.artifacts);
  writeTrainRegressionRun(fx.artifacts);
  writeDistillRun(fx.artifacts);
  writeRunningRun(fx.artifacts);
});
afterAll(() => fx.cleanup());

describe('report of a binary train run', () => {
  const m = trainBinaryMetrics();
  let html: string;
  beforeAll(() => {
    const r = renderReport(join(fx.artifacts, 'runs', TRAIN_BINARY_ID), { now: NOW });
    html = r.html;
    expect(r).toMatchObject({ runId: TRAIN_BINARY_ID, kind: 'train' });
    expect(r.sections).toEqual(sectionIds(html));
  });

  it('has every train section, in order, and none of the distill ones', () => {
    expect(sectionIds(html)).toEqual(['header', 'headline', 'training', 'curves', 'calibration', 'throughput', 'data', 'details']);
    // the header's navigation links to each section
    for (const id of sectionIds(html).slice(1)) expect(html).toContain(`href="#${id}"`);
  });

  it('is well-formed, offline and escapes what it reads from the run', () => {
    expect(checkWellFormed(html)).toEqual([]);
    expect(html.startsWith('<!DOCTYPE html>')).toBe(true);
    expectOffline(html);
    expect(html).not.toContain('<img src=x');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
  });

  it('draws every curve with one path command per recorded point', () => {
    expect(countPathPoints(seriesPath(html, 'chart-roc', 'model'))).toBe(m.curves.roc.length);
    expect(countPathPoints(seriesPath(html, 'chart-roc', 'baseline'))).toBe(m.baseline_curves.roc.length);
    expect(countPathPoints(seriesPath(html, 'chart-roc', 'chance'))).toBe(2);
    expect(countPathPoints(seriesPath(html, 'chart-pr', 'model'))).toBe(m.curves.pr.length);
    expect(countPathPoints(seriesPath(html, 'chart-pr', 'baseline'))).toBe(m.baseline_curves.pr.length);
    expect(countPathPoints(seriesPath(html, 'chart-pr', 'positive-rate'))).toBe(2);
    expect(countPathPoints(seriesPath(html, 'chart-loss', 'loss'))).toBe(m.epochs.length);
    expect(countPathPoints(seriesPath(html, 'chart-val', 'val.auroc'))).toBe(m.epochs.length);
    expect(countPathPoints(seriesPath(html, 'chart-val', 'val.ap'))).toBe(m.epochs.length);
    expect(countPathPoints(seriesPath(html, 'chart-calibration', 'calibration'))).toBe(m.curves.calibration.length);
    // data-n agrees with the path
    const roc = findElements(elementById(html, 'chart-roc')!, 'path', { 'data-series': 'model' })[0]!;
    expect(Number(roc.attrs['data-n'])).toBe(m.curves.roc.length);
    // one bar per calibration bin, carrying its count; one stack per epoch
    const bins = findElements(elementById(html, 'chart-calibration')!, 'rect').filter((e) => e.attrs['data-bin'] !== undefined);
    expect(bins.map((b) => Number(b.attrs['data-count']))).toEqual(m.curves.calibration.map((b) => b.count));
    expect(findElements(elementById(html, 'chart-timing')!, 'g', { class: 'stack' })).toHaveLength(m.epochs.length);
  });

  it('marks the best epoch on the curves and in the tables', () => {
    for (const id of ['chart-loss', 'chart-val']) expect(elementById(html, id)).toContain(`best epoch (${m.best_epoch})`);
    expect(findElements(elementById(html, 'epochs-table')!, 'tr', { 'data-epoch': String(m.best_epoch), class: 'best' })).toHaveLength(1);
    expect(metricText(html, 'best_epoch')).toBe(String(m.best_epoch));
  });

  it('shows the numbers of metrics.json', () => {
    expect(metricText(html, 'test.auroc')).toBe(m.test.auroc.toFixed(4));
    expect(metricText(html, 'val.auroc')).toBe(m.val.auroc.toFixed(4));
    expect(metricText(html, 'test.ap')).toBe(m.test.ap.toFixed(4));
    expect(metricText(html, 'baseline.test.auroc')).toBe(m.baseline.test.auroc.toFixed(4));
    for (const k of ['auroc', 'ap', 'accuracy', 'f1'] as const) {
      expect(metricText(html, `table.test.${k}`)).toBe(m.test[k].toFixed(4));
      expect(metricText(html, `table.val.${k}`)).toBe(m.val[k].toFixed(4));
      expect(metricText(html, `table.baseline.test.${k}`)).toBe(m.baseline.test[k].toFixed(4));
    }
    expect(metricText(html, 'table.test.positive_rate')).toBe(fmtPercent(m.test.positive_rate, 2));
    expect(metricText(html, 'table.test.n')).toBe('7,667');
    // the lift is recomputed from the test metrics (metrics.json rounds it to 0.05)
    expect(metricText(html, 'lift')).toBe(fmtSigned(m.test.auroc - m.baseline.test.auroc));
    expect(metricText(html, 'lift')).toBe('+0.0481');
    expect(metricText(html, 'counts.train')).toBe('185,759');
    expect(metricText(html, 'counts.test')).toBe('7,667');
    expect(metricText(html, 'seeds_per_s.mean')).toBe(Math.round(m.epochs.reduce((a, e) => a + e.seeds_per_s!, 0) / m.epochs.length).toLocaleString('en-US'));
    const ece = m.curves.calibration.reduce((a, b) => a + b.count * Math.abs(b.predicted - b.observed), 0) / m.curves.calibration.reduce((a, b) => a + b.count, 0);
    expect(metricText(html, 'ece')).toBe(ece.toFixed(4));
  });

  it('says what the run is and where it came from', () => {
    const header = textOf(elementById(html, 'header')!);
    for (const s of [TRAIN_BINARY_ID, 'fraud', 'complete', 'wasm', '7d337c6ca368', 'b14bf2d563f655b8', '0.1.0', '2026-11-22 03:11:32 UTC', '5\u00a0min 49\u00a0s', 'GraphSAGE', 'PREDICT transactions.fraud = 1']) {
      expect(header).toContain(s);
    }
    const data = textOf(elementById(html, 'data')!);
    expect(data).toContain('2020-09-09 00:00 UTC');
    expect(data).toContain('2020-09-16 00:00 UTC');
    expect(data).toContain('7\u00a0days');
  });

  it('gives every chart an accessible name and description', () => {
    const charts = findElements(html, 'svg');
    expect(charts.length).toBeGreaterThanOrEqual(6);
    for (const c of charts) {
      expect(c.attrs.role).toBe('img');
      const [t, d] = c.attrs['aria-labelledby']!.split(' ');
      expect(html).toMatch(new RegExp(`<title id="${t}">[^<]+</title><desc id="${d}">[^<]+</desc>`));
    }
  });
});

describe('report of a regression train run', () => {
  const m = trainRegressionMetrics();
  let html: string;
  beforeAll(() => {
    html = renderReport(join(fx.artifacts, 'runs', TRAIN_REGRESSION_ID), { now: NOW }).html;
  });

  it('has no ROC, PR or calibration and shows MAE, RMSE and R²', () => {
    expect(sectionIds(html)).toEqual(['header', 'headline', 'training', 'throughput', 'data', 'details']);
    expect(html).not.toContain('chart-roc');
    expect(html).not.toContain('chart-calibration');
    expect(html).not.toMatch(/AUROC/);
    expect(metricText(html, 'test.mae')).toBe(m.test.mae.toFixed(4));
    expect(metricText(html, 'test.rmse')).toBe(m.test.rmse.toFixed(4));
    expect(metricText(html, 'table.test.r2')).toBe(m.test.r2.toFixed(4));
    expect(metricText(html, 'baseline.test.mae')).toBe(m.baseline.test.mae.toFixed(4));
    expect(textOf(elementById(html, 'metrics-table')!)).toContain('R²');
    expect(checkWellFormed(html)).toEqual([]);
    expectOffline(html);
  });

  it('counts a lower MAE as a positive lift and shows the validation MAE per epoch', () => {
    expect(metricText(html, 'lift')).toBe(fmtSigned(m.baseline.test.mae - m.test.mae));
    expect(metricText(html, 'lift')).toBe('+0.1627');
    expect(textOf(elementById(html, 'headline')!)).toContain('error reduction');
    expect(countPathPoints(seriesPath(html, 'chart-val', 'val.mae'))).toBe(m.epochs.length);
    expect(countPathPoints(seriesPath(html, 'chart-val', 'val.rmse'))).toBe(m.epochs.length);
  });

  it('warns that the run was interrupted and lists its train anchors', () => {
    expect(textOf(elementById(html, 'header')!)).toContain('interrupted');
    expect(textOf(elementById(html, 'header')!)).toContain('spend-20261121-000000-0001');
    expect(textOf(elementById(html, 'data')!)).toContain(`${m.anchors.train.length} anchors`);
  });
});

describe('report of a distilled run', () => {
  const m = distillMetrics();
  let html: string;
  beforeAll(() => {
    html = renderReport(join(fx.artifacts, 'runs', DISTILL_ID), { now: NOW }).html;
  });

  it('has every distill section, in order', () => {
    expect(sectionIds(html)).toEqual(['header', 'headline', 'training', 'curves', 'calibration', 'ablations', 'size', 'freshness', 'data', 'details']);
    expect(checkWellFormed(html)).toEqual([]);
    expectOffline(html);
  });

  it('compares the distilled model with its teacher', () => {
    expect(metricText(html, 'test.auroc')).toBe('0.9019');
    expect(metricText(html, 'teacher.test.auroc')).toBe('0.9134');
    expect(metricText(html, 'teacher_ratio')).toBe(fmtPercent(m.teacher_ratio, 1));
    expect(metricText(html, 'table.teacher.test.ap')).toBe('0.5921');
    expect(metricText(html, 'student.parameters')).toBe('5,442');
    expect(metricText(html, 'size.student.bytes')).toBe(fmtBytes(m.student.bytes));
    expect(metricText(html, 'size.student.latency_ms_p50')).toBe('0.408\u00a0ms');
    expect(metricText(html, 'size.student.latency_ms_p99')).toBe('15.9\u00a0ms');
    expect(textOf(elementById(html, 'size-table')!)).toContain('13.8×');
  });

  it('draws one ablation bar per variant with its test AUROC', () => {
    const bars = findElements(elementById(html, 'chart-ablations')!, 'rect', { class: 'bar' });
    expect(bars.map((b) => [b.attrs['data-bar'], Number(b.attrs['data-value'])])).toEqual([
      ['features_only', m.ablations.features_only.test.auroc],
      ['embedding_only', m.ablations.embedding_only.test.auroc],
      ['rti_only', m.ablations.rti_only.test.auroc],
      ['distilled', m.test.auroc],
      ['teacher', m.teacher.test.auroc],
    ]);
    expect(metricText(html, 'ablation.rti_only.test.auroc')).toBe('0.7862');
    expect(countPathPoints(seriesPath(html, 'chart-roc', 'model'))).toBe(200);
    expect(html).not.toMatch(/data-series="baseline"/);
  });

  it('shows embedding snapshots, coverage and the age of the exported embeddings', () => {
    const fresh = elementById(html, 'freshness')!;
    expect(metricText(html, 'embeddings.snapshots')).toBe(String(m.embeddings.snapshots.length));
    expect(metricText(html, 'embeddings.coverage.test')).toBe(fmtPercent(m.embeddings.coverage.test, 1));
    const lane = findElements(fresh, 'g', { 'data-lane': 'snapshots' })[0]!;
    expect(Number(lane.attrs['data-n'])).toBe(m.embeddings.snapshots.length);
    expect(findElements(fresh, 'line', { 'data-line': 'test' })).toHaveLength(1);
    const exportsTable = elementById(html, 'exports-table')!;
    const rows = textOf(exportsTable);
    expect(rows).toContain('online-model');
    expect(rows).not.toContain('other-model');
    // customers: anchored at the end of the data; articles: 21.9 days before it, beyond the 14-day limit
    expect(rows).toContain('2020-09-22 23:54:12 UTC');
    expect(rows).toContain(fmtAge(1600818852 - Date.parse('2020-09-01T00:00:00Z') / 1000));
    expect(exportsTable.match(/badge good/g)).toHaveLength(1);
    expect(rows).toContain('14\u00a0days');
    expect(textOf(fresh)).toContain('12\u00a0hours');
    expect(textOf(fresh)).toContain('1\u00a0hour');
  });

  it('says so when the run has no export', () => {
    const other = runsFixture();
    try {
      const dir = writeDistillRun(other.artifacts, { export: false });
      const h = renderReport(dir, { now: NOW }).html;
      expect(h).not.toContain('exports-table');
      expect(textOf(elementById(h, 'freshness')!)).toContain('No export of this run was found');
    } finally {
      other.cleanup();
    }
  });
});

describe('report of runs with gaps', () => {
  it('breaks a curve at a missing value and shows a dash for it', () => {
    const gaps = runsFixture();
    try {
      const dir = writeTrainBinaryRun(gaps.artifacts);
      const m = trainBinaryMetrics();
      // JSON has no NaN: an AUROC of a one-class validation split arrives as null
      (m.epochs[2]!.val as unknown as Record<string, number | null>).auroc = null;
      writeFileSync(join(dir, 'metrics.json'), JSON.stringify(m));
      const html = renderReport(dir, { now: NOW }).html;
      const d = seriesPath(html, 'chart-val', 'val.auroc');
      expect(countPathPoints(d)).toBe(m.epochs.length - 1);
      expect(d.match(/M/g)).toHaveLength(2);
      expect(textOf(findElementsRow(html, 'epochs-table', 3))).toContain('—');
      expect(checkWellFormed(html)).toEqual([]);
    } finally {
      gaps.cleanup();
    }
  });

  it('leaves out what an older run did not record, saying so', () => {
    const old = runsFixture();
    try {
      const dir = writeTrainBinaryRun(old.artifacts);
      const { curves: _c, baseline_curves: _b, parameters: _p, ...m } = trainBinaryMetrics();
      const epochs = m.epochs.map(({ timing: _t, seeds_per_s: _s, seconds: _x, ...e }) => e);
      writeFileSync(join(dir, 'metrics.json'), JSON.stringify({ ...m, epochs, baseline: null, lift: null }));
      const html = renderReport(dir, { now: NOW }).html;
      expect(sectionIds(html)).toEqual(['header', 'headline', 'training', 'curves', 'calibration', 'throughput', 'data', 'details']);
      expect(textOf(elementById(html, 'curves')!)).toContain('did not record test curves');
      expect(textOf(elementById(html, 'throughput')!)).toContain('did not record per-epoch timings');
      expect(textOf(elementById(html, 'headline')!)).toContain('No no-graph baseline was fitted');
      expect(metricText(html, 'lift')).toBe('—');
      expect(checkWellFormed(html)).toEqual([]);
    } finally {
      old.cleanup();
    }
  });
});

describe('gnnctl report', () => {
  it('writes <run>/report.html atomically and returns its path, id, kind and size', async () => {
    const out = await reportCommand({ run: TRAIN_BINARY_ID, artifacts: fx.artifacts });
    const path = join(fx.artifacts, 'runs', TRAIN_BINARY_ID, 'report.html');
    expect(out.result).toEqual({ path, run_id: TRAIN_BINARY_ID, kind: 'train', bytes: statSync(path).size });
    expect(readFileSync(path, 'utf8')).toContain(`<section id="headline"`);
    expect(readdirSync(join(fx.artifacts, 'runs', TRAIN_BINARY_ID)).filter((f) => f.startsWith('.tmp-'))).toEqual([]);
    expect(out.text).toContain(path);
  });

  it('resolves latest:<task>, --out relative to cwd and --artifacts relative to cwd', async () => {
    const out = await reportCommand({ run: 'latest:spend', artifacts: 'artifacts', out: 'out/spend.html', cwd: fx.root });
    expect(out.result.run_id).toBe(TRAIN_REGRESSION_ID);
    expect(out.result.path).toBe(join(fx.root, 'out', 'spend.html'));
    expect(existsSync(out.result.path)).toBe(true);
  });

  it('takes the artifacts folder from the config', async () => {
    const cfgFx = retailFixture({ config: `${CONFIG}artifacts: ${fx.artifacts}\n` });
    try {
      const out = await reportCommand({ run: DISTILL_ID, config: cfgFx.config, out: join(cfgFx.dir, 'r.html') });
      expect(out.result).toMatchObject({ run_id: DISTILL_ID, kind: 'distill' });
      expect(readFileSync(out.result.path, 'utf8')).toContain('exports-table');
    } finally {
      cfgFx.cleanup();
    }
  });

  it('fails on an unknown run with a did-you-mean hint', async () => {
    const err = await reportCommand({ run: 'fraud-20261122-031132-f27', artifacts: fx.artifacts }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArtifactError);
    expect((err as ArtifactError).hint).toContain(TRAIN_BINARY_ID);
  });

  it('fails clearly on a run without metrics.json', async () => {
    const err = await reportCommand({ run: RUNNING_ID, artifacts: fx.artifacts }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArtifactError);
    expect((err as ArtifactError).message).toMatch(/no metrics\.json: it is still running/);
    expect(existsSync(join(fx.artifacts, 'runs', RUNNING_ID, 'report.html'))).toBe(false);
  });

  it('says an anomaly run that was never scored needs `gnnctl anomaly score` first, instead of asking for a metrics.json', async () => {
    const id = 'anomaly-20261125-101010-abcd';
    const dir = join(fx.artifacts, 'runs', id);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ id, kind: 'anomaly', task: 'anomaly', status: 'complete', gnnctl: '0.2.0', created_at: '2026-11-25T10:10:10.000Z' }));
    const err = await reportCommand({ run: id, artifacts: fx.artifacts }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArtifactError);
    expect((err as ArtifactError).message).toMatch(/anomaly run .* has not been scored: no score_report\.json/);
    expect((err as ArtifactError).hint).toContain('gnnctl anomaly score');
    expect(existsSync(join(dir, 'report.html'))).toBe(false);
  });

  it('fails clearly on a metrics.json it cannot read', async () => {
    const bad = runsFixture();
    try {
      const dir = writeTrainBinaryRun(bad.artifacts);
      writeFileSync(join(dir, 'metrics.json'), JSON.stringify({ ...trainBinaryMetrics(), epochs: 'many' }));
      const err = await reportCommand({ run: TRAIN_BINARY_ID, artifacts: bad.artifacts }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ArtifactError);
      expect((err as ArtifactError).message).toContain('epochs');
    } finally {
      bad.cleanup();
    }
  });
});
