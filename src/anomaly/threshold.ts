/**
 * The alert threshold: τ = the `quantile` of recent scores. It starts from the warm-up window's scores
 * (the end of the normal period, held out of training) and then slides: every snapshot that does not
 * alert joins the window, the oldest leaves. Alerting snapshots stay out, so an incident cannot raise its
 * own threshold and silence itself.
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

  /** Judges a score against the current τ, then lets a non-alerting score into the window. */
  judge(score: number): { threshold: number; alert: boolean } {
    const threshold = this.value;
    const alert = score > threshold;
    if (!alert) {
      this.history.push(score);
      if (this.history.length > this.size) this.history.splice(0, this.history.length - this.size);
    }
    return { threshold, alert };
  }
}
