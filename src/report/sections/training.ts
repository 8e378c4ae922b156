/**
 * Training curves: loss and validation metrics per epoch, the best epoch (the checkpoint kept) marked,
 * and the per-epoch numbers in a table.
 */
import { objectiveFor } from '../../task/objective/objective.js';
import { esc, fmtMetric } from '../format.js';
import { figure, formatBySpec, grid, section, table } from '../html.js';
import { COLORS } from '../charts/frame.js';
import { lineChart } from '../charts/line.js';
import { mainMetricOf, secondaryMetricOf, type DistillReport, type TrainReport } from '../model.js';

export function trainingSection(d: TrainReport | DistillReport): string {
  const epochs = d.metrics.epochs;
  const best = d.metrics.best_epoch;
  const main = mainMetricOf(d.taskKind);
  const second = secondaryMetricOf(d.taskKind);
  const marker = { x: best, label: `best epoch (${best})` };
  const bestRec = epochs.find((e) => e.epoch === best);
  const loss = lineChart({
    id: 'chart-loss',
    title: 'Training loss per epoch',
    desc: `Mean training loss over ${epochs.length} epochs, from ${fmtMetric(epochs[0]?.loss)} to ${fmtMetric(epochs[epochs.length - 1]?.loss)}; best epoch ${best} is marked.`,
    xLabel: 'epoch',
    yLabel: objectiveFor(d.taskKind).probabilistic ? 'loss (binary cross-entropy)' : 'loss',
    integerX: true,
    series: [{ key: 'loss', name: 'training loss', points: epochs.map((e) => [e.epoch, e.loss]), color: COLORS.model, markers: true, tooltip: (x, y) => `epoch ${x}: loss ${fmtMetric(y)}` }],
    marker,
  });
  const val = lineChart({
    id: 'chart-val',
    title: `Validation ${main.label} and ${second.label} per epoch`,
    desc: `Validation ${main.label} per epoch${bestRec ? `, ${fmtMetric(bestRec.val[main.key])} at the best epoch ${best}` : ''}; ${second.label} drawn dashed.`,
    xLabel: 'epoch',
    yLabel: `validation ${main.label} / ${second.label}`,
    integerX: true,
    series: [
      { key: `val.${main.key}`, name: `val ${main.label}`, points: epochs.map((e) => [e.epoch, e.val[main.key] ?? null]), color: COLORS.model, markers: true, tooltip: (x, y) => `epoch ${x}: val ${main.label} ${fmtMetric(y)}` },
      { key: `val.${second.key}`, name: `val ${second.label}`, points: epochs.map((e) => [e.epoch, e.val[second.key] ?? null]), color: COLORS.baseline, dash: '6 4', markers: true, tooltip: (x, y) => `epoch ${x}: val ${second.label} ${fmtMetric(y)}` },
    ],
    marker,
  });
  const smoothedOf = (e: (typeof epochs)[number]): number | undefined => ('val_smoothed' in e ? e.val_smoothed : undefined);
  const smoothed = epochs.some((e) => smoothedOf(e) !== undefined);
  const tbl = table({
    id: 'epochs-table',
    caption: 'Per-epoch values',
    columns: [
      { label: 'Epoch' },
      { label: 'Loss', numeric: true },
      { label: `Val ${main.label}`, numeric: true },
      ...(smoothed ? [{ label: `Val ${main.label}, moving average`, numeric: true }] : []),
      { label: `Val ${second.label}`, numeric: true },
    ],
    rows: epochs.map((e) => [
      `${esc(e.epoch)}${e.epoch === best ? ' <span class="tag">best</span>' : ''}`,
      esc(fmtMetric(e.loss)),
      esc(formatBySpec(main, e.val[main.key])),
      ...(smoothed ? [esc(fmtMetric(smoothedOf(e)))] : []),
      esc(formatBySpec(second, e.val[second.key])),
    ]),
    rowAttrs: (i) => `data-epoch="${epochs[i]!.epoch}"${epochs[i]!.epoch === best ? ' class="best"' : ''}`,
    className: 'compact',
  });
  const stopped = epochs.length > 0 && best < epochs[epochs.length - 1]!.epoch ? ` Training went on for ${epochs[epochs.length - 1]!.epoch - best} more epoch(s) without improving, then stopped.` : '';
  const v = d.kind === 'train' ? d.metrics.validation : undefined;
  const how = v && v.smoothing > 1 ? ` averaged over ${esc(v.smoothing)} epochs centered on each (the validation set is small: ${esc(v.reason)})` : '';
  const where = v ? ` Validation: ${esc(v.examples)} examples at ${esc(v.anchors.length)} anchor(s).` : '';
  const seeds = d.kind === 'train' && d.metrics.seeds ? ` Seeds: model <span data-metric="seeds.model">${esc(d.metrics.seeds.model)}</span>, evaluation sampling ${esc(d.metrics.seeds.evaluation)}.` : '';
  const intro = `The model kept is the checkpoint of the best validation ${esc(main.label)}${how}: epoch <strong>${esc(best)}</strong> of ${epochs.length}.${esc(stopped)}${where}${seeds}`;
  return section('training', 'Training curves', grid([figure(loss, 'Training loss; the dashed green line marks the kept checkpoint.'), figure(val, `Validation ${esc(main.label)} (solid) and ${esc(second.label)} (dashed).`)]) + tbl, intro);
}
