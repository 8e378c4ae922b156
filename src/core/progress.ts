/**
 * Progress display for long phases. Three modes:
 *
 * - on a terminal (stderr is a TTY, `TERM` is not `dumb`, no `CI` variable): one updating line with a bar,
 *   rate and ETA (ora), redrawn ≤ 10×/s;
 * - without one (CI, even on a pseudo-terminal; cron; `--json`): a plain line on stderr at most every
 *   `interval` (15 s by default, `GNNCTL_PROGRESS_SECONDS` overrides), so a log shows that a 27-minute
 *   phase is alive and when it will end. Lines come from `update()` (a synchronous loop that reports
 *   often) and from a timer (a phase that awaits DuckDB or worker threads between reports);
 * - off with `--quiet` (`setQuiet(q, progress)`: progress quiet; library callers' `setQuiet(true)` too).
 *
 * `--json` keeps stdout one JSON object: progress only ever writes to stderr.
 * A phase without a known total (a graph build's SQL steps) passes 0 and names its step with `step()`.
 */
import ora, { type Ora } from 'ora';
import { info, isProgressQuiet, isQuiet } from './log.js';

/** Seconds between plain lines: `GNNCTL_PROGRESS_SECONDS` (≥ 0; 0 = every update, for tests) or 15. */
export function progressIntervalMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.GNNCTL_PROGRESS_SECONDS;
  if (raw === undefined || raw === '') return 15_000;
  const s = Number(raw);
  // A bad value must not break a CI job over a log line: fall back to the default, said once.
  if (!Number.isFinite(s) || s < 0) {
    if (!warnedEnv) process.stderr.write(`warning: GNNCTL_PROGRESS_SECONDS must be a number of seconds ≥ 0 (got ${JSON.stringify(raw)}); using 15\n`);
    warnedEnv = true;
    return 15_000;
  }
  return s * 1000;
}
let warnedEnv = false;

/** What a Progress writes to and how it tells time; tests inject a fake clock and timer. */
export interface ProgressOptions {
  stream?: { write(s: string): unknown; isTTY?: boolean; columns?: number };
  /** overrides `interactiveTerminal(stream)`; a stream of 0 columns gets plain lines even so */
  tty?: boolean;
  /** milliseconds, monotonic */
  now?: () => number;
  /** plain-line cadence in milliseconds */
  intervalMs?: number;
  /** shared with other phases (default on the real clock: the process's; with an injected clock: none) */
  cadence?: Cadence;
  /** starts the heartbeat; returns a function that stops it */
  every?: (ms: number, fn: () => void) => () => void;
}

const realEvery = (ms: number, fn: () => void): (() => void) => {
  const h = setInterval(fn, ms);
  // The heartbeat must never keep a finished process alive.
  h.unref();
  return () => clearInterval(h);
};

/**
 * When the process last wrote a plain line (or began its first plain phase), on the real clock. The cadence
 * holds across phases: a stage made of many short phases (a distillation's 6-second epochs) would otherwise
 * restart the wait at each `begin` and never print under `--json`, where the phases' summaries are quiet.
 */
const processCadence: Cadence = { last: null };

/** When the last plain line was written, shared by the Progress instances that hold the same object. */
export interface Cadence {
  last: number | null;
}

export class Progress {
  private spinner: Ora | null = null;
  private plain = false;
  private start = 0;
  private lastDraw = 0;
  private lastLine = 0;
  private total = 0;
  private done = 0;
  private extra = '';
  private label = '';
  private steps = false;
  private stopBeat: (() => void) | null = null;
  private readonly stream: NonNullable<ProgressOptions['stream']>;
  private readonly now: () => number;
  private readonly interval: number;
  private readonly every: NonNullable<ProgressOptions['every']>;
  private readonly tty: boolean;
  /** the cadence shared across phases (see processCadence), or null: each phase starts its own wait */
  private readonly cadence: Cadence | null;

  /** `o`: a number is the plain-line cadence in seconds (0: every update). */
  constructor(o: ProgressOptions | number = {}) {
    if (typeof o === 'number') o = { intervalMs: o * 1000 };
    this.stream = o.stream ?? process.stderr;
    this.tty = (o.tty ?? interactiveTerminal(this.stream)) && hasWidth(this.stream);
    this.cadence = o.cadence ?? (o.now === undefined ? processCadence : null);
    this.now = o.now ?? (() => performance.now());
    this.interval = o.intervalMs ?? progressIntervalMs();
    this.every = o.every ?? realEvery;
  }

  /**
   * Starts a phase of `total` units (seeds, entities, …; 0 = unknown, see `step`). `steps`: the units are
   * a few unequal steps (a graph build's tables), so lines say "3/11 steps" and show no rate.
   */
  begin(label: string, total: number, opts: { steps?: boolean } = {}): void {
    this.stop();
    this.label = label;
    this.steps = Boolean(opts.steps);
    this.total = total;
    this.done = 0;
    this.extra = '';
    this.start = this.now();
    this.lastDraw = 0;
    if (this.cadence) this.cadence.last ??= this.start;
    this.lastLine = this.cadence ? this.cadence.last! : this.start;
    // `--json` on a terminal gets plain lines too: whoever reads its stdout wants no redraws on stderr.
    const m = isProgressQuiet() ? 'off' : this.tty && !isQuiet() ? 'tty' : 'plain';
    if (m === 'tty') {
      // isEnabled: this class decided; ora's own test would disable it silently, with no plain lines instead.
      this.spinner = ora({ ...spinnerOptions(), text: label, stream: this.stream as NodeJS.WritableStream, discardStdin: false, isEnabled: true }).start();
    } else if (m === 'plain') {
      this.plain = true;
      // A timer tick a little more often than the cadence keeps the gap between lines ≤ the cadence.
      if (this.interval > 0) this.stopBeat = this.every(Math.max(100, Math.floor(this.interval / 3)), () => this.beat());
    }
  }

  /** Reports `done` of `total` units; `extra` is appended (e.g. the loss). */
  update(done: number, extra = ''): void {
    this.done = done;
    this.extra = extra;
    if (this.spinner) {
      const now = this.now();
      if (now - this.lastDraw < 100 && done < this.total) return;
      this.lastDraw = now;
      this.spinner.text = this.line(done, extra);
    } else if (this.plain) {
      this.beat();
    }
  }

  /** Names the current step of a phase without a count (`graph build: encoding transactions`). */
  step(what: string): void {
    this.update(this.done, what);
  }

  /** Ends the phase with a summary line (printed in every mode except quiet). */
  end(summary: string): void {
    this.stop();
    if (this.spinner) {
      this.spinner.stopAndPersist({ symbol: '✓', text: summary });
      this.spinner = null;
    } else {
      info(summary);
    }
  }

  /**
   * A line printed during the phase, which goes on (a worker's epoch summary): above the live line on a
   * terminal, a plain line otherwise.
   */
  log(line: string): void {
    if (this.spinner) {
      this.spinner.clear();
      this.stream.write(`${line}\n`);
      this.spinner.render();
    } else {
      info(line);
    }
  }

  /** Stops the live line and the heartbeat without a summary (a phase that failed; call in `finally`). */
  stop(): void {
    this.stopBeat?.();
    this.stopBeat = null;
    this.plain = false;
    if (this.spinner) {
      this.spinner.stop();
      this.spinner = null;
    }
  }

  /** Units per second since `begin`. */
  rate(done: number): number {
    const s = (this.now() - this.start) / 1000;
    return s > 0 ? done / s : 0;
  }

  /** Writes a plain line when the cadence has passed since the last one (or the phase began). */
  private beat(): void {
    if (!this.plain || isProgressQuiet()) return;
    const now = this.now();
    if (this.cadence?.last != null) this.lastLine = Math.max(this.lastLine, this.cadence.last);
    if (now - this.lastLine < this.interval) return;
    this.lastLine = now;
    if (this.cadence) this.cadence.last = now;
    this.stream.write(`${this.plainLine(this.done, this.extra)}\n`);
  }

  private plainLine(done: number, extra: string): string {
    const elapsed = formatSeconds((this.now() - this.start) / 1000);
    if (this.total <= 0) return `${this.label}: ${elapsed} elapsed${extra ? ` · ${extra}` : ''}`;
    const frac = Math.min(1, done / this.total);
    const rate = this.rate(done);
    const eta = rate > 0 ? formatSeconds((this.total - done) / rate) : '?';
    if (this.steps) return `${this.label}: step ${Math.min(done + 1, this.total)}/${this.total}, ${elapsed} elapsed, ETA ${eta}${extra ? ` · ${extra}` : ''}`;
    return `${this.label}: ${done.toLocaleString('en-US')}/${this.total.toLocaleString('en-US')} (${(frac * 100).toFixed(0)}%), ${formatRate(rate)}/s, ETA ${eta}, ${elapsed} elapsed${extra ? ` · ${extra}` : ''}`;
  }

  private line(done: number, extra: string): string {
    if (this.total <= 0) return `${this.label} ${formatSeconds((this.now() - this.start) / 1000)}${extra ? ` · ${extra}` : ''}`;
    const frac = this.total > 0 ? Math.min(1, done / this.total) : 0;
    const width = 24;
    const filled = Math.round(frac * width);
    const bar = `${'█'.repeat(filled)}${' '.repeat(width - filled)}`;
    const rate = this.rate(done);
    const eta = rate > 0 ? (this.total - done) / rate : 0;
    const speed = this.steps ? `step ${Math.min(done + 1, this.total)}/${this.total}` : `${formatRate(rate)}/s`;
    return `${this.label} ▕${bar}▏ ${(frac * 100).toFixed(0).padStart(3)}% ${speed} ETA ${formatSeconds(eta)}${extra ? ` · ${extra}` : ''}`;
  }
}

/**
 * Runs `fn` as a phase with no count to report (DuckDB SQL, a few named steps via `p.step`): the heartbeat
 * says how long it has been running, so a log without a terminal is never silent past the cadence. The
 * heartbeat stops when `fn` settles, whether it returned or threw.
 */
export async function withHeartbeat<T>(label: string, fn: (p: Progress) => Promise<T>, o: ProgressOptions | number = {}): Promise<T> {
  const p = new Progress(o);
  p.begin(label, 0);
  try {
    return await fn(p);
  } finally {
    p.stop();
  }
}

/**
 * Whether a live line can be redrawn: a TTY, a `TERM` that is not `dumb`, and no `CI` variable (ora's own
 * test: CI runners that allocate a pseudo-terminal keep their logs, so they get the plain lines).
 */
export function interactiveTerminal(stream: { isTTY?: boolean; columns?: number }, env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(stream.isTTY) && hasWidth(stream) && env.TERM !== 'dumb' && !('CI' in env);
}

/**
 * A terminal of 0 columns (a pseudo-terminal nobody sized: `script` run without a terminal around it)
 * gets plain lines: ora divides by the width to count the lines it clears, and cleared lines forever.
 * No width reported at all is fine (ora assumes 80).
 */
function hasWidth(stream: { columns?: number }): boolean {
  return stream.columns === undefined || stream.columns > 0;
}

/**
 * Ora options from the environment: `NO_COLOR` (https://no-color.org: set and not empty) turns the
 * spinner's colour off; the line still updates in place, which is not colour.
 */
export function spinnerOptions(env: NodeJS.ProcessEnv = process.env): { color?: false } {
  return env.NO_COLOR !== undefined && env.NO_COLOR !== '' ? { color: false } : {};
}

export function formatRate(r: number): string {
  return r >= 1e6 ? `${(r / 1e6).toFixed(2)}M` : r >= 1e3 ? `${(r / 1e3).toFixed(1)}k` : r.toFixed(0);
}

export function formatSeconds(s: number): string {
  if (!Number.isFinite(s)) return '?';
  // Round first: 179.6 s is 3:00, not 2:60.
  const whole = Math.round(s);
  const m = Math.floor(whole / 60);
  const sec = whole % 60;
  return m > 0 ? `${m}:${String(sec).padStart(2, '0')}` : `${sec}s`;
}
