/**
 * The test figures as the evaluation protocol reports them (docs/evaluation.md): the pooled main metric
 * over every test anchor with its 95% bootstrap interval, the lift over the baseline judged against its
 * interval, and each test anchor's own figure. Null for runs without intervals (made before them) or
 * without per-anchor figures.
 */
import { esc, fmtInt } from '../format.js';
import { formatBySpec, section, table } from '../html.js';
import { mainMetricOf, type TrainReport } from '../model.js';

export function testAnchorsSection(d: TrainReport): string | null {
  const m = d.metrics;
  if (!m.intervals && !m.test_by_anchor?.length) return null;
  const main = mainMetricOf(d.taskKind);
  const iv = m.intervals?.test[main.key] ?? null;
  const lift = m.intervals?.lift ?? null;
  const interval = (x: [number, number] | null): string => (x ? `${formatBySpec(main, x[0])} … ${formatBySpec(main, x[1])}` : 'undefined');
  const anchors = m.test_by_anchor ?? [];
  const intro =
    `Test ${esc(main.label)} <strong data-metric="test.interval">${esc(formatBySpec(main, m.test[main.key]))}</strong> over ${esc(fmtInt(m.counts.test))} examples at ${esc(anchors.length || 1)} anchor(s), ` +
    `95% interval ${esc(interval(iv))}.` +
    (m.baseline && m.intervals
      ? ` Lift over the no-graph baseline ${esc(m.lift ?? 'undefined')}, 95% interval <span data-metric="lift.interval">${esc(lift ? `${lift[0]} … ${lift[1]}` : 'undefined')}</span>: <strong data-metric="lift.judgement">${esc(m.intervals.lift_judgement)}</strong> (better or worse only when the interval excludes 0).`
      : '') +
    (m.empty_anchors && m.empty_anchors.test.length ? ` ${esc(m.empty_anchors.test.length)} test anchor(s) had no target row in their window and no examples.` : '');
  const tbl = anchors.length
    ? table({
        id: 'test-anchors-table',
        caption: 'Each test anchor alone',
        columns: [{ label: 'Anchor' }, { label: 'Examples', numeric: true }, { label: `Test ${main.label}`, numeric: true }],
        rows: anchors.map((a) => [esc(a.anchor), esc(fmtInt(a.n)), esc(formatBySpec(main, a.metrics[main.key]))]),
        rowAttrs: (i) => `data-anchor="${esc(anchors[i]!.anchor)}"`,
        className: 'compact',
      })
    : '';
  return section('test-anchors', 'Test anchors and intervals', tbl, intro);
}
