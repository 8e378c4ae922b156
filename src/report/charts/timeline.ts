/**
 * A time axis with point events on labelled lanes (embedding snapshots, an export's embedding anchor) and
 * vertical lines for split anchors (train from, validation, test, end of data). Used by the embedding
 * freshness section to show which snapshot each split could read.
 */
import { esc, fmtDate, fmtTime } from '../format.js';
import { axes, COLORS, emptyChart, legend, legendRows, plotArea, svg, type LegendItem } from './frame.js';
import { niceStep, px } from './scale.js';

export interface TimelineLane {
  key: string;
  label: string;
  color: string;
  /** ISO times */
  points: { time: string; tip: string }[];
}

export interface TimelineOptions {
  id: string;
  title: string;
  desc: string;
  lanes: TimelineLane[];
  /** vertical lines across all lanes */
  lines: { key: string; label: string; time: string; color: string }[];
  width?: number;
}

const DAY = 86400;

export function timeline(o: TimelineOptions): string {
  const width = o.width ?? 960;
  const laneH = 30;
  const secs = (iso: string): number => Date.parse(iso) / 1000;
  const all = [...o.lanes.flatMap((l) => l.points.map((p) => secs(p.time))), ...o.lines.map((l) => secs(l.time))].filter(Number.isFinite);
  const items: LegendItem[] = [
    ...o.lanes.map((l): LegendItem => ({ label: l.label, color: l.color, shape: 'dot' })),
    ...o.lines.map((l): LegendItem => ({ label: l.label, color: l.color, shape: 'line', dash: '5 3' })),
  ];
  const left = Math.max(90, 20 + Math.max(...o.lanes.map((l) => l.label.length)) * 7);
  const rows = legendRows(items, { x0: left, width });
  const height = 14 + rows * 16 + 16 + o.lanes.length * laneH + 44;
  const svgOpts = { id: o.id, title: o.title, desc: o.desc, width, height };
  if (all.length === 0) return emptyChart(svgOpts, 'no times recorded');
  const plot = plotArea(width, height, { top: 14 + rows * 16 + 16, right: 40, bottom: 44, left });

  let lo = Math.min(...all);
  let hi = Math.max(...all);
  const pad = Math.max(DAY, (hi - lo) * 0.04);
  lo -= pad;
  hi += pad;
  const stepDays = Math.max(1, niceStep((hi - lo) / DAY, 6));
  const step = stepDays * DAY;
  const ticks: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi; t += step) ticks.push(t);
  const { body, sx } = axes({
    plot,
    x: { domain: [lo, hi], ticks, step },
    y: { domain: [0, o.lanes.length], ticks: [], step: 1 },
    xLabel: 'time (UTC)',
    yLabel: '',
    xFormat: (v) => fmtDate(new Date(v * 1000).toISOString()),
  });
  const parts = [body];
  o.lanes.forEach((lane, i) => {
    const cy = plot.y1 + i * laneH + laneH / 2;
    parts.push(`<text class="lane-label" x="${px(plot.x0 - 10)}" y="${px(cy + 4)}" text-anchor="end">${esc(lane.label)}</text>`);
    parts.push(`<line x1="${px(plot.x0)}" x2="${px(plot.x1)}" y1="${px(cy)}" y2="${px(cy)}" stroke="${COLORS.grid}" stroke-width="1"/>`);
    parts.push(`<g class="lane" data-lane="${esc(lane.key)}" data-n="${lane.points.length}">`);
    for (const p of lane.points) {
      const t = secs(p.time);
      if (!Number.isFinite(t)) continue;
      parts.push(`<circle cx="${px(sx(t))}" cy="${px(cy)}" r="5" fill="${lane.color}" stroke="#fff" stroke-width="1.5"><title>${esc(`${p.tip} (${fmtTime(p.time)})`)}</title></circle>`);
    }
    parts.push('</g>');
  });
  for (const l of o.lines) {
    const t = secs(l.time);
    if (!Number.isFinite(t)) continue;
    const x = px(sx(t));
    parts.push(`<line class="anchor-line" data-line="${esc(l.key)}" x1="${x}" x2="${x}" y1="${px(plot.y0)}" y2="${px(plot.y1 - 6)}" stroke="${l.color}" stroke-width="1.75" stroke-dasharray="5 3"><title>${esc(`${l.label}: ${fmtTime(l.time)}`)}</title></line>`);
  }
  parts.push(legend(items, plot));
  return svg(svgOpts, parts.join(''));
}
