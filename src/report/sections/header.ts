/**
 * The page header: what this run is (id, kind, task, status), when and where it ran, and which data
 * and code made it (graph fingerprints, gnnctl version), so a printed report can be traced to its run.
 */
import { objectiveFor } from '../../task/objective/objective.js';
import { code, facts, note } from '../html.js';
import { esc, fmtSeconds, fmtTime } from '../format.js';
import type { ReportData } from '../model.js';

export interface RenderContext {
  data: ReportData;
  /** when the report is rendered (freshness ages are measured against it) */
  now: Date;
  /** gnnctl version rendering the report */
  version: string;
}

export function headerSection(ctx: RenderContext, toc: { id: string; title: string }[]): string {
  const { data: d } = ctx;
  const h = d.header;
  const kindLabel = d.kind === 'train' ? 'Deep GNN training run' : 'Distilled serving model run';
  const title = `${h.task} · ${d.kind === 'train' ? 'train' : 'distill'} report`;
  const total = h.timings.total;
  const pairs: [string, string | null][] = [
    ['Kind', esc(`${d.kind} (${objectiveFor(d.taskKind).description})`)],
    ['Task', esc(h.task)],
    ['Status', `<span class="status status-${esc(h.status)}">${esc(h.status)}</span>`],
    ['Started', esc(fmtTime(h.created_at))],
    ['Finished', h.finished_at ? esc(fmtTime(h.finished_at)) : null],
    ['Duration', total !== undefined ? esc(fmtSeconds(total)) : null],
    ['Backend', esc(h.backend)],
    ['Seed', h.seed !== null ? esc(h.seed) : null],
  ];
  if (d.kind === 'train') {
    pairs.push(['Model', d.modelSummary ? esc(d.modelSummary) : null]);
    pairs.push(['Fine-tuned from', d.init_from ? code(d.init_from) : null]);
  } else {
    pairs.push(['Base run', `${code(d.metrics.base_run)} <span class="muted">(task ${esc(d.metrics.base_task)})</span>`]);
    pairs.push(['Embeddings', esc(d.metrics.embeddings.source === 'computed' ? 'computed from the base run' : 'read from files')]);
  }
  pairs.push(
    ['Data fingerprint', h.dataFingerprint ? code(h.dataFingerprint) : null],
    ['Schema fingerprint', h.schema_fingerprint ? code(h.schema_fingerprint) : null],
    ['Config', h.configName || h.configPath ? `${esc(h.configName ?? '')}${h.configPath ? ` ${code(h.configPath)}` : ''}` : null],
    ['gnnctl', esc(h.gnnctl === ctx.version ? h.gnnctl : `${h.gnnctl} (report by ${ctx.version})`)],
  );
  const warnings: string[] = [];
  if (h.status === 'interrupted') warnings.push(note('This run was interrupted: the metrics are those of the best checkpoint saved before it stopped.', 'warn'));
  if (h.status === 'running') warnings.push(note('This run had not finished when the report was made: the numbers may change.', 'warn'));
  if (h.status === 'failed') warnings.push(note(`This run failed${h.error ? `: ${esc(h.error)}` : ''}.`, 'warn'));
  const nav = toc.map((t) => `<li><a href="#${esc(t.id)}">${esc(t.title)}</a></li>`).join('');
  return (
    `<header id="header">` +
    `<p class="eyebrow">gnnctl report · ${esc(kindLabel)}</p>` +
    `<h1>${esc(title)}</h1>` +
    `<p class="run-id">${code(h.id)} <span class="status status-${esc(h.status)}">${esc(h.status)}</span></p>` +
    facts(pairs) +
    (h.query ? `<p class="query"><span class="muted">Predictive query</span> ${code(h.query)}</p>` : '') +
    warnings.join('') +
    `<nav aria-label="Sections"><ol>${nav}</ol></nav>` +
    `<p class="generated">Generated ${esc(fmtTime(ctx.now.toISOString()))} by gnnctl ${esc(ctx.version)} from <code>manifest.json</code> and <code>metrics.json</code>.</p>` +
    `</header>`
  );
}
