/**
 * The receptive field of an incremental refresh on a hand-built graph: customers ← transactions → articles.
 * One hop marks the entities owning a new row; more hops widen it over every edge (a customer who
 * bought an article someone else bought today is reached at three); rows beyond the previous graph's row
 * count are new whatever their time. `changedInPlace` names a table whose old rows differ, `movedKeys` a
 * table without a time column whose new key sorts between old ones (rows.parquet files written here).
 */
import { describe, expect, it } from 'vitest';
import { Graph, type EdgeType, type NodeTable, type SharedGraph } from '../../src/graph/graph.js';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { changedInPlace, dirtyNodes, movedKeys } from '../../src/embed/incremental.js';
import { sqlPath, sqlRows } from '../helpers/pipeline.js';

// transactions (time): t0 c0→a0 @10, t1 c1→a1 @20, t2 c2→a1 @30, t3 c3→a2 @40 (new, after 35)
function graph(price = [1, 2, 3, 4], parents = [0, 1, 2, 3]): Graph {
  const table = (name: string, rows: number, time: number[] | null, values?: number[]): NodeTable =>
    ({ name, rows, manifest: {} as NodeTable['manifest'], time: time ? Float64Array.from(time) : null, numeric: values ? [{ meta: { name: 'price' } as NodeTable['numeric'][0]['meta'], values: Float32Array.from(values) }] : [], categorical: [], timestamps: [] });
  const txCustomer = Int32Array.from(parents);
  const txArticle = Int32Array.from([0, 1, 1, 2]);
  const rev = (src: string, parent: Int32Array, n: number): EdgeType => {
    const lists = Array.from({ length: n }, () => [] as number[]);
    parent.forEach((p, t) => lists[p]!.push(t));
    const indptr = Int32Array.from([0, ...lists.map((_, i) => lists.slice(0, i + 1).flat().length)]);
    return { meta: {} as EdgeType['meta'], name: `${src}<-tx`, src, dst: 'transactions', kind: 'rev', parent: null, indptr, indices: Int32Array.from(lists.flat()) };
  };
  const fk = (dst: string, parent: Int32Array): EdgeType => ({ meta: {} as EdgeType['meta'], name: `tx->${dst}`, src: 'transactions', dst, kind: 'fk', parent, indptr: null, indices: null });
  const shared: SharedGraph = {
    dir: '',
    manifest: {} as SharedGraph['manifest'],
    tables: { customers: table('customers', 4, null), articles: table('articles', 3, null), transactions: table('transactions', 4, [10, 20, 30, 40], price) },
    edges: [fk('customers', txCustomer), fk('articles', txArticle), rev('customers', txCustomer, 4), rev('articles', txArticle, 3)],
    prefixSums: [],
  };
  return Graph.fromShared(shared);
}

const marked = (d: Uint8Array): number[] => [...d].flatMap((v, i) => (v ? [i] : []));

describe('dirtyNodes', () => {
  const rows = { customers: 4, articles: 3, transactions: 4 };

  it('one hop: the customer and the article of the new transaction, nothing else', () => {
    const d = dirtyNodes(graph(), rows, 35, 1);
    expect(marked(d.customers!)).toEqual([3]);
    expect(marked(d.articles!)).toEqual([2]);
    expect(marked(d.transactions!)).toEqual([3]);
  });

  it("two hops reach the new rows' other ends; a neighbour's new row counts from three hops (an entity's h² reads a transaction's h¹, which reads the article's raw row)", () => {
    // t2 (c2 → a1) is new: t1 (c1 → a1) is dirty at hop 2 through a1, so c1 is dirty at hop 3, not before.
    const two = dirtyNodes(graph(), rows, 25, 2);
    expect(marked(two.customers!)).toEqual([2, 3]);
    expect(marked(two.articles!)).toEqual([1, 2]);
    expect(marked(two.transactions!)).toEqual([1, 2, 3]);
    expect(marked(dirtyNodes(graph(), rows, 25, 3).customers!)).toEqual([1, 2, 3]);
  });

  it('nothing new since the previous snapshot: nothing dirty', () => {
    const d = dirtyNodes(graph(), rows, 40, 2);
    for (const v of Object.values(d)) expect(marked(v)).toEqual([]);
  });

  it('a row beyond the previous row count is new whatever its time (an entity without a time column)', () => {
    const d = dirtyNodes(graph(), { ...rows, customers: 3 }, 40, 1);
    expect(marked(d.customers!)).toEqual([3]);
    expect(marked(d.articles!)).toEqual([]);
  });
});

describe('changedInPlace', () => {
  it('null for an append-only change, the table for a value or foreign key changed in place', () => {
    expect(changedInPlace(graph(), graph())).toBeNull();
    expect(changedInPlace(graph(), graph([1, 2, 9, 4]))).toMatch(/transactions: a numeric value changed in place/);
    expect(changedInPlace(graph(), graph(undefined, [0, 1, 0, 3]))).toMatch(/tx->customers: a foreign key changed in place/);
  });
});

describe('movedKeys', () => {
  /** A graph whose customers (no time column) are `keys` in node order, written to rows.parquet as a build does. */
  async function keyed(dir: string, keys: string[]): Promise<Graph> {
    mkdirSync(dir, { recursive: true });
    await sqlRows(`COPY (SELECT i - 1 AS __node, k AS customer_id FROM unnest(${sqlPath(JSON.stringify(keys))}::VARCHAR[]) WITH ORDINALITY AS u(k, i)) TO ${sqlPath(join(dir, 'rows.parquet'))} (FORMAT parquet)`);
    const g = graph();
    const manifest = {
      schema: { tables: { customers: { primary_key: { column: 'customer_id', type: 'VARCHAR' } }, articles: {}, transactions: {} } },
      tables: { customers: { rows_file: 'rows.parquet' } },
    } as unknown as SharedGraph['manifest'];
    return Graph.fromShared({ ...g.shareable(), dir, manifest, tables: { ...g.tables, customers: { ...g.tables.customers!, rows: keys.length } } });
  }

  it('null when a new key sorts last (a new node); the table, node and keys when one sorts between old ones', async () => {
    const root = mkdtempSync(join(tmpdir(), 'gnnctl-moved-'));
    try {
      const old = await keyed(join(root, 'old'), ['a', 'c', 'e']);
      expect(await movedKeys(old, await keyed(join(root, 'same'), ['a', 'c', 'e']))).toBeNull();
      expect(await movedKeys(old, await keyed(join(root, 'last'), ['a', 'c', 'e', 'f']))).toBeNull();
      expect(await movedKeys(old, await keyed(join(root, 'between'), ['a', 'b', 'c', 'e']))).toBe(
        'customers has no time column and a key that sorts between its old ones: node 1 held c, now b (node ids follow the key order, so every later row moved)',
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
