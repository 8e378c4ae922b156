/**
 * Kernels the TF.js wasm backend (4.22) does not ship, registered for `backendName: 'wasm'`.
 *
 * How the list was found: `test/compute/wasm_kernels.e2e.test.ts` runs forward and backward of every op a GNN
 * trainer uses (gather, matMul, the activations, softmax, reductions, moments, concat/slice/tile,
 * where, oneHot, dropout, the losses, `tf.train.adam`, `tf.variableGrads`, …) on wasm and on cpu and
 * compares them; the only "Kernel 'X' not registered for backend 'wasm'" failures among them come from
 * `UnsortedSegmentSum` (the gradient of `tf.gather`, so every embedding lookup). Comparing the two kernel
 * registries adds a few more that gnnctl may reach (`einsum`, the filter gradient of `conv1d`/`conv2d`, the
 * gradients of depthwise convolution). The rest of that difference is complex64, string, ragged and
 * canvas kernels, which have no meaning in the wasm heap.
 *
 * Two ways to fill a gap:
 *
 * - `typescript`: a loop over the wasm heap in TypeScript. Used for `UnsortedSegmentSum`, which runs on
 *   every training step over `[rows × dim]` gradients and must be fast (1.3–1.9 GB/s for 100k × 16
 *   here, see `bench/kernels.mjs`). The cpu backend's version builds one mask per segment (O(segments × rows)),
 *   which would make a 10k-row embedding table's gradient take seconds.
 * - `cpu-delegate`: copy the inputs to the cpu backend, run the cpu backend's own kernel, copy the output
 *   back. Results are then exactly the cpu backend's, at cpu speed plus two copies. Used for kernels off
 *   gnnctl's hot path; the first use of each logs a warning so a slow run has an explanation.
 *
 * Trap for heap kernels: `backend.makeOutput` mallocs, and a malloc may grow the wasm memory, which
 * detaches every typed-array view taken before it. So allocate the output first, then take the views of
 * the inputs and the output (`typedArrayFromHeap`), and never keep a view across an allocation.
 *
 * One kernel is replaced rather than added: wasm's own `GatherV2` computes every element's address
 * separately and measured 0.06–0.10 GB/s here (docs/architecture.md, "Compute": gather + mean ≈ 0.12 GB/s); gathering whole
 * rows in TypeScript runs at 0.6–2.9 GB/s (bench/kernels.mjs), and every embedding lookup and its
 * gradient go through it. Rows of ≥ 64 elements are moved with `copyWithin` on the heap (a memmove),
 * shorter ones with a loop, which beats the call overhead there.
 *
 * Registration is idempotent and skips a missing kernel that a later TF.js release registers itself.
 */
import { tf } from '../core/tf.js';
import type { BackendWasm } from '@tensorflow/tfjs-backend-wasm';
import { warn } from '../core/log.js';

/** How a kernel that the wasm backend lacks is provided. */
export type KernelImpl = 'typescript' | 'cpu-delegate';

export interface AddedKernel {
  /** The TF.js kernel name, e.g. `UnsortedSegmentSum`. */
  name: string;
  impl: KernelImpl;
  /** Which gnnctl operations reach this kernel. */
  usedBy: string;
}

/** The kernels gnnctl adds to the wasm backend, in the order they are registered. */
export const WASM_ADDED_KERNELS: readonly AddedKernel[] = [
  { name: tf.UnsortedSegmentSum, impl: 'typescript', usedBy: 'gradient of tf.gather (embedding lookups), tf.unsortedSegmentSum' },
  { name: tf.Einsum, impl: 'cpu-delegate', usedBy: 'tf.einsum' },
  { name: tf.Conv2DBackpropFilter, impl: 'cpu-delegate', usedBy: 'gradient of tf.conv1d / tf.conv2d (filter)' },
  { name: tf.DepthwiseConv2dNativeBackpropFilter, impl: 'cpu-delegate', usedBy: 'gradient of tf.depthwiseConv2d (filter)' },
  { name: tf.DepthwiseConv2dNativeBackpropInput, impl: 'cpu-delegate', usedBy: 'gradient of tf.depthwiseConv2d (input)' },
];

/** wasm kernels gnnctl replaces with faster TypeScript versions. */
export const WASM_REPLACED_KERNELS: readonly AddedKernel[] = [
  { name: tf.GatherV2, impl: 'typescript', usedBy: 'tf.gather (embedding lookups, the forward pass of every gather gradient)' },
];

/** Kernels this module registered (a missing one is absent when TF.js already had it). */
const registeredByUs = new Set<string>();

export interface RegisteredKernels {
  /** Kernels the wasm backend lacked. */
  added: string[];
  /** wasm kernels replaced by faster ones. */
  replaced: string[];
}

/**
 * Registers every kernel in `WASM_ADDED_KERNELS` that the wasm backend does not already have, and the
 * replacements in `WASM_REPLACED_KERNELS`. Safe to call any number of times, before or after the wasm
 * backend initialises (none needs a setup function). Returns what this module has registered so far.
 */
export function registerWasmKernels(): RegisteredKernels {
  for (const k of WASM_ADDED_KERNELS) {
    if (registeredByUs.has(k.name) || hasKernel(k.name, 'wasm')) continue;
    const kernelFunc = k.impl === 'typescript' ? typescriptKernels[k.name] : cpuDelegate(k.name);
    if (kernelFunc === undefined) throw new Error(`no TypeScript implementation for wasm kernel ${k.name}`);
    tf.registerKernel({ kernelName: k.name, backendName: 'wasm', kernelFunc });
    registeredByUs.add(k.name);
  }
  for (const k of WASM_REPLACED_KERNELS) {
    if (registeredByUs.has(k.name)) continue;
    const kernelFunc = typescriptKernels[k.name];
    if (kernelFunc === undefined) throw new Error(`no TypeScript implementation for wasm kernel ${k.name}`);
    // Unregister first: registerKernel would overwrite too, but with a console warning.
    if (hasKernel(k.name, 'wasm')) tf.unregisterKernel(k.name, 'wasm');
    tf.registerKernel({ kernelName: k.name, backendName: 'wasm', kernelFunc });
    registeredByUs.add(k.name);
  }
  const ours = (list: readonly AddedKernel[]) => list.filter((k) => registeredByUs.has(k.name)).map((k) => k.name);
  return { added: ours(WASM_ADDED_KERNELS), replaced: ours(WASM_REPLACED_KERNELS) };
}

function hasKernel(kernelName: string, backendName: string): boolean {
  return tf.getKernelsForBackend(backendName).some((k) => k.kernelName === kernelName);
}

// ---------------------------------------------------------------------------------------------------------
// UnsortedSegmentSum

/**
 * `out[s, …] = Σ_{i : segmentIds[i] = s} x[i, …]`, TensorFlow's `unsorted_segment_sum`.
 *
 * Inputs: `x` float32 or int32 of shape `[...idsShape, ...inner]`; `segmentIds` int32 of shape
 * `idsShape` (TF.js's op and the gather gradient pass a vector). Attr `numSegments`. Output
 * `[numSegments, ...inner]`, dtype of `x`. Ids outside `[0, numSegments)` are dropped, as the cpu backend
 * does (TensorFlow drops negative ids and rejects too-large ones).
 */
function unsortedSegmentSum(args: { inputs: tf.NamedTensorInfoMap; backend: {}; attrs?: tf.NamedAttrMap }): tf.TensorInfo {
  const backend = args.backend as BackendWasm;
  const x = args.inputs.x as tf.TensorInfo;
  const segmentIds = args.inputs.segmentIds as tf.TensorInfo;
  const numSegments = (args.attrs as { numSegments: number }).numSegments;
  const idsRank = segmentIds.shape.length;
  if (x.dtype !== 'float32' && x.dtype !== 'int32') {
    throw new Error(`unsortedSegmentSum on wasm: x must be float32 or int32 (got ${x.dtype})`);
  }
  if (segmentIds.dtype !== 'int32') {
    throw new Error(`unsortedSegmentSum on wasm: segmentIds must be int32 (got ${segmentIds.dtype})`);
  }
  if (idsRank > x.shape.length || segmentIds.shape.some((d, i) => d !== x.shape[i])) {
    throw new Error(
      `unsortedSegmentSum on wasm: segmentIds shape [${segmentIds.shape}] must be a prefix of x shape [${x.shape}]`,
    );
  }
  const innerShape = x.shape.slice(idsRank);
  const out = backend.makeOutput([numSegments, ...innerShape], x.dtype);
  // Views only after the allocation above (see the module comment).
  const outValues = backend.typedArrayFromHeap(out) as Float32Array | Int32Array;
  outValues.fill(0);
  const rows = tf.util.sizeFromShape(segmentIds.shape);
  if (rows === 0 || outValues.length === 0) return out;
  const ids = backend.typedArrayFromHeap(segmentIds) as Int32Array;
  const xValues = backend.typedArrayFromHeap(x) as Float32Array | Int32Array;
  const inner = tf.util.sizeFromShape(innerShape);
  if (x.dtype === 'float32') {
    segmentSumF32(xValues as Float32Array, ids, rows, inner, numSegments, outValues as Float32Array);
  } else {
    segmentSumI32(xValues as Int32Array, ids, rows, inner, numSegments, outValues as Int32Array);
  }
  return out;
}

/*
 * Two monomorphic copies of the loop: V8 compiles each for one array type, which keeps the float path
 * (the hot one) free of type checks. Rows of `x` are read in order and added into row `ids[i]` of `out`;
 * the inner loop is unrolled by 4, which measured 1.4–1.8× faster than the plain loop for dims 16–64
 * (≈2 GB/s for 100k × 16; bench/kernels.mjs).
 */
function segmentSumF32(x: Float32Array, ids: Int32Array, rows: number, inner: number, numSegments: number, out: Float32Array): void {
  if (inner === 1) {
    for (let i = 0; i < rows; i++) {
      const s = ids[i]!;
      if (s >= 0 && s < numSegments) out[s]! += x[i]!;
    }
    return;
  }
  const inner4 = inner & ~3;
  for (let i = 0; i < rows; i++) {
    const s = ids[i]!;
    if (s < 0 || s >= numSegments) continue;
    const src = i * inner;
    const dst = s * inner;
    let j = 0;
    for (; j < inner4; j += 4) {
      out[dst + j]! += x[src + j]!;
      out[dst + j + 1]! += x[src + j + 1]!;
      out[dst + j + 2]! += x[src + j + 2]!;
      out[dst + j + 3]! += x[src + j + 3]!;
    }
    for (; j < inner; j++) out[dst + j]! += x[src + j]!;
  }
}

function segmentSumI32(x: Int32Array, ids: Int32Array, rows: number, inner: number, numSegments: number, out: Int32Array): void {
  for (let i = 0; i < rows; i++) {
    const s = ids[i]!;
    if (s < 0 || s >= numSegments) continue;
    let src = i * inner;
    let dst = s * inner;
    const end = src + inner;
    while (src < end) out[dst++]! += x[src++]!;
  }
}

// ---------------------------------------------------------------------------------------------------------
// GatherV2

/**
 * `tf.gather(x, indices, axis, batchDims)`, TensorFlow's `GatherV2`. With `x` seen as
 * `[batch, outer, dimSize, slice]` and `indices` as `[batch, perBatch]`, output row `(b, o, i)` is the
 * slice `x[b, o, indices[b, i], :]`. Indices outside `[0, dimSize)` throw, with wasm's own message.
 */
function gatherV2(args: { inputs: tf.NamedTensorInfoMap; backend: {}; attrs?: tf.NamedAttrMap }): tf.TensorInfo {
  const backend = args.backend as BackendWasm;
  const x = args.inputs.x as tf.TensorInfo;
  const indices = args.inputs.indices as tf.TensorInfo;
  // The wasm backend stores only these dtypes on its heap (as did its own GatherV2).
  if ((x.dtype !== 'float32' && x.dtype !== 'int32' && x.dtype !== 'bool') || indices.dtype !== 'int32') {
    throw new Error(`gather on wasm: unsupported dtypes (x ${x.dtype}, indices ${indices.dtype})`);
  }
  const { axis, batchDims } = args.attrs as { axis: number; batchDims: number };
  const parsedAxis = tf.util.parseAxisParam(axis, x.shape)[0]!;
  const info = tf.backend_util.segment_util.collectGatherOpShapeInfo(
    x as unknown as tf.Tensor,
    indices as unknown as tf.Tensor,
    parsedAxis,
    batchDims,
  );
  const { batchSize, outerSize, dimSize, sliceSize } = info;
  const out = backend.makeOutput(info.outputShape, x.dtype);
  const indicesSize = tf.util.sizeFromShape(indices.shape);
  if (indicesSize === 0 || tf.util.sizeFromShape(info.outputShape) === 0) {
    return out;
  }
  // Views only after the allocation above (see the module comment).
  const idx = backend.typedArrayFromHeap(indices) as Int32Array;
  for (let i = 0; i < indicesSize; i++) {
    const v = idx[i]!;
    if (v < 0 || v >= dimSize) {
      backend.disposeData(out.dataId);
      throw new Error(`GatherV2: the index value ${v} is not in [0, ${dimSize - 1}]`);
    }
  }
  // Emscripten's heap; its typings are not installed, hence the cast. int32 rows are copied through an
  // Int32Array view, not a Float32Array one, so no integer is ever read as a (NaN-canonicalised) float.
  const heapU8 = (backend.wasm as unknown as { HEAPU8: Uint8Array }).HEAPU8;
  const bytes = x.dtype === 'bool' ? 1 : 4;
  const heap =
    x.dtype === 'float32' ? new Float32Array(heapU8.buffer) : x.dtype === 'int32' ? new Int32Array(heapU8.buffer) : heapU8;
  const xStart = backend.getMemoryOffset(x.dataId) / bytes;
  const outStart = backend.getMemoryOffset(out.dataId) / bytes;
  gatherRows(heap, xStart, outStart, idx, batchSize, outerSize, dimSize, sliceSize, indicesSize / batchSize);
  return out;
}

/** The copy loop of `gatherV2`, over one whole-heap view (offsets in elements). */
function gatherRows(
  heap: Float32Array | Int32Array | Uint8Array,
  xStart: number,
  outStart: number,
  idx: Int32Array,
  batchSize: number,
  outerSize: number,
  dimSize: number,
  sliceSize: number,
  perBatch: number,
): void {
  let o = outStart;
  for (let b = 0; b < batchSize; b++) {
    for (let q = 0; q < outerSize; q++) {
      const base = xStart + (b * outerSize + q) * dimSize * sliceSize;
      const idxBase = b * perBatch;
      if (sliceSize >= 64) {
        for (let i = 0; i < perBatch; i++) {
          const src = base + idx[idxBase + i]! * sliceSize;
          heap.copyWithin(o, src, src + sliceSize);
          o += sliceSize;
        }
      } else {
        for (let i = 0; i < perBatch; i++) {
          let src = base + idx[idxBase + i]! * sliceSize;
          const end = src + sliceSize;
          while (src < end) heap[o++] = heap[src++]!;
        }
      }
    }
  }
}

const typescriptKernels: Record<string, tf.KernelFunc> = {
  [tf.UnsortedSegmentSum]: unsortedSegmentSum,
  [tf.GatherV2]: gatherV2,
};

// ---------------------------------------------------------------------------------------------------------
// cpu delegate

const warnedDelegates = new Set<string>();

/**
 * A wasm kernel that runs the cpu backend's kernel of the same name on copies of its inputs. Inputs may
 * be a named map or an array (Einsum passes an array); outputs may be one tensor or several.
 */
function cpuDelegate(kernelName: string): tf.KernelFunc {
  return ({ inputs, backend, attrs }) => {
    const wasm = backend as BackendWasm;
    const cpuKernel = tf.getKernel(kernelName, 'cpu');
    if (cpuKernel === undefined) throw new Error(`wasm kernel ${kernelName}: the cpu backend has no kernel to delegate to`);
    const cpu = cpuBackend();
    if (!warnedDelegates.has(kernelName)) {
      warnedDelegates.add(kernelName);
      warn(`TF.js kernel ${kernelName} runs on the cpu backend (the wasm backend lacks it): correct but slow`);
    }
    const temps: tf.TensorInfo[] = [];
    const cpuInputs: Record<string, tf.TensorInfo> | tf.TensorInfo[] = Array.isArray(inputs) ? [] : {};
    try {
      for (const [key, t] of Object.entries(inputs)) {
        if (t === undefined) continue;
        if (t.dtype === 'string' || t.dtype === 'complex64') {
          throw new Error(`wasm kernel ${kernelName}: cpu delegate cannot move ${t.dtype} tensors`);
        }
        const values = wasm.readSync(t.dataId);
        const info: tf.TensorInfo = { dataId: cpu.write(values, t.shape, t.dtype), shape: t.shape, dtype: t.dtype };
        temps.push(info);
        (cpuInputs as Record<string, tf.TensorInfo>)[key] = info;
      }
      const result = cpuKernel.kernelFunc({ inputs: cpuInputs as tf.NamedTensorInfoMap, backend: cpu, attrs });
      const outs = Array.isArray(result) ? result : [result];
      const wasmOuts = outs.map((o) => {
        const values = cpu.readSync(o.dataId);
        const copy = wasm.makeOutput(o.shape, o.dtype, undefined, values);
        disposeCpu(cpu, o);
        return copy;
      });
      return Array.isArray(result) ? wasmOuts : wasmOuts[0]!;
    } finally {
      for (const t of temps) cpu.disposeData(t.dataId);
    }
  };
}

/** Some cpu kernels return a tracked `Tensor` (made with `makeOutput`), most a bare TensorInfo. */
function disposeCpu(cpu: tf.KernelBackend, info: tf.TensorInfo): void {
  if (info instanceof tf.Tensor) info.dispose();
  else cpu.disposeData(info.dataId);
}

/**
 * The cpu backend instance, initialised if needed, with its "install tfjs-node" banner silenced: gnnctl
 * uses it as a reference and a delegate, and `gnnctl doctor` already explains the backend choice.
 */
export function cpuBackend(): tf.KernelBackend {
  const cpu = tf.findBackend('cpu');
  if (cpu === null) throw new Error('the TF.js cpu backend is not registered (is @tensorflow/tfjs installed?)');
  // MathBackendCPU prints the banner on its first write while `firstUse` is true.
  (cpu as unknown as { firstUse?: boolean }).firstUse = false;
  return cpu;
}
