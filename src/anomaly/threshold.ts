/**
 * The alert threshold: τ = the `quantile` of recent scores. It starts from the warm-up window's scores
 * (held out of training) and then slides: each scored snapshot joins the window, the oldest leaves.
 * Alerting snapshots join too: leaving them out locks the threshold in after any lasting shift in the
 * score level (every later snapshot alerts, so none can move τ). An incident shorter than
 * (1 − quantile) · window snapshots (3 of 288 at the defaults) cannot move τ past its own scores.
 */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.POSITIVE_INFINITY;
  const s = [...values].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo);
}

export class SlidingThreshold {
  constructor(
    readonly q: number,
    readonly size: number,
    /** the window's scores, oldest first */
    readonly history: number[],
  ) {}

  get value(): number {
    return quantile(this.history, this.q);
  }

  /** Judges a score against the current τ, then lets it into the window. */
  judge(score: number): { threshold: number; alert: boolean } {
    const threshold = this.value;
    const alert = score > threshold;
    this.history.push(score);
    if (this.history.length > this.size) this.history.splice(0, this.history.length - this.size);
    return { threshold, alert };
  }
}
