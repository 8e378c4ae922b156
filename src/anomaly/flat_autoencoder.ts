/**
 * Baseline 2: a flat per-service autoencoder — the same standardised node features, no graph. One MLP
 * shared by all services reconstructs each service's feature vector on its own:
 *
 *     x̂ = W_4 tanh(W_3 tanh(W_2 tanh(W_1 x + b_1) + b_2) + b_3) + b_4     F → 16 → 4 → 16 → F
 *
 * A service's error is mean_c (x̂_c − x_c)², relative to its warm-up mean like TAGAE's; the score is the
 * mean of the `score_services` largest errors (as TAGAE's), judged against the same sliding quantile threshold. Events suppress only the
 * announced service (the flat model has no notion of neighbours).
 */
import { tf } from '../core/tf.js';
import { Rng } from '../core/rng.js';
import { Params } from './layers/params.js';

export class FlatAutoencoder {
  readonly params: Params;
  private readonly layers: [tf.Variable, tf.Variable][];

  constructor(readonly featDim: number, seed: number) {
    this.params = new Params(new Rng(seed));
    const dims = [featDim, 16, 4, 16, featDim];
    this.layers = dims.slice(1).map((d, l) => [this.params.glorot(`flat.w${l + 1}`, [dims[l]!, d]), this.params.zeros(`flat.b${l + 1}`, [d])]);
  }

  private forward(x: tf.Tensor2D): tf.Tensor2D {
    let h: tf.Tensor2D = x;
    this.layers.forEach(([w, b], l) => {
      const y = tf.add(tf.matMul(h, w), b) as tf.Tensor2D;
      h = l < this.layers.length - 1 ? tf.tanh(y) : y;
    });
    return h;
  }

  /** Trains on standardised rows [rows × F]; returns the last epoch's mean loss. */
  fit(rows: Float32Array, epochs: number, lr: number, seed: number): number {
    const F = this.featDim;
    const n = rows.length / F;
    const opt = tf.train.adam(lr);
    const rng = new Rng(seed);
    const order = Int32Array.from({ length: n }, (_, i) => i);
    const batch = 512;
    let last = 0;
    try {
      for (let ep = 0; ep < epochs; ep++) {
        rng.shuffle(order);
        let sum = 0;
        let steps = 0;
        for (let b = 0; b < n; b += batch) {
          const idx = order.subarray(b, Math.min(n, b + batch));
          const x = new Float32Array(idx.length * F);
          idx.forEach((r, k) => x.set(rows.subarray(r * F, r * F + F), k * F));
          const xt = tf.tensor2d(x, [idx.length, F]);
          const loss = opt.minimize(() => tf.mean(tf.squaredDifference(this.forward(xt), xt)) as tf.Scalar, true, this.params.list());
          sum += loss!.dataSync()[0]!;
          steps++;
          tf.dispose([xt, loss!]);
        }
        last = sum / Math.max(1, steps);
      }
    } finally {
      opt.dispose();
    }
    return last;
  }

  /** Per-row reconstruction error of [rows × F]. */
  errors(rows: Float32Array): Float32Array {
    const F = this.featDim;
    const n = rows.length / F;
    return tf.tidy(() => {
      const x = tf.tensor2d(rows, [n, F]);
      return tf.mean(tf.squaredDifference(this.forward(x), x), 1).dataSync() as Float32Array;
    });
  }
}

/** The flat baseline as a detector: per-service errors relative to warm-up, top-k mean, sliding τ. */
export class FlatDetector {
  constructor(
    private readonly ae: FlatAutoencoder,
    private readonly baselines: { services: Record<string, number>; median: number } | null,
    private readonly topK: number,
    private readonly threshold: { judge(score: number): { threshold: number; alert: boolean } } | null,
  ) {}

  /** Raw per-service errors of a snapshot's standardised rows. */
  errors(x: Float32Array): Float32Array {
    return this.ae.errors(x);
  }

  step(services: string[], x: Float32Array, suppressed: ReadonlySet<string>): { score: number; threshold: number; alert: boolean; service_scores: Float64Array } {
    const e = this.ae.errors(x);
    const r: number[] = [];
    const perService = new Float64Array(services.length);
    // floored like TAGAE's scale (detector.ts): a service reconstructed almost exactly is not infinitely anomalous
    const floor = Math.max(0.1 * (this.baselines?.median ?? 1), 1e-6);
    services.forEach((s, i) => {
      const b = this.baselines ? (this.baselines.services[s] ?? this.baselines.median) : 1;
      perService[i] = e[i]! / Math.max(b, floor);
      if (!suppressed.has(s)) r.push(perService[i]!);
    });
    r.sort((a, b) => b - a);
    const top = r.slice(0, this.topK);
    const score = top.length ? top.reduce((a, b) => a + b, 0) / top.length : 0;
    const j = this.threshold ? this.threshold.judge(score) : { threshold: Number.POSITIVE_INFINITY, alert: false };
    return { score, ...j, service_scores: perService };
  }
}
