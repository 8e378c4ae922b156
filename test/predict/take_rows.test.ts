/**
 * `takeRows` (predict/top_k.ts), the key columns of a top-k file: rows picked by index from text keys
 * spread over several Arrow chunks (zero-padded, multi-byte), from integer keys and from any other type (the
 * per-value fallback) equal what `Vector.get` returns, in the column's own type.
 */
import * as arrow from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { takeRows } from '../../src/predict/top_k.js';

const rows = Int32Array.of(4, 0, 0, 3, 1, 4, 2);

describe('takeRows', () => {
  it('text keys over several chunks, with zero-padded and multi-byte values', () => {
    const a = arrow.vectorFromArray(['0108775015', 'é-ü', ''], new arrow.Utf8());
    const b = arrow.vectorFromArray(['x', '0000000001'], new arrow.Utf8());
    const v = a.concat(b).slice(0, 5);
    const out = takeRows(v, rows);
    expect(arrow.DataType.isUtf8(out.type)).toBe(true);
    expect(out.toArray()).toEqual(Array.from(rows, (r) => v.get(r)));
  });

  it.each([
    { name: 'BIGINT', v: arrow.vectorFromArray([10n, -2n, 7n, 9007199254740993n, 0n], new arrow.Int64()) },
    { name: 'INTEGER', v: arrow.vectorFromArray([10, -2, 7, 3, 0], new arrow.Int32()) },
    { name: 'DOUBLE', v: arrow.vectorFromArray([1.5, -2, 7, 3, 0], new arrow.Float64()) },
    { name: 'a sliced chunk', v: arrow.vectorFromArray([5, 6, 10, -2, 7, 3, 0], new arrow.Int32()).slice(2) },
    { name: 'DATE (fallback)', v: arrow.vectorFromArray([new Date(0), new Date(86400000), new Date(2 * 86400000), new Date(3 * 86400000), new Date(4 * 86400000)], new arrow.DateDay()) },
  ])('$name keys keep their type and values', ({ v }) => {
    const out = takeRows(v, rows);
    expect(String(out.type)).toBe(String(v.type));
    expect(Array.from(out.toArray() as ArrayLike<unknown>)).toEqual(Array.from(rows, (r) => v.get(r)));
  });
});
