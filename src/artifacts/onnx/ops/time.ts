import type { OnnxGraphBuilder } from '../onnx_graph_builder.js';
import { cast, floatScalar, int64s } from './basic.js';

/** INT64 min, the value the serving layer pads RTI time columns with (`-9223372036854775808`). */
export const INT64_MIN = -(2n ** 63n);

export type TimeUnit = 'days' | 'hours' | 'minutes' | 'seconds';

/** Nanoseconds per unit; every one is an exact float64. */
export const NS_PER_UNIT: Record<TimeUnit, number> = { days: 86_400e9, hours: 3_600e9, minutes: 60e9, seconds: 1e9 };

export interface RelativeTimeOptions {
  /** Unit of the result. Default `'days'`. */
  unit?: TimeUnit;
  /** Padding sentinel of `t`. Default {@link INT64_MIN}. */
  sentinel?: bigint;
  /** Also mask elements later than the anchor (`t > anchor`). Default false: the export stage decides. */
  maskFuture?: boolean;
  /**
   * Rank of `t`. When given, `anchor` (`[batch]` or `[batch, 1]`) is reshaped to `[batch, 1, …, 1]` of
   * that rank so it broadcasts over the sequence axes (anchor `[b, 1]` against `t` `[b, s, 1]` would
   * otherwise broadcast the wrong axes). Omit when `anchor` already broadcasts against `t`.
   */
  tRank?: number;
  /** Name prefix. Default `reltime`. */
  name?: string;
}

/**
 * Time elapsed from INT64 nanosecond timestamps to the anchor time, as float32 in `unit`, with a mask
 * for padded elements:
 * `valid = t ≠ sentinel [∧ t ≤ anchor]`, `value = valid ? fround(float64(anchor − t) / nsPerUnit) : 0`,
 * `mask = valid ? 1 : 0`.
 *
 * - `t`: INT64 ns since the epoch, any shape (an RTI time column `[batch, seq, 1]`); `anchor`: INT64,
 *   broadcastable to `t` (see `tRank`).
 * - returns `value` and `mask`, both FLOAT with the shape of `t`.
 * - Overflow: padded slots are replaced by the anchor before the subtraction (`Where`), so
 *   `anchor − INT64_MIN` is never computed; real timestamps within ±146 years of the anchor cannot
 *   overflow int64.
 * - ONNX: `Equal`, `Where`, `Sub` (int64), `Cast(→DOUBLE)`, `Div` (float64), `Cast(→FLOAT)`, `Not`, `Cast`.
 * - TF.js has no int64, so training computes this in JS: `Math.fround(Number(anchor − t) / nsPerUnit)`
 *   with bigint `anchor − t`. `Number()` and ORT's int64→double cast both round to nearest, and the
 *   float64 division and float32 rounding are correctly rounded on both sides: bit-identical.
 */
export function relativeTime(g: OnnxGraphBuilder, t: string, anchor: string, options: RelativeTimeOptions = {}): { value: string; mask: string } {
  const prefix = options.name ?? 'reltime';
  const unit = options.unit ?? 'days';
  let a = anchor;
  if (options.tRank !== undefined) {
    if (!Number.isInteger(options.tRank) || options.tRank < 1) throw new RangeError(`${prefix}: tRank must be a positive integer (got ${options.tRank})`);
    a = g.op('Reshape', [anchor, int64s(g, [-1, ...new Array<number>(options.tRank - 1).fill(1)], 'shape')]);
  }
  const sentinel = g.constant(BigInt64Array.of(options.sentinel ?? INT64_MIN), [], { name: `${prefix}.sentinel` });
  const isPad = g.op('Equal', [t, sentinel]);
  const tSafe = g.op('Where', [isPad, a, t]);
  const elapsed = g.op('Sub', [a, tSafe]);
  const perUnit = g.constant(Float64Array.of(NS_PER_UNIT[unit]), [], { name: `${prefix}.ns_per_${unit}` });
  const value64 = g.op('Div', [cast(g, elapsed, 'DOUBLE'), perUnit]);
  let valid = g.op('Not', [isPad]);
  if (options.maskFuture) valid = g.op('And', [valid, g.op('Not', [g.op('Greater', [tSafe, a])])]);
  const value = g.op('Where', [valid, cast(g, value64, 'FLOAT'), floatScalar(g, 0, 'zero')]);
  return { value, mask: cast(g, valid, 'FLOAT') };
}
