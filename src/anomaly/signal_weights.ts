/**
 * Root-cause method `signals_learned`: the `signals` shares (signal_share.ts) weighted per family, the
 * weights fitted on labelled faults — which families point at the culprit on this system (on the Nezha
 * data: CPU and the caller-to-callee gap more than memory or server latency).
 *
 * Fitting is a listwise softmax over an incident's services, as in ListNet: with s_i = β Σ_f w_f P_f,i,
 *
 *     loss = − Σ_incidents log softmax(s)_root + λ Σ_f (log w_f)²,      w_f = exp θ_f ≥ 0
 *
 * by gradient descent on θ from w = 1 (the unweighted `signals`), so with few faults the weights stay
 * near 1. root_cause_eval.ts fits them on validation faults only and never judges them on those.
 */

export interface WeightedExample {
  /** [families][services] shares of one incident (each family sums to 1 or 0) */
  shares: Float64Array[];
  /** index of the root-cause service among the incident's services */
  target: number;
}

/** β: how sharply the softmax prefers the top service (shares are in [0, families]). */
const SHARPNESS = 5;
/** λ: pull towards w = 1. */
const L2 = 0.1;
const STEPS = 500;
const LEARNING_RATE = 0.1;

export function fitFamilyWeights(examples: readonly WeightedExample[], families: number): Float64Array {
  const theta = new Float64Array(families);
  const usable = examples.filter((x) => x.target >= 0 && x.shares.length === families);
  if (usable.length === 0) return theta.map(() => 1);
  const grad = new Float64Array(families);
  for (let step = 0; step < STEPS; step++) {
    grad.fill(0);
    const w = theta.map(Math.exp);
    for (const { shares, target } of usable) {
      const n = shares[0]?.length ?? 0;
      const s = weightedScores(shares, w, n).map((x) => x * SHARPNESS);
      const top = Math.max(...s);
      const e = s.map((x) => Math.exp(x - top));
      const z = e.reduce((a, b) => a + b, 0);
      for (let f = 0; f < families; f++) {
        const row = shares[f]!;
        let expected = 0;
        for (let i = 0; i < n; i++) expected += (e[i]! / z) * row[i]!;
        grad[f]! -= (row[target]! - expected) * SHARPNESS * w[f]!;
      }
    }
    for (let f = 0; f < families; f++) theta[f]! -= LEARNING_RATE * (grad[f]! / usable.length + L2 * theta[f]!);
  }
  return theta.map(Math.exp);
}

/** Σ_f w_f P_f,i per service. */
export function weightedScores(shares: readonly Float64Array[], weights: ArrayLike<number>, n: number): Float64Array {
  const out = new Float64Array(n);
  shares.forEach((row, f) => {
    const w = weights[f] ?? 1;
    for (let i = 0; i < n; i++) out[i]! += w * row[i]!;
  });
  return out;
}
