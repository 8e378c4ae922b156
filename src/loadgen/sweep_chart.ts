/**
 * The latency-against-load chart of a `bench serve --sweep` as a self-contained SVG (no script, no
 * fonts to fetch), for READMEs and reports: offered rate on x, latency on a log-scale y (p50, p99,
 * p99.9), the p99 target as a dashed line, and each step's achieved rate written under its point so the
 * saturation shows where achieved falls behind offered.
 */
import type { SweepResult } from './bench_serve.js';

const W = 720;
const H = 360;
const PAD = { left: 64, right: 24, top: 36, bottom: 64 };

const SERIES = [
  { key: 'p50', label: 'p50', color: '#2b8cbe' },
  { key: 'p99', label: 'p99', color: '#e34a33' },
  { key: 'p999', label: 'p99.9', color: '#7a0177' },
] as const;

export function sweepChartSvg(r: SweepResult, title = `gnnctl serve: latency against offered load (${r.pool.size} requests of ${r.pool.min_bytes}–${r.pool.max_bytes} B)`): string {
  const steps = r.steps;
  if (steps.length === 0) throw new RangeError('a sweep chart needs at least one step');
  const xs = steps.map((s) => s.offered_qps);
  const xMax = Math.max(...xs) * 1.05;
  const values = steps.flatMap((s) => SERIES.map((k) => s.latency_ms[k.key])).filter((v) => Number.isFinite(v) && v > 0);
  const yMin = 10 ** Math.floor(Math.log10(Math.min(r.p99_target_ms, ...values)));
  const yMax = 10 ** Math.ceil(Math.log10(Math.max(r.p99_target_ms, ...values)));
  const px = (x: number) => PAD.left + (x / xMax) * (W - PAD.left - PAD.right);
  const py = (y: number) => PAD.top + (1 - (Math.log10(Math.max(y, yMin)) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin))) * (H - PAD.top - PAD.bottom);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${W / 2}" y="20" text-anchor="middle" font-size="13">${escape(title)}</text>`);
  // Decades on the y axis.
  for (let d = yMin; d <= yMax * 1.0001; d *= 10) {
    out.push(`<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${py(d).toFixed(1)}" y2="${py(d).toFixed(1)}" stroke="#ddd"/>`);
    out.push(`<text x="${PAD.left - 6}" y="${(py(d) + 4).toFixed(1)}" text-anchor="end">${d >= 1 ? d : d.toPrecision(1)} ms</text>`);
  }
  for (const x of xs) {
    out.push(`<line x1="${px(x).toFixed(1)}" x2="${px(x).toFixed(1)}" y1="${PAD.top}" y2="${H - PAD.bottom}" stroke="#f0f0f0"/>`);
    out.push(`<text x="${px(x).toFixed(1)}" y="${H - PAD.bottom + 16}" text-anchor="middle">${x}</text>`);
  }
  for (const s of steps) {
    out.push(`<text x="${px(s.offered_qps).toFixed(1)}" y="${H - PAD.bottom + 30}" text-anchor="middle" fill="${s.within_target ? '#555' : '#e34a33'}">${Math.round(s.achieved_qps)}</text>`);
  }
  out.push(`<text x="${PAD.left - 6}" y="${H - PAD.bottom + 16}" text-anchor="end" fill="#555">offered/s</text>`);
  out.push(`<text x="${PAD.left - 6}" y="${H - PAD.bottom + 30}" text-anchor="end" fill="#555">achieved/s</text>`);
  out.push(`<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${py(r.p99_target_ms).toFixed(1)}" y2="${py(r.p99_target_ms).toFixed(1)}" stroke="#e34a33" stroke-dasharray="6 4"/>`);
  out.push(`<text x="${W - PAD.right}" y="${(py(r.p99_target_ms) - 4).toFixed(1)}" text-anchor="end" fill="#e34a33">p99 target ${r.p99_target_ms} ms</text>`);
  SERIES.forEach((k, i) => {
    const pts = steps.filter((s) => Number.isFinite(s.latency_ms[k.key])).map((s) => `${px(s.offered_qps).toFixed(1)},${py(s.latency_ms[k.key]).toFixed(1)}`);
    out.push(`<polyline data-series="${k.label}" fill="none" stroke="${k.color}" stroke-width="2" points="${pts.join(' ')}"/>`);
    for (const p of pts) out.push(`<circle cx="${p.split(',')[0]}" cy="${p.split(',')[1]}" r="3" fill="${k.color}"/>`);
    out.push(`<rect x="${PAD.left + 10 + i * 80}" y="${PAD.top + 4}" width="12" height="3" fill="${k.color}"/><text x="${PAD.left + 26 + i * 80}" y="${PAD.top + 9}">${k.label}</text>`);
  });
  out.push(`<text x="${W / 2}" y="${H - 12}" text-anchor="middle" fill="#555">offered requests per second (achieved below; red: outside the target)</text>`);
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

function escape(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
