/**
 * Bar charts: horizontal bars with a label and value per bar (ablations, student vs teacher size), and
 * vertical stacked bars per category (time per epoch split into sample / gather / step).
 */
import { esc } from '../format.js';
import { axes, COLORS, emptyChart, legend, legendRows, plotArea, svg, type LegendItem } from './frame.js';
import { fixedTicks, niceTicks, px } from './scale.js';

export interface Bar {
  key: string;
  label: string;
  value: number | null;
  color: string;
  /** drawn lighter (e.g. an ablation); the full colour marks the headline bars */
  light?: boolean;
  /** extra text after the value, e.g. "(−0.125 vs distilled)" */
  note?: string;
}

export interface BarChartOptions {
  id: string;
  title: string;
  desc: string;
  bars: Bar[];
  xLabel: string;
  format: (v: number) => string;
  /** axis domain; default [0, max] with nice ticks */
  domain?: [number, number];
  /** a vertical reference line, e.g. AUROC 0.5 = chance */
  reference?: { value: number; label: string };
  width?: number;
}

export function barChart(o: BarChartOptions): string {
  const width = o.width ?? 560;
  const rowH = 34;
  const labelW = Math.min(200, 16 + Math.max(...o.bars.map((b) => b.label.length)) * 7);
  const valueW = 16 + Math.max(...o.bars.map((b) => ((b.value === null ? '—' : o.format(b.value)) + (b.note ? ` ${b.note}` : '')).length)) * 6.6;
  const height = 16 + o.bars.length * rowH + 48;
  const svgOpts = { id: o.id, title: o.title, desc: o.desc, width, height };
  const values = o.bars.map((b) => b.value).filter((v): v is number => v !== null && Number.isFinite(v));
  if (values.length === 0) return emptyChart(svgOpts, 'no values recorded');
  const plot = plotArea(width, height, { top: 12, right: valueW, bottom: 44, left: labelW });
  const x = o.domain ? fixedTicks(o.domain, 5) : niceTicks(0, Math.max(...values), 5);
  const y = { domain: [0, o.bars.length] as [number, number], ticks: [], step: 1 };
  const { body, sx } = axes({ plot, x, y, xLabel: o.xLabel, yLabel: '' });
  const parts = [body];
  o.bars.forEach((b, i) => {
    const top = plot.y1 + i * rowH + 6;
    const h = rowH - 12;
    parts.push(`<text class="bar-label" x="${px(plot.x0 - 8)}" y="${px(top + h / 2 + 4)}" text-anchor="end">${esc(b.label)}</text>`);
    if (b.value === null || !Number.isFinite(b.value)) {
      parts.push(`<text class="bar-value" x="${px(plot.x0 + 6)}" y="${px(top + h / 2 + 4)}">not recorded</text>`);
      return;
    }
    const v = Math.max(x.domain[0], Math.min(x.domain[1], b.value));
    const w = Math.max(1, sx(v) - plot.x0);
    parts.push(
      `<rect class="bar" data-bar="${esc(b.key)}" data-value="${b.value}" x="${px(plot.x0)}" y="${px(top)}" width="${px(w)}" height="${h}" rx="2" fill="${b.color}"${b.light ? ' fill-opacity="0.55"' : ''}><title>${esc(`${b.label}: ${o.format(b.value)}${b.note ? ` ${b.note}` : ''}`)}</title></rect>`,
    );
    parts.push(`<text class="bar-value" x="${px(plot.x0 + w + 6)}" y="${px(top + h / 2 + 4)}">${esc(o.format(b.value))}${b.note ? `<tspan class="note"> ${esc(b.note)}</tspan>` : ''}</text>`);
  });
  if (o.reference && o.reference.value >= x.domain[0] && o.reference.value <= x.domain[1]) {
    const rx = px(sx(o.reference.value));
    parts.push(`<line x1="${rx}" x2="${rx}" y1="${px(plot.y0)}" y2="${px(plot.y1 - 4)}" stroke="${COLORS.reference}" stroke-width="1.5" stroke-dasharray="2 4"><title>${esc(o.reference.label)}</title></line>`);
  }
  return svg(svgOpts, parts.join(''));
}

export interface StackedBarOptions {
  id: string;
  title: string;
  desc: string;
  /** one bar per category (x axis) */
  categories: { key: string; label: string }[];
  /** stacked bottom to top; values[i] belongs to categories[i] */
  stacks: { key: string; name: string; color: string; values: number[] }[];
  xLabel: string;
  yLabel: string;
  format: (v: number) => string;
  /** highlights one category (e.g. the best epoch) */
  highlight?: { key: string; label: string };
  width?: number;
  height?: number;
}

export function stackedBarChart(o: StackedBarOptions): string {
  const width = o.width ?? 560;
  const height = o.height ?? 300;
  const svgOpts = { id: o.id, title: o.title, desc: o.desc, width, height };
  if (o.categories.length === 0) return emptyChart(svgOpts, 'no epochs recorded');
  const items: LegendItem[] = o.stacks.map((s) => ({ label: s.name, color: s.color, shape: 'box' }));
  if (o.highlight) items.push({ label: o.highlight.label, color: COLORS.best, shape: 'line', dash: '5 4' });
  const rows = legendRows(items, { x0: 58, width });
  const plot = plotArea(width, height, { top: 14 + rows * 16 + 8, right: 18, bottom: 44, left: 58 });
  const totals = o.categories.map((_, i) => o.stacks.reduce((a, s) => a + (s.values[i] ?? 0), 0));
  const y = niceTicks(0, Math.max(...totals), 5);
  const n = o.categories.length;
  const x = { domain: [0, n] as [number, number], ticks: [] as number[], step: 1 };
  const { body, sx, sy } = axes({ plot, x, y, xLabel: o.xLabel, yLabel: o.yLabel });
  const parts = [body];
  const slot = (plot.x1 - plot.x0) / n;
  const barW = Math.max(2, Math.min(48, slot * 0.7));
  const labelEvery = Math.ceil(n / 20);
  o.categories.forEach((c, i) => {
    const cx = sx(i + 0.5);
    let acc = 0;
    parts.push(`<g class="stack" data-category="${esc(c.key)}">`);
    for (const s of o.stacks) {
      const v = s.values[i] ?? 0;
      const yTop = sy(acc + v);
      const h = sy(acc) - yTop;
      acc += v;
      if (h <= 0) continue;
      parts.push(`<rect x="${px(cx - barW / 2)}" y="${px(yTop)}" width="${px(barW)}" height="${px(h)}" fill="${s.color}"><title>${esc(`${c.label} · ${s.name}: ${o.format(v)}`)}</title></rect>`);
    }
    parts.push('</g>');
    if (i % labelEvery === 0 || i === n - 1) parts.push(`<text class="tick" x="${px(cx)}" y="${px(plot.y0 + 17)}" text-anchor="middle">${esc(c.key)}</text>`);
    if (o.highlight?.key === c.key) {
      parts.push(`<rect class="highlight" x="${px(cx - barW / 2 - 3)}" y="${px(sy(totals[i]!) - 3)}" width="${px(barW + 6)}" height="${px(plot.y0 - sy(totals[i]!) + 3)}" fill="none" stroke="${COLORS.best}" stroke-width="1.5" stroke-dasharray="5 4"><title>${esc(o.highlight.label)}</title></rect>`);
    }
  });
  parts.push(legend(items, plot));
  return svg(svgOpts, parts.join(''));
}
