/**
 * `renderReport(runDir)`: a train or distill run folder → one self-contained HTML page (inline CSS and
 * SVG, no script or URL), for reading offline, attaching to a CI job or printing. An anomaly run gets its
 * own sections (anomaly_report.ts) in the same page.
 *
 * Sections (each a `<section id=…>`; the header is `<header id="header">`):
 *
 * | id            | train | distill | shows                                                          |
 * |---------------|-------|---------|----------------------------------------------------------------|
 * | `headline`    | ✓     | ✓       | test metrics; lift over the no-graph baseline / ratio to teacher |
 * | `test-anchors` | ✓     |         | pooled test metric with its 95% interval, the lift judged by its interval, each test anchor |
 * | `ranking-baselines` | ranking | | the model vs popularity, repeat and co-occurrence on val and test |
 * | `training`    | ✓     | ✓       | loss and validation metrics per epoch, best epoch marked        |
 * | `curves`      | binary | binary | ROC and PR (model vs baseline on the same axes)                 |
 * | `calibration` | binary | binary | reliability diagram, examples per bin, ECE                      |
 * | `ablations`   |       | ✓       | features / embedding / RTI only vs distilled vs teacher         |
 * | `size`        |       | ✓       | student vs teacher parameters, bytes, latency                   |
 * | `freshness`   |       | ✓       | embedding snapshots, coverage, age of exported embeddings       |
 * | `throughput`  | ✓     |         | seconds per epoch in sample / gather / step, seeds/s            |
 * | `data`        | ✓     | ✓       | examples per split, anchor times                                |
 * | `details`     | ✓     | ✓       | stage timings, baseline features, resolved config              |
 */
import { VERSION } from '../core/version.js';
import { readManifest } from '../artifacts/run_store.js';
import { loadAnomalyReportData } from './anomaly_model.js';
import { renderAnomalyReport } from './anomaly_report.js';
import { loadReportData, type LoadOptions, type ReportData } from './model.js';
import { page } from './page.js';
import { calibrationSection, rocPrSection } from './sections/curves.js';
import { dataSection, detailsSection } from './sections/data.js';
import { ablationsSection, freshnessSection, sizeSection } from './sections/distill.js';
import { headerSection, type RenderContext } from './sections/header.js';
import { headlineSection, rankingBaselinesSection } from './sections/headline.js';
import { throughputSection } from './sections/throughput.js';
import { trainingSection } from './sections/training.js';
import { searchSection } from './sections/search.js';
import { modelChoiceSection } from './sections/model_choice.js';
import { testAnchorsSection } from './sections/test_anchors.js';

export { loadReportData, type ReportData } from './model.js';

export interface RenderOptions extends LoadOptions {
  /** the time the report is made at (embedding ages are measured against it); default: now */
  now?: Date;
}

export interface RenderedReport {
  html: string;
  runId: string;
  kind: 'train' | 'distill' | 'anomaly';
  /** ids of the sections in page order, header first */
  sections: string[];
}

export function renderReport(runDir: string, opts: RenderOptions = {}): RenderedReport {
  const manifest = readManifest(runDir);
  if ((manifest.kind as string) === 'anomaly') return renderAnomalyReport(loadAnomalyReportData(runDir, manifest), opts.now ?? new Date(), VERSION);
  return renderReportData(loadReportData(runDir, opts), opts.now ?? new Date());
}

/** Renders already-loaded data (tests and other commands can build `ReportData` themselves). */
export function renderReportData(data: ReportData, now: Date = new Date()): RenderedReport {
  const ctx: RenderContext = { data, now, version: VERSION };
  const sections: { id: string; title: string; html: string }[] = [];
  const add = (id: string, title: string, html: string | null): void => {
    if (html !== null) sections.push({ id, title, html });
  };
  add('headline', 'Headline', headlineSection(data));
  if (data.kind === 'train') add('test-anchors', 'Test anchors and intervals', testAnchorsSection(data));
  if (data.kind === 'train') add('model-choice', 'Model choice', modelChoiceSection(data));
  if (data.kind === 'train') add('search', 'Variant search', searchSection(data));
  add('ranking-baselines', 'Ranking baselines', rankingBaselinesSection(data));
  add('training', 'Training curves', trainingSection(data));
  add('curves', 'ROC & PR', rocPrSection(data));
  add('calibration', 'Calibration', calibrationSection(data));
  if (data.kind === 'distill') {
    add('ablations', 'Ablations', ablationsSection(data));
    add('size', 'Size & latency', sizeSection(data));
    add('freshness', 'Embedding freshness', freshnessSection(data, now));
  } else {
    add('throughput', 'Throughput', throughputSection(data));
  }
  add('data', 'Counts & anchors', dataSection(data));
  add('details', 'Run details', detailsSection(data));

  const h = data.header;
  const html = page({
    title: `${h.task} ${data.kind} report · ${h.id}`,
    description: `gnnctl ${data.kind} run ${h.id} (task ${h.task}, ${h.status})`,
    header: headerSection(ctx, sections.map(({ id, title }) => ({ id, title }))),
    sections: sections.map((s) => s.html),
  });
  return { html, runId: h.id, kind: data.kind, sections: ['header', ...sections.map((s) => s.id)] };
}
