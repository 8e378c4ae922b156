/**
 * Variant search (`model: auto` / `--search`): every variant tried, its validation and test figures,
 * and the one kept. Validation chose; test is shown so a reader sees whether the choice held, never to
 * choose. Null for runs without a search.
 */
import { esc, fmtInt } from '../format.js';
import { formatBySpec, section, table } from '../html.js';
import { mainMetricOf, type TrainReport } from '../model.js';

export function searchSection(d: TrainReport): string | null {
  const s = d.metrics.search;
  if (!s) return null;
  const main = mainMetricOf(d.taskKind);
  const trained = s.variants.filter((v) => v.status === 'trained');
  const tbl = table({
    id: 'search-table',
    caption: `Variants tried (budget ${fmtInt(s.budget_seconds)} s)`,
    columns: [
      { label: 'Variant' },
      { label: `Val ${main.label}`, numeric: true },
      { label: `Test ${main.label}`, numeric: true },
      { label: 'Best epoch', numeric: true },
      { label: 'Seconds', numeric: true },
      { label: 'Note' },
    ],
    rows: s.variants.map((v) => [
      `${esc(v.name)}${v.name === s.chosen ? ' <span class="tag">chosen</span>' : ''}${v.configured ? ' <span class="tag">configured</span>' : ''}`,
      esc(v.val ? formatBySpec(main, v.val[main.key]) : '—'),
      esc(v.test ? formatBySpec(main, v.test[main.key]) : '—'),
      esc(v.best_epoch ?? '—'),
      esc(v.seconds ?? '—'),
      esc(v.status === 'skipped' ? `skipped: ${v.reason ?? ''}` : v.stopped === 'deadline' ? 'stopped by the budget' : ''),
    ]),
    rowAttrs: (i) => `data-variant="${esc(s.variants[i]!.name)}" data-status="${s.variants[i]!.status}"${s.variants[i]!.name === s.chosen ? ' class="best"' : ''}`,
    className: 'compact',
  });
  const intro =
    `The run tried ${esc(trained.length)} of ${esc(s.variants.length)} variants (sampling last/uniform × layers 1/2 × encoder sage/gat, the configured model first) and kept ` +
    `<strong data-metric="search.chosen">${esc(s.chosen)}</strong>, the best on validation ${esc(main.label)}. Test figures are shown to check the choice, not used for it.`;
  return section('search', 'Variant search', tbl, intro);
}
