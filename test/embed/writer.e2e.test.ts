/**
 * The Parquet writer's 4 GiB ceiling: parquet-wasm's 32-bit offsets wrap past it and the file reads back
 * corrupt, so the writer stops first (checked with a small ceiling) and `embed`/`predict` refuse a file
 * estimated past it before computing anything, naming the shard count that fits.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { ArtifactError, UsageError } from '../../src/core/errors.js';
import { checkFileSize } from '../../src/embed/snapshot.js';
import { PARQUET_FILE_LIMIT_BYTES, ROW_GROUP_BYTES, writeColumns, writeEmbeddings } from '../../src/embed/writer.js';
import { sqlPath, sqlRows } from '../helpers/pipeline.js';

const dir = mkdtempSync(join(tmpdir(), 'gnnctl-writer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function* batches(n: number, rows: number) {
  for (let b = 0; b < n; b++) {
    yield { id: arrow.vectorFromArray(Float64Array.from({ length: rows }, (_, i) => b * rows + i)), x: arrow.vectorFromArray(Float32Array.from({ length: rows }, (_, i) => Math.sin(b * rows + i))) };
  }
}

describe('Parquet file size ceiling', () => {
  it('writes a file under the ceiling, readable by DuckDB', async () => {
    const path = join(dir, 'ok.parquet');
    const { rows } = await writeColumns(path, batches(3, 1000), { metadata: {}, rowGroupSize: 1000, maxBytes: 1 << 20 });
    expect(rows).toBe(3000);
    expect(await sqlRows(`SELECT count(*)::INT AS n, max(id)::INT AS m FROM read_parquet(${sqlPath(path)})`)).toEqual([{ n: 3000, m: 2999 }]);
  });

  it('stops at the ceiling with an error naming the file and --shard, and leaves nothing behind', async () => {
    const path = join(dir, 'big.parquet');
    const err = await writeColumns(path, batches(50, 1000), { metadata: {}, rowGroupSize: 1000, maxBytes: 100_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArtifactError);
    expect((err as ArtifactError).message).toContain(path);
    expect((err as ArtifactError).message).toContain('100000 bytes');
    expect((err as ArtifactError).hint).toContain('--shard');
    expect(existsSync(path)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.startsWith('big'))).toEqual([]);
  });

  it('refuses before computing a snapshot estimated past 4 GiB, with a shard count that fits', () => {
    const s = { lo: 0, hi: 20_000_000, existing: 20_000_000, table: 'customers', path: '/x/embeddings.parquet', channels: 64 };
    let err: unknown;
    try {
      checkFileSize(s, ['embedding', 'anchor_time']);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).where).toBe('--shard');
    // 20M × (16 + 256) bytes = 5.07 GiB against a budget of 0.9 × 4 GiB → 2 shards.
    expect((err as UsageError).hint).toContain('--shard i/2 ');
    const part = { ...s, lo: 0, hi: 10_000_000 };
    expect(() => checkFileSize(part, ['embedding', 'anchor_time'])).not.toThrow();
    // Predictions alone are 20 bytes a row: 20M rows fit in one file.
    expect(() => checkFileSize(s, ['anchor_time', 'prediction'])).not.toThrow();
    expect(PARQUET_FILE_LIMIT_BYTES).toBe(2 ** 32);
  });
});

describe('row groups', () => {
  async function* entityChunks(chunks: number, rows: number, dim: number) {
    for (let c = 0; c < chunks; c++) {
      const keys = arrow.vectorFromArray(Int32Array.from({ length: rows }, (_, i) => c * rows + i));
      yield { keys, embeddings: Float32Array.from({ length: rows * dim }, (_, i) => (c * rows * dim + i) % 1000), predictions: Float32Array.from({ length: rows }, (_, i) => i / rows) };
    }
  }
  const groups = (path: string) => sqlRows(`SELECT row_group_id::INT AS g, row_group_num_rows::INT AS n FROM parquet_metadata(${sqlPath(path)}) GROUP BY ALL ORDER BY g`);

  it('embeddings go into row groups of about ROW_GROUP_BYTES (15,420 rows at 64 dimensions: 16 + 4 × 64 bytes a row); rows stay in order', async () => {
    const path = join(dir, 'groups.parquet');
    await writeEmbeddings(path, entityChunks(2, 40_000, 64), { keyName: 'k', dim: 64, anchorTime: 1_600_000_000, metadata: {}, rowGroupSize: 65_536 });
    expect(ROW_GROUP_BYTES).toBe(4 << 20);
    expect((await groups(path)).map((r) => r.n)).toEqual([15_420, 15_420, 15_420, 15_420, 15_420, 2_900]);
    expect(await sqlRows(`SELECT count(*)::INT AS n, bool_and(k = rn - 1) AS ordered, max(embedding[64])::INT AS last FROM (SELECT k, embedding, row_number() OVER () AS rn FROM read_parquet(${sqlPath(path)}))`)).toEqual([
      { n: 80_000, ordered: true, last: 999 },
    ]);
  });

  it('a narrow file (predictions) keeps row groups of `rowGroupSize` rows', async () => {
    const path = join(dir, 'narrow.parquet');
    await writeEmbeddings(path, entityChunks(2, 40_000, 4), { keyName: 'k', dim: 4, anchorTime: 1_600_000_000, metadata: {}, rowGroupSize: 65_536, columns: ['anchor_time', 'prediction'] });
    expect((await groups(path)).map((r) => r.n)).toEqual([65_536, 14_464]);
  });
});
