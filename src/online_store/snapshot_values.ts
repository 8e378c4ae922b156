/**
 * A snapshot file (embeddings.parquet or predictions.parquet, or their part files) streamed through
 * DuckDB as publishable batches: keys as strings (the store's keys are text), values as float32 bytes
 * (a FLOAT[dim] column) or decimal strings (a scalar column). One DuckDB chunk (2,048 rows) at a time,
 * so a 20M-entity snapshot never sits in memory.
 */
import type { DuckDBVector } from '@duckdb/node-api';
import { DataError } from '../core/errors.js';
import { closeDuck, lit, openDuck, q } from '../data/duck.js';
import type { ValueBatch } from './publisher.js';

export interface SnapshotColumns {
  files: readonly string[];
  key: string;
  /** The value column: `embedding` (FLOAT[dim]) or a scalar (`prediction`). */
  value: string;
  /** Floats per value for a vector column; 0 for a scalar one. */
  dim: number;
}

export async function* snapshotValues(s: SnapshotColumns): AsyncGenerator<ValueBatch> {
  const duck = await openDuck();
  try {
    const value = s.dim > 0 ? `CAST(${q(s.value)} AS FLOAT[${s.dim}])` : `CAST(${q(s.value)} AS DOUBLE)`;
    const files = `[${s.files.map(lit).join(', ')}]`;
    const result = await duck.conn.stream(`SELECT CAST(${q(s.key)} AS VARCHAR), ${value} FROM read_parquet(${files})`);
    for (;;) {
      const chunk = await result.fetchChunk();
      if (!chunk || chunk.rowCount === 0) break;
      const n = chunk.rowCount;
      const keyVec = chunk.getColumnVector(0);
      const keys = new Array<string>(n);
      for (let i = 0; i < n; i++) {
        const k = keyVec.getItem(i);
        if (k === null) throw new DataError(`a null key in column ${s.key}`, { where: s.files.join(', '), hint: 're-run the command that wrote the snapshot' });
        keys[i] = k as string;
      }
      yield { keys, values: s.dim > 0 ? vectorValues(chunk.getColumnVector(1), n, s.dim) : scalarValues(chunk.getColumnVector(1), n) };
    }
  } finally {
    closeDuck(duck);
  }
}

function vectorValues(vec: DuckDBVector, n: number, dim: number): Buffer[] {
  // DuckDB's FLOAT[dim] vector keeps its values in a child FLOAT vector whose typed array is `items`
  // (private in the typings; export/entity_source.ts reads it the same way).
  const items = (vec as unknown as { childData?: { items?: unknown } }).childData?.items;
  const flat = items instanceof Float32Array && items.length >= n * dim ? items.slice(0, n * dim) : gather(vec, n, dim);
  const bytes = Buffer.from(flat.buffer, flat.byteOffset, flat.byteLength);
  return Array.from({ length: n }, (_, i) => bytes.subarray(i * dim * 4, (i + 1) * dim * 4));
}

function gather(vec: DuckDBVector, n: number, dim: number): Float32Array {
  const out = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) {
    const v = vec.getItem(i) as { items: readonly (number | null)[] } | null;
    if (v === null) throw new DataError('a null embedding in the snapshot', { hint: 're-run gnnctl embed' });
    for (let j = 0; j < dim; j++) out[i * dim + j] = Number(v.items[j]);
  }
  return out;
}

function scalarValues(vec: DuckDBVector, n: number): string[] {
  const out = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    const v = vec.getItem(i);
    out[i] = v === null ? 'NaN' : String(v);
  }
  return out;
}
