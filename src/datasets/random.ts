/** Sampling helpers over `Rng` used by the synthetic generator (all draws go through the seeded Rng). */
import type { Rng } from '../core/rng.js';

/** A positive integer with mean `mean` (≥ 1): geometric number of trials until the first success. */
export function geometric(rng: Rng, mean: number): number {
  if (mean <= 1) return 1;
  const p = 1 / mean;
  return 1 + Math.floor(Math.log(1 - rng.next()) / Math.log(1 - p));
}

/** exp(N(mu, sigma²)). */
export function lognormal(rng: Rng, mu: number, sigma: number): number {
  return Math.exp(mu + sigma * rng.normal());
}

export function uniform(rng: Rng, lo: number, hi: number): number {
  return lo + (hi - lo) * rng.next();
}

/** Index drawn with probability proportional to `weights` (linear scan: for short lists only). */
export function pick(rng: Rng, weights: ArrayLike<number>): number {
  let total = 0;
  for (let i = 0; i < weights.length; i++) total += weights[i]!;
  let u = rng.next() * total;
  for (let i = 0; i < weights.length; i++) {
    u -= weights[i]!;
    if (u < 0) return i;
  }
  return weights.length - 1;
}

/** Inclusive prefix sums, for `searchCumulative`. */
export function cumulative(weights: ArrayLike<number>): Float64Array {
  const c = new Float64Array(weights.length);
  let s = 0;
  for (let i = 0; i < weights.length; i++) c[i] = s += weights[i]!;
  return c;
}

/** Smallest i in [lo, hi) with cum[i] > u (binary search over inclusive prefix sums). */
export function searchCumulative(cum: Float64Array, u: number, lo: number, hi: number): number {
  let a = lo;
  let b = hi - 1;
  while (a < b) {
    const m = (a + b) >>> 1;
    if (cum[m]! > u) b = m;
    else a = m + 1;
  }
  return a;
}

const hexBytes = Buffer.alloc(32);

/**
 * 64 lowercase hex characters (an id that looks like H&M's sha256 customer ids). Built with one
 * `toString('hex')` so the result is a flat string: concatenating eight pieces would leave cons strings
 * that survive into V8's old space when millions of ids are kept.
 */
export function hexId(rng: Rng): string {
  for (let i = 0; i < 32; i += 4) hexBytes.writeUInt32BE(rng.nextU32(), i);
  return hexBytes.toString('hex');
}
