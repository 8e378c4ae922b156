/** `x` rounded to `digits` decimals, for figures in manifests, metrics and --json (non-finite values pass through). */
export function round(x: number, digits: number): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
