/**
 * Synchronous single-threaded matrix products through onnxruntime's CPU kernels (MLAS), for the TF.js
 * wasm backend's `BatchMatMul` (wasm_fast_kernels.ts).
 *
 * Why: tfjs-wasm's XNNPACK runs 128-bit wasm SIMD at ≈ 23–26 GFLOP/s on this kind of machine, and a
 * transposed product (every weight gradient, Aᵀ·dY) first transposes an operand in a TypeScript loop. MLAS
 * uses the CPU's own vector width: on one thread it measured 55–95 GFLOP/s on the training step's shapes,
 * transposes included (`Gemm`'s transA/transB).
 *
 * Why the private binding: a TF.js kernel is synchronous, and onnxruntime-node's public
 * `InferenceSession.run` returns a Promise (it defers the native call with `setImmediate`). The native
 * session underneath (`onnxruntime-node/dist/binding`, the object that public class wraps) runs
 * synchronously on the calling thread. If that module is missing or changes shape, `OrtGemm.load` returns
 * null and the caller keeps XNNPACK: a slower step, never a wrong one.
 *
 * Memory: inputs are passed as views (the binding references them, no copy), and the output is
 * pre-allocated, so onnxruntime writes straight into the caller's array. The binding still returns a fresh
 * JS copy of every output, and on this VM a freshly mapped page costs ~15 µs; so callers send products
 * with small outputs (weight gradients: [in, out]), and larger ones only in blocks of rows with much work
 * per output value (`ORT_GEMM_MAX_OUTPUT`, `ORT_GEMM_MIN_INNER_FOR_BLOCKS`).
 */
import { createRequire } from 'node:module';
import { attr, OnnxGraphBuilder } from '../artifacts/onnx/index.js';

/**
 * Largest output (elements) of one onnxruntime call: 125 KB, just below glibc's default mmap threshold
 * (128 KB), so the binding's copy of it comes from the heap rather than from freshly mapped pages.
 */
export const ORT_GEMM_MAX_OUTPUT = 32000;

/**
 * Smallest inner dimension for which a product larger than `ORT_GEMM_MAX_OUTPUT` still goes to
 * onnxruntime, in blocks of rows. Each block's output is copied once more by the binding, and on this VM
 * that copy's memory sometimes has to be mapped afresh (~15 µs a page, i.e. ~15 ns an output value); a
 * product earns that back only with ≥ ~128 multiply-adds per output value (2.5 ns at XNNPACK's speed,
 * 0.6–0.8 ns at MLAS's). Measured on the training bench (churn, `medium`, 3 alternating runs each):
 * 17.1k/17.4k/19.0k seeds/s with this rule, against 15.4k/13.0k/15.8k with no blocking and
 * 20.2k/17.0k/12.8k blocking every product.
 */
export const ORT_GEMM_MIN_INNER_FOR_BLOCKS = 128;

interface NativeSession {
  loadModel(buffer: ArrayBufferLike, offset: number, length: number, options: object): void;
  run(feeds: Record<string, unknown>, fetches: Record<string, unknown>, options: object): Record<string, unknown>;
}

interface Binding {
  binding: { InferenceSession: new () => NativeSession };
  initOrt(): void;
}

type TensorCtor = new (type: 'float32', data: Float32Array, dims: readonly number[]) => unknown;

/** C = op(A)·op(B) for float32 row-major matrices, op = identity or transpose. */
export class OrtGemm {
  private constructor(
    /** sessions by transA * 2 + transB */
    private readonly sessions: NativeSession[],
    private readonly Tensor: TensorCtor,
  ) {}

  /** The four sessions (one per transpose combination), or null when onnxruntime-node's binding cannot be used. */
  static load(): OrtGemm | null {
    try {
      const require = createRequire(import.meta.url);
      const { binding, initOrt } = require('onnxruntime-node/dist/binding') as Binding;
      const { Tensor } = require('onnxruntime-node') as { Tensor: TensorCtor };
      initOrt();
      const sessions = [0, 1, 2, 3].map((k) => {
        const model = gemmModel(k >> 1, k & 1);
        const s = new binding.InferenceSession();
        s.loadModel(model.buffer, model.byteOffset, model.byteLength, { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' });
        return s;
      });
      const gemm = new OrtGemm(sessions, Tensor);
      return gemm.selfTest() ? gemm : null;
    } catch {
      return null;
    }
  }

  /**
   * out = op(a)·op(b). `a` is [aRows, aCols] and `b` [bRows, bCols] as stored; `out` has room for exactly
   * the product ([M, N]). The arrays may be views of any buffer (the wasm heap included).
   */
  run(a: Float32Array, aRows: number, aCols: number, transA: boolean, b: Float32Array, bRows: number, bCols: number, transB: boolean, out: Float32Array): void {
    const m = transA ? aCols : aRows;
    const n = transB ? bRows : bCols;
    this.sessions[(transA ? 2 : 0) + (transB ? 1 : 0)]!.run(
      { a: new this.Tensor('float32', a, [aRows, aCols]), b: new this.Tensor('float32', b, [bRows, bCols]) },
      { c: new this.Tensor('float32', out, [m, n]) },
      {},
    );
  }

  /** A 2×3 · 3×2 product in every transpose combination against the plain definition. */
  private selfTest(): boolean {
    const a = Float32Array.of(1, 2, 3, 4, 5, 6);
    const b = Float32Array.of(7, 8, 9, 10, 11, 12);
    for (const transA of [false, true]) {
      for (const transB of [false, true]) {
        // op(a) is [2, 3] read as stored [2, 3] or as the transpose of a stored [3, 2]; likewise op(b) [3, 2].
        const [ar, ac] = transA ? [3, 2] : [2, 3];
        const [br, bc] = transB ? [2, 3] : [3, 2];
        const out = new Float32Array(4);
        this.run(a, ar, ac, transA, b, br, bc, transB, out);
        const at = (i: number, k: number): number => (transA ? a[k * 2 + i]! : a[i * 3 + k]!);
        const bt = (k: number, j: number): number => (transB ? b[j * 3 + k]! : b[k * 2 + j]!);
        for (let i = 0; i < 2; i++) {
          for (let j = 0; j < 2; j++) {
            let s = 0;
            for (let k = 0; k < 3; k++) s += at(i, k) * bt(k, j);
            if (out[i * 2 + j] !== s) return false;
          }
        }
      }
    }
    return true;
  }
}

/** Gemm(a, b) with the given transposes and every dimension symbolic. */
function gemmModel(transA: number, transB: number): Uint8Array {
  const g = new OnnxGraphBuilder({ graphName: 'gemm' });
  const a = g.addInput('a', 'FLOAT', ['a0', 'a1']);
  const b = g.addInput('b', 'FLOAT', ['b0', 'b1']);
  g.addNode('Gemm', [a, b], ['c'], { attributes: { transA: attr.int(transA), transB: attr.int(transB) } });
  g.addOutput('c', 'FLOAT', ['m', 'n']);
  return g.toBytes();
}
