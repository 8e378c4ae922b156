/**
 * An embedding snapshot (one Parquet file or its part files) read one row group at a time, so export
 * never holds a whole entity table: 20M × 64 float32 is 5 GB, and 20M keys as JS strings another 1–2 GB
 * (past V8's 16.7M-entry Map limit, too). What export needs from it:
 *
 * - `keyBatches()`: the key column as bytes, in row order (for the hashed key index);
 * - `vectorChunks()`: the vectors, row-major float32, in row order (streamed into model.onnx.data);
 * - `vectorsFor(keys)`: the vectors of a few keys (parity and the int8 report look up a few thousand);
 * - `readAll()`: everything in memory, for tables small enough to stay inside model.onnx.
 *
 * Files are opened through `fs.openAsBlob`: parquet-wasm reads the byte ranges of the row groups asked
 * for, not the file (`readFileSync` also fails on files over 2 GiB).
 */
import * as arrow from 'apache-arrow';
import { openAsBlob } from 'node:fs';
import * as pq from 'parquet-wasm/node';
import { DataError } from '../core/errors.js';
import { buildHashedKeyIndex, findRows, keyBytesOf, type HashedKeyIndex, type HashedKeyType, type KeyBytes } from './onnx/ops/hashed_lookup.js';
import type { Vocabulary } from './onnx/ops/lookup.js';
import type { EntityRows, EntityTable, StreamedEntityTable } from './student_onnx.js';

interface RowGroup {
  file: string;
  group: number;
  /** first table row of the group */
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
    private readonly groups: RowGroup[],
  ) {}

  /** Reads the files' footers (row groups and their sizes); no data yet. */
  static async open(s: { table: string; files: string[]; key: string; dim: number }, keyType: HashedKeyType): Promise<EntitySource> {
    const groups: RowGroup[] = [];
    let rows = 0;
    for (const file of s.files) {
      const pf = await pq.ParquetFile.fromFile(await openAsBlob(file));
      try {
        const meta = pf.metadata();
        for (let g = 0; g < meta.numRowGroups(); g++) {
          const n = meta.rowGroup(g).numRows();
          groups.push({ file, group: g, first: rows, rows: n });
          rows += n;
        }
      } finally {
        pf.free();
      }
    }
    if (rows === 0) throw new DataError(`the embeddings of ${s.table} hold no rows`, { where: s.files.join(', '), hint: 're-run gnnctl embed' });
    return new EntitySource(s.table, s.key, keyType, s.dim, rows, groups);
  }

  /** Row-group batches in row order, with the columns asked for. */
  async *batches(want: { keys?: boolean; vectors?: boolean }, only?: Set<number>): AsyncGenerator<{ group: RowGroup; keys?: KeyBytes; vectors?: Float32Array }> {
    const columns = [...(want.keys ? [this.key] : []), ...(want.vectors ? ['embedding'] : [])];
    const open: { file?: string; pf?: pq.ParquetFile } = {};
    try {
      for (const [i, group] of this.groups.entries()) {
        if (only && !only.has(i)) continue;
        if (open.file !== group.file) {
          open.pf?.free();
          open.pf = undefined;
          open.pf = await pq.ParquetFile.fromFile(await openAsBlob(group.file));
          open.file = group.file;
        }
        const t = arrow.tableFromIPC((await open.pf!.read({ rowGroups: [group.group], columns })).intoIPCStream());
        if (t.numRows !== group.rows) throw new DataError(`${group.file}: row group ${group.group} has ${t.numRows} rows, its footer says ${group.rows}`);
        yield {
          group,
          keys: want.keys ? this.keyBytes(t, group.file) : undefined,
          vectors: want.vectors ? this.vectors(t, group.file) : undefined,
        };
      }
    } finally {
      open.pf?.free();
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
      vectors.set(b.vectors!, b.group.first * this.dim);
    }
    const vocab: Vocabulary = this.keyType === 'INT64' ? (keys as bigint[]) : (keys as string[]);
    if (new Set(keys).size !== keys.length) throw new DataError(`duplicate keys in the embeddings of ${this.table}`, { where: this.groups[0]!.file, hint: 'shards must be disjoint; re-run embed' });
    return { keys: vocab, vectors, dim: this.dim };
  }

  /** Vectors of `keys` ([n × dim], zeros where missing) and a 1/0 missing flag each; reads only the row groups that hold them. */
  async vectorsFor(keys: ArrayLike<string | bigint>): Promise<{ values: Float32Array; missing: Float32Array }> {
    const n = keys.length;
    const values = new Float32Array(n * this.dim);
    const missing = new Float32Array(n);
    const rows = findRows(await this.index(), keyBytesOf(Array.from(keys, (k) => (this.keyType === 'INT64' ? BigInt(k) : String(k))), this.keyType));
    const wanted = new Set<number>();
    rows.forEach((r, i) => {
      if (r < 0) missing[i] = 1;
      else wanted.add(this.groupOf(r));
    });
    for await (const b of this.batches({ vectors: true }, wanted)) {
      const { first, rows: count } = b.group;
      rows.forEach((r, i) => {
        if (r >= first && r < first + count) values.set(b.vectors!.subarray((r - first) * this.dim, (r - first + 1) * this.dim), i * this.dim);
      });
    }
    return { values, missing };
  }

  private groupOf(row: number): number {
    let lo = 0;
    let hi = this.groups.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.groups[mid]!.first <= row) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  private keyBytes(t: arrow.Table, file: string): KeyBytes {
    const col = t.getChild(this.key);
    if (!col) throw new DataError(`${file} has no key column ${this.key}`, { hint: 'embedding files name their key column after the table\'s primary key' });
    if (this.keyType === 'INT64') {
      const out = new BigInt64Array(col.length);
      let o = 0;
      for (const d of col.data) {
        const v = d.values as ArrayLike<number | bigint>;
        for (let i = 0; i < d.length; i++) out[o++] = BigInt(v[d.offset + i]!);
      }
      return { kind: 'INT64', values: out };
    }
    if (col.data.length === 1 && arrow.DataType.isUtf8(col.type)) {
      const d = col.data[0]!;
      return { kind: 'STRING', values: d.values as Uint8Array, offsets: (d.valueOffsets as Int32Array).subarray(d.offset, d.offset + d.length + 1), length: d.length };
    }
    // Several batches or another string layout: re-encode (rare; parquet-wasm gives one Utf8 batch per row group).
    return keyBytesOf(Array.from(col as Iterable<unknown>, (k) => String(k)), 'STRING');
  }

  private vectors(t: arrow.Table, file: string): Float32Array {
    const col = t.getChild('embedding');
    if (!col) throw new DataError(`${file} has no embedding column`, { hint: 're-run gnnctl embed' });
    const out = new Float32Array(t.numRows * this.dim);
    let o = 0;
    for (const d of col.data) {
      const child = d.children[0]!;
      const v = (child.values as Float32Array).subarray(child.offset + d.offset * this.dim, child.offset + (d.offset + d.length) * this.dim);
      if (v.length !== d.length * this.dim) throw new DataError(`${file}: embedding vectors are not ${this.dim} wide`);
      out.set(v, o);
      o += v.length;
    }
    return out;
  }
}
