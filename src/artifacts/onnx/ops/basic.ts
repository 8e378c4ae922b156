/**
 * Small shape and type helpers the subgraph helpers share. Each takes the builder and value names and
 * returns the name of the value it produces. All use ai.onnx opset ≥ 13 forms (axes as an input).
 */
import { attr } from '../attributes.js';
import type { OnnxGraphBuilder } from '../onnx_graph_builder.js';
import { ElemType } from '../types.js';

/** An INT64 1-D initializer, e.g. the `axes` input of Squeeze/ReduceSum or the `pads` of Pad. */
export function int64s(g: OnnxGraphBuilder, values: readonly (number | bigint)[], name = 'ints'): string {
  return g.constant(BigInt64Array.from(values, (v) => BigInt(v)), [values.length], { name });
}

/** A FLOAT scalar initializer (broadcasts against any shape). */
export function floatScalar(g: OnnxGraphBuilder, value: number, name = 'scalar'): string {
  return g.constant(Float32Array.of(value), [], { name });
}

/** `Cast(x, to)`. */
export function cast(g: OnnxGraphBuilder, x: string, to: ElemType): string {
  return g.op('Cast', [x], { to: attr.int(ElemType[to]) });
}

/** `Squeeze(x, axes)`: removes the listed size-1 axes. */
export function squeeze(g: OnnxGraphBuilder, x: string, axes: readonly number[]): string {
  return g.op('Squeeze', [x, int64s(g, axes, 'axes')]);
}

/** `Unsqueeze(x, axes)`: inserts size-1 axes at the listed output positions. */
export function unsqueeze(g: OnnxGraphBuilder, x: string, axes: readonly number[]): string {
  return g.op('Unsqueeze', [x, int64s(g, axes, 'axes')]);
}

/** `Concat(xs, axis)`: e.g. joining feature blocks along the last axis before a dense layer. */
export function concat(g: OnnxGraphBuilder, xs: readonly string[], axis: number): string {
  return g.op('Concat', xs, { axis: attr.int(axis) });
}
