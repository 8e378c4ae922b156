/**
 * Typed arrays in SharedArrayBuffers: posted to a worker thread they are shared, not copied. The graph's
 * columns are read into them (graph.ts); the examples, embeddings and RTI lists that worker threads read
 * (data-parallel training, the embedding pool, the distillation's students) are allocated in them too, so
 * a second thread costs no second copy of a gigabyte of arrays at `large`.
 */
export type SharedTyped = Float64Array | Float32Array | Int32Array;

type TypedCtor<T extends SharedTyped> = { new (b: SharedArrayBuffer): T; BYTES_PER_ELEMENT: number };

/** A zero-filled array of `length` elements in a SharedArrayBuffer. */
export function sharedArray<T extends SharedTyped>(C: TypedCtor<T>, length: number): T {
  return new C(new SharedArrayBuffer(length * C.BYTES_PER_ELEMENT));
}

/** `a` itself when its memory is already shared, else a copy in a SharedArrayBuffer. */
export function shared<T extends SharedTyped>(a: T): T {
  if (a.buffer instanceof SharedArrayBuffer) return a;
  const out = sharedArray(a.constructor as TypedCtor<T>, a.length);
  out.set(a);
  return out;
}
