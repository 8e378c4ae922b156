/**
 * An anomaly run's score over time: the snapshot score and the alert threshold τ as lines, alerting
 * snapshots as dots, and labelled fault windows as shaded bands behind them, so a reader sees at a glance
 * which faults the alerts fell in and which alerts fell outside any fault (false alarms).
 *
 * The score is drawn on a log scale when it spans more than two decades: one fault's spike would
 * otherwise flatten every other snapshot onto the axis.
 */
import { esc, fmtTick, fmtTime } from '../format.js';
import { axes, COLORS, emptyChart, legend, legendRows, plotArea, svg, type LegendItem } from './frame.js';
import { pathData } from './line.js';
import { niceStep, niceTicks, px } from './scale.js';

export interface ScoreTimelineOptions {
  id: string;
  title: string;
  desc: string;
  /** epoch seconds */
  ts: number[];
  score: number[];
  threshold: (number | null)[];
  alert: boolean[];
  /** epoch seconds, [start, end) */
  windows: { start: number; end: number; label: string }[];
  width?: number;
  height?: number;
}

const WINDOW_FILL = '#f3b8b2';

export function scoreTimeline(o: ScoreTimelineOptions): string {
  const width = o.width ?? 1100;
  const height = o.height ?? 340;
  const svgOpts = { id: o.id, title: o.title, desc: o.desc, width, height };
  const values = [...o.score, ...o.threshold.filter((t): t is number => t !== null)].filter(Number.isFinite);
  if (o.ts.length === 0 || values.length === 0) return emptyChart(svgOpts, 'no scores recorded');
  const positive = values.filter((v) => v > 0);
  const log = positive.length === values.length && Math.max(...positive) / Math.min(...positive) > 100;
  const f = (v: number): number => (log ? Math.log10(v) : v);
  const y = niceTicks(Math.min(...values.map(f)), Math.max(...values.map(f)), 5, log ? { integer: true } : {});
  const items: LegendItem[] = [
    { label: 'score', color: COLORS.model, shape: 'line' },
    { label: 'threshold τ', color: COLORS.baseline, shape: 'line', dash: '6 4' },
    { label: 'alert', color: COLORS.baseline, shape: 'dot' },
    { label: 'labelled fault window', color: WINDOW_FILL, shape: 'box' },
  ];
  const rows = legendRows(items, { x0: 64, width });
  const plot = plotArea(width, height, { top: 14 + rows * 16 + 8, right: 18, bottom: 44, left: 64 });
  const lo = Math.min(...o.ts);
  const hi = Math.max(lo + 1, Math.max(...o.ts));
  const step = timeStep(hi - lo);
  const ticks: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi; t += step) ticks.push(t);
  const { body, sx, sy } = axes({
    plot,
    x: { domain: [lo, hi], ticks, step },
    y,
    xLabel: 'time (UTC)',
    yLabel: log ? 'score (log scale)' : 'score',
    xFormat: (v) => new Date(v * 1000).toISOString().slice(5, 16).replace('T', ' '),
    yFormat: (v) => (log ? fmtTick(10 ** v, 10 ** v) : fmtTick(v, y.step)),
  });
  const parts = [body, '<g class="windows">'];
  for (const w of o.windows) {
    const a = Math.max(lo, w.start);
    const b = Math.min(hi, w.end);
    if (b < a) continue;
    parts.push(
      `<rect class="fault-window" x="${px(sx(a))}" y="${px(plot.y1)}" width="${px(Math.max(2, sx(b) - sx(a)))}" height="${px(plot.y0 - plot.y1)}" fill="${WINDOW_FILL}" fill-opacity="0.55"><title>${esc(w.label)}</title></rect>`,
    );
  }
  parts.push('</g><g class="plot">');
  const pts = (vs: (number | null)[]): [number, number | null][] => o.ts.map((t, i) => [t, vs[i] === null || vs[i] === undefined || !(log ? vs[i]! > 0 : true) ? null : f(vs[i]!)]);
  parts.push(`<path class="series" data-series="threshold" data-n="${o.threshold.filter((t) => t !== null).length}" d="${pathData(pts(o.threshold), sx, sy)}" fill="none" stroke="${COLORS.baseline}" stroke-width="1.75" stroke-dasharray="6 4"/>`);
  parts.push(`<path class="series" data-series="score" data-n="${o.score.length}" d="${pathData(pts(o.score), sx, sy)}" fill="none" stroke="${COLORS.model}" stroke-width="1.75" stroke-linejoin="round"/>`);
  const alerts = o.ts.flatMap((t, i) => (o.alert[i] ? [i] : []));
  parts.push(`<g class="alerts" data-n="${alerts.length}">`);
  for (const i of alerts) {
    const v = o.score[i]!;
    if (!Number.isFinite(v) || (log && v <= 0)) continue;
    const tip = `alert at ${fmtTime(new Date(o.ts[i]! * 1000).toISOString())}: score ${v.toPrecision(4)}${o.threshold[i] !== null ? ` > τ ${o.threshold[i]!.toPrecision(4)}` : ''}`;
    parts.push(`<circle cx="${px(sx(o.ts[i]!))}" cy="${px(sy(f(v)))}" r="3.5" fill="${COLORS.baseline}" stroke="#fff" stroke-width="1"><title>${esc(tip)}</title></circle>`);
  }
  parts.push('</g></g>', legend(items, plot));
  return svg(svgOpts, parts.join(''));
}

/** A tick step in seconds that reads as a clock: minutes, hours or days. */
function timeStep(span: number): number {
  for (const s of [60, 300, 600, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400]) if (span / s <= 10) return s;
  return niceStep(span / 86400, 8) * 86400;
}
