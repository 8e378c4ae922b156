/**
 * The alert threshold: τ = the `quantile` of recent scores. It starts from the warm-up window's scores
 * (held out of training) and then slides: each scored snapshot joins the window, the oldest leaves —
 * an alerting one at τ's value rather than its own (winsorised). Measured on the 200-service mesh:
 * admitting incident scores as they are let one incident's 6–12 huge scores lift τ 66-fold for a day
 * (τ is the 3rd largest of 288 at the defaults), blinding the detector; leaving alerting snapshots out
 * entirely locks τ in after a benign lasting shift. Winsorised, an incident cannot raise τ, and the
 * window still follows scores that move within it.
 */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.POSITIVE_INFINITY;
  // a typed array's own numeric sort: a comparator function boxed a double per comparison
  const s = Float64Array.from(values).sort();
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

  /** Judges a score against the current τ, then lets it (at most τ) into the window. */
  judge(score: number): { threshold: number; alert: boolean } {
    const threshold = this.value;
    const alert = score > threshold;
    this.history.push(alert ? threshold : score);
    if (this.history.length > this.size) this.history.splice(0, this.history.length - this.size);
    return { threshold, alert };
  }
}
