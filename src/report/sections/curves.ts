/**
 * Test-split curves of binary tasks: ROC and precision–recall (model vs the no-graph baseline on the same
 * axes for train runs, against the chance line / positive rate), and calibration (reliability diagram,
 * per-bin counts, expected calibration error). Regression runs have neither section.
 */
import { objectiveFor } from '../../task/objective/objective.js';
import { esc, fmtInt, fmtMetric, fmtPercent, fmtSigned } from '../format.js';
import { figure, grid, note, section, table } from '../html.js';
import { COLORS } from '../charts/frame.js';
import { lineChart, type Series } from '../charts/line.js';
import { binRange, reliabilityDiagram } from '../charts/calibration.js';
import type { CalibrationBin, DistillReport, TrainReport } from '../model.js';

export function rocPrSection(d: TrainReport | DistillReport): string | null {
  if (!objectiveFor(d.taskKind).probabilistic) return null;
  const curves = d.metrics.curves;
  if (!curves) return section('curves', 'ROC and precision–recall', note('This run did not record test curves (it was made by an older gnnctl).'));
  const baseCurves = d.kind === 'train' ? d.metrics.baseline_curves : undefined;
  const modelName = d.kind === 'train' ? 'graph model' : 'distilled model';
  const testAuroc = d.metrics.test.auroc ?? null;
  const testAp = d.metrics.test.ap ?? null;
  const posRate = d.metrics.test.positive_rate ?? null;
  const baseTest = d.kind === 'train' ? d.metrics.baseline?.test : undefined;

  const rocSeries: Series[] = [{ key: 'model', name: `${modelName} (AUROC ${fmtMetric(testAuroc)})`, points: curves.roc, color: COLORS.model, width: 2.5 }];
  if (baseCurves) rocSeries.push({ key: 'baseline', name: `no-graph baseline (AUROC ${fmtMetric(baseTest?.auroc)})`, points: baseCurves.roc, color: COLORS.baseline, dash: '7 4' });
  const roc = lineChart({
    id: 'chart-roc',
    title: 'ROC curve, test split',
    desc: `True-positive rate against false-positive rate on the test split. ${modelName} AUROC ${fmtMetric(testAuroc)}${baseCurves ? `, no-graph baseline AUROC ${fmtMetric(baseTest?.auroc)}` : ''}; the diagonal is a random ranking.`,
    xLabel: 'false-positive rate',
    yLabel: 'true-positive rate (recall)',
    xDomain: [0, 1],
    yDomain: [0, 1],
    series: rocSeries,
    references: [{ key: 'chance', name: 'chance', points: [[0, 0], [1, 1]] }],
    width: 520,
    height: 520,
  });

  const prSeries: Series[] = [{ key: 'model', name: `${modelName} (AP ${fmtMetric(testAp)})`, points: curves.pr, color: COLORS.model, width: 2.5 }];
  if (baseCurves) prSeries.push({ key: 'baseline', name: `no-graph baseline (AP ${fmtMetric(baseTest?.ap)})`, points: baseCurves.pr, color: COLORS.baseline, dash: '7 4' });
  const pr = lineChart({
    id: 'chart-pr',
    title: 'Precision–recall curve, test split',
    desc: `Precision against recall on the test split. ${modelName} average precision ${fmtMetric(testAp)}${baseCurves ? `, no-graph baseline ${fmtMetric(baseTest?.ap)}` : ''}; the horizontal line is the positive rate ${fmtPercent(posRate, 2)}, what a random ranking achieves.`,
    xLabel: 'recall',
    yLabel: 'precision',
    xDomain: [0, 1],
    yDomain: [0, 1],
    series: prSeries,
    references: posRate !== null ? [{ key: 'positive-rate', name: `positive rate ${fmtPercent(posRate, 2)}`, points: [[0, posRate], [1, posRate]] }] : [],
    width: 520,
    height: 520,
  });
  const intro =
    d.kind === 'train'
      ? `Both models ranked the same ${esc(fmtInt(d.metrics.test.n))} test examples; the further the graph model's curve lies above the baseline's, the more the relational neighbourhood helps.`
      : `The distilled model on ${esc(fmtInt(d.metrics.test.n))} test rows (the teacher's curves are not recorded in distill runs).`;
  return section(
    'curves',
    'ROC and precision–recall',
    grid([
      figure(roc, `ROC. The dotted diagonal is a random ranking.`),
      figure(pr, `Precision–recall. The dotted line is the test positive rate (${esc(fmtPercent(posRate, 2))}); on rare events this curve shows differences ROC hides.`),
    ]),
    intro,
  );
}

/** Expected calibration error: the count-weighted mean gap between predicted and observed rate. */
export function expectedCalibrationError(bins: CalibrationBin[]): number | null {
  const n = bins.reduce((a, b) => a + b.count, 0);
  if (n === 0) return null;
  return bins.reduce((a, b) => a + (b.count / n) * Math.abs(b.predicted - b.observed), 0);
}

export function calibrationSection(d: TrainReport | DistillReport): string | null {
  if (!objectiveFor(d.taskKind).probabilistic) return null;
  const bins = d.metrics.curves?.calibration;
  if (!bins || bins.length === 0) return section('calibration', 'Calibration', note('This run did not record calibration bins.'));
  const ece = expectedCalibrationError(bins);
  const total = bins.reduce((a, b) => a + b.count, 0);
  const chart = reliabilityDiagram({
    id: 'chart-calibration',
    title: 'Reliability diagram, test split',
    desc: `Observed positive rate against mean predicted probability in ${bins.length} non-empty bins of width 0.1; expected calibration error ${fmtMetric(ece)}. Below: test examples per bin on a log scale.`,
    bins,
  });
  const rows = bins.map((b) => [
    esc(binRange(b.bin, 10)),
    esc(fmtInt(b.count)),
    esc(fmtPercent(b.count / total, 1)),
    esc(fmtMetric(b.predicted)),
    esc(fmtMetric(b.observed)),
    esc(fmtSigned(b.observed - b.predicted)),
  ]);
  const tbl = table({
    id: 'calibration-table',
    caption: 'Calibration bins (test split): mean predicted probability, observed positive rate and their gap',
    columns: [{ label: 'Bin' }, { label: 'Examples', numeric: true }, { label: 'Share', numeric: true }, { label: 'Predicted', numeric: true }, { label: 'Observed', numeric: true }, { label: 'Gap', numeric: true }],
    rows,
    rowAttrs: (i) => `data-bin="${bins[i]!.bin}"`,
    className: 'compact',
  });
  const intro = `Points on the diagonal mean a predicted probability of p comes true a fraction p of the time. Expected calibration error (count-weighted mean |observed − predicted|): <strong data-metric="ece">${esc(fmtMetric(ece))}</strong>. Bins with few examples are noisy: read them with the counts below the chart.`;
  return section('calibration', 'Calibration', `<div class="grid grid2 calib">${figure(chart, 'Reliability diagram (top) and examples per bin (bottom, log scale).')}<div>${tbl}</div></div>`, intro);
}
