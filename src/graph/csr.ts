/** Edge arrays: reverse CSR by counting sort (O(edges)), degree statistics, raw typed-array files. */
import { readFileSync, writeFileSync } from 'node:fs';
import { round } from '../core/number.js';

export function reverseCsr(parents: Int32Array, nParent: number): { indptr: Int32Array; indices: Int32Array } {
  const indptr = new Int32Array(nParent + 1);
  let count = 0;
  for (let i = 0; i < parents.length; i++) {
    const p = parents[i]!;
    if (p >= 0) {
      indptr[p + 1]!++;
      count++;
    }
  }
  for (let p = 0; p < nParent; p++) indptr[p + 1]! += indptr[p]!;
  const fill = indptr.slice(0, nParent);
  const indices = new Int32Array(count);
  // Children in node-id order = time order, so each parent's segment comes out time-sorted.
  for (let i = 0; i < parents.length; i++) {
    const p = parents[i]!;
    if (p >= 0) indices[fill[p]!++] = i;
  }
  return { indptr, indices };
}

export function degreeStats(indptr: Int32Array): { mean: number; p99: number; max: number } {
  const n = indptr.length - 1;
  if (n <= 0) return { mean: 0, p99: 0, max: 0 };
  const deg = new Int32Array(n);
  for (let i = 0; i < n; i++) deg[i] = indptr[i + 1]! - indptr[i]!;
  const sorted = deg.slice().sort();
  return { mean: round(indptr[n]! / n, 3), p99: sorted[Math.min(n - 1, Math.floor(0.99 * n))]!, max: sorted[n - 1]! };
}

export function writeTyped(path: string, arr: ArrayBufferView): void {
  writeFileSync(path, new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength));
}

export function readInt32(path: string): Int32Array {
  const buf = readFileSync(path);
  return new Int32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
}
