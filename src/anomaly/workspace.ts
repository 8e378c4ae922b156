/**
 * Typed arrays reused from one snapshot to the next, by role, so that scoring a steady stream of scrapes
 * allocates no new buffers. Every ArrayBuffer counts as external memory in V8, and on a 500-service
 * snapshot the ~375 KB of fresh buffers per scrape triggered an "external memory pressure" scavenge every
 * ~25 snapshots — in the p99 of bench/anomaly.mjs on its own.
 *
 * An array handed out stays valid until the same role is asked for again (the next snapshot): callers
 * keep nothing from a workspace beyond the snapshot they are scoring. Arrays come zero-filled.
 */
type TypedArray = Float32Array | Float64Array | Int32Array | Uint8Array;
type Ctor<T extends TypedArray> = { new (length: number): T };

export class Workspace {
  private readonly arrays = new Map<string, TypedArray>();

  float32(role: string, length: number): Float32Array {
    return this.take(role, length, Float32Array);
  }

  float64(role: string, length: number): Float64Array {
    return this.take(role, length, Float64Array);
  }

  int32(role: string, length: number): Int32Array {
    return this.take(role, length, Int32Array);
  }

  uint8(role: string, length: number): Uint8Array {
    return this.take(role, length, Uint8Array);
  }

  private take<T extends TypedArray>(role: string, length: number, ctor: Ctor<T>): T {
    let a = this.arrays.get(role) as T | undefined;
    if (!a || a.length < length || !(a instanceof ctor)) {
      // with headroom, so a service or call more next time does not reallocate
      a = new ctor(Math.ceil(length * 1.25) + 16);
      this.arrays.set(role, a);
    }
    const view = a.subarray(0, length) as T;
    view.fill(0);
    return view;
  }
}

/** Fresh arrays every time: what callers that keep their results (training, tests) use. */
export const FRESH = {
  float32: (_role: string, length: number): Float32Array => new Float32Array(length),
  float64: (_role: string, length: number): Float64Array => new Float64Array(length),
  int32: (_role: string, length: number): Int32Array => new Int32Array(length),
  uint8: (_role: string, length: number): Uint8Array => new Uint8Array(length),
};

export type Arrays = Pick<Workspace, 'float32' | 'float64' | 'int32' | 'uint8'>;
