import * as arrow from 'apache-arrow';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeEmbeddings } from '../../src/embed/writer.js';
import { EntitySource } from '../../src/export/entity_source.js';
import { findRows, keyBytesOf } from '../../src/artifacts/onnx/ops/hashed_lookup.js';

const DIM = 3;
let dir: string;
let files: string[];
const keys = Array.from({ length: 5000 }, (_, i) => `k-${String(i).padStart(4, '0')}`);
const vector = (r: number) => [r, -r / 2, r % 7];

/** Two part files (3000 + 2000 rows) in row groups of 512, as `gnnctl embed --shard` writes them. */
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gnnctl-entity-source-'));
  files = [];
  const parts: [number, number][] = [[0, 3000], [3000, 5000]];
  for (const [p, [lo, hi]] of parts.entries()) {
    const file = join(dir, `part-${p}.parquet`);
    async function* chunks() {
      for (let r = lo; r < hi; r += 700) {
        const end = Math.min(hi, r + 700);
        yield { keys: arrow.vectorFromArray(keys.slice(r, end), new arrow.Utf8()), embeddings: Float32Array.from({ length: (end - r) * DIM }, (_, j) => vector(r + Math.floor(j / DIM))[j % DIM]!) };
      }
    }
    await writeEmbeddings(file, chunks(), { keyName: 'customer_id', dim: DIM, anchorTime: 1_600_000_000, metadata: { table: 'customers' }, rowGroupSize: 512 });
    files.push(file);
  }
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('EntitySource', () => {
  const open = () => EntitySource.open({ table: 'customers', files, key: 'customer_id', dim: DIM }, 'STRING');

  it('streams keys and vectors in file order, over part files, equal to reading everything at once', async () => {
    const s = await open();
    expect(s.rows).toBe(5000);
    const chunks: Float32Array[] = [];
    for await (const c of s.vectorChunks()) chunks.push(c);
    const all = new Float32Array(chunks.reduce((n, c) => n + c.length, 0));
    let o = 0;
    for (const c of chunks) {
      expect(c.length % DIM).toBe(0);
      all.set(c, o);
      o += c.length;
    }
    expect(Array.from(all)).toEqual(keys.flatMap((_, r) => vector(r)));
    const t = await s.readAll();
    expect(t.keys).toEqual(keys);
    expect(Array.from(t.vectors)).toEqual(Array.from(all));
  });

  it('builds the hashed index from the streamed keys and looks up vectors of a few keys, unknown ones flagged', async () => {
    const s = await open();
    const index = await s.index();
    expect(Array.from(findRows(index, keyBytesOf(['k-0000', 'k-4999', 'k-3000', 'nope'], 'STRING')))).toEqual([0, 4999, 3000, -1]);
    const ask = ['k-2999', 'nope', 'k-3001', 'k-0005', 'k-2999'];
    const { values, missing } = await s.vectorsFor(ask);
    expect(Array.from(missing)).toEqual([0, 1, 0, 0, 0]);
    expect(Array.from(values)).toEqual([...vector(2999), 0, 0, 0, ...vector(3001), ...vector(5), ...vector(2999)]);
  });

  it('refuses duplicate keys across parts', async () => {
    const s = await EntitySource.open({ table: 'customers', files: [files[0]!, files[0]!], key: 'customer_id', dim: DIM }, 'STRING');
    await expect(s.index()).rejects.toThrow(/embeddings of customers: duplicate key at rows \d+ and \d+/);
  });
});
