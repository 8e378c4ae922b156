/**
 * Line charts: per-epoch curves (loss, validation metric, with the best epoch marked) and ROC / PR
 * curves (model vs baseline on the same unit axes, with the chance line as a reference).
 *
 * Every series is one `<path>` whose `d` is `M x,y L x,y …`, one command per data point (a missing
 * value starts a new `M` segment), tagged `data-series` and `data-n` so tests can count the points.
 */
import { esc, fmtMetric, fmtTick } from '../format.js';
import { axes, COLORS, emptyChart, legend, legendRows, plotArea, svg, type LegendItem, type Margin } from './frame.js';
import { fixedTicks, niceTicks, px, type Ticks } from './scale.js';

export interface Series {
  /** stable key, written as `data-series` */
  key: string;
  name: string;
  points: readonly (readonly [number, number | null])[];
  color: string;
  dash?: string;
  width?: number;
  /** a dot per point with a native tooltip (`<title>`), for short series like epochs */
  markers?: boolean;
  /** tooltip text of a point (markers only) */
  tooltip?: (x: number, y: number) => string;
}

export interface LineChartOptions {
  id: string;
  title: string;
  desc: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  /** fixed axis domains (ROC/PR use [0, 1]); otherwise nice bounds around the data */
  xDomain?: [number, number];
  yDomain?: [number, number];
  /** x values are integers (epochs): integer ticks */
  integerX?: boolean;
  /** start the y axis at zero (rates, counts), so small wiggles do not look like big changes */
  includeZero?: boolean;
  /** a vertical marker, e.g. the best epoch */
  marker?: { x: number; label: string };
  /** reference lines drawn under the series (dotted grey), listed in the legend */
  references?: { key: string; name: string; points: readonly (readonly [number, number])[] }[];
  width?: number;
  height?: number;
  yFormat?: (v: number) => string;
}

export function lineChart(o: LineChartOptions): string {
  const width = o.width ?? 560;
  const height = o.height ?? 320;
  const svgOpts = { id: o.id, title: o.title, desc: o.desc, width, height };
  const finitePts = o.series.flatMap((s) => s.points.filter((p): p is [number, number] => p[1] !== null && Number.isFinite(p[1]) && Number.isFinite(p[0])));
  if (finitePts.length === 0) return emptyChart(svgOpts, 'no data recorded');

  const items: LegendItem[] = [
    ...o.series.map((s): LegendItem => ({ label: s.name, color: s.color, shape: 'line', dash: s.dash })),
    ...(o.references ?? []).map((r): LegendItem => ({ label: r.name, color: COLORS.reference, shape: 'line', dash: '2 4' })),
  ];
  if (o.marker) items.push({ label: o.marker.label, color: COLORS.best, shape: 'line', dash: '5 4' });
  const xs = finitePts.map((p) => p[0]);
  const ys = finitePts.map((p) => p[1]);
  const xTicks: Ticks = o.xDomain ? fixedTicks(o.xDomain, 5) : integerAware(Math.min(...xs), Math.max(...xs), o.integerX);
  const yTicks: Ticks = o.yDomain ? fixedTicks(o.yDomain, 5) : niceTicks(o.includeZero ? Math.min(0, ...ys) : Math.min(...ys), Math.max(...ys), 5);
  // The left margin fits the widest y tick label, so labels never run into the axis title.
  const yFormat = o.yFormat ?? ((v: number) => fmtTick(v, yTicks.step));
  const widest = Math.max(...yTicks.ticks.map((t) => yFormat(t).length));
  const baseMargin: Margin = { top: 0, right: 18, bottom: 44, left: Math.max(58, 34 + widest * 7) };
  const rows = legendRows(items, { x0: baseMargin.left, width });
  const plot = plotArea(width, height, { ...baseMargin, top: 14 + rows * 16 + 8 });
  const { body: axisBody, sx, sy } = axes({ plot, x: xTicks, y: yTicks, xLabel: o.xLabel, yLabel: o.yLabel, yFormat });

  const parts: string[] = [axisBody, `<g class="plot">`];
  for (const r of o.references ?? []) {
    parts.push(`<path class="reference" data-series="${esc(r.key)}" data-n="${r.points.length}" d="${pathData(r.points, sx, sy)}" fill="none" stroke="${COLORS.reference}" stroke-width="1.5" stroke-dasharray="2 4"/>`);
  }
  if (o.marker && o.marker.x >= xTicks.domain[0] && o.marker.x <= xTicks.domain[1]) {
    const mx = px(sx(o.marker.x));
    parts.push(`<line class="marker" x1="${mx}" x2="${mx}" y1="${px(plot.y0)}" y2="${px(plot.y1)}" stroke="${COLORS.best}" stroke-width="1.5" stroke-dasharray="5 4"><title>${esc(o.marker.label)}</title></line>`);
  }
  for (const s of o.series) {
    const pts = s.points.filter((p) => Number.isFinite(p[0]));
    const n = pts.filter((p) => p[1] !== null && Number.isFinite(p[1])).length;
    parts.push(
      `<path class="series" data-series="${esc(s.key)}" data-n="${n}" d="${pathData(pts, sx, sy)}" fill="none" stroke="${s.color}" stroke-width="${s.width ?? 2.25}" stroke-linejoin="round" stroke-linecap="round"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>`,
    );
    if (s.markers) {
      parts.push(`<g class="points" data-series="${esc(s.key)}">`);
      for (const [x, y] of pts) {
        if (y === null || !Number.isFinite(y)) continue;
        const best = o.marker && x === o.marker.x;
        const tip = s.tooltip ? s.tooltip(x, y) : `${s.name}: ${fmtMetric(y)} at ${x}`;
        parts.push(
          `<circle cx="${px(sx(x))}" cy="${px(sy(y))}" r="${best ? 5 : 3.25}" fill="${best ? '#fff' : s.color}" stroke="${s.color}" stroke-width="${best ? 2.5 : 1}"><title>${esc(tip)}</title></circle>`,
        );
      }
      parts.push('</g>');
    }
  }
  parts.push('</g>', legend(items, plot));
  return svg(svgOpts, parts.join(''));
}

function integerAware(min: number, max: number, integer?: boolean): Ticks {
  if (!integer) return niceTicks(min, max, 6);
  // Epoch axes: start at the first epoch, end at the last; a single epoch still gets a small span.
  const lo = Math.floor(min);
  const hi = Math.max(Math.ceil(max), lo + 1);
  const t = niceTicks(lo, hi, Math.min(8, hi - lo), { integer: true });
  const ticks = t.ticks.filter((v) => v >= lo && v <= hi);
  if (ticks[0] !== lo) ticks.unshift(lo);
  return { domain: [lo, hi], ticks, step: t.step };
}

/** `M x,y L x,y …`; a null y ends the segment, the next finite point starts a new one with `M`. */
export function pathData(points: readonly (readonly [number, number | null])[], sx: (v: number) => number, sy: (v: number) => number): string {
  const out: string[] = [];
  let pen = false;
  for (const [x, y] of points) {
    if (y === null || !Number.isFinite(y) || !Number.isFinite(x)) {
      pen = false;
      continue;
    }
    out.push(`${pen ? 'L' : 'M'}${px(sx(x))},${px(sy(y))}`);
    pen = true;
  }
  return out.join(' ');
}

/** Number of points a `pathData` string draws (one per M/L command). */
export function countPathPoints(d: string): number {
  return (d.match(/[ML]/g) ?? []).length;
}
