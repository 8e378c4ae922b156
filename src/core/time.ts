/**
 * The one parser of times written by people (config values, flags): ISO 8601 dates and date-times, with
 * `T` or a space, optional fractional seconds, and `Z` or a UTC offset (`+02:00`, `+0200`, `+02`). A
 * time without a zone is UTC, as the data's own timestamps are read. Results are epoch seconds.
 */
import { z } from 'zod';

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

/** Epoch seconds of an ISO date or date-time; null when the text is not one (or names no real day). */
export function parseIsoTime(text: string): number | null {
  const m = ISO.exec(text.trim());
  if (!m) return null;
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
  const ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  // Date.UTC rolls 2020-02-31 over into March: a date that does not exist is not a time.
  const check = new Date(ms);
  if (check.getUTCMonth() !== Number(mo) - 1 || check.getUTCDate() !== Number(d) || Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return null;
  let offset = 0;
  if (zone.toUpperCase() !== 'Z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const oh = Number(digits.slice(0, 2));
    const om = digits.length > 2 ? Number(digits.slice(2)) : 0;
    if (oh > 23 || om > 59) return null;
    offset = sign * (oh * 3600 + om * 60);
  }
  return ms / 1000 + (frac ? Number(frac) : 0) - offset;
}

export const TIME_HINT = 'write an ISO time such as 2020-09-15, 2020-09-15T08:00:00Z or 2020-09-15 10:00:00+02:00';

/** zod schema for an ISO time string: kept as written, rejected with the fix when it does not parse. */
export const isoTimeSchema = z.string().superRefine((v, ctx) => {
  if (parseIsoTime(v) === null) ctx.addIssue({ code: 'custom', message: `not a time (got "${v}"); ${TIME_HINT}` });
});
