/**
 * Where a train run's time went: per epoch, seconds spent sampling neighbourhoods, gathering features
 * (both in TypeScript over typed arrays) and in the TF.js step, plus training throughput in seeds/s.
 * The split tells whether to optimize the sampler, the gather or the model (see docs/architecture.md, "Compute").
 */
import { esc, fmtInt, fmtPercent, fmtSeconds } from '../format.js';
import { card, cards, figure, grid, note, section, table } from '../html.js';
import { stackedBarChart } from '../charts/bar.js';
import { COLORS } from '../charts/frame.js';
import { lineChart } from '../charts/line.js';
import type { TrainReport } from '../model.js';

export function throughputSection(d: TrainReport): string {
  const epochs = d.metrics.epochs;
  const timed = epochs.filter((e) => e.timing !== undefined);
  if (timed.length === 0) return section('throughput', 'Throughput and time per epoch', note('This run did not record per-epoch timings (it was made by an older gnnctl).'));
  const best = d.metrics.best_epoch;
  const other = timed.map((e) => Math.max(0, (e.seconds ?? 0) - e.timing!.sample - e.timing!.gather - e.timing!.step));
  const hasOther = other.some((v) => v > 0.01);
  const sum = (f: (i: number) => number): number => timed.reduce((a, _, i) => a + f(i), 0);
  const tSample = sum((i) => timed[i]!.timing!.sample);
  const tGather = sum((i) => timed[i]!.timing!.gather);
  const tStep = sum((i) => timed[i]!.timing!.step);
  const tOther = sum((i) => other[i]!);
  const tAll = tSample + tGather + tStep + tOther;
  const rates = epochs.map((e) => e.seeds_per_s).filter((v): v is number => typeof v === 'number');
  const meanRate = rates.length ? rates.reduce((a, b) => a + b, 0) / rates.length : null;

  const stacks = [
    { key: 'sample', name: 'sample', color: COLORS.sample, values: timed.map((e) => e.timing!.sample) },
    { key: 'gather', name: 'gather', color: COLORS.gather, values: timed.map((e) => e.timing!.gather) },
    { key: 'step', name: 'TF.js step', color: COLORS.step, values: timed.map((e) => e.timing!.step) },
    ...(hasOther ? [{ key: 'other', name: 'other (validation, checkpoint)', color: COLORS.muted, values: other }] : []),
  ];
  const chart = stackedBarChart({
    id: 'chart-timing',
    title: 'Seconds per epoch by phase',
    desc: `Per epoch, seconds spent sampling (${fmtPercent(tSample / tAll, 1)} overall), gathering (${fmtPercent(tGather / tAll, 1)}) and in the TF.js step (${fmtPercent(tStep / tAll, 1)}).`,
    categories: timed.map((e) => ({ key: String(e.epoch), label: `epoch ${e.epoch}` })),
    stacks,
    xLabel: 'epoch',
    yLabel: 'seconds',
    format: (v) => fmtSeconds(v),
    highlight: timed.some((e) => e.epoch === best) ? { key: String(best), label: `best epoch (${best})` } : undefined,
  });
  const rateChart = lineChart({
    id: 'chart-throughput',
    title: 'Training throughput per epoch',
    desc: `Training examples (seed nodes) per second, ${meanRate !== null ? `${fmtInt(meanRate)} on average` : 'not recorded'}.`,
    xLabel: 'epoch',
    yLabel: 'seeds per second',
    integerX: true,
    includeZero: true,
    series: [{ key: 'seeds_per_s', name: 'seeds / s', points: epochs.map((e) => [e.epoch, e.seeds_per_s ?? null]), color: COLORS.sample, markers: true, tooltip: (x, y) => `epoch ${x}: ${fmtInt(y)} seeds/s` }],
    height: 300,
  });
  const items = [
    card({ label: 'Mean throughput', valueHtml: `<span data-metric="seeds_per_s.mean">${esc(fmtInt(meanRate))}</span>`, subHtml: 'seeds per second' }),
    card({ label: 'Sampling', valueHtml: esc(fmtPercent(tSample / tAll, 1)), subHtml: `${esc(fmtSeconds(tSample))} in all` }),
    card({ label: 'Gathering', valueHtml: esc(fmtPercent(tGather / tAll, 1)), subHtml: `${esc(fmtSeconds(tGather))} in all` }),
    card({ label: 'TF.js step', valueHtml: esc(fmtPercent(tStep / tAll, 1)), subHtml: `${esc(fmtSeconds(tStep))} in all` }),
  ];
  const tbl = table({
    id: 'timing-table',
    caption: 'Per-epoch timing',
    columns: [{ label: 'Epoch' }, { label: 'Seconds', numeric: true }, { label: 'Seeds / s', numeric: true }, { label: 'Sample', numeric: true }, { label: 'Gather', numeric: true }, { label: 'Step', numeric: true }, ...(hasOther ? [{ label: 'Other', numeric: true }] : [])],
    rows: timed.map((e, i) => [
      `${esc(e.epoch)}${e.epoch === best ? ' <span class="tag">best</span>' : ''}`,
      esc(fmtSeconds(e.seconds)),
      esc(fmtInt(e.seeds_per_s)),
      esc(fmtSeconds(e.timing!.sample)),
      esc(fmtSeconds(e.timing!.gather)),
      esc(fmtSeconds(e.timing!.step)),
      ...(hasOther ? [esc(fmtSeconds(other[i]))] : []),
    ]),
    rowAttrs: (i) => `data-epoch="${timed[i]!.epoch}"`,
    className: 'compact',
  });
  const intro = `Backend <strong>${esc(d.header.backend)}</strong>. The sampler and the feature gather run in TypeScript; the step is the TF.js forward and backward pass. A large step share means the model (not the data pipeline) bounds training speed.`;
  return section('throughput', 'Throughput and time per epoch', cards(items) + grid([figure(chart, 'Stacked seconds per epoch; the dashed box marks the best epoch.'), figure(rateChart, 'Seeds (training examples) per second.')]) + tbl, intro);
}
