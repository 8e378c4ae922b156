/**
 * Headline metrics. Train runs: the graph model against the no-graph baseline (the lift is the reason to
 * run a GNN at all). Distill runs: the distilled model against its teacher (the ratio says what serving
 * fast costs), with the size and latency that buy it.
 */
import { esc, fmtBytes, fmtInt, fmtMetric, fmtMs, fmtPercent, fmtSigned, MISSING } from '../format.js';
import { card, cards, delta, formatBySpec, metricValue, section, table } from '../html.js';
import { mainMetricOf, METRICS, secondaryMetricOf, type DistillReport, type MetricSet, type MetricSpec, type TrainReport } from '../model.js';

export function headlineSection(d: TrainReport | DistillReport): string {
  return d.kind === 'train' ? trainHeadline(d) : distillHeadline(d);
}

/** Is `a` better than `b` on this metric? null when either is missing or the metric has no direction. */
export function isBetter(spec: MetricSpec, a: number | null | undefined, b: number | null | undefined): boolean | null {
  if (spec.format !== 'metric' || typeof a !== 'number' || typeof b !== 'number' || !Number.isFinite(a) || !Number.isFinite(b) || a === b) return null;
  return spec.higherIsBetter ? a > b : a < b;
}

function trainHeadline(d: TrainReport): string {
  const m = d.metrics;
  const main = mainMetricOf(d.taskKind);
  const second = secondaryMetricOf(d.taskKind);
  const base = m.baseline;
  const testMain = m.test[main.key];
  const baseMain = base?.test[main.key];
  // Lift is signed so that positive means better (for MAE: baseline minus model). Recomputed from the two
  // test metrics when both are there: metrics.json's own `lift` may be rounded coarser than the metrics.
  const diff = diffOf(testMain, baseMain);
  const lift = diff === null ? m.lift : main.higherIsBetter ? diff : -diff;
  const relative = lift !== null && typeof baseMain === 'number' && baseMain !== 0 ? lift / Math.abs(baseMain) : null;
  const liftTone = lift === null ? 'neutral' : lift > 0 ? 'good' : lift < 0 ? 'bad' : 'neutral';
  const nEpochs = m.epochs.length;
  const items = [
    card({ label: `Test ${main.label}`, valueHtml: metricValue(main, testMain, `test.${main.key}`), subHtml: `validation ${metricValue(main, m.val[main.key], `val.${main.key}`)}`, emphasis: true }),
    card({
      label: `Baseline test ${main.label}`,
      valueHtml: base ? metricValue(main, baseMain, `baseline.test.${main.key}`) : MISSING,
      subHtml: m.best_baseline ? `best of ${fmtInt(Object.keys(m.baselines ?? {}).length)} baselines: ${esc(m.best_baseline)}` : base ? `no-graph MLP on ${fmtInt(base.features.length)} features` : 'no baseline was fitted',
    }),
    card({
      label: main.higherIsBetter ? `Lift over baseline (${main.label})` : `${main.label} reduction vs baseline`,
      valueHtml: `<span data-metric="lift" data-value="${lift ?? ''}">${esc(fmtSigned(lift))}</span>`,
      subHtml: relative !== null ? `${esc(fmtPercent(relative, 1, true))} relative to the baseline` : 'no baseline to compare with',
      tone: liftTone,
    }),
    card({ label: `Test ${second.label}`, valueHtml: metricValue(second, m.test[second.key], `test.${second.key}`), subHtml: base ? `baseline ${esc(formatBySpec(second, base.test[second.key]))}` : undefined }),
    card({ label: 'Best epoch', valueHtml: `<span data-metric="best_epoch">${esc(m.best_epoch)}</span>`, subHtml: `of ${nEpochs} trained` }),
    card({ label: 'Parameters', valueHtml: esc(fmtInt(m.parameters?.total)), subHtml: m.parameters ? `${esc(fmtInt(m.parameters.without_embeddings))} without embedding tables` : undefined }),
  ];
  let summary: string;
  if (!base || lift === null) summary = `No no-graph baseline was fitted for this run, so there is no lift to report. Test ${esc(main.label)}: ${esc(fmtMetric(testMain))}.`;
  else if (lift > 0)
    summary = `On the test split the graph model reaches ${esc(main.label)} <strong>${esc(fmtMetric(testMain))}</strong> against <strong>${esc(fmtMetric(baseMain))}</strong> for the no-graph baseline: ${main.higherIsBetter ? 'a lift' : 'an error reduction'} of <strong>${esc(fmtSigned(lift))}</strong>${relative !== null ? ` (${esc(fmtPercent(relative, 1, true))})` : ''}. The relational neighbourhood adds signal the row's own columns lack.`;
  else if (lift < 0)
    summary = `On the test split the graph model (${esc(main.label)} <strong>${esc(fmtMetric(testMain))}</strong>) is <strong>worse</strong> than the no-graph baseline (<strong>${esc(fmtMetric(baseMain))}</strong>) by ${esc(fmtSigned(-lift).replace('+', ''))}. The graph does not help this task as trained: check the task's links, train longer, or keep the simpler model.`;
  else summary = `On the test split the graph model and the no-graph baseline tie at ${esc(main.label)} ${esc(fmtMetric(testMain))}.`;

  const rows = METRICS[d.taskKind].map((spec) => {
    const better = isBetter(spec, m.test[spec.key], base?.test[spec.key]);
    const diff = base && spec.format === 'metric' ? diffOf(m.test[spec.key], base.test[spec.key]) : null;
    return [
      esc(spec.label),
      metricValue(spec, m.val[spec.key], `table.val.${spec.key}`),
      metricValue(spec, m.test[spec.key], `table.test.${spec.key}`),
      base ? metricValue(spec, base.val[spec.key]) : MISSING,
      base ? metricValue(spec, base.test[spec.key], `table.baseline.test.${spec.key}`) : MISSING,
      diff === null ? '' : delta(diff, better),
    ];
  });
  const tbl = table({
    id: 'metrics-table',
    caption: m.best_baseline ? `All metrics, recommender vs the best baseline (${m.best_baseline})` : 'All metrics, graph model vs no-graph baseline',
    columns: [{ label: 'Metric' }, { label: 'Model · val', numeric: true }, { label: 'Model · test', numeric: true }, { label: 'Baseline · val', numeric: true }, { label: 'Baseline · test', numeric: true }, { label: 'Test Δ (model − baseline)', numeric: true }],
    rows,
  });
  // Ranking runs compare with their best simple rule, not a no-graph MLP.
  if (m.best_baseline) summary = summary.replaceAll('no-graph baseline', `best baseline (${esc(m.best_baseline)})`).replace("The relational neighbourhood adds signal the row's own columns lack.", 'The recommender ranks better than the best simple rule.');
  return section('headline', 'Headline metrics', cards(items) + `<p class="summary">${summary}</p>` + tbl);
}

/**
 * Ranking runs: the model against every baseline (popularity in the last window, the user's own past
 * items, item-to-item co-occurrence) on validation and test, so a reader sees which simple rule it beats.
 */
export function rankingBaselinesSection(d: TrainReport | DistillReport): string | null {
  if (d.kind !== 'train' || !d.metrics.baselines) return null;
  const m = d.metrics;
  const specs = METRICS.ranking.filter((s) => s.format === 'metric');
  const row = (name: string, val: MetricSet, test: MetricSet, tag?: string): string[] => [
    tag ? `<strong>${esc(name)}</strong>` : esc(name),
    ...specs.flatMap((s) => [metricValue(s, val[s.key]), metricValue(s, test[s.key], tag ? `${tag}.${s.key}` : undefined)]),
  ];
  const rows = [
    row('deep recommender', m.val, m.test, 'ranking.model'),
    ...(m.reranker ? [row('re-ranker (trees over the heuristics\' and the model\'s candidates)', m.reranker.val, m.reranker.test, 'ranking.reranker')] : []),
    ...Object.entries(m.baselines!).map(([name, b]) => row(name === m.best_baseline ? `${name} (best on val)` : name, b.val, b.test)),
  ];
  const tbl = table({
    id: 'ranking-baselines',
    caption: `Top-${m.test.k ?? 'k'} lists against the baselines`,
    columns: [{ label: 'Model' }, ...specs.flatMap((s) => [{ label: `${s.label} · val`, numeric: true }, { label: `${s.label} · test`, numeric: true }])],
    rows,
  });
  const h = m.heuristics;
  const choices = h
    ? `<p class="summary">Popularity window ${esc(h.popularity.window)}; affinity column ${esc(h.affinity.column ?? 'none (no categorical item column)')}; blend repeat weight ${esc(String(h.repeat_affinity.repeat_weight))} (each chosen on validation). Seen items: ${esc(h.exclude_seen.reason)}.</p>`
    : '';
  const chosen = m.chosen ? `<p class="summary" data-metric="chosen" data-value="${esc(m.chosen)}"><strong>Serve: ${esc(m.chosen === 'model' ? 'the deep recommender' : m.chosen === 'reranker' ? 'the re-ranker' : m.chosen)}</strong> — ${esc(m.chosen_reason ?? '')}.</p>` : '';
  const byList = m.intervals?.test_map_by_list;
  const iv: Record<string, [number, number] | null> | undefined = byList ? { model: m.intervals!.test.map_at_k ?? null, ...byList } : m.reranker?.test_map_intervals;
  const intervals = iv
    ? `<p class="summary">Test MAP@${esc(String(m.test.k ?? 'k'))}, 95% bootstrap intervals over test users: ${Object.entries(iv)
        .flatMap(([name, x]) => (x ? [`${esc(name)} ${esc(x[0].toFixed(4))}–${esc(x[1].toFixed(4))}`] : []))
        .join('; ')}.</p>`
    : '';
  return section(
    'ranking-baselines',
    'Ranking baselines',
    chosen + tbl + intervals + choices,
    "popularity: the most bought items in a window chosen on validation, for everyone; repeat: the user's own past items, most bought first; affinity: popular items of the kinds (one categorical item column) the user bought, weighted by their share; cooccurrence: items bought together with the user's recent items by other users (item-kNN); repeat_affinity: a blend of the two.",
  );
}

function distillHeadline(d: DistillReport): string {
  const m = d.metrics;
  const main = mainMetricOf(d.taskKind);
  const second = secondaryMetricOf(d.taskKind);
  const teacher = m.teacher;
  const tm = m.teacher_model;
  const sizeRatio = tm && m.student.parameters > 0 ? tm.parameters / m.student.parameters : null;
  const ratioTone = m.teacher_ratio === null ? 'neutral' : m.teacher_ratio >= 0.95 ? 'good' : m.teacher_ratio < 0.85 ? 'bad' : 'neutral';
  const items = [
    card({ label: `Distilled test ${main.label}`, valueHtml: metricValue(main, m.test[main.key], `test.${main.key}`), subHtml: `validation ${metricValue(main, m.val[main.key], `val.${main.key}`)}`, emphasis: true }),
    card({ label: `Teacher test ${main.label}`, valueHtml: teacher ? metricValue(main, teacher.test[main.key], `teacher.test.${main.key}`) : MISSING, subHtml: `deep run ${esc(m.base_run)}` }),
    card({
      label: 'Distilled / teacher',
      valueHtml: `<span data-metric="teacher_ratio" data-value="${m.teacher_ratio ?? ''}">${esc(m.teacher_ratio === null ? MISSING : fmtPercent(m.teacher_ratio, 1))}</span>`,
      subHtml: m.teacher_ratio === null ? 'no teacher metrics recorded' : `ratio ${esc(m.teacher_ratio.toFixed(4))} of test ${esc(main.label)}`,
      tone: ratioTone,
    }),
    card({ label: `Test ${second.label}`, valueHtml: metricValue(second, m.test[second.key], `test.${second.key}`), subHtml: teacher
        ? `teacher ${esc(formatBySpec(second, teacher.test[second.key]))}${m.teacher_ap_ratio !== null && second.key === 'ap' ? ` · <span data-metric="teacher_ap_ratio" data-value="${m.teacher_ap_ratio}">${esc(fmtPercent(m.teacher_ap_ratio, 1))}</span> of it` : ''}`
        : undefined }),
    card({ label: 'Student parameters', valueHtml: `<span data-metric="student.parameters">${esc(fmtInt(m.student.parameters))}</span>`, subHtml: sizeRatio !== null ? `${esc(sizeRatio.toFixed(1))}× fewer than the teacher (${esc(fmtInt(tm!.parameters))})` : undefined }),
    card({ label: 'Latency p50 / p99', valueHtml: `<span data-metric="student.latency_ms_p50">${esc(fmtMs(m.student.latency_ms_p50))}</span>`, subHtml: `p99 ${esc(fmtMs(m.student.latency_ms_p99))} · one example, TF.js` }),
  ];
  const summary =
    m.teacher_ratio !== null && teacher
      ? `The distilled model keeps <strong>${esc(fmtPercent(m.teacher_ratio, 1))}</strong> of the teacher's test ${esc(main.label)} (${esc(fmtMetric(m.test[main.key]))} vs ${esc(fmtMetric(teacher.test[main.key]))})${sizeRatio !== null ? ` with ${esc(sizeRatio.toFixed(1))}× fewer parameters (${esc(fmtBytes(m.student.bytes))} of weights)` : ''}, answering one request in ${esc(fmtMs(m.student.latency_ms_p50))} at the median.`
      : `No teacher metrics were recorded for this run. Test ${esc(main.label)}: ${esc(fmtMetric(m.test[main.key]))}.`;
  const rows = METRICS[d.taskKind].map((spec) => {
    const better = isBetter(spec, m.test[spec.key], teacher?.test[spec.key]);
    const diff = teacher && spec.format === 'metric' ? diffOf(m.test[spec.key], teacher.test[spec.key]) : null;
    return [
      esc(spec.label),
      metricValue(spec, m.val[spec.key], `table.val.${spec.key}`),
      metricValue(spec, m.test[spec.key], `table.test.${spec.key}`),
      teacher ? metricValue(spec, teacher.val[spec.key]) : MISSING,
      teacher ? metricValue(spec, teacher.test[spec.key], `table.teacher.test.${spec.key}`) : MISSING,
      diff === null ? '' : delta(diff, better),
    ];
  });
  const tbl = table({
    id: 'metrics-table',
    caption: 'All metrics, distilled model vs teacher',
    columns: [{ label: 'Metric' }, { label: 'Distilled · val', numeric: true }, { label: 'Distilled · test', numeric: true }, { label: 'Teacher · val', numeric: true }, { label: 'Teacher · test', numeric: true }, { label: 'Test Δ (distilled − teacher)', numeric: true }],
    rows,
  });
  return section('headline', 'Headline metrics', cards(items) + `<p class="summary">${summary}</p>` + tbl);
}

export function diffOf(a: number | null | undefined, b: number | null | undefined): number | null {
  return typeof a === 'number' && typeof b === 'number' && Number.isFinite(a) && Number.isFinite(b) ? a - b : null;
}
