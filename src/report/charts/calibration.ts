/**
 * Reliability diagram: mean predicted probability (x) against the observed positive rate (y) per
 * equal-width probability bin, with the diagonal of perfect calibration; below it, on the same x axis,
 * the number of test examples per bin on a log scale (the bins of a rare-event task are very uneven, and
 * a bin with a handful of examples is noisy, which the reader needs to see next to the point).
 */
import { esc, fmtInt, fmtMetric } from '../format.js';
import type { CalibrationBin } from '../model.js';
import { axes, COLORS, emptyChart, legend, plotArea, svg, type LegendItem } from './frame.js';
import { fixedTicks, linearScale, px } from './scale.js';
import { pathData } from './line.js';

export interface ReliabilityOptions {
  id: string;
  title: string;
  desc: string;
  bins: CalibrationBin[];
  /** number of equal-width bins the trainer used (`task/metrics.ts` calibration: 10) */
  binCount?: number;
  width?: number;
}

export function reliabilityDiagram(o: ReliabilityOptions): string {
  const width = o.width ?? 560;
  const topH = 300;
  const histH = 130;
  const height = topH + histH + 36;
  const svgOpts = { id: o.id, title: o.title, desc: o.desc, width, height };
  if (o.bins.length === 0) return emptyChart(svgOpts, 'no calibration bins recorded');
  const nb = o.binCount ?? 10;

  const items: LegendItem[] = [
    { label: 'model (mean per bin)', color: COLORS.model, shape: 'line' },
    { label: 'perfect calibration', color: COLORS.reference, shape: 'line', dash: '2 4' },
  ];
  const top = plotArea(width, topH, { top: 34, right: 18, bottom: 30, left: 58 });
  const unit = fixedTicks([0, 1], 5);
  const a = axes({ plot: top, x: unit, y: unit, xLabel: '', yLabel: 'observed positive rate' });
  const parts: string[] = [a.body];
  parts.push(`<path class="reference" data-series="diagonal" data-n="2" d="${pathData([[0, 0], [1, 1]], a.sx, a.sy)}" fill="none" stroke="${COLORS.reference}" stroke-width="1.5" stroke-dasharray="2 4"/>`);
  const pts = o.bins.map((b) => [b.predicted, b.observed] as [number, number]);
  parts.push(`<path class="series" data-series="calibration" data-n="${pts.length}" d="${pathData(pts, a.sx, a.sy)}" fill="none" stroke="${COLORS.model}" stroke-width="2.25" stroke-linejoin="round"/>`);
  parts.push('<g class="points" data-series="calibration">');
  for (const b of o.bins) {
    const tip = `probability ${binRange(b.bin, nb)}: mean predicted ${fmtMetric(b.predicted)}, observed ${fmtMetric(b.observed)}, ${fmtInt(b.count)} examples`;
    parts.push(`<circle cx="${px(a.sx(b.predicted))}" cy="${px(a.sy(b.observed))}" r="4" fill="${COLORS.model}" stroke="#fff" stroke-width="1"><title>${esc(tip)}</title></circle>`);
  }
  parts.push('</g>', legend(items, top));

  // Counts panel below, sharing the x axis: bars span their bin, heights on log10(count).
  const hist = plotArea(width, height, { top: topH + 10, right: 18, bottom: 44, left: 58 });
  const maxLog = Math.max(1, Math.ceil(Math.log10(Math.max(...o.bins.map((b) => b.count), 1))));
  const yTicks = { domain: [0, maxLog] as [number, number], ticks: Array.from({ length: maxLog + 1 }, (_, i) => i).filter((i) => maxLog <= 3 || i % 2 === 0), step: 1 };
  const h = axes({ plot: hist, x: unit, y: yTicks, xLabel: 'mean predicted probability', yLabel: 'examples', yFormat: (v) => fmtInt(10 ** v) });
  parts.push(h.body, '<g class="counts">');
  const sy = linearScale([0, maxLog], [hist.y0, hist.y1]);
  for (const b of o.bins) {
    const x0 = h.sx(b.bin / nb) + 1.5;
    const x1 = h.sx((b.bin + 1) / nb) - 1.5;
    const yTop = b.count > 0 ? sy(Math.log10(Math.max(1, b.count))) : hist.y0;
    const hh = Math.max(1.5, hist.y0 - yTop);
    parts.push(
      `<rect data-bin="${b.bin}" data-count="${b.count}" x="${px(x0)}" y="${px(hist.y0 - hh)}" width="${px(x1 - x0)}" height="${px(hh)}" fill="${COLORS.muted}"><title>${esc(`probability ${binRange(b.bin, nb)}: ${fmtInt(b.count)} examples`)}</title></rect>`,
    );
    // The label sits above its bar, or inside it (white) when the bar reaches the top of the panel.
    const above = hist.y0 - hh - 4;
    const inside = above < hist.y1 + 8;
    parts.push(`<text class="count${inside ? ' inside' : ''}" x="${px((x0 + x1) / 2)}" y="${px(inside ? hist.y0 - hh + 12 : above)}" text-anchor="middle">${esc(compactCount(b.count))}</text>`);
  }
  parts.push('</g>');
  return svg(svgOpts, parts.join(''));
}

export function binRange(bin: number, bins: number): string {
  return `${(bin / bins).toFixed(1)}–${((bin + 1) / bins).toFixed(1)}`;
}

/** 7157 → "7.2k": bar labels must fit a bin's width. */
function compactCount(n: number): string {
  if (n >= 1e6) return `${(n / 1e6).toFixed(n >= 1e7 ? 0 : 1)}M`;
  if (n >= 1e4) return `${Math.round(n / 1e3)}k`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}k`;
  return String(n);
}
