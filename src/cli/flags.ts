/**
 * Typed parsers for every flag value: integers, numbers, durations, byte sizes, times and shards. Each
 * takes what commander (or a test calling a command directly) passes and returns the typed value, or
 * throws a UsageError (exit 2) that names the flag, quotes the value and says what to write instead.
 * `main.ts` attaches them to the options, so a bad value stops the command before any work starts.
 */
import { InvalidArgumentError } from 'commander';
import { parseDuration } from '../core/duration.js';
import { UsageError } from '../core/errors.js';
import { parseIsoTime, TIME_HINT } from '../core/time.js';

export type FlagParser<T> = (value: unknown) => T;

function fail(flag: string, value: unknown, expected: string): never {
  throw new UsageError(`${flag} must be ${expected} (got "${String(value)}")`, { value });
}

/** An integer in [min, max]; "1e3" and "2.0" are refused: a count is written as digits. */
export function intFlag(flag: string, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER): FlagParser<number> {
  return (v) => {
    const n = typeof v === 'number' ? v : /^\s*-?\d+\s*$/.test(String(v)) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      const range = max === Number.MAX_SAFE_INTEGER ? `≥ ${min}` : `in ${min}..${max}`;
      fail(flag, v, `an integer ${range}`);
    }
    return n;
  };
}

/** A finite number; `above` is exclusive, `min`/`max` inclusive. */
export function numberFlag(flag: string, bounds: { above?: number; min?: number; max?: number } = {}): FlagParser<number> {
  return (v) => {
    const n = typeof v === 'number' ? v : String(v).trim() === '' ? NaN : Number(v);
    const ok = Number.isFinite(n) && (bounds.above === undefined || n > bounds.above) && (bounds.min === undefined || n >= bounds.min) && (bounds.max === undefined || n <= bounds.max);
    if (!ok) {
      const parts = [bounds.above !== undefined ? `> ${bounds.above}` : '', bounds.min !== undefined ? `≥ ${bounds.min}` : '', bounds.max !== undefined ? `≤ ${bounds.max}` : ''].filter(Boolean);
      fail(flag, v, `a number${parts.length ? ` ${parts.join(' and ')}` : ''}`);
    }
    return n;
  };
}

/** Seconds from a number ("2", "0.5") or a duration ("500ms", "2s", "1 minute"); never negative. */
export function secondsFlag(flag: string): FlagParser<number> {
  return (v) => {
    if (typeof v === 'number' && v >= 0) return v;
    const text = String(v).trim();
    const ms = /^(\d+(?:\.\d+)?)\s*ms$/.exec(text);
    const s = ms ? Number(ms[1]) / 1000 : /^\d+(?:\.\d+)?$/.test(text) ? Number(text) : parseDuration(text);
    if (s === null || !(s >= 0)) fail(flag, v, 'a number of seconds or a duration like "500ms", "2s" or "1 minute"');
    return s;
  };
}

/** A positive duration: seconds, or "90s", "10m", "10 minutes", "1h" (a time budget). */
export function budgetFlag(flag: string): FlagParser<number> {
  const seconds = secondsFlag(flag);
  return (v) => {
    let s: number;
    try {
      s = seconds(v);
    } catch {
      fail(flag, v, 'a positive duration like "10m", "90s", "1h" or a number of seconds');
    }
    if (!(s > 0)) fail(flag, v, 'a positive duration like "10m", "90s", "1h" or a number of seconds');
    return s;
  };
}

const BYTE_UNITS: Record<string, number> = { b: 1, kb: 1e3, kib: 2 ** 10, k: 2 ** 10, mb: 1e6, mib: 2 ** 20, m: 2 ** 20, gb: 1e9, gib: 2 ** 30, g: 2 ** 30 };

/** Bytes from a number or a size with a unit ("4MiB", "512KiB", "8MB"). */
export function bytesFlag(flag: string): FlagParser<number> {
  return (v) => {
    if (typeof v === 'number' && Number.isInteger(v) && v >= 1) return v;
    const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(String(v));
    const unit = m ? BYTE_UNITS[(m[2] || 'b').toLowerCase()] : undefined;
    if (!m || unit === undefined || Number(m[1]) * unit < 1) fail(flag, v, 'a size like 4194304, "4MiB" or "8MB"');
    return Math.floor(Number(m[1]) * unit);
  };
}

/**
 * `--external-data`: auto | always | never, or a size ("16MiB": every initializer at least that large).
 * A number (from a test calling the command) is a size in bytes.
 */
export function externalDataFlag(flag: string): FlagParser<'auto' | 'always' | 'never' | number> {
  const size = bytesFlag(flag);
  return (v) => {
    if (v === 'auto' || v === 'always' || v === 'never') return v;
    if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v;
    try {
      return size(v);
    } catch {
      fail(flag, v, 'auto, always, never or a size like "16MiB"');
    }
  };
}

/** An ISO time (with or without an offset), or one of the keywords; returned as written. */
export function timeFlag(flag: string, keywords: string[] = []): FlagParser<string> {
  return (v) => {
    const text = String(v).trim();
    if (keywords.includes(text) || parseIsoTime(text) !== null) return text;
    fail(flag, v, `an ISO time${keywords.length ? ` or ${keywords.map((k) => `"${k}"`).join(' or ')}` : ''}; ${TIME_HINT}`);
  };
}

/** `i/n` with 0 ≤ i < n: the i-th of n disjoint parts. */
export function shardFlag(flag: string): FlagParser<{ index: number; count: number }> {
  return (v) => {
    if (typeof v === 'object' && v !== null && 'index' in v && 'count' in v) return v as { index: number; count: number };
    const m = /^(\d+)\/(\d+)$/.exec(String(v).trim());
    const index = m ? Number(m[1]) : NaN;
    const count = m ? Number(m[2]) : NaN;
    if (!m || count < 1 || index >= count) fail(flag, v, 'i/n with 0 ≤ i < n, e.g. 0/4 (in a Kubernetes Indexed Job: $JOB_COMPLETION_INDEX/N)');
    return { index, count };
  };
}

/** `auto` or a worker-thread count in 1..max. */
export function workersFlag(flag: string, max = 16): FlagParser<number | 'auto'> {
  const count = intFlag(flag, 1, max);
  return (v) => {
    if (v === 'auto') return v;
    try {
      return count(v);
    } catch {
      fail(flag, v, `"auto" or an integer in 1..${max}`);
    }
  };
}

/** One of the listed values. */
export function choiceFlag<T extends string>(flag: string, choices: readonly T[]): FlagParser<T> {
  return (v) => {
    if (choices.includes(v as T)) return v as T;
    fail(flag, v, `one of ${choices.join(', ')}`);
  };
}

/** An optional flag: undefined stays undefined, anything else goes through the parser. */
export function optional<T>(parse: FlagParser<T>, value: unknown): T | undefined {
  return value === undefined ? undefined : parse(value);
}

/** The parser as commander wants it: a UsageError becomes commander's InvalidArgumentError (exit 2). */
export function forCommander<T>(parse: FlagParser<T>): (value: string) => T {
  return (value) => {
    try {
      return parse(value);
    } catch (e) {
      if (e instanceof UsageError) throw new InvalidArgumentError(e.message);
      throw e;
    }
  };
}
