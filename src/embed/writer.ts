/**
 * Streams per-entity rows (embeddings, predictions) into a Parquet file, chunk by chunk, in row groups of
 * at most `rowGroupSize` rows and about `ROW_GROUP_BYTES`, so memory stays bounded at H&M scale.
 * Columns: the entity's primary key under its own name and type first, then those asked for:
 * `embedding` as an Arrow fixed-size list of float32 (DuckDB reads it as FLOAT[]; `embedding::FLOAT[d]`
 * gives the array type), `anchor_time` as a microsecond timestamp, `prediction` as float32. Run id,
 * dimension and fingerprints go into the file's key-value metadata. The file is written under a temporary
 * name and renamed when complete, so a killed run leaves nothing at the output path.
 */
import * as arrow from 'apache-arrow';
import { createWriteStream, renameSync, rmSync } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as pq from 'parquet-wasm/node';
import { Transform } from 'node:stream';
import { tempSibling } from '../core/atomic.js';
import { ArtifactError } from '../core/errors.js';
import { sortParquetKeyValueMetadata } from './parquet_footer.js';

export interface EmbeddingChunk {
  /** primary-key values of the chunk's entities (an Arrow vector sliced from the keys) */
  keys: arrow.Vector;
  /** [rows × dim] (needed when the `embedding` column is written) */
  embeddings?: Float32Array;
  /** [rows] (needed when the `prediction` column is written) */
  predictions?: Float32Array;
  /** [rows] per-entity `anchor_time` in microseconds (an incremental refresh keeps each kept row's own); default: the file's anchor */
  anchorMicros?: BigInt64Array;
}

export type EntityColumn = 'embedding' | 'anchor_time' | 'prediction';

export interface WriteOptions {
  keyName: string;
  dim: number;
  /** epoch seconds */
  anchorTime: number;
  metadata: Record<string, string>;
  rowGroupSize: number;
  /** columns after the key, in order (default: embedding, anchor_time) */
  columns?: readonly EntityColumn[];
}

/** Writes every chunk the iterator yields; resolves when the file is complete and in place. */
export async function writeEmbeddings(path: string, chunks: AsyncIterable<EmbeddingChunk>, opts: WriteOptions): Promise<{ rows: number }> {
  const anchorMicros = BigInt(Math.round(opts.anchorTime * 1e6));
  const columns = opts.columns ?? ['embedding', 'anchor_time'];
  function columnVector(column: EntityColumn, chunk: EmbeddingChunk, n: number): arrow.Vector {
    if (column === 'anchor_time') return arrow.makeVector(arrow.makeData({ type: new arrow.TimestampMicrosecond(), length: n, data: chunk.anchorMicros ?? new BigInt64Array(n).fill(anchorMicros) }));
    if (column === 'prediction') return arrow.makeVector(arrow.makeData({ type: new arrow.Float32(), length: n, data: chunk.predictions! }));
    const child = arrow.makeData({ type: new arrow.Float32(), length: n * opts.dim, data: chunk.embeddings! });
    const embType = new arrow.FixedSizeList(opts.dim, new arrow.Field('item', new arrow.Float32(), false));
    return arrow.makeVector(arrow.makeData({ type: embType, length: n, child, nullCount: 0 }));
  }
  async function* vectors(): AsyncGenerator<Record<string, arrow.Vector>> {
    for await (const chunk of chunks) {
      const n = chunk.keys.length;
      const v: Record<string, arrow.Vector> = { [opts.keyName]: chunk.keys };
      for (const column of columns) v[column] = columnVector(column, chunk, n);
      yield v;
    }
  }
  // ~8 bytes of key, 8 of anchor time, 4 per embedding value or prediction.
  const rowBytes = 16 + (columns.includes('embedding') ? 4 * opts.dim : 0) + (columns.includes('prediction') ? 4 : 0);
  return writeColumns(path, vectors(), { ...opts, rowGroupSize: Math.min(opts.rowGroupSize, Math.max(1024, Math.floor(ROW_GROUP_BYTES / rowBytes))) });
}

/**
 * Row groups of entity files stop near this size (15,420 rows of 64-dimensional embeddings). parquet-wasm
 * holds a whole row group in its heap while it encodes it: a 17 MB row group (65,536 × 64 floats) takes
 * 190–260 ms to write (530–610 ms in a fresh process, whose heap pages are touched for the first time),
 * a 4 MB one 80–160 ms. `embed` writes one chunk while its workers compute the next, so that time is
 * taken from them. Readers get more, smaller row groups (DuckDB scans them in parallel;
 * `export` streams a snapshot row group by row group).
 */
export const ROW_GROUP_BYTES = 4 << 20;

/**
 * parquet-wasm keeps the file's page and column-chunk offsets in 32 bits: past 4 GiB they wrap and the
 * file reads back corrupt (DuckDB: a short read; parquet-wasm: "Corrupt footer"). Writers stop below it.
 */
export const PARQUET_FILE_LIMIT_BYTES = 2 ** 32;

/**
 * Streams batches of named Arrow columns into a Parquet file, atomically (temp name, then rename), with
 * the properties of every gnnctl Parquet output (entity files, top-k lists).
 */
export async function writeColumns(
  path: string,
  chunks: AsyncIterable<Record<string, arrow.Vector>>,
  opts: Pick<WriteOptions, 'metadata' | 'rowGroupSize'> & { maxBytes?: number },
): Promise<{ rows: number }> {
  const tmp = tempSibling(path);
  let rows = 0;
  // parquet-wasm ends the file quietly when its input stream errors after the first batch (and reports a
  // bare "Dyn casting error" before it), so the source's own failure is recorded here and rethrown.
  const source: { failed: boolean; error: unknown; complete: boolean } = { failed: false, error: undefined, complete: false };
  async function* batches(): AsyncGenerator<pq.RecordBatch> {
    try {
      for await (const vectors of chunks) {
        const table = new arrow.Table(vectors);
        rows += table.numRows;
        // One row group at a time into parquet-wasm's heap (a chunk may hold several).
        for (let lo = 0; lo === 0 || lo < table.numRows; lo += opts.rowGroupSize) {
          const part = lo === 0 && table.numRows <= opts.rowGroupSize ? table : table.slice(lo, lo + opts.rowGroupSize);
          for (const rb of pq.Table.fromIPCStream(arrow.tableToIPC(part, 'stream')).recordBatches()) yield rb;
        }
      }
      source.complete = true;
    } catch (e) {
      source.failed = true;
      source.error = e;
      throw e;
    }
  }
  const props = new pq.WriterPropertiesBuilder()
    .setCompression(pq.Compression.SNAPPY)
    .setDictionaryEnabled(false)
    .setMaxRowGroupSize(opts.rowGroupSize)
    .setKeyValueMetadata(new Map(Object.entries(opts.metadata)))
    .build();
  try {
    // ReadableStream.from pulls one chunk at a time: computing the next waits until the last was encoded.
    const bytes = await pq.transformParquetStream(ReadableStream.from(batches()), props);
    await pipeline(Readable.fromWeb(bytes as import('node:stream/web').ReadableStream<Uint8Array>), byteLimit(path, opts.maxBytes ?? PARQUET_FILE_LIMIT_BYTES, () => rows), createWriteStream(tmp));
    if (source.failed) throw source.error;
    if (!source.complete) throw new Error(`parquet writer: the chunk stream ended early (${rows} rows written)`);
    sortParquetKeyValueMetadata(tmp); // same inputs → same bytes, even for two writes in one process
    renameSync(tmp, path);
    return { rows };
  } catch (e) {
    rmSync(tmp, { force: true });
    throw source.failed ? source.error : e;
  }
}

/** Fails the write before the file reaches `maxBytes` (the caller then removes the temp file). */
function byteLimit(path: string, maxBytes: number, rows: () => number): Transform {
  let bytes = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.byteLength;
      if (bytes >= maxBytes) {
        done(
          new ArtifactError(`${path}: the Parquet file reached ${maxBytes >= 2 ** 30 ? `${maxBytes / 2 ** 30} GiB` : `${maxBytes} bytes`} after ${rows().toLocaleString('en-US')} rows, past what its writer (parquet-wasm, 32-bit offsets) can address`, {
            hint: 'write it in shards: --shard i/n for i = 0…n-1, each part under 4 GiB',
          }),
        );
        return;
      }
      done(null, chunk);
    },
  });
}

/** Reads one column of a Parquet file into an Arrow vector (keys for the output, in file order). */
export function readColumnVector(bytes: Uint8Array, column: string): arrow.Vector {
  const wasmTable = pq.readParquet(bytes, { columns: [column] });
  const table = arrow.tableFromIPC(wasmTable.intoIPCStream());
  const v = table.getChild(column);
  if (!v) throw new Error(`column ${column} missing`);
  return v;
}
