/**
 * One TypeScript kernel body, registered on both the wasm and the cpu backend.
 *
 * A `TypedKernel` computes over plain typed arrays; the two adapters below hand it the arrays each backend
 * keeps its tensors in:
 *
 * - wasm: views over the Emscripten heap. `makeOutput` mallocs and a malloc may grow (and so detach) the
 *   heap, and so may moving an input that still lives on another backend; so every input is located
 *   first (which moves it), then every output is allocated, and only then are the views taken. The
 *   kernel body must not allocate wasm memory (plain JS typed arrays are fine: they have their own
 *   buffers). Outputs are `malloc`ed, not zeroed: `compute` writes every element.
 * - cpu: `readSync` returns the stored typed array itself (no copy); outputs are fresh typed arrays
 *   handed to `write` (what the cpu backend's own `makeTensorInfo` does).
 *
 * Both run the same `compute`, so wasm and cpu give bit-identical results.
 */
import { tf } from '../core/tf.js';
import type { BackendWasm } from '@tensorflow/tfjs-backend-wasm';

/** The arrays kernels read and write: float32 and int32 tensors only. */
export type KernelArray = Float32Array | Int32Array;

export interface OutputSpec {
  shape: number[];
  dtype: 'float32' | 'int32';
}

export interface TypedKernel {
  /** The TF.js kernel name. */
  name: string;
  /** Input names in the order `compute` receives them (the keys of `runKernel`'s input map). */
  inputs: readonly string[];
  /** Output shapes and dtypes, from the input shapes and the attrs. */
  outputs(inputs: readonly tf.TensorInfo[], attrs: tf.NamedAttrMap): OutputSpec[];
  /** Writes every element of every output. Throwing is fine: the adapters free the outputs. */
  compute(ins: KernelArray[], outs: KernelArray[], inputs: readonly tf.TensorInfo[], attrs: tf.NamedAttrMap): void;
}

type KernelArgs = { inputs: tf.NamedTensorInfoMap; backend: {}; attrs?: tf.NamedAttrMap };

function inputList(k: TypedKernel, inputs: tf.NamedTensorInfoMap): tf.TensorInfo[] {
  return k.inputs.map((name) => {
    const t = inputs[name];
    if (t === undefined) throw new Error(`kernel ${k.name}: missing input ${name}`);
    if (t.dtype !== 'float32' && t.dtype !== 'int32') throw new Error(`kernel ${k.name}: input ${name} must be float32 or int32 (got ${t.dtype})`);
    return t;
  });
}

/** The wasm kernel function of `k`. Returns one TensorInfo for a one-output kernel, else an array. */
export function wasmKernelFunc(k: TypedKernel): tf.KernelFunc {
  return ({ inputs, backend, attrs }: KernelArgs) => {
    const wasm = backend as BackendWasm;
    const ins = inputList(k, inputs);
    const a = attrs ?? {};
    // Locating an input moves it onto the heap if it lives elsewhere; do it before any view exists.
    for (const t of ins) wasm.getMemoryOffset(t.dataId);
    const outs = k.outputs(ins, a).map((o) => wasm.makeOutput(o.shape, o.dtype));
    try {
      const inArrays = ins.map((t) => wasm.typedArrayFromHeap(t) as KernelArray);
      const outArrays = outs.map((o) => wasm.typedArrayFromHeap(o) as KernelArray);
      k.compute(inArrays, outArrays, ins, a);
    } catch (e) {
      for (const o of outs) wasm.disposeData(o.dataId);
      throw e;
    }
    return outs.length === 1 ? outs[0]! : outs;
  };
}

/** The cpu kernel function of `k`. */
export function cpuKernelFunc(k: TypedKernel): tf.KernelFunc {
  return ({ inputs, backend, attrs }: KernelArgs) => {
    const cpu = backend as tf.KernelBackend;
    const ins = inputList(k, inputs);
    const a = attrs ?? {};
    const inArrays = ins.map((t) => cpu.readSync(t.dataId) as KernelArray);
    const specs = k.outputs(ins, a);
    const outArrays = specs.map((o) => {
      const size = tf.util.sizeFromShape(o.shape);
      return o.dtype === 'float32' ? new Float32Array(size) : new Int32Array(size);
    });
    k.compute(inArrays, outArrays, ins, a);
    const outs = specs.map((o, i): tf.TensorInfo => ({ dataId: cpu.write(outArrays[i]!, o.shape, o.dtype), shape: o.shape, dtype: o.dtype }));
    return outs.length === 1 ? outs[0]! : outs;
  };
}
