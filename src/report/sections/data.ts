/**
 * Counts and anchors (how many examples each split had, at which anchor times: the temporal split the
 * metrics rest on), and run details (stage timings, the no-graph baseline's features, the resolved config).
 */
import { objectiveFor } from '../../task/objective/objective.js';
import { esc, fmtAge, fmtInt, fmtPercent, fmtSeconds, fmtTime, MISSING } from '../format.js';
import { chips, code, facts, grid, section, table } from '../html.js';
import type { DistillReport, TrainReport } from '../model.js';

export function dataSection(d: TrainReport | DistillReport): string {
  const counts = d.metrics.counts;
  const total = counts.train + counts.val + counts.test;
  const probabilistic = objectiveFor(d.taskKind).probabilistic;
  const pos = (k: 'val' | 'test'): string => (probabilistic ? esc(fmtPercent(d.metrics[k].positive_rate, 2)) : MISSING);
  const countsTable = table({
    id: 'counts-table',
    caption: 'Examples per split',
    columns: [{ label: 'Split' }, { label: 'Examples', numeric: true }, { label: 'Share', numeric: true }, ...(probabilistic ? [{ label: 'Positive rate', numeric: true }] : [])],
    rows: (['train', 'val', 'test'] as const).map((k) => [
      esc(k === 'val' ? 'validation' : k),
      `<span data-metric="counts.${k}">${esc(fmtInt(counts[k]))}</span>`,
      esc(fmtPercent(total ? counts[k] / total : null, 1)),
      ...(probabilistic ? [k === 'train' ? '<span class="muted">—</span>' : pos(k)] : []),
    ]),
  });
  let anchors: string;
  if (d.kind === 'train') {
    const a = d.metrics.anchors;
    anchors =
      facts([
        ['Train anchors', a.train.length ? `${esc(a.train.length)} anchors, ${esc(fmtTime(a.train[0]))} → ${esc(fmtTime(a.train[a.train.length - 1]))}` : 'none: each fact row is an example at its own time, up to the validation anchor'],
        ['Validation anchor', `<span data-anchor="val">${esc(fmtTime(a.val))}</span>`],
        // several when the validation set at val_anchor was small (split.val_anchors)
        ['Validation anchors', a.val_anchors && a.val_anchors.length > 1 ? `<span data-anchor="val_anchors">${esc(a.val_anchors.length)}: ${esc(a.val_anchors.map((t) => fmtTime(t).replace(' 00:00 UTC', '')).join(', '))}</span>` : null],
        ['Test anchor', `<span data-anchor="test">${esc(fmtTime(a.test))}</span>`],
        ['Label window', a.window !== undefined ? esc(fmtAge(a.window)) : null],
      ]) + (a.train.length ? chips(a.train.map((t) => fmtTime(t).replace(' 00:00 UTC', ''))) : '');
  } else {
    anchors = facts([
      ['Training rows from', d.split.trainFrom ? `<span data-anchor="train_from">${esc(fmtTime(d.split.trainFrom))}</span>` : null],
      ['Validation anchor', d.split.val ? `<span data-anchor="val">${esc(fmtTime(d.split.val))}</span>` : null],
      ['Test anchor', d.split.test ? `<span data-anchor="test">${esc(fmtTime(d.split.test))}</span>` : null],
    ]);
  }
  const intro = 'Every example has an anchor time; its inputs use only data before it and its label only data after it. Validation and test examples come after every training anchor.';
  return section('data', 'Counts and anchors', grid([countsTable, `<div><h3>Anchors</h3>${anchors}</div>`]), intro);
}

export function detailsSection(d: TrainReport | DistillReport): string {
  const h = d.header;
  const stages = Object.entries(h.timings).filter(([k]) => k !== 'total');
  const total = h.timings.total;
  const timingTable = table({
    id: 'stages-table',
    caption: 'Time per stage',
    columns: [{ label: 'Stage' }, { label: 'Time', numeric: true }, { label: 'Share', numeric: true }],
    rows: [
      ...stages.map(([k, v]) => [esc(k.replace(/_/g, ' ')), esc(fmtSeconds(v)), esc(total ? fmtPercent(v / total, 1) : MISSING)]),
      ...(total !== undefined ? [['<strong>total</strong>', `<strong>${esc(fmtSeconds(total))}</strong>`, '']] : []),
    ],
    className: 'compact',
  });
  const parts: string[] = [];
  const cfg = obj(h.config);
  const settings = d.kind === 'train' ? obj(cfg.model) : obj(cfg.distillation);
  if (Object.keys(settings).length > 0) {
    parts.push(`<h3>${d.kind === 'train' ? 'Model settings' : 'Distillation settings'}</h3>${settingsFacts(settings)}`);
  }
  if (d.kind === 'train' && d.metrics.baseline) {
    const f = d.metrics.baseline.features;
    const rows = d.metrics.baseline.train_rows;
    const fitted = rows !== undefined && rows < d.metrics.counts.train ? `trained on a seeded sample of ${esc(fmtInt(rows))} of the ${esc(fmtInt(d.metrics.counts.train))} training examples (split.baseline_max_train_examples), scored on the same validation and test examples` : 'trained on the same examples';
    parts.push(`<h3>No-graph baseline features (${esc(fmtInt(f.length))})</h3><p class="small muted">An MLP on the example's own row only, ${fitted}.</p>${chips(f, 60)}`);
  }
  const config = `<details class="config"><summary>Resolved config recorded in the manifest</summary><pre>${esc(JSON.stringify(h.config, null, 2) ?? 'null')}</pre></details>`;
  return section('details', 'Run details', grid([timingTable, `<div>${parts.join('')}</div>`]) + config);
}

/** A config block as label → value pairs; durations (`*_offset`, `*_window`, in seconds) read as spans. */
function settingsFacts(settings: Record<string, unknown>): string {
  const show = (key: string, v: unknown): string => {
    if (typeof v === 'number' && /(_offset|_window)$/.test(key)) return esc(fmtAge(v));
    if (typeof v === 'number' || typeof v === 'string') return esc(v);
    if (typeof v === 'boolean') return v ? 'yes' : 'no';
    if (Array.isArray(v)) return v.length ? esc(v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(', ')) : '<span class="muted">none</span>';
    if (v !== null && typeof v === 'object') return Object.entries(v).map(([k, x]) => `${code(k)}: ${esc(typeof x === 'object' ? JSON.stringify(x) : String(x))}`).join('<br>');
    return '<span class="muted">—</span>';
  };
  return facts(Object.entries(settings).map(([k, v]): [string, string] => [k, show(k, v)]));
}

function obj(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
