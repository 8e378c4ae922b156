/**
 * An embedding snapshot (one Parquet file or its part files) streamed through DuckDB in its file order,
 * so export never holds a whole entity table: 20M × 64 float32 is 5 GB, and 20M keys as JS strings another
 * 1–2 GB (past V8's 16.7M-entry Map limit, too). What export needs from it:
 *
 * - `keyBatches()`: the key column as bytes, in row order (for the hashed key index);
 * - `vectorChunks()`: the vectors, row-major float32, in row order (streamed into model.onnx.data);
 * - `vectorsFor(keys)`: the vectors of a few keys (parity and the int8 report look up a few thousand);
 * - `readAll()`: everything in memory, for tables small enough to stay inside model.onnx.
 *
 * DuckDB rather than parquet-wasm: parquet-wasm's file reader is 32-bit (a 6.7 GB snapshot fails with
 * "Corrupt footer", its size wrapped past 4 GiB), and its in-memory reader needs the whole file in one
 * buffer. A plain scan keeps the file's row order (DuckDB's `preserve_insertion_order`), so every pass sees
 * row r at the same place; vectors come out of DuckDB's FLOAT[dim] chunks as typed arrays (no per-value JS).
 */
import type { DuckDBVector } from '@duckdb/node-api';
import { DataError } from '../core/errors.js';
import { closeDuck, lit, openDuck, q, queryValue, withDuck } from '../data/duck.js';
import { buildHashedKeyIndex, findRows, keyBytesOf, type HashedKeyIndex, type HashedKeyType, type KeyBytes } from '../artifacts/onnx/ops/hashed_lookup.js';
import type { Vocabulary } from '../artifacts/onnx/ops/lookup.js';
import type { EntityRows, EntityTable, StreamedEntityTable } from './student_onnx.js';

interface PartFile {
  file: string;
  /** first table row of the file */
  first: number;
  rows: number;
}

export class EntitySource implements EntityRows {
  private indexPromise: Promise<HashedKeyIndex> | undefined;

  private constructor(
    readonly table: string,
    readonly key: string,
    readonly keyType: HashedKeyType,
    readonly dim: number,
    readonly rows: number,
    private readonly parts: PartFile[],
  ) {}

  /** Counts each file's rows (from the Parquet footers); no data yet. */
  static async open(s: { table: string; files: string[]; key: string; dim: number }, keyType: HashedKeyType): Promise<EntitySource> {
    const parts: PartFile[] = [];
    let rows = 0;
    await withDuck(async ({ conn }) => {
      for (const file of s.files) {
        const n = Number(await queryValue<bigint | number>(conn, `SELECT count(*) FROM read_parquet(${lit(file)})`));
        parts.push({ file, first: rows, rows: n });
        rows += n;
      }
    });
    if (rows === 0) throw new DataError(`the embeddings of ${s.table} hold no rows`, { where: s.files.join(', '), hint: 're-run gnnctl embed' });
    return new EntitySource(s.table, s.key, keyType, s.dim, rows, parts);
  }

  /**
   * Batches in row order (DuckDB's 2,048-row chunks), with the columns asked for. `rowsIn`, when given,
   * keeps only those rows of each file (file-local row numbers) and yields them with their numbers.
   */
  async *batches(want: { keys?: boolean; vectors?: boolean }, rowsIn?: (part: PartFile) => number[] | null): AsyncGenerator<{ part: PartFile; first: number; count: number; keys?: KeyBytes; vectors?: Float32Array; rowNumbers?: Int32Array }> {
    const duck = await openDuck();
    try {
      for (const part of this.parts) {
        const only = rowsIn?.(part);
        if (only && only.length === 0) continue;
        const cols = [
          ...(want.keys ? [this.keyType === 'INT64' ? `CAST(${q(this.key)} AS BIGINT)` : `CAST(${q(this.key)} AS VARCHAR)`] : []),
          ...(want.vectors ? [`CAST(embedding AS FLOAT[${this.dim}])`] : []),
          ...(only ? ['file_row_number::INTEGER'] : []),
        ];
        const where = only ? ` WHERE file_row_number IN (${only.join(', ')})` : '';
        const result = await duck.conn.stream(`SELECT ${cols.join(', ')} FROM read_parquet(${lit(part.file)}${only ? ', file_row_number = true' : ''})${where}`);
        let seen = 0;
        for (;;) {
          const chunk = await result.fetchChunk();
          if (!chunk || chunk.rowCount === 0) break;
          const n = chunk.rowCount;
          let c = 0;
          const keys = want.keys ? this.keyBytes(chunk.getColumnVector(c++), n, part.file) : undefined;
          const vectors = want.vectors ? this.vectors(chunk.getColumnVector(c++), n, part.file) : undefined;
          const rowNumbers = only ? Int32Array.from({ length: n }, (_, i) => Number(chunk.getColumnVector(c).getItem(i))) : undefined;
          yield { part, first: part.first + seen, count: n, keys, vectors, rowNumbers };
          seen += n;
        }
        if (!only && seen !== part.rows) {
          throw new DataError(`${part.file}: read ${seen} rows, its footer says ${part.rows}`, {
            // parquet-wasm (gnnctl's Parquet writer) wraps the footer's offsets past 4 GiB, which reads as this.
            hint: 'a Parquet file over 4 GiB written by gnnctl is unreadable past that point: embed in shards (`gnnctl embed --shard i/n`, each part under 4 GiB); or the file changed while exporting',
          });
        }
      }
    } finally {
      closeDuck(duck);
    }
  }

  async *keyBatches(): AsyncGenerator<KeyBytes> {
    for await (const b of this.batches({ keys: true })) yield b.keys!;
  }

  async *vectorChunks(): AsyncGenerator<Float32Array> {
    for await (const b of this.batches({ vectors: true })) yield b.vectors!;
  }

  /** The hashed key index over all keys (built once: one pass over the key column). */
  index(): Promise<HashedKeyIndex> {
    return (this.indexPromise ??= buildHashedKeyIndex(this.keyType, this.rows, () => this.keyBatches(), `embeddings of ${this.table}`));
  }

  /** This source as the streamed table export writes into model.onnx.data. */
  async streamed(): Promise<StreamedEntityTable> {
    return { index: await this.index(), rows: this.rows, dim: this.dim, vectorChunks: () => this.vectorChunks() };
  }

  /** The whole table in memory (keys as strings or bigints in row order). */
  async readAll(): Promise<EntityTable> {
    const keys: (string | bigint)[] = [];
    const vectors = new Float32Array(this.rows * this.dim);
    const dec = new TextDecoder();
    for await (const b of this.batches({ keys: true, vectors: true })) {
      const k = b.keys!;
      if (k.kind === 'INT64') for (const v of k.values) keys.push(v);
      else for (let i = 0; i < k.length; i++) keys.push(dec.decode(k.values.subarray(k.offsets[i]!, k.offsets[i + 1]!)));
      vectors.set(b.vectors!, b.first * this.dim);
    }
    const vocab: Vocabulary = this.keyType === 'INT64' ? (keys as bigint[]) : (keys as string[]);
    if (new Set(keys).size !== keys.length) throw new DataError(`duplicate keys in the embeddings of ${this.table}`, { where: this.parts[0]!.file, hint: 'shards must be disjoint; re-run embed' });
    return { keys: vocab, vectors, dim: this.dim };
  }

  /** Vectors of `keys` ([n × dim], zeros where missing) and a 1/0 missing flag each; reads only those rows' vectors. */
  async vectorsFor(keys: ArrayLike<string | bigint>): Promise<{ values: Float32Array; missing: Float32Array }> {
    const n = keys.length;
    const values = new Float32Array(n * this.dim);
    const missing = new Float32Array(n);
    const rows = findRows(await this.index(), keyBytesOf(Array.from(keys, (k) => (this.keyType === 'INT64' ? BigInt(k) : String(k))), this.keyType));
    const wanted = new Map<number, number[]>();
    rows.forEach((r, i) => {
      if (r < 0) missing[i] = 1;
      else if (wanted.has(r)) wanted.get(r)!.push(i);
      else wanted.set(r, [i]);
    });
    const local = (part: PartFile): number[] => [...wanted.keys()].filter((r) => r >= part.first && r < part.first + part.rows).map((r) => r - part.first);
    for await (const b of this.batches({ vectors: true }, local)) {
      for (let j = 0; j < b.count; j++) {
        for (const i of wanted.get(b.part.first + b.rowNumbers![j]!)!) values.set(b.vectors!.subarray(j * this.dim, (j + 1) * this.dim), i * this.dim);
      }
    }
    return { values, missing };
  }

  private keyBytes(vec: DuckDBVector, n: number, file: string): KeyBytes {
    const out: (string | bigint)[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const v = vec.getItem(i);
      if (v === null) throw new DataError(`${file}: a null key in column ${this.key}`, { hint: 'every embedded entity has a key; re-run gnnctl embed' });
      out[i] = v as string | bigint;
    }
    return keyBytesOf(out, this.keyType);
  }

  private vectors(vec: DuckDBVector, n: number, file: string): Float32Array {
    // DuckDB's FLOAT[dim] vector keeps its values in a child FLOAT vector whose typed array is `items`
    // (private in the typings; src/data/duck.ts reads numeric columns the same way).
    const items = (vec as unknown as { childData?: { items?: unknown } }).childData?.items;
    if (items instanceof Float32Array && items.length >= n * this.dim) return items.slice(0, n * this.dim);
    const out = new Float32Array(n * this.dim);
    for (let i = 0; i < n; i++) {
      const v = vec.getItem(i) as { items: readonly (number | null)[] } | null;
      if (v === null) throw new DataError(`${file}: a null embedding`, { hint: 're-run gnnctl embed' });
      for (let j = 0; j < this.dim; j++) out[i * this.dim + j] = Number(v.items[j]);
    }
    return out;
  }
}
