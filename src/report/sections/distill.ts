/**
 * Sections only distilled runs have: the ablations (what each input of the student contributes), the
 * student against its teacher in size and latency, and embedding freshness (which snapshots the student
 * trained on, how many rows found an embedding, and how old the embeddings of each export are against
 * `max_embedding_offset`).
 */
import { objectiveFor } from '../../task/objective/objective.js';
import { esc, fmtAge, fmtBytes, fmtDate, fmtInt, fmtMetric, fmtMs, fmtPercent, fmtSigned, fmtTime, MISSING } from '../format.js';
import { card, cards, code, delta, facts, figure, formatBySpec, grid, meter, note, section, table } from '../html.js';
import { barChart } from '../charts/bar.js';
import { COLORS } from '../charts/frame.js';
import { timeline, type TimelineLane } from '../charts/timeline.js';
import { mainMetricOf, secondaryMetricOf, type DistillReport } from '../model.js';
import { diffOf, isBetter } from './headline.js';

const ABLATIONS = [
  { key: 'features_only', label: 'features only', inputs: 'the fact row\'s own columns' },
  { key: 'embedding_only', label: 'embedding only', inputs: 'the base run\'s entity embeddings' },
  { key: 'rti_only', label: 'RTI only', inputs: 'recent interactions of the row\'s entities' },
] as const;

export function ablationsSection(d: DistillReport): string {
  const m = d.metrics;
  const main = mainMetricOf(d.taskKind);
  const second = secondaryMetricOf(d.taskKind);
  // metrics.val/test are the kept variant's; the full student's own are in full_student when an ablation was kept.
  const full = m.full_student ?? { val: m.val, test: m.test, best_epoch: m.best_epoch };
  const distilled = full.test[main.key] ?? null;
  const kept = (key: string): string => (key === m.chosen || (key === 'distilled' && m.chosen === 'student') ? ' (kept)' : '');
  const variants = [
    ...ABLATIONS.map((a) => ({ key: a.key, label: `${a.label}${kept(a.key)}`, inputs: a.inputs, val: m.ablations[a.key]?.val, test: m.ablations[a.key]?.test, best: m.ablations[a.key]?.best_epoch, color: a.key === m.chosen ? COLORS.model : COLORS.muted })),
    { key: 'distilled', label: `distilled (all inputs)${kept('distilled')}`, inputs: 'columns + embeddings + RTI', val: full.val, test: full.test, best: full.best_epoch, color: m.chosen === 'student' ? COLORS.model : COLORS.muted },
    ...(m.teacher ? [{ key: 'teacher', label: 'teacher (deep GNN)', inputs: `the whole graph (run ${m.base_run})`, val: m.teacher.val, test: m.teacher.test, best: undefined, color: COLORS.teacher }] : []),
  ];
  const values = variants.map((v) => v.test?.[main.key]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  const binary = objectiveFor(d.taskKind).probabilistic;
  const lo = binary ? Math.min(0.5, Math.floor(Math.min(...values, 1) * 10) / 10) : 0;
  const chart = barChart({
    id: 'chart-ablations',
    title: `Ablations: test ${main.label} by student input`,
    desc: `Test ${main.label}: ${variants.map((v) => `${v.label} ${fmtMetric(v.test?.[main.key])}`).join(', ')}.`,
    bars: variants.map((v) => {
      const diff = v.key === 'distilled' ? null : diffOf(v.test?.[main.key], distilled);
      return { key: v.key, label: v.label, value: v.test?.[main.key] ?? null, color: v.color, note: diff === null ? undefined : `(${fmtSigned(diff)})` };
    }),
    xLabel: `test ${main.label}${binary && lo === 0.5 ? ' (axis starts at 0.5 = chance)' : ''}`,
    format: (v) => fmtMetric(v),
    domain: binary ? [lo, 1] : undefined,
    reference: binary ? { value: 0.5, label: 'AUROC 0.5: random ranking' } : undefined,
    width: 760,
  });
  const rows = variants.map((v) => {
    const diff = v.key === 'distilled' ? null : diffOf(v.test?.[main.key], distilled);
    return [
      esc(v.label),
      esc(v.inputs),
      esc(formatBySpec(main, v.val?.[main.key])),
      `<span data-metric="ablation.${esc(v.key)}.test.${main.key}" data-value="${v.test?.[main.key] ?? ''}">${esc(formatBySpec(main, v.test?.[main.key]))}</span>`,
      esc(formatBySpec(second, v.test?.[second.key])),
      v.best === undefined ? MISSING : esc(v.best),
      diff === null ? '' : delta(diff, isBetter(main, v.test?.[main.key], distilled)),
    ];
  });
  const tbl = table({
    id: 'ablations-table',
    caption: 'Student variants (each trained on the same rows)',
    columns: [{ label: 'Variant' }, { label: 'Inputs' }, { label: `Val ${main.label}`, numeric: true }, { label: `Test ${main.label}`, numeric: true }, { label: `Test ${second.label}`, numeric: true }, { label: 'Best epoch', numeric: true }, { label: 'Δ vs distilled', numeric: true }],
    rows,
    rowAttrs: (i) => `data-variant="${variants[i]!.key}"`,
  });
  const keptNote = m.chosen_reason ? ` The run keeps and exports the variant best on validation: <strong>${esc(m.chosen === 'student' ? 'the full student' : m.chosen.replace('_', ' '))}</strong> (${esc(m.chosen_reason)}).` : '';
  const emb = m.ablations.embedding_only?.test[main.key];
  const feat = m.ablations.features_only?.test[main.key];
  const gain = diffOf(distilled, feat);
  const intro = `Each variant is the same shallow student trained on one kind of input. The gap between <em>features only</em> and the distilled model is what the graph (through embeddings and recent interactions) adds at serving time${gain !== null ? `: <strong>${esc(fmtSigned(gain))}</strong> ${esc(main.label)}` : ''}${typeof emb === 'number' && typeof feat === 'number' && emb <= feat ? '. Here the embeddings alone do no better than the row\'s columns: the base task\'s embeddings may not carry what this task needs' : ''}.${keptNote}`;
  return section('ablations', 'Ablations', figure(chart, `Test ${esc(main.label)}; in brackets the difference to the distilled model.`, 'medium') + tbl, intro);
}

export function sizeSection(d: DistillReport): string {
  const s = d.metrics.student;
  const t = d.metrics.teacher_model;
  const bars = [
    { key: 'student', label: 'student', value: s.parameters, color: COLORS.model },
    ...(t
      ? [
          { key: 'teacher-dense', label: 'teacher, w/o embeddings', value: t.parameters_without_embeddings, color: COLORS.teacher, light: true },
          { key: 'teacher', label: 'teacher, total', value: t.parameters, color: COLORS.teacher },
        ]
      : []),
  ];
  const chart = barChart({
    id: 'chart-size',
    title: 'Parameters: student vs teacher',
    desc: `Student ${fmtInt(s.parameters)} parameters${t ? `; teacher ${fmtInt(t.parameters)} (${fmtInt(t.parameters_without_embeddings)} without embedding tables)` : ''}.`,
    bars,
    xLabel: 'parameters',
    format: (v) => fmtInt(v),
    width: 620,
  });
  const ratio = (a: number | undefined, b: number): string => (a !== undefined && b > 0 ? `${(a / b).toFixed(1)}×` : MISSING);
  const tbl = table({
    id: 'size-table',
    caption: 'Size and latency',
    columns: [{ label: '' }, { label: 'Student', numeric: true }, { label: 'Teacher', numeric: true }, { label: 'Teacher / student', numeric: true }],
    rows: [
      ['Parameters', `<span data-metric="size.student.parameters">${esc(fmtInt(s.parameters))}</span>`, esc(fmtInt(t?.parameters)), esc(ratio(t?.parameters, s.parameters))],
      ['Parameters w/o embedding tables', esc(fmtInt(s.parameters)), esc(fmtInt(t?.parameters_without_embeddings)), esc(ratio(t?.parameters_without_embeddings, s.parameters))],
      ['Weights', `<span data-metric="size.student.bytes">${esc(fmtBytes(s.bytes))}</span>`, esc(fmtBytes(t?.bytes)), esc(ratio(t?.bytes, s.bytes))],
      ['Latency p50 (1 example)', `<span data-metric="size.student.latency_ms_p50">${esc(fmtMs(s.latency_ms_p50))}</span>`, '<span class="muted">not measured</span>', ''],
      ['Latency p99 (1 example)', `<span data-metric="size.student.latency_ms_p99">${esc(fmtMs(s.latency_ms_p99))}</span>`, '<span class="muted">not measured</span>', ''],
    ],
  });
  const intro = 'The student reads precomputed embeddings instead of sampling the graph, so it needs a fraction of the teacher\'s weights and no neighbourhood sampling per request. Latency is one example through the TF.js student, features included; the exported ONNX model is usually faster.';
  return section('size', 'Student vs teacher: size and latency', `<div class="grid grid2 wide-first">${figure(chart, 'Parameter counts (the light bar leaves out the teacher\'s per-entity embedding tables).')}<div>${tbl}</div></div>`, intro);
}

export function freshnessSection(d: DistillReport, now: Date): string {
  const e = d.metrics.embeddings;
  const snaps = [...e.snapshots].sort();
  const times = snaps.map((s) => Date.parse(s) / 1000).filter(Number.isFinite);
  const gaps = times.slice(1).map((t, i) => t - times[i]!);
  const cadence = gaps.length ? [...gaps].sort((a, b) => a - b)[Math.floor(gaps.length / 2)]! : null;
  const { max, min, realTime } = d.offsets;
  const cov = e.coverage;
  const covTone = (v: number | null): 'good' | 'bad' | 'neutral' => (v === null ? 'neutral' : v >= 0.95 ? 'good' : v < 0.5 ? 'bad' : 'neutral');

  const items = [
    card({ label: 'Embedding source', compact: true, valueHtml: esc(e.source === 'computed' ? 'computed' : 'files'), subHtml: e.source === 'computed' ? `from base run ${esc(d.metrics.base_run)}` : 'snapshots read from embedding files' }),
    card({ label: 'Snapshots', valueHtml: `<span data-metric="embeddings.snapshots">${esc(snaps.length)}</span>`, subHtml: cadence !== null ? `every ${esc(fmtAge(cadence))} (median)` : snaps.length === 1 ? 'a single snapshot' : 'none' }),
    card({ label: 'Newest snapshot', valueHtml: esc(snaps.length ? fmtDate(snaps[snaps.length - 1]!) : MISSING), subHtml: snaps.length ? `oldest ${esc(fmtDate(snaps[0]!))}` : undefined, compact: true }),
    card({ label: 'Test coverage', valueHtml: `<span data-metric="embeddings.coverage.test" data-value="${cov.test ?? ''}">${esc(fmtPercent(cov.test, 1))}</span>`, subHtml: 'test rows that found an embedding', tone: covTone(cov.test) }),
  ];

  const lanes: TimelineLane[] = [{ key: 'snapshots', label: 'training snapshots', color: COLORS.model, points: snaps.map((s, i) => ({ time: s, tip: `snapshot ${i + 1} of ${snaps.length}` })) }];
  for (const x of d.exports) {
    const anchors = [...new Set(x.embeddings.map((em) => em.anchorTime))];
    lanes.push({ key: `export-${x.model}-${x.version}`, label: `export ${x.model} v${x.version}`, color: COLORS.teacher, points: anchors.map((a) => ({ time: a, tip: `${x.model} v${x.version}: embedding anchor of ${x.embeddings.filter((em) => em.anchorTime === a).map((em) => em.table).join(', ')}` })) });
  }
  const lines: { key: string; label: string; time: string; color: string }[] = [];
  if (d.split.trainFrom) lines.push({ key: 'train-from', label: 'train from', time: d.split.trainFrom, color: COLORS.reference });
  if (d.split.val) lines.push({ key: 'val', label: 'validation anchor', time: d.split.val, color: COLORS.best });
  if (d.split.test) lines.push({ key: 'test', label: 'test anchor', time: d.split.test, color: COLORS.baseline });
  if (d.dataEnd !== null) lines.push({ key: 'data-end', label: 'end of data', time: new Date(d.dataEnd * 1000).toISOString(), color: COLORS.text });
  const chart = timeline({
    id: 'chart-snapshots',
    title: 'Embedding snapshots and split anchors',
    desc: `${snaps.length} embedding snapshots from ${snaps[0] ? fmtDate(snaps[0]) : 'none'} to ${snaps.length ? fmtDate(snaps[snaps.length - 1]!) : 'none'}${d.split.val ? `; validation anchor ${fmtDate(d.split.val)}` : ''}${d.split.test ? `, test anchor ${fmtDate(d.split.test)}` : ''}.`,
    lanes,
    lines,
  });

  const covTable = table({
    id: 'coverage-table',
    caption: 'Embedding coverage per split',
    columns: [{ label: 'Split' }, { label: 'Rows', numeric: true }, { label: 'With an embedding', numeric: true }, { label: '' }],
    rows: (['train', 'val', 'test'] as const).map((k) => [esc(k === 'val' ? 'validation' : k), esc(fmtInt(d.metrics.counts[k])), esc(fmtPercent(cov[k], 1)), meter(cov[k], `${k} coverage ${fmtPercent(cov[k], 1)}`, covTone(cov[k]))]),
    className: 'compact',
  });
  const offsets = facts([
    ['Embedding keys', d.embeddingKeys.length ? d.embeddingKeys.map(code).join(', ') : null],
    ['min_embedding_offset', min !== null ? esc(fmtAge(min)) : null],
    ['max_embedding_offset', max !== null ? esc(fmtAge(max)) : null],
    ['real_time_offset', realTime !== null ? esc(fmtAge(realTime)) : null],
  ]);

  const exportsHtml = d.exports.length ? exportsTable(d, now) : note('No export of this run was found in the model repository; <code>gnnctl export</code> records the embedding anchors it bakes in, and this section then shows their age.');
  const ageWindow = min !== null && max !== null ? ` (between ${esc(fmtAge(min))} and ${esc(fmtAge(max))} old)` : '';
  const intro = `For a row at time t the student reads its entities' embeddings from the newest snapshot in [t − <code>max_embedding_offset</code>, t − <code>min_embedding_offset</code>]${ageWindow}, as the daily batch job would have published them. A row with no snapshot in that window gets the fallback vector; coverage counts the rows that found one.`;
  return section('freshness', 'Embedding freshness', cards(items) + figure(chart, 'Each dot is an embedding snapshot (hover for its time); dashed lines are the split anchors.', 'full') + grid([covTable, `<div><h3>Serving offsets</h3>${offsets}</div>`]) + `<h3>Exports</h3>${exportsHtml}`, intro);
}

function exportsTable(d: DistillReport, now: Date): string {
  const nowS = now.getTime() / 1000;
  const rows: string[][] = [];
  for (const x of d.exports) {
    const limit = x.maxOffsetSeconds ?? d.offsets.max;
    for (const em of x.embeddings) {
      const anchor = Date.parse(em.anchorTime) / 1000;
      const ageData = d.dataEnd !== null && Number.isFinite(anchor) ? d.dataEnd - anchor : null;
      const ageNow = Number.isFinite(anchor) ? nowS - anchor : null;
      const status = (age: number | null): string => {
        if (age === null || limit === null) return '';
        const ok = age <= limit;
        return ` <span class="badge ${ok ? 'good' : 'bad'}">${ok ? 'within limit' : 'older than limit'}</span>`;
      };
      rows.push([
        `${esc(x.model)} <span class="muted">v${esc(x.version)}</span>`,
        esc(em.table),
        esc(fmtTime(em.anchorTime)),
        esc(fmtInt(em.rows)),
        ageData === null ? MISSING : `${esc(fmtAge(ageData))}${status(ageData)}${limit !== null ? meter(ageData / limit, `age ${fmtAge(ageData)} of a ${fmtAge(limit)} limit`, ageData <= limit ? 'good' : 'bad') : ''}`,
        ageNow === null ? MISSING : `${esc(fmtAge(ageNow))}${status(ageNow)}`,
        limit === null ? MISSING : esc(fmtAge(limit)),
      ]);
    }
  }
  return (
    table({
      id: 'exports-table',
      caption: 'Embedding anchors of the exports of this run',
      columns: [{ label: 'Export' }, { label: 'Table' }, { label: 'Embedding anchor' }, { label: 'Rows', numeric: true }, { label: 'Age at end of data' }, { label: 'Age now' }, { label: 'max_embedding_offset' }],
      rows,
    }) +
    `<p class="small muted">Age at end of data: against the newest timestamp in the run's graph${d.dataEnd !== null ? ` (${esc(fmtTime(new Date(d.dataEnd * 1000).toISOString()))})` : ' (unknown: the graph folder is gone)'}, which is what matters when replaying historical data. Age now: against the time this report was made (${esc(fmtTime(now.toISOString()))}), which is what a live server sees. Past <code>max_embedding_offset</code>, refresh the embeddings (<code>gnnctl embed</code>, then <code>gnnctl export</code>).</p>`
  );
}

