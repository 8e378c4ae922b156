/**
 * Progress display for long loops: a single updating line with a bar, rate and ETA on a terminal
 * (stderr, via ora), silence with `--quiet`, and when stderr is not a TTY (CI logs, `--json` runs) a plain
 * line with the same figures at most every `heartbeat` seconds (30 by default) plus one per phase: small
 * logs, yet a job that runs for minutes shows it is alive and when it will end.
 */
import ora, { type Ora } from 'ora';
import { info, isProgressQuiet, isQuiet } from './log.js';

export class Progress {
  private spinner: Ora | null = null;
  private start = 0;
  private lastDraw = 0;
  private total = 0;
  private label = '';
  private lastBeat = 0;

  /** @param heartbeat seconds between plain progress lines when stderr is not a TTY */
  constructor(private readonly heartbeat = 30) {}

  /** Starts a phase of `total` units (seeds, entities, …). */
  begin(label: string, total: number): void {
    this.label = label;
    this.total = total;
    this.start = performance.now();
    this.lastDraw = 0;
    this.lastBeat = this.start;
    if (!isQuiet() && process.stderr.isTTY) {
      this.spinner = ora({ ...spinnerOptions(), text: label, stream: process.stderr, discardStdin: false }).start();
    }
  }

  /** Reports `done` of `total` units; `extra` is appended (e.g. the loss). Redraws at most 10×/s. */
  update(done: number, extra = ''): void {
    const now = performance.now();
    if (!this.spinner) {
      if (!isProgressQuiet() && done < this.total && now - this.lastBeat >= this.heartbeat * 1000) {
        this.lastBeat = now;
        process.stderr.write(`${this.plainLine(done, extra)}\n`);
      }
      return;
    }
    if (now - this.lastDraw < 100 && done < this.total) return;
    this.lastDraw = now;
    this.spinner.text = this.line(done, extra);
  }

  /** Ends the phase with a summary line (printed in every mode except quiet). */
  end(summary: string): void {
    if (this.spinner) {
      this.spinner.stopAndPersist({ symbol: '✓', text: summary });
      this.spinner = null;
    } else {
      info(summary);
    }
  }

  /** Units per second since `begin`. */
  rate(done: number): number {
    const s = (performance.now() - this.start) / 1000;
    return s > 0 ? done / s : 0;
  }

  /** The non-TTY line: no bar, no carriage returns, so a CI log shows one readable line per beat. */
  private plainLine(done: number, extra: string): string {
    const frac = this.total > 0 ? Math.min(1, done / this.total) : 0;
    const rate = this.rate(done);
    const eta = rate > 0 ? (this.total - done) / rate : Infinity;
    return `${this.label}: ${done.toLocaleString('en-US')}/${this.total.toLocaleString('en-US')} (${(frac * 100).toFixed(0)}%), ${formatRate(rate)}/s, ETA ${formatSeconds(eta)}${extra ? ` · ${extra}` : ''}`;
  }

  private line(done: number, extra: string): string {
    const frac = this.total > 0 ? Math.min(1, done / this.total) : 0;
    const width = 24;
    const filled = Math.round(frac * width);
    const bar = `${'█'.repeat(filled)}${' '.repeat(width - filled)}`;
    const rate = this.rate(done);
    const eta = rate > 0 ? (this.total - done) / rate : 0;
    return `${this.label} ▕${bar}▏ ${(frac * 100).toFixed(0).padStart(3)}% ${formatRate(rate)}/s ETA ${formatSeconds(eta)}${extra ? ` · ${extra}` : ''}`;
  }
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
  const m = Math.floor(s / 60);
  const sec = Math.round(s % 60);
  return m > 0 ? `${m}:${String(sec).padStart(2, '0')}` : `${sec}s`;
}
