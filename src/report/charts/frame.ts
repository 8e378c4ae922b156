/**
 * The parts every chart shares: the accessible `<svg>` wrapper (`<title>` + `<desc>`, `role="img"`),
 * the plot area, axes with ticks, grid lines and labels, and a legend row above the plot.
 *
 * Charts are drawn in a fixed coordinate system (the `viewBox`) and scale with the page, so the text
 * sizes below are in viewBox units; CSS gives every chart `width: 100%`. Inline SVG in HTML needs no
 * `xmlns`, which keeps the page free of any URL (the offline test checks for none).
 */
import { esc, fmtTick } from '../format.js';
import { linearScale, px, type Scale, type Ticks } from './scale.js';

/**
 * Colours chosen for contrast on white (each ≥ 4.5:1, so they also pass as text) and to stay apart
 * for the common colour-vision deficiencies; dashes tell the series apart in greyscale print too.
 */
export const COLORS = {
  model: '#0b5cad',
  baseline: '#b34700',
  teacher: '#6b3fa0',
  reference: '#5f6670',
  best: '#1a7a3a',
  sample: '#0a7287',
  gather: '#b34700',
  step: '#4b3fb5',
  muted: '#8a9099',
  grid: '#e3e6ea',
  axis: '#4a5058',
  text: '#1f2328',
} as const;

export interface Margin {
  top: number;
  right: number;
  bottom: number;
  left: number;
}

export interface Plot {
  width: number;
  height: number;
  margin: Margin;
  /** inner plot area in viewBox units */
  x0: number;
  x1: number;
  y0: number;
  y1: number;
}

export function plotArea(width: number, height: number, margin: Margin): Plot {
  return { width, height, margin, x0: margin.left, x1: width - margin.right, y0: height - margin.bottom, y1: margin.top };
}

export interface SvgOptions {
  /** unique within the page: used for the `<title>`/`<desc>` ids */
  id: string;
  title: string;
  /** a sentence a screen reader reads instead of the picture: what the chart shows and its key values */
  desc: string;
  width: number;
  height: number;
  className?: string;
}

export function svg(opts: SvgOptions, body: string): string {
  const t = `${opts.id}-title`;
  const d = `${opts.id}-desc`;
  return (
    `<svg id="${esc(opts.id)}" class="chart${opts.className ? ` ${esc(opts.className)}` : ''}" viewBox="0 0 ${opts.width} ${opts.height}" role="img" aria-labelledby="${t} ${d}" preserveAspectRatio="xMidYMid meet">` +
    `<title id="${t}">${esc(opts.title)}</title><desc id="${d}">${esc(opts.desc)}</desc>${body}</svg>`
  );
}

export interface AxisOptions {
  plot: Plot;
  x: Ticks;
  y: Ticks;
  xLabel: string;
  yLabel: string;
  /** tick label formatter; default: decimals from the tick step */
  xFormat?: (v: number) => string;
  yFormat?: (v: number) => string;
}

/** Grid, axis lines, ticks and axis titles. Returns the scales for the plot's data. */
export function axes(o: AxisOptions): { body: string; sx: Scale; sy: Scale } {
  const { plot: p } = o;
  const sx = linearScale(o.x.domain, [p.x0, p.x1]);
  const sy = linearScale(o.y.domain, [p.y0, p.y1]);
  const xf = o.xFormat ?? ((v: number) => fmtTick(v, o.x.step));
  const yf = o.yFormat ?? ((v: number) => fmtTick(v, o.y.step));
  const parts: string[] = ['<g class="grid" aria-hidden="true">'];
  for (const t of o.y.ticks) parts.push(`<line x1="${px(p.x0)}" x2="${px(p.x1)}" y1="${px(sy(t))}" y2="${px(sy(t))}"/>`);
  for (const t of o.x.ticks) parts.push(`<line x1="${px(sx(t))}" x2="${px(sx(t))}" y1="${px(p.y0)}" y2="${px(p.y1)}"/>`);
  parts.push('</g><g class="axis">');
  parts.push(`<line x1="${px(p.x0)}" x2="${px(p.x1)}" y1="${px(p.y0)}" y2="${px(p.y0)}"/>`);
  parts.push(`<line x1="${px(p.x0)}" x2="${px(p.x0)}" y1="${px(p.y0)}" y2="${px(p.y1)}"/>`);
  for (const t of o.x.ticks) {
    parts.push(`<line x1="${px(sx(t))}" x2="${px(sx(t))}" y1="${px(p.y0)}" y2="${px(p.y0 + 4)}"/>`);
    parts.push(`<text x="${px(sx(t))}" y="${px(p.y0 + 17)}" text-anchor="middle">${esc(xf(t))}</text>`);
  }
  for (const t of o.y.ticks) {
    parts.push(`<line x1="${px(p.x0 - 4)}" x2="${px(p.x0)}" y1="${px(sy(t))}" y2="${px(sy(t))}"/>`);
    parts.push(`<text x="${px(p.x0 - 7)}" y="${px(sy(t) + 4)}" text-anchor="end">${esc(yf(t))}</text>`);
  }
  if (o.xLabel) parts.push(`<text class="axis-title" x="${px((p.x0 + p.x1) / 2)}" y="${px(p.y0 + 36)}" text-anchor="middle">${esc(o.xLabel)}</text>`);
  const yMid = (p.y0 + p.y1) / 2;
  if (o.yLabel) parts.push(`<text class="axis-title" x="14" y="${px(yMid)}" text-anchor="middle" transform="rotate(-90 14 ${px(yMid)})">${esc(o.yLabel)}</text>`);
  parts.push('</g>');
  return { body: parts.join(''), sx, sy };
}

export interface LegendItem {
  label: string;
  color: string;
  /** line swatch (with this dash pattern) or a filled box */
  shape: 'line' | 'box' | 'dot';
  dash?: string;
}

/** A legend row in the top margin, starting at the plot's left edge; wraps when it runs out of width. */
export function legend(items: LegendItem[], plot: Plot, y = 14): string {
  const parts: string[] = ['<g class="legend">'];
  let x = plot.x0;
  let row = 0;
  for (const it of items) {
    const w = 26 + it.label.length * 6.6 + 16;
    if (x + w > plot.width - 4 && x > plot.x0) {
      x = plot.x0;
      row++;
    }
    const cy = y + row * 16;
    if (it.shape === 'line') {
      parts.push(`<line x1="${px(x)}" x2="${px(x + 20)}" y1="${cy}" y2="${cy}" stroke="${it.color}" stroke-width="2.5"${it.dash ? ` stroke-dasharray="${it.dash}"` : ''}/>`);
    } else if (it.shape === 'dot') {
      parts.push(`<circle cx="${px(x + 10)}" cy="${cy}" r="4" fill="${it.color}"/>`);
    } else {
      parts.push(`<rect x="${px(x + 4)}" y="${cy - 6}" width="12" height="12" rx="2" fill="${it.color}"/>`);
    }
    parts.push(`<text x="${px(x + 26)}" y="${cy + 4}">${esc(it.label)}</text>`);
    x += w;
  }
  parts.push('</g>');
  return parts.join('');
}

/** How many legend rows `legend` will use (to size the top margin). */
export function legendRows(items: LegendItem[], plot: Pick<Plot, 'x0' | 'width'>): number {
  let x = plot.x0;
  let rows = items.length ? 1 : 0;
  for (const it of items) {
    const w = 26 + it.label.length * 6.6 + 16;
    if (x + w > plot.width - 4 && x > plot.x0) {
      x = plot.x0;
      rows++;
    }
    x += w;
  }
  return rows;
}

/** A chart's replacement when there is nothing to draw: still a labelled figure, never an empty box. */
export function emptyChart(opts: SvgOptions, message: string): string {
  return svg(opts, `<text class="empty" x="${opts.width / 2}" y="${opts.height / 2}" text-anchor="middle">${esc(message)}</text>`);
}
