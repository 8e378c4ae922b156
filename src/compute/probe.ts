/**
 * Quick throughput probes on the active TF.js backend, for `gnnctl doctor` and `bench/kernels.mjs`.
 *
 * A probe runs one op repeatedly for a fixed wall-clock budget after one warm-up call (the first call
 * pays for XNNPACK's packing and V8's compilation) and reads the result back each time, so asynchronous
 * backends are timed to completion. Numbers are indicative: on a 2-core machine another process can halve
 * them. The full benchmark with GNN-shaped matrices is `bench/kernels.mjs`.
 */
import { tf } from '../core/tf.js';

export interface MatmulProbe {
  /** The backend the probe ran on (`tf.getBackend()`). */
  backend: string;
  /** Matrix shapes: `[m, k] · [k, n]`. */
  m: number;
  k: number;
  n: number;
  iterations: number;
  seconds: number;
  /** 2·m·k·n floating-point operations per matmul, per second, in units of 1e9. */
  gflops: number;
}

/**
 * Matmul throughput of the active backend. Default shape: 512³ (0.27 GFLOP a call, ≈10 ms on wasm), or
 * 128³ on the cpu backend, whose single 512³ call would take longer than the whole budget.
 */
export function probeMatmul(options: { seconds?: number; m?: number; k?: number; n?: number } = {}): MatmulProbe {
  const backend = tf.getBackend();
  const side = backend === 'cpu' ? 128 : 512;
  const { seconds = 0.2, m = side, k = side, n = side } = options;
  const a = tf.randomUniform([m, k], -1, 1, 'float32', 1);
  const b = tf.randomUniform([k, n], -1, 1, 'float32', 2);
  try {
    const run = (): void => {
      const c = tf.matMul(a, b);
      c.dataSync();
      c.dispose();
    };
    run();
    let iterations = 0;
    const start = performance.now();
    let elapsed = 0;
    do {
      run();
      iterations++;
      elapsed = (performance.now() - start) / 1000;
    } while (elapsed < seconds);
    return { backend, m, k, n, iterations, seconds: elapsed, gflops: (2 * m * k * n * iterations) / elapsed / 1e9 };
  } finally {
    a.dispose();
    b.dispose();
  }
}
