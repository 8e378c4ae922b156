/**
 * Metrics of each test anchor on its own, beside the pooled figure: a model that is good on average but
 * collapses in one window (an off-season, a promotion week) shows here, and the spread across anchors is
 * a second view of the noise the bootstrap interval measures.
 */
import { isoSeconds } from '../core/duration.js';

export interface AnchorMetrics<M> {
  /** ISO time of the anchor */
  anchor: string;
  n: number;
  metrics: M;
}

/**
 * Groups examples by anchor (in ascending anchor order) and computes `metrics` on each group.
 * `anchors[i]` is example i's anchor in epoch seconds; labels and predictions are parallel to it.
 */
export function metricsByAnchor<M>(
  anchors: ArrayLike<number>,
  labels: ArrayLike<number>,
  predictions: ArrayLike<number>,
  metrics: (labels: Float32Array, predictions: Float32Array) => M,
): AnchorMetrics<M>[] {
  const groups = new Map<number, number[]>();
  for (let i = 0; i < anchors.length; i++) {
    const a = anchors[i]!;
    let g = groups.get(a);
    if (!g) groups.set(a, (g = []));
    g.push(i);
  }
  return [...groups.keys()]
    .sort((a, b) => a - b)
    .map((a) => {
      const idx = groups.get(a)!;
      const l = Float32Array.from(idx, (i) => labels[i]!);
      const p = Float32Array.from(idx, (i) => predictions[i]!);
      return { anchor: isoSeconds(a), n: idx.length, metrics: metrics(l, p) };
    });
}
