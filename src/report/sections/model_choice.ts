/**
 * Model choice (`model.kind`, docs/models.md): the GNN, the trees on own columns + relational aggregates
 * and the hybrid, each with validation and test figures and their 95% bootstrap intervals, and the one
 * kept with the reason. Validation chose; test is shown so a reader sees whether the choice held. Null
 * for runs without the block (ranking runs, runs written before it).
 */
import { esc, fmtInt } from '../format.js';
import { formatBySpec, section, table } from '../html.js';
import { mainMetricOf, type TrainReport } from '../model.js';

const LABELS: Record<string, string> = { gnn: 'GNN', gbdt: 'Trees (own columns + aggregates)', hybrid: 'Hybrid (trees + GNN embeddings)' };

export function modelChoiceSection(d: TrainReport): string | null {
  const mc = d.metrics.model_choice;
  if (!mc) return null;
  const main = mainMetricOf(d.taskKind);
  const chosen = d.metrics.chosen;
  const fmt = (v: number | null | undefined): string => formatBySpec(main, v ?? null);
  const iv = (x: [number, number] | null | undefined): string => (x ? ` [${fmt(x[0])} … ${fmt(x[1])}]` : '');
  const entries = Object.entries(mc.candidates);
  const tbl = table({
    id: 'model-choice-table',
    caption: `Candidates (model.kind ${mc.setting})`,
    columns: [{ label: 'Model' }, { label: `Val ${main.label} [95%]`, numeric: true }, { label: `Test ${main.label} [95%]`, numeric: true }, { label: 'Seconds', numeric: true }, { label: 'Note' }],
    rows: entries.map(([k, c]) => [
      `${esc(LABELS[k] ?? k)}${k === chosen ? ' <span class="tag">chosen</span>' : ''}${k === mc.best && k !== chosen ? ' <span class="tag">best on val</span>' : ''}`,
      esc(c.val ? `${fmt(c.val[main.key])}${iv(c.val_intervals?.[main.key])}` : '—'),
      esc(c.test ? `${fmt(c.test[main.key])}${iv(c.test_intervals?.[main.key])}` : '—'),
      esc(c.seconds ?? '—'),
      esc(c.status === 'skipped' ? `skipped: ${c.reason ?? ''}` : c.trees !== undefined ? `${fmtInt(c.trees)} trees on ${fmtInt(c.features)} inputs` : ''),
    ]),
    rowAttrs: (i) => `data-candidate="${esc(entries[i]![0])}" data-status="${entries[i]![1].status}"${entries[i]![0] === chosen ? ' class="best"' : ''}`,
    className: 'compact',
  });
  const f = mc.tree_features;
  const intro =
    `Kept: <strong data-metric="chosen" data-value="${esc(chosen ?? '')}">${esc(LABELS[chosen ?? ''] ?? chosen ?? '—')}</strong> — ${esc(d.metrics.chosen_reason ?? '')}. ` +
    `A tie within the interval goes to the cheaper model to serve (trees, then hybrid, then GNN); \`predict\` and \`evaluate\` use the kept one.` +
    (f ? ` The trees read ${esc(fmtInt(f.own))} own columns and ${esc(fmtInt(f.aggregates))} of ${esc(fmtInt(f.candidates))} relational aggregates (computed in ${esc(f.seconds)} s).` : '');
  return section('model-choice', 'Model choice', tbl, intro);
}
