/**
 * Text helpers for the report: HTML escaping and number, size, time and duration formatting. Every
 * string that comes from a run folder passes through `esc` before it reaches the page.
 */

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML/SVG element content and attribute values (always double-quoted). */
export function esc(value: unknown): string {
  return String(value).replace(/[&<>"']/g, (c) => ENTITIES[c]!);
}

/** The stand-in for a value a run did not record (old run, skipped baseline, NaN AUROC of a one-class split). */
export const MISSING = '—';

function finite(x: number | null | undefined): x is number {
  return typeof x === 'number' && Number.isFinite(x);
}

/** A metric in [0, 1] or a loss: 4 decimals, as metrics.json stores them. */
export function fmtMetric(x: number | null | undefined, digits = 4): string {
  return finite(x) ? x.toFixed(digits) : MISSING;
}

/** A signed difference: "+0.0481", "−0.0120" (a real minus sign, which reads better than a hyphen). */
export function fmtSigned(x: number | null | undefined, digits = 4): string {
  if (!finite(x)) return MISSING;
  const s = Math.abs(x).toFixed(digits);
  if (Number(s) === 0) return (0).toFixed(digits);
  return x > 0 ? `+${s}` : `\u2212${s}`;
}

/** A fraction as a percentage: 0.0453 → "4.53 %"; `signed` adds "+" for positive values. */
export function fmtPercent(x: number | null | undefined, digits = 1, signed = false): string {
  if (!finite(x)) return MISSING;
  const v = x * 100;
  const s = Math.abs(v).toFixed(digits);
  const sign = v < 0 && Number(s) !== 0 ? '\u2212' : signed && v > 0 && Number(s) !== 0 ? '+' : '';
  return `${sign}${s}\u202f%`;
}

/** An integer count with thousands separators: 185759 → "185,759". */
export function fmtInt(x: number | null | undefined): string {
  if (!finite(x)) return MISSING;
  return Math.round(x).toLocaleString('en-US');
}

/** Bytes in binary units: 21016 → "20.5 KiB". */
export function fmtBytes(x: number | null | undefined): string {
  if (!finite(x)) return MISSING;
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = x;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v}\u00a0B` : `${v.toFixed(v >= 100 ? 0 : 1)}\u00a0${units[u]}`;
}

/** Milliseconds: "0.316 ms", "9.90 ms", "120 ms". */
export function fmtMs(x: number | null | undefined): string {
  if (!finite(x)) return MISSING;
  return `${x >= 100 ? x.toFixed(0) : x.toPrecision(3)}\u00a0ms`;
}

/** Seconds as a person reads them: "0.65 s", "52.1 s", "4 min 18 s", "2 h 05 min", "14 days". */
export function fmtSeconds(x: number | null | undefined): string {
  if (!finite(x)) return MISSING;
  const abs = Math.abs(x);
  const sign = x < 0 ? '\u2212' : '';
  if (abs < 10) return `${sign}${abs.toFixed(2)}\u00a0s`;
  if (abs < 60) return `${sign}${abs.toFixed(1)}\u00a0s`;
  if (abs < 3600) return `${sign}${Math.floor(abs / 60)}\u00a0min ${String(Math.round(abs % 60)).padStart(2, '0')}\u00a0s`;
  if (abs < 2 * 86400) return `${sign}${Math.floor(abs / 3600)}\u00a0h ${String(Math.round((abs % 3600) / 60)).padStart(2, '0')}\u00a0min`;
  return `${sign}${fmtAge(abs)}`;
}

/** A long span (an embedding's age, an offset): "14 days", "12 hours", "3.5 days", "6.2 years". */
export function fmtAge(seconds: number | null | undefined): string {
  if (!finite(seconds)) return MISSING;
  const abs = Math.abs(seconds);
  const sign = seconds < 0 ? '\u2212' : '';
  const pick = (v: number, unit: string): string => `${sign}${Number.isInteger(v) ? v : v.toFixed(1)}\u00a0${unit}${v === 1 ? '' : 's'}`;
  // The largest unit that divides the span exactly or fits at least twice: 3600 → "1 hour", 5400 → "90 minutes".
  const units: [number, string][] = [[365.25 * 86400, 'year'], [86400, 'day'], [3600, 'hour'], [60, 'minute']];
  for (const [u, name] of units) {
    if (abs >= u && (abs % u === 0 || abs >= 2 * u)) return pick(Math.round((abs / u) * 10) / 10, name);
  }
  return pick(Math.round(abs), 'second');
}

/** An ISO time as "2020-09-09 00:00 UTC" (seconds only when they are not zero). */
export function fmtTime(iso: string | null | undefined): string {
  if (!iso) return MISSING;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const s = d.toISOString();
  const secs = s.slice(17, 19);
  return `${s.slice(0, 10)} ${s.slice(11, 16)}${secs === '00' ? '' : `:${secs}`} UTC`;
}

/** Just the date of an ISO time: "2020-09-09". */
export function fmtDate(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toISOString().slice(0, 10);
}

/** Tick labels on a chart axis: no more decimals than the tick step needs. */
export function fmtTick(x: number, step: number): string {
  if (Math.abs(x) < step * 1e-9) return '0';
  if (Math.abs(x) >= 1e6) return x.toExponential(1);
  const decimals = Math.max(0, Math.min(6, -Math.floor(Math.log10(step) + 1e-9)));
  return Math.abs(x) >= 1000 && decimals === 0 ? fmtInt(x) : x.toFixed(decimals);
}
