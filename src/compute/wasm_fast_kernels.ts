/**
 * Faster replacements for two wasm kernels that dominate GNN training time.
 *
 * Measured on this machine (tfjs-backend-wasm 4.22, Node, one thread), shapes of one training step:
 *
 * | op                                   | wasm as shipped | here    |
 * |--------------------------------------|-----------------|---------|
 * | transpose [5120, 192]                | 28 ms           | ~2.5 ms |
 * | matMul(X, G, transposeA) 5120×192×64 | 129 ms          | ~9 ms   |
 * | matMul(G, W, transposeB)             | 149 ms          | ~9 ms   |
 *
 * The wasm BatchMatMul runs XNNPACK only when neither operand is transposed and falls back to a naive
 * loop otherwise, and the gradient of every matMul is a transposed matMul. So: transpose the operand with
 * a cache-blocked TypeScript loop, then call the shipped kernel without transposes. `Transpose` itself is
 * replaced for the 2-D (and batched 2-D) permutations, which also speeds up reductions over leading axes
 * (`Sum` transposes first).
 *
 * Weight gradients (Aᵀ·B) and large bias-gradient sums (1ᵀ·X) go to onnxruntime's MLAS instead (ort_gemm.ts:
 * transposes included, 55–95 GFLOP/s on one thread against XNNPACK's ≈ 25 here), and inside a training step
 * (`withRowDependentProducts`) so do the other 2-D products, in blocks of rows that keep each output within
 * `ORT_GEMM_MAX_OUTPUT`. XNNPACK, through the transposing path above, keeps the products whose rows must
 * round the same in any chunk (inference), batched products, and everything when onnxruntime is off
 * (`GNNCTL_ORT_MATMUL=0`) or unavailable.
 */
import { tf } from '../core/tf.js';
import type { BackendWasm } from '@tensorflow/tfjs-backend-wasm';
import { ORT_GEMM_MAX_OUTPUT, ORT_GEMM_MIN_INNER_FOR_BLOCKS, OrtGemm } from './ort_gemm.js';

type KernelArgs = { inputs: tf.NamedTensorInfoMap; backend: {}; attrs?: tf.NamedAttrMap };
type KernelFn = (args: KernelArgs) => tf.TensorInfo | tf.TensorInfo[];

let registered = false;
/** onnxruntime's products, when its binding loaded (see `registerFastWasmKernels`) */
let ortGemm: OrtGemm | null = null;

/** false inside `withRowDependentProducts`: products whose rows' rounding depends on the row count may run */
let rowInvariant = true;

/**
 * Runs `f` (synchronous TF.js work) with every product allowed in onnxruntime. Outside it, only products
 * that reduce over rows (Aᵀ·B, weight gradients) go there: onnxruntime's kernels round a row of A·B
 * differently depending on how many rows the call has (measured: most values of a [1,000, 272]·[272, 64]
 * product differ in the last bit when it is computed in smaller blocks), and `embed`, `predict` and
 * evaluation promise the same bits for an entity whatever the chunk, shard or thread count. A training
 * step promises the same numbers only for the same batch, so it runs in here.
 */
export function withRowDependentProducts<T>(f: () => T): T {
  const before = rowInvariant;
  rowInvariant = false;
  try {
    return f();
  } finally {
    rowInvariant = before;
  }
}

/**
 * Which library the wasm backend's matrix products run in: onnxruntime's MLAS (the default), or the
 * shipped XNNPACK when `GNNCTL_ORT_MATMUL=0` or onnxruntime-node's binding cannot be loaded.
 */
export function matMulLibrary(): 'onnxruntime' | 'xnnpack' {
  return ortGemm ? 'onnxruntime' : 'xnnpack';
}

/** Installs the replacements (idempotent). The wasm backend must be registered (it is, on import). */
export function registerFastWasmKernels(): string[] {
  if (registered) return [...REPLACED];
  const origTranspose = tf.getKernel(tf.Transpose, 'wasm');
  const origMatMul = tf.getKernel(tf.BatchMatMul, 'wasm');
  if (!origTranspose || !origMatMul) return [];
  const transposeFn = origTranspose.kernelFunc as unknown as KernelFn;
  const matMulFn = origMatMul.kernelFunc as unknown as KernelFn;

  const fastTranspose: KernelFn = (args) => {
    const backend = args.backend as BackendWasm;
    const x = args.inputs.x as tf.TensorInfo;
    const perm = (args.attrs as { perm: number[] }).perm;
    const out = transposeInfo(backend, x, perm);
    return out ?? transposeFn(args);
  };

  ortGemm = process.env.GNNCTL_ORT_MATMUL === '0' ? null : OrtGemm.load();
  const fastMatMul: KernelFn = (args) => {
    const backend = args.backend as BackendWasm;
    const { transposeA, transposeB } = args.attrs as { transposeA: boolean; transposeB: boolean };
    if (ortGemm) {
      const out = ortMatMul(ortGemm, backend, args.inputs.a as tf.TensorInfo, args.inputs.b as tf.TensorInfo, transposeA, transposeB);
      if (out) return out;
    }
    if (!transposeA && !transposeB) return matMulFn(args);
    let a = args.inputs.a as tf.TensorInfo;
    let b = args.inputs.b as tf.TensorInfo;
    const temps: tf.TensorInfo[] = [];
    // Aᵀ·B with A [K, M], B [K, N] (every weight gradient, K = rows of the batch): transposing the
    // narrower operand is cheaper. When N < M: (Bᵀ·A)ᵀ transposes B [K, N] and the small [N, M] result
    // instead of A [K, M] (≈35% faster for a [4906, 194] input and a [4906, 64] gradient).
    if (transposeA && !transposeB && a.shape.length === 2 && b.shape.length === 2 && b.shape[1]! < a.shape[1]!) {
      const bt = transposeInfo(backend, b, [1, 0]);
      if (bt) {
        let prod: tf.TensorInfo | undefined;
        try {
          prod = matMulFn({ ...args, inputs: { a: bt, b: a }, attrs: { ...args.attrs, transposeA: false, transposeB: false } }) as tf.TensorInfo;
          const out = transposeInfo(backend, prod, [1, 0]);
          if (out) return out;
        } finally {
          backend.disposeData(bt.dataId);
          if (prod) backend.disposeData(prod.dataId);
        }
      }
    }
    const swapLast = (t: tf.TensorInfo): tf.TensorInfo | null => {
      const r = t.shape.length;
      const perm = [...Array(r).keys()];
      [perm[r - 2], perm[r - 1]] = [perm[r - 1]!, perm[r - 2]!];
      return transposeInfo(backend, t, perm);
    };
    let ta = transposeA;
    let tb = transposeB;
    if (transposeA) {
      const t = swapLast(a);
      if (t) {
        temps.push(t);
        a = t;
        ta = false;
      }
    }
    if (transposeB) {
      const t = swapLast(b);
      if (t) {
        temps.push(t);
        b = t;
        tb = false;
      }
    }
    try {
      return matMulFn({ ...args, inputs: { a, b }, attrs: { ...args.attrs, transposeA: ta, transposeB: tb } });
    } finally {
      for (const t of temps) backend.disposeData(t.dataId);
    }
  };

  const origSplit = tf.getKernel(tf.SplitV, 'wasm')!;
  const splitFn = origSplit.kernelFunc as unknown as KernelFn;
  const fastSplit: KernelFn = (args) => splitV(args) ?? splitFn(args);
  const origConcat = tf.getKernel(tf.Concat, 'wasm')!;
  const concatFn = origConcat.kernelFunc as unknown as KernelFn;
  const fastConcat: KernelFn = (args) => concat(args) ?? concatFn(args);
  // Identity runs for every tensor the gradient tape keeps; as shipped it copies. Sharing the buffer (with
  // a reference count, as wasm's own Reshape and the cpu backend's Identity do) is safe: TF.js never
  // mutates a tensor's data in place.
  const origIdentity = tf.getKernel(tf.Identity, 'wasm')!;
  const identityFn = origIdentity.kernelFunc as unknown as KernelFn;
  const fastIdentity: KernelFn = (args) => {
    const x = args.inputs.x as tf.TensorInfo;
    if (x.dtype === 'string') return identityFn(args);
    (args.backend as BackendWasm).incRef(x.dataId);
    return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
  };
  const origSum = tf.getKernel(tf.Sum, 'wasm')!;
  const sumFn = origSum.kernelFunc as unknown as KernelFn;
  const fastSum: KernelFn = (args) => sumLeading(args, ortGemm) ?? sumFn(args);

  for (const [orig, fn] of [
    [origTranspose, fastTranspose],
    [origMatMul, fastMatMul],
    [origSplit, fastSplit],
    [origConcat, fastConcat],
    [origSum, fastSum],
    [origIdentity, fastIdentity],
  ] as const) {
    tf.unregisterKernel(orig.kernelName, 'wasm');
    tf.registerKernel({ ...orig, kernelFunc: fn as never });
  }
  registered = true;
  return [...REPLACED];
}

const REPLACED = ['Transpose', 'BatchMatMul', 'SplitV', 'Concat', 'Sum', 'Identity'] as const;

/**
 * op(a)·op(b) through onnxruntime (ort_gemm.ts) for one pair of float32 matrices (leading dimensions all
 * 1): Aᵀ·B whose product is at most `ORT_GEMM_MAX_OUTPUT` elements, and inside
 * `withRowDependentProducts` any product within that limit or, with an inner dimension of at least
 * `ORT_GEMM_MIN_INNER_FOR_BLOCKS`, in blocks of rows within it; null otherwise (the caller uses XNNPACK).
 */
function ortMatMul(gemm: OrtGemm, backend: BackendWasm, a: tf.TensorInfo, b: tf.TensorInfo, transA: boolean, transB: boolean): tf.TensorInfo | null {
  if (a.dtype !== 'float32' || b.dtype !== 'float32' || a.shape.length < 2 || a.shape.length !== b.shape.length) return null;
  const r = a.shape.length;
  for (let i = 0; i < r - 2; i++) if (a.shape[i] !== 1 || b.shape[i] !== 1) return null;
  const [aRows, aCols] = [a.shape[r - 2]!, a.shape[r - 1]!];
  const [bRows, bCols] = [b.shape[r - 2]!, b.shape[r - 1]!];
  const m = transA ? aCols : aRows;
  const n = transB ? bRows : bCols;
  const inner = transA ? aRows : aCols;
  if (inner !== (transB ? bCols : bRows) || m * n === 0) return null;
  // Aᵀ·B sums over A's rows: no output row belongs to one of them, so no row-wise promise is at stake.
  const reducesRows = transA && !transB;
  if (rowInvariant && !reducesRows) return null;
  // A larger product goes in blocks of rows of A (contiguous when A is not transposed), each within the
  // limit, when it has enough work per output value to pay for the binding's copies (see ort_gemm.ts).
  const block = Math.floor(ORT_GEMM_MAX_OUTPUT / n);
  if (m * n > ORT_GEMM_MAX_OUTPUT && (transA || block === 0 || inner < ORT_GEMM_MIN_INNER_FOR_BLOCKS)) return null;
  const out = backend.makeOutput([...a.shape.slice(0, r - 2), m, n], 'float32');
  // Views after the allocation: makeOutput may grow (and move) the heap.
  const heap = (backend.wasm as unknown as { HEAPU8: Uint8Array }).HEAPU8.buffer;
  const f32 = (t: tf.TensorInfo, from: number, len: number): Float32Array => new Float32Array(heap, backend.getMemoryOffset(t.dataId) + from * 4, len);
  const bv = f32(b, 0, bRows * bCols);
  if (transA) {
    gemm.run(f32(a, 0, aRows * aCols), aRows, aCols, true, bv, bRows, bCols, transB, f32(out, 0, m * n));
    return out;
  }
  for (let lo = 0; lo < m; lo += block) {
    const rows = Math.min(block, m - lo);
    gemm.run(f32(a, lo * aCols, rows * aCols), rows, aCols, false, bv, bRows, bCols, transB, f32(out, lo * n, rows * n));
  }
  return out;
}

/** An Int32 view of a 4-byte tensor's data on the wasm heap (bits only: floats are copied exactly). */
function view(backend: BackendWasm, t: tf.TensorInfo): Int32Array {
  const heap = (backend.wasm as unknown as { HEAPU8: Uint8Array }).HEAPU8;
  return new Int32Array(heap.buffer, backend.getMemoryOffset(t.dataId), tf.util.sizeFromShape(t.shape));
}

const FOUR_BYTES = new Set(['float32', 'int32']);

/** Copies `len` values; a loop beats `set(subarray())` for the short rows of a GNN (≤ a few hundred). */
function copy(dst: Int32Array, d: number, src: Int32Array, s: number, len: number): void {
  if (len > 256) {
    dst.set(src.subarray(s, s + len), d);
    return;
  }
  for (let i = 0; i < len; i++) dst[d + i] = src[s + i]!;
}

/**
 * `tf.split` with explicit sizes (the gradient of every concat): as shipped it slices through a generic
 * kernel per output, ~10 ms for [5120, 192] → 3 × [5120, 64]; this is one pass of row copies.
 */
function splitV(args: KernelArgs): tf.TensorInfo[] | null {
  const backend = args.backend as BackendWasm;
  const x = args.inputs.x as tf.TensorInfo;
  if (!FOUR_BYTES.has(x.dtype)) return null;
  const { numOrSizeSplits, axis } = args.attrs as { numOrSizeSplits: number | number[]; axis: number };
  const ax = tf.util.parseAxisParam(axis, x.shape)[0]!;
  const sizes = tf.backend_util.prepareSplitSize(x as unknown as tf.Tensor, numOrSizeSplits, ax) as number[];
  const outer = tf.util.sizeFromShape(x.shape.slice(0, ax));
  const inner = tf.util.sizeFromShape(x.shape.slice(ax + 1));
  const outs = sizes.map((sz) => {
    const shape = x.shape.slice();
    shape[ax] = sz;
    return backend.makeOutput(shape, x.dtype);
  });
  // Views after every allocation: makeOutput may grow (and move) the heap.
  const src = view(backend, x);
  const dsts = outs.map((o) => view(backend, o));
  const rowLen = x.shape[ax]! * inner;
  let off = 0;
  sizes.forEach((sz, k) => {
    const len = sz * inner;
    const dst = dsts[k]!;
    for (let o = 0; o < outer; o++) copy(dst, o * len, src, o * rowLen + off, len);
    off += len;
  });
  return outs;
}

/** `tf.concat` for 4-byte dtypes: row copies without per-row subarray allocations. */
function concat(args: KernelArgs): tf.TensorInfo | null {
  const backend = args.backend as BackendWasm;
  const inputs = (args.inputs as unknown as tf.TensorInfo[]).filter((t) => tf.util.sizeFromShape(t.shape) > 0);
  if (inputs.length < 2 || !FOUR_BYTES.has(inputs[0]!.dtype) || inputs.some((t) => t.dtype !== inputs[0]!.dtype)) return null;
  const ax = tf.util.parseAxisParam((args.attrs as { axis: number }).axis, inputs[0]!.shape)[0]!;
  const outShape = tf.backend_util.computeOutShape(inputs.map((t) => t.shape), ax);
  const out = backend.makeOutput(outShape, inputs[0]!.dtype);
  const dst = view(backend, out);
  const outer = tf.util.sizeFromShape(inputs[0]!.shape.slice(0, ax));
  const lens = inputs.map((t) => tf.util.sizeFromShape(t.shape.slice(ax)));
  const total = lens.reduce((a, b) => a + b, 0);
  let off = 0;
  inputs.forEach((t, k) => {
    const src = view(backend, t);
    const len = lens[k]!;
    for (let o = 0; o < outer; o++) copy(dst, o * total + off, src, o * len, len);
    off += len;
  });
  return out;
}

/**
 * `tf.sum` over leading axes (bias gradients: [n, C] → [C]); as shipped it transposes first
 * (~3–4 ms for [5120, 64]); accumulating rows takes ~0.3 ms.
 */
function sumLeading(args: KernelArgs, gemm: OrtGemm | null): tf.TensorInfo | null {
  const backend = args.backend as BackendWasm;
  const x = args.inputs.x as tf.TensorInfo;
  if (x.dtype !== 'float32') return null;
  const { axis, keepDims } = args.attrs as { axis: number | number[]; keepDims: boolean };
  const axes = tf.util.parseAxisParam(axis, x.shape).sort((a, b) => a - b);
  if (axes.length === 0 || axes.some((a, i) => a !== i) || axes.length === x.shape.length) return null;
  const k = axes.length;
  const outer = tf.util.sizeFromShape(x.shape.slice(0, k));
  const inner = tf.util.sizeFromShape(x.shape.slice(k));
  const outShape = keepDims ? x.shape.map((d, i) => (i < k ? 1 : d)) : x.shape.slice(k);
  const out = backend.makeOutput(outShape, 'float32');
  const heap = (backend.wasm as unknown as { HEAPU8: Uint8Array }).HEAPU8;
  const src = new Float32Array(heap.buffer, backend.getMemoryOffset(x.dataId), outer * inner);
  const dst = new Float32Array(heap.buffer, backend.getMemoryOffset(out.dataId), inner);
  // Large column sums as the product 1ᵀ·X through onnxruntime (0.04 ms against the loop's 0.11 for a
  // [2900, 64] bias gradient); below ~64k values its per-call cost outweighs the loop.
  if (gemm && outer * inner >= 65536 && inner <= ORT_GEMM_MAX_OUTPUT) {
    gemm.run(ones(outer), 1, outer, false, src, outer, inner, false, dst);
    return out;
  }
  // Accumulate in float64 so a long column sum does not lose precision against the shipped kernel. Four
  // rows per pass (their float64 sum first): a quarter of the accumulator loads and stores, which bound
  // the one-row loop (12 of these per training step, ~5% of its time before).
  const acc = new Float64Array(inner);
  let o = 0;
  for (; o + 3 < outer; o += 4) {
    const b0 = o * inner;
    const b1 = b0 + inner;
    const b2 = b1 + inner;
    const b3 = b2 + inner;
    for (let i = 0; i < inner; i++) acc[i]! += src[b0 + i]! + src[b1 + i]! + (src[b2 + i]! + src[b3 + i]!);
  }
  for (; o < outer; o++) {
    const base = o * inner;
    for (let i = 0; i < inner; i++) acc[i]! += src[base + i]!;
  }
  for (let i = 0; i < inner; i++) dst[i] = acc[i]!;
  return out;
}

let onesCache = new Float32Array(0);

/** A vector of `n` ones (a view of one cached array). */
function ones(n: number): Float32Array {
  if (onesCache.length < n) onesCache = new Float32Array(Math.max(n, 2 * onesCache.length)).fill(1);
  return onesCache.subarray(0, n);
}

/**
 * Transposes when the permutation (after dropping size-1 dimensions) swaps the last two axes of a
 * tensor with any number of leading batch axes kept in place; returns null for other permutations.
 */
function transposeInfo(backend: BackendWasm, x: tf.TensorInfo, perm: number[]): tf.TensorInfo | null {
  if (x.dtype !== 'float32' && x.dtype !== 'int32') return null;
  const shape = x.shape;
  const kept = [...shape.keys()].filter((i) => shape[i] !== 1);
  const p = perm.filter((i) => shape[i] !== 1);
  const k = kept.length;
  const outShape = perm.map((i) => shape[i]!);
  if (k < 2) return null;
  for (let i = 0; i < k - 2; i++) if (p[i] !== kept[i]) return null;
  if (p[k - 2] !== kept[k - 1] || p[k - 1] !== kept[k - 2]) return null;
  const rows = shape[kept[k - 2]!]!;
  const cols = shape[kept[k - 1]!]!;
  const batch = kept.slice(0, k - 2).reduce((acc, i) => acc * shape[i]!, 1);
  const out = backend.makeOutput(outShape, x.dtype);
  // Both dtypes are 4 bytes: move bits through Int32Array views (one monomorphic loop; floats stay exact).
  const src = new Int32Array((backend.typedArrayFromHeap(x) as Float32Array).buffer, backend.getMemoryOffset(x.dataId), rows * cols * batch);
  const dst = new Int32Array((backend.typedArrayFromHeap(out) as Float32Array).buffer, backend.getMemoryOffset(out.dataId), rows * cols * batch);
  for (let b = 0; b < batch; b++) transpose2d(src, dst, b * rows * cols, rows, cols);
  return out;
}

/**
 * dst[c, r] = src[r, c] for one rows × cols matrix at `offset`. Writing dst sequentially (reading src
 * with a stride) measured fastest here: 2.4 ms for 5120 × 192, against 8.6 ms for 32 × 32 tiles.
 */
function transpose2d(src: Int32Array, dst: Int32Array, offset: number, rows: number, cols: number): void {
  for (let c = 0; c < cols; c++) {
    const d = offset + c * rows;
    let s = offset + c;
    for (let r = 0; r < rows; r++, s += cols) dst[d + r] = src[s]!;
  }
}
