/**
 * Batch assembly for the dynamic batcher: requests' tensors stacked along the batch axis (variable
 * dimensions padded to the largest in the batch), and each request's rows cut back out of the outputs.
 *
 * Padding follows the export contract: a variable dimension is filled with the input's pad value (the
 * `pad_value:<input>` parameter; INT64 min for RTI time columns, which the model masks), so a padded
 * element is invisible to the model and each request gets exactly its batch-1 answer.
 */
import { allocValues, type HostTensor, type PadValue, type TensorValues } from './datatypes.js';

/**
 * Stacks `parts` (same datatype and rank, shape `[rows_i, ...inner_i]`) into `[Σ rows_i, ...max inner]`.
 * A single part is returned as it is (no copy).
 */
export function mergeTensors(parts: readonly HostTensor[], pad: PadValue): HostTensor {
  if (parts.length === 1) return parts[0]!;
  const first = parts[0]!;
  const rank = first.shape.length;
  const target = first.shape.slice();
  let rows = 0;
  let ragged = false;
  for (const p of parts) {
    rows += p.shape[0]!;
    for (let d = 1; d < rank; d++) {
      if (p.shape[d] !== target[d]) {
        ragged = true;
        if (p.shape[d]! > target[d]!) target[d] = p.shape[d]!;
      }
    }
  }
  target[0] = rows;
  let inner = 1;
  for (let d = 1; d < rank; d++) inner *= target[d]!;
  const out = allocValues(first.datatype, rows * inner, ragged ? pad : undefined);
  let row = 0;
  for (const p of parts) {
    if (!ragged) copyRun(p.data, 0, out, row * inner, p.data.length);
    else copyPadded(p, target, out, row);
    row += p.shape[0]!;
  }
  return { datatype: first.datatype, data: out, shape: target };
}

/**
 * Copies `src` (shape `[r, s_1…s_k]`) into `dst` (shape `[R, t_1…t_k]`, t_i ≥ s_i) at row `row0`. Trailing
 * dimensions that are equal on both sides are contiguous in both, so the copy runs over blocks of
 * `s_j · t_{j+1} ⋯ t_k` elements, where `j` is the last dimension that differs: for an RTI input
 * `[r, seq, 1]` that is one block of `seq` elements per row.
 */
function copyPadded(src: HostTensor, target: readonly number[], dst: TensorValues, row0: number): void {
  const s = src.shape;
  const rank = s.length;
  let j = rank - 1;
  while (j > 0 && s[j] === target[j]) j--;
  if (j === 0) {
    // Only the row count differs: the part is one block.
    let inner = 1;
    for (let d = 1; d < rank; d++) inner *= target[d]!;
    copyRun(src.data, 0, dst, row0 * inner, src.data.length);
    return;
  }
  // dst strides of dims 0..j, and the block length.
  const stride = new Array<number>(rank).fill(1);
  for (let d = rank - 2; d >= 0; d--) stride[d] = stride[d + 1]! * target[d + 1]!;
  const block = s[j]! * stride[j]!;
  // Odometer over dims 0..j-1 of the source.
  const idx = new Array<number>(j).fill(0);
  let so = 0;
  let doff = row0 * stride[0]!;
  const total = src.data.length;
  while (so < total) {
    copyRun(src.data, so, dst, doff, block);
    so += block;
    // Advance the odometer; recompute the destination offset from the indices.
    let d = j - 1;
    while (d >= 0) {
      idx[d]!++;
      if (idx[d]! < (d === 0 ? Infinity : s[d]!)) break;
      idx[d] = 0;
      d--;
    }
    doff = (row0 + idx[0]!) * stride[0]!;
    for (let m = 1; m < j; m++) doff += idx[m]! * stride[m]!;
  }
}

/** `dst[doff .. doff+n) = src[so .. so+n)`: typed-array `set` for long runs, a loop for short ones. */
function copyRun(src: TensorValues, so: number, dst: TensorValues, doff: number, n: number): void {
  if (Array.isArray(src)) {
    const d = dst as string[];
    for (let i = 0; i < n; i++) d[doff + i] = src[so + i]!;
  } else if (n >= 16 || (so === 0 && n === src.length)) {
    (dst as Float32Array).set((src as Float32Array).subarray(so, so + n), doff);
  } else {
    const d = dst as Float32Array;
    const s = src as Float32Array;
    for (let i = 0; i < n; i++) d[doff + i] = s[so + i]!;
  }
}

/** Rows `[start, start + count)` of a tensor `[rows, …]` (a view for typed arrays). */
export function sliceRows(t: HostTensor, start: number, count: number): HostTensor {
  if (start === 0 && count === t.shape[0]) return t;
  let inner = 1;
  for (let d = 1; d < t.shape.length; d++) inner *= t.shape[d]!;
  const a = start * inner;
  const b = (start + count) * inner;
  const data = Array.isArray(t.data) ? t.data.slice(a, b) : (t.data as Float32Array).subarray(a, b);
  return { datatype: t.datatype, data, shape: [count, ...t.shape.slice(1)] };
}
