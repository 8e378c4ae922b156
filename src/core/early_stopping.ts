/**
 * Early stopping for every training loop of gnnctl: which epoch's weights to keep, and when to stop.
 *
 * After each epoch the loop calls `update(value)` with the monitored validation score; the answer says
 * whether an epoch became the best (keep its weights) and whether to stop. Two rules, on the (optionally
 * smoothed) value v of the epoch being judged:
 *
 *   best      v beats the best value by more than `best_delta` (absolute)           → improved, keep it
 *   patience  v beats the patience reference by at least `min_delta` (absolute, or a fraction of |ref|
 *             when `min_delta_mode` is 'relative') → reference := v, stale := 0; else stale += 1,
 *             and `stale ≥ patience` → should_stop
 *
 * The patience reference is the last value that made such a gain, not the best one: a plateau creeping
 * up by less than `min_delta` per epoch keeps producing (tiny) new bests yet still runs out of patience.
 * With an absolute `min_delta` equal to `best_delta` (the default) the reference is the best value and the
 * rule is the usual one (Keras' and tfjs-layers' `EarlyStopping`).
 *
 * Smoothing judges an epoch by a steadier value than its own score, for small validation sets:
 * - `{ kind: 'window', size: k }` (k odd): the mean of epochs e − h … e + h, h = (k − 1) / 2, partial at both
 *   ends. Epoch e can only be judged once epoch e + h is in, so answers lag h epochs behind (`lag`), and
 *   `finish()` judges the last h epochs on the partial windows when training ends.
 * - `{ kind: 'ema', alpha }`: s_e = α·v_e + (1 − α)·s_{e−1} (s_1 = v_1), judged at once.
 *
 * In `mode: 'min'` (a loss, an error) "beats" means "is lower than". Epochs are numbered from 1 in the
 * order of the `update` calls.
 */
import { assertUnreachable } from './errors.js';

/** The `min_delta` of gnnctl's loops unless they say otherwise: a gain within float noise of a validation score is no gain. */
export const SCORE_NOISE_DELTA = 1e-6;

export type EarlyStoppingSmoothing = { kind: 'none' } | { kind: 'window'; size: number } | { kind: 'ema'; alpha: number };

export interface EarlyStoppingOptions {
  /** Name of the monitored value, for messages (e.g. `val auroc`). */
  monitor: string;
  /** Whether higher values are better. Default `'max'`. */
  mode?: 'max' | 'min';
  /** Judged epochs without a `min_delta` gain after which `should_stop` is true (≥ 1). */
  patience: number;
  /** Smallest gain that resets the patience. Default 0. */
  min_delta?: number;
  /** `min_delta` as an absolute amount or as a fraction of the reference's magnitude. Default `'absolute'`. */
  min_delta_mode?: 'absolute' | 'relative';
  /** Smallest absolute gain that makes a new best. Default `min_delta` when that is absolute, else 0. */
  best_delta?: number;
  /** Default `{ kind: 'none' }`: each epoch judged on its own value. */
  smoothing?: EarlyStoppingSmoothing;
}

/** The answer about one judged epoch. */
export interface EarlyStoppingStep {
  /** the epoch judged (1-based); with window smoothing it lags the latest epoch by `lag` */
  epoch: number;
  /** the value it was judged on (smoothed, when smoothing is on) */
  value: number;
  /** this epoch is the new best: keep its weights */
  improved: boolean;
  /** patience ran out: train no further */
  should_stop: boolean;
  /** the best epoch so far (0 while none has improved) */
  best_epoch: number;
  /** its judged value (−∞ for 'max', +∞ for 'min' while none has improved) */
  best_value: number;
}

export class EarlyStopping {
  readonly monitor: string;
  readonly patience: number;
  /** epochs an answer lags behind the latest `update` (window smoothing's half-width) */
  readonly lag: number;
  private readonly sign: 1 | -1;
  private readonly minDelta: number;
  private readonly relative: boolean;
  private readonly bestDelta: number;
  private readonly smoothing: EarlyStoppingSmoothing;
  private readonly values: number[] = [];
  private ema = NaN;
  private judged = 0;
  private stale = 0;
  /** best and reference in "higher is better" orientation (sign-adjusted) */
  private best = -Infinity;
  private reference = -Infinity;
  private bestEpochNo = 0;

  constructor(opts: EarlyStoppingOptions) {
    if (!Number.isInteger(opts.patience) || opts.patience < 1) throw new RangeError(`early stopping (${opts.monitor}): patience must be an integer ≥ 1 (got ${opts.patience})`);
    const minDelta = opts.min_delta ?? 0;
    if (!(minDelta >= 0)) throw new RangeError(`early stopping (${opts.monitor}): min_delta must be ≥ 0 (got ${minDelta})`);
    this.monitor = opts.monitor;
    this.patience = opts.patience;
    this.sign = opts.mode === 'min' ? -1 : 1;
    this.minDelta = minDelta;
    this.relative = opts.min_delta_mode === 'relative';
    this.bestDelta = opts.best_delta ?? (this.relative ? 0 : minDelta);
    if (!(this.bestDelta >= 0)) throw new RangeError(`early stopping (${opts.monitor}): best_delta must be ≥ 0 (got ${this.bestDelta})`);
    this.smoothing = opts.smoothing ?? { kind: 'none' };
    this.lag = 0;
    switch (this.smoothing.kind) {
      case 'none':
        break;
      case 'window': {
        const k = this.smoothing.size;
        if (!Number.isInteger(k) || k < 1 || k % 2 !== 1) throw new RangeError(`early stopping (${opts.monitor}): the smoothing window must be an odd number of epochs (got ${k})`);
        this.lag = (k - 1) / 2;
        break;
      }
      case 'ema': {
        const a = this.smoothing.alpha;
        if (!(a > 0 && a <= 1)) throw new RangeError(`early stopping (${opts.monitor}): the EMA's alpha must be in (0, 1] (got ${a})`);
        break;
      }
      default:
        assertUnreachable(this.smoothing);
    }
  }

  /** the best epoch so far (0 while none has improved) */
  get bestEpoch(): number {
    return this.bestEpochNo;
  }

  /** the best epoch's judged value */
  get bestValue(): number {
    return this.sign * this.best;
  }

  /** epochs recorded so far */
  get epochs(): number {
    return this.values.length;
  }

  /**
   * Records the next epoch's value. Returns the answer about the epoch judged now (the same epoch
   * without window smoothing), or null while the window's first `lag` epochs are still incomplete.
   */
  update(value: number): EarlyStoppingStep | null {
    this.values.push(value);
    if (this.smoothing.kind === 'ema') {
      const a = this.smoothing.alpha;
      this.ema = this.values.length === 1 ? value : a * value + (1 - a) * this.ema;
    }
    const c = this.values.length - 1 - this.lag;
    return c >= 0 ? this.judge(c) : null;
  }

  /**
   * Judges the epochs still waiting for their window (the last `lag` ones) on the partial windows:
   * training has ended, and they were trained anyway. Their `should_stop` is informational.
   */
  finish(): EarlyStoppingStep[] {
    const out: EarlyStoppingStep[] = [];
    while (this.judged < this.values.length) out.push(this.judge(this.judged));
    return out;
  }

  /** The value epoch c (0-based) is judged on. */
  private smoothed(c: number): number {
    switch (this.smoothing.kind) {
      case 'none':
        return this.values[c]!;
      case 'ema':
        return this.ema;
      case 'window':
        return windowMean(this.values, c, this.lag);
      default:
        return assertUnreachable(this.smoothing);
    }
  }

  private judge(c: number): EarlyStoppingStep {
    const value = this.smoothed(c);
    const v = this.sign * value;
    this.judged = c + 1;
    const improved = v > this.best + this.bestDelta;
    if (improved) {
      this.best = v;
      this.bestEpochNo = c + 1;
    }
    // A non-finite reference (no epoch judged yet) is beaten by any finite value.
    const threshold = this.relative ? (Number.isFinite(this.reference) ? this.reference + this.minDelta * Math.abs(this.reference) : this.reference) : this.reference + this.minDelta;
    if (v > threshold) {
      this.reference = v;
      this.stale = 0;
    } else {
      this.stale++;
    }
    return { epoch: c + 1, value, improved, should_stop: this.stale >= this.patience, best_epoch: this.bestEpochNo, best_value: this.bestValue };
  }
}

/** Mean of values[c − h … c + h] clipped to the epochs that exist (0-based c). */
export function windowMean(values: readonly number[], c: number, h: number): number {
  const lo = Math.max(0, c - h);
  const hi = Math.min(values.length - 1, c + h);
  let sum = 0;
  for (let i = lo; i <= hi; i++) sum += values[i]!;
  return sum / (hi - lo + 1);
}
