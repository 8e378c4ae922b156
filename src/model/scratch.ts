/**
 * Typed arrays for one batch at a time, carved out of a buffer that the next batch reuses.
 *
 * Sampling and batch assembly allocate ~2.4 MB of typed arrays per sampled batch of 1,024 customers at
 * `medium`. Allocated with `new`, each array gets fresh pages, which the kernel maps on first touch
 * (~15 µs a page on this VM), and glibc only starts reusing freed memory once a garbage collection has
 * freed the first arrays: a fresh embedding worker paid ~600 page faults in each of its first ~15
 * batches. An inference loop (embed, predict) calls `reset()` before each batch instead: the batch's
 * arrays then land in the pages the previous batch used, already mapped and still in cache.
 *
 * An array handed out is zeroed, as `new` would give it. After `reset()` every array handed out before
 * is overwritten by the next batch: only a loop that is done with a batch's arrays (the model has read
 * them into tensors) may reset.
 */
export class Scratch {
  private buffer = new ArrayBuffer(0);
  private used = 0;

  /** Starts a new batch: the arrays of the previous one are given out again. */
  reset(): void {
    this.used = 0;
  }

  int32(n: number): Int32Array {
    const [buffer, offset] = this.take(4 * n);
    return new Int32Array(buffer, offset, n).fill(0);
  }

  float32(n: number): Float32Array {
    const [buffer, offset] = this.take(4 * n);
    return new Float32Array(buffer, offset, n).fill(0);
  }

  uint8(n: number): Uint8Array {
    const [buffer, offset] = this.take(n);
    return new Uint8Array(buffer, offset, n).fill(0);
  }

  /** `bytes` at an 8-byte aligned offset: of the current buffer, or of a larger one when it is full. */
  private take(bytes: number): [ArrayBuffer, number] {
    const start = Math.ceil(this.used / 8) * 8;
    if (start + bytes > this.buffer.byteLength) {
      // The arrays already handed out keep the old buffer alive until the batch is done; the next
      // batches fit in this one.
      this.buffer = new ArrayBuffer(Math.max(2 * this.buffer.byteLength, 1 << 20, bytes));
      this.used = bytes;
      return [this.buffer, 0];
    }
    this.used = start + bytes;
    return [this.buffer, start];
  }
}

/** `new Int32Array(n)` etc., or arrays from a scratch buffer. */
export interface Alloc {
  int32(n: number): Int32Array;
  float32(n: number): Float32Array;
  uint8(n: number): Uint8Array;
}

export const HEAP_ALLOC: Alloc = {
  int32: (n) => new Int32Array(n),
  float32: (n) => new Float32Array(n),
  uint8: (n) => new Uint8Array(n),
};
