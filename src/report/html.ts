/**
 * Small HTML builders the sections share. Arguments named `html` are markup that the caller built (and
 * escaped); everything named `text` or `label` is escaped here.
 */
import { assertUnreachable } from '../core/errors.js';
import { esc, fmtInt, fmtMetric, fmtPercent, fmtSigned, MISSING } from './format.js';
import type { MetricSpec } from './model.js';

export function section(id: string, title: string, html: string, introHtml?: string): string {
  return `<section id="${esc(id)}" aria-labelledby="${esc(id)}-h"><h2 id="${esc(id)}-h">${esc(title)}</h2>${introHtml ? `<p class="intro">${introHtml}</p>` : ''}${html}</section>`;
}

export function figure(svgHtml: string, captionHtml?: string, className = ''): string {
  return `<figure${className ? ` class="${esc(className)}"` : ''}>${svgHtml}${captionHtml ? `<figcaption>${captionHtml}</figcaption>` : ''}</figure>`;
}

export function grid(items: string[], columns: 2 | 3 = 2): string {
  return `<div class="grid grid${columns}">${items.join('')}</div>`;
}

export interface Column {
  label: string;
  /** right-aligned, tabular figures */
  numeric?: boolean;
}

/** A table. Cells are HTML (escape text with `esc`); `rowAttrs` adds e.g. `data-epoch` or a class per row. */
export function table(o: { id?: string; caption?: string; columns: Column[]; rows: string[][]; rowAttrs?: (i: number) => string; className?: string }): string {
  const head = o.columns.map((c) => `<th scope="col"${c.numeric ? ' class="num"' : ''}>${esc(c.label)}</th>`).join('');
  const body = o.rows
    .map((r, i) => {
      const cells = r.map((cell, j) => (j === 0 ? `<th scope="row">${cell}</th>` : `<td${o.columns[j]?.numeric ? ' class="num"' : ''}>${cell}</td>`)).join('');
      return `<tr${o.rowAttrs ? ` ${o.rowAttrs(i)}` : ''}>${cells}</tr>`;
    })
    .join('');
  return `<div class="table-wrap"><table${o.id ? ` id="${esc(o.id)}"` : ''}${o.className ? ` class="${esc(o.className)}"` : ''}>${o.caption ? `<caption>${esc(o.caption)}</caption>` : ''}<thead><tr>${head}</tr></thead><tbody>${body}</tbody></table></div>`;
}

/** A headline number: label, big value, a line below. `metric` tags it (`data-metric`) for tests and scripts. */
export function card(o: { label: string; valueHtml: string; subHtml?: string; metric?: string; tone?: 'good' | 'bad' | 'neutral'; emphasis?: boolean; compact?: boolean }): string {
  const cls = ['card', o.tone && o.tone !== 'neutral' ? o.tone : '', o.emphasis ? 'emphasis' : '', o.compact ? 'compact' : ''].filter(Boolean).join(' ');
  return `<div class="${cls}"${o.metric ? ` data-metric="${esc(o.metric)}"` : ''}><div class="card-label">${esc(o.label)}</div><div class="card-value">${o.valueHtml}</div>${o.subHtml ? `<div class="card-sub">${o.subHtml}</div>` : ''}</div>`;
}

export function cards(items: string[]): string {
  return `<div class="cards">${items.join('')}</div>`;
}

/** A definition list of label → HTML value pairs; pairs with a null value are left out. */
export function facts(pairs: [string, string | null][]): string {
  const rows = pairs.filter((p): p is [string, string] => p[1] !== null).map(([k, v]) => `<div><dt>${esc(k)}</dt><dd>${v}</dd></div>`);
  return `<dl class="facts">${rows.join('')}</dl>`;
}

export function code(text: string): string {
  return `<code>${esc(text)}</code>`;
}

export function note(html: string, tone: 'info' | 'warn' = 'info'): string {
  return `<p class="note ${tone}" role="${tone === 'warn' ? 'alert' : 'note'}">${html}</p>`;
}

/** A value formatted by its metric's kind; tagged with `data-metric` and the raw value for tests. */
export function metricValue(spec: MetricSpec, v: number | null | undefined, tag?: string): string {
  const text = formatBySpec(spec, v);
  return tag ? `<span data-metric="${esc(tag)}" data-value="${v ?? ''}">${esc(text)}</span>` : esc(text);
}

export function formatBySpec(spec: MetricSpec, v: number | null | undefined): string {
  switch (spec.format) {
    case 'metric':
      return fmtMetric(v);
    case 'rate':
      return fmtPercent(v, 2);
    case 'count':
      return fmtInt(v);
    default:
      return assertUnreachable(spec.format);
  }
}

/**
 * A signed difference. Whether it is good depends on the metric (a lower MAE is better), so the arrow
 * follows the sign and the colour (plus a screen-reader word) says better or worse.
 */
export function delta(diff: number | null, better: boolean | null): string {
  const text = fmtSigned(diff);
  if (diff === null || better === null || text === MISSING) return `<span class="delta">${esc(text)}</span>`;
  return `<span class="delta ${better ? 'good' : 'bad'}"><span aria-hidden="true">${diff > 0 ? '▲' : '▼'}</span> ${esc(text)}<span class="sr"> (${better ? 'better' : 'worse'})</span></span>`;
}

/** A horizontal meter for a fraction in [0, 1] (coverage, age vs limit); `max` > 1 allows overflow. */
export function meter(fraction: number | null, label: string, tone: 'good' | 'bad' | 'neutral' = 'neutral'): string {
  if (fraction === null || !Number.isFinite(fraction)) return `<span class="muted">${MISSING}</span>`;
  const pct = Math.max(0, Math.min(1, fraction)) * 100;
  return `<span class="meter ${tone}" role="img" aria-label="${esc(label)}"><span style="width:${pct.toFixed(1)}%"></span></span>`;
}

export function chips(items: string[], max = 40): string {
  const shown = items.slice(0, max).map((s) => `<li>${esc(s)}</li>`);
  const more = items.length > max ? `<li class="more">+${items.length - max} more</li>` : '';
  return `<ul class="chips">${shown.join('')}${more}</ul>`;
}
