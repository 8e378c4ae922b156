/**
 * Linear scales and "nice" axis ticks (steps of 1, 2 or 5 × 10^k) for the report's SVG charts.
 */

export interface Scale {
  (v: number): number;
  domain: [number, number];
  range: [number, number];
}

/** Maps `domain` linearly onto `range` (pixels; y ranges run bottom → top, so they are usually reversed). */
export function linearScale(domain: [number, number], range: [number, number]): Scale {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  const k = d1 === d0 ? 0 : (r1 - r0) / (d1 - d0);
  const f = ((v: number) => r0 + (v - d0) * k) as Scale;
  f.domain = domain;
  f.range = range;
  return f;
}

/** A 1, 2 or 5 × 10^k step that splits `span` into about `count` intervals. */
export function niceStep(span: number, count: number): number {
  if (!(span > 0) || !Number.isFinite(span)) return 1;
  const raw = span / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const norm = raw / mag;
  const unit = norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10;
  return unit * mag;
}

export interface Ticks {
  domain: [number, number];
  ticks: number[];
  step: number;
}

/**
 * Widens [min, max] to tick boundaries and lists the ticks. A degenerate range (one value, or none)
 * is widened around the value so a flat curve still gets an axis. `integer` keeps steps ≥ 1 (epochs).
 */
export function niceTicks(min: number, max: number, count = 5, opts: { integer?: boolean; clamp?: [number, number] } = {}): Ticks {
  let lo = Number.isFinite(min) ? min : 0;
  let hi = Number.isFinite(max) ? max : 1;
  if (lo > hi) [lo, hi] = [hi, lo];
  if (hi - lo < 1e-12) {
    const pad = Math.abs(lo) * 0.1 || 1;
    lo -= pad;
    hi += pad;
  }
  let step = niceStep(hi - lo, count);
  if (opts.integer) step = Math.max(1, Math.round(step));
  let d0 = Math.floor(lo / step + 1e-9) * step;
  let d1 = Math.ceil(hi / step - 1e-9) * step;
  if (opts.clamp) {
    d0 = Math.max(d0, opts.clamp[0]);
    d1 = Math.min(d1, opts.clamp[1]);
  }
  const ticks: number[] = [];
  for (let i = 0, v = d0; v <= d1 + step * 1e-6 && i < 1000; i++, v = d0 + i * step) ticks.push(roundTo(v, step));
  return { domain: [d0, d1], ticks, step };
}

/** Ticks for a fixed domain (e.g. [0, 1] for ROC axes). */
export function fixedTicks(domain: [number, number], count = 5): Ticks {
  const step = niceStep(domain[1] - domain[0], count);
  const ticks: number[] = [];
  const first = Math.ceil(domain[0] / step - 1e-9) * step;
  for (let i = 0, v = first; v <= domain[1] + step * 1e-6 && i < 1000; i++, v = first + i * step) ticks.push(roundTo(v, step));
  return { domain, ticks, step };
}

/** Removes floating-point noise (0.30000000000000004) relative to the step. */
function roundTo(v: number, step: number): number {
  const decimals = Math.max(0, -Math.floor(Math.log10(step)) + 2);
  return Number(v.toFixed(Math.min(12, decimals)));
}

/** Short number for SVG coordinates: two decimals are well below a pixel. */
export function px(v: number): string {
  return String(Math.round(v * 100) / 100);
}
