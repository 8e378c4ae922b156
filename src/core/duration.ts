import { z } from 'zod';

const UNIT_SECONDS: Record<string, number> = {
  s: 1, sec: 1, secs: 1, second: 1, seconds: 1,
  m: 60, min: 60, mins: 60, minute: 60, minutes: 60,
  h: 3600, hr: 3600, hrs: 3600, hour: 3600, hours: 3600,
  d: 86400, day: 86400, days: 86400,
  w: 604800, week: 604800, weeks: 604800,
};

/** Parses "14 days", "12 hours", "1h", "30 minutes" into seconds; null when it is not a duration. */
export function parseDuration(text: string): number | null {
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*$/.exec(text);
  if (!m) return null;
  const unit = UNIT_SECONDS[m[2]!.toLowerCase()];
  return unit === undefined ? null : Number(m[1]) * unit;
}

/** zod schema for a duration written as text ("14 days") or a number of seconds; yields seconds. */
export const durationSchema = z.union([z.number(), z.string()]).transform((v, ctx) => {
  if (typeof v === 'number') return v;
  const s = parseDuration(v);
  if (s === null) {
    ctx.addIssue({ code: 'custom', message: `not a duration (got "${v}"); write e.g. "14 days", "12 hours", "30 minutes"` });
    return z.NEVER;
  }
  return s;
});

export function formatDuration(seconds: number): string {
  const abs = Math.abs(seconds);
  if (abs % 86400 === 0) return `${seconds / 86400} days`;
  if (abs % 3600 === 0) return `${seconds / 3600} hours`;
  if (abs % 60 === 0) return `${seconds / 60} minutes`;
  return `${seconds} seconds`;
}

/** ISO string of epoch seconds, without milliseconds when they are zero. */
export function isoSeconds(t: number): string {
  return new Date(t * 1000).toISOString().replace('.000Z', 'Z');
}
