/**
 * Key-value metadata put in key order in place: DuckDB still reads the file, the pairs are the same, the
 * file keeps its size, and files that differ only in pair order become byte-identical.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import { afterAll, describe, expect, it } from 'vitest';
import { sortParquetKeyValueMetadata, sortedFooter } from '../../src/embed/parquet_footer.js';
import { writeEmbeddings } from '../../src/embed/writer.js';
import { parquetKv, sqlPath, sqlRows } from '../helpers/pipeline.js';

const dir = mkdtempSync(join(tmpdir(), 'gnnctl-footer-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function write(name: string, metadata: Record<string, string>): Promise<string> {
  const path = join(dir, name);
  async function* chunks() {
    yield { keys: arrow.vectorFromArray(['a', 'b', 'c'], new arrow.Utf8()), embeddings: Float32Array.of(1, 2, 3, 4, 5, 6) };
  }
  await writeEmbeddings(path, chunks(), { keyName: 'customer_id', dim: 2, anchorTime: 1_600_000_000, metadata, rowGroupSize: 2 });
  return path;
}

function footerOf(path: string): Buffer {
  const b = readFileSync(path);
  const len = b.readUInt32LE(b.length - 8);
  return b.subarray(b.length - 8 - len, b.length - 8);
}

describe('parquet footer key order', () => {
  const meta = Object.fromEntries(['zeta', 'run_id', 'dim', 'anchor_time', 'graph_fingerprint', 'alpha'].map((k, i) => [k, `value-${i}-${k}`]));

  it('writes the pairs in key order, readable by DuckDB with the same values', async () => {
    const path = await write('a.parquet', meta);
    const kv = await parquetKv(path);
    expect(kv).toEqual(meta);
    const keys = (await sqlRows(`SELECT decode(key) AS k FROM parquet_kv_metadata(${sqlPath(path)})`)).map((r) => r.k as string);
    expect(keys).toEqual([...keys].sort());
    const rows = await sqlRows(`SELECT customer_id, embedding::VARCHAR AS e FROM read_parquet(${sqlPath(path)}) ORDER BY customer_id`);
    expect(rows).toEqual([{ customer_id: 'a', e: '[1.0, 2.0]' }, { customer_id: 'b', e: '[3.0, 4.0]' }, { customer_id: 'c', e: '[5.0, 6.0]' }]);
  });

  it('gives the same bytes for the same pairs given in any order, and keeps the size', async () => {
    const reversed = Object.fromEntries(Object.entries(meta).reverse());
    const a = await write('b.parquet', meta);
    const b = await write('c.parquet', reversed);
    expect(readFileSync(a).equals(readFileSync(b))).toBe(true);
    const size = statSync(a).size;
    sortParquetKeyValueMetadata(a); // idempotent
    expect(statSync(a).size).toBe(size);
    expect(readFileSync(a).equals(readFileSync(b))).toBe(true);
  });

  it('a sorted footer is a fixed point', async () => {
    const footer = footerOf(await write('d.parquet', meta));
    expect(Buffer.from(sortedFooter(footer)!).equals(footer)).toBe(true);
  });

  it('refuses a file that is not Parquet', () => {
    const path = join(dir, 'not.parquet');
    writeFileSync(path, 'hello, this is not parquet');
    expect(() => sortParquetKeyValueMetadata(path)).toThrow(/not a Parquet file/);
  });
});
