import { existsSync, readdirSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { DataError } from '../../src/core/errors.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { duckRows } from '../helpers/graph.js';
import { retailFixture, CONFIG, TRANSACTIONS, CUSTOMERS, type Fixture } from '../helpers/fixtures.js';

let fx: Fixture | undefined;
afterEach(() => fx?.cleanup());

async function build(f: Fixture, opts: { force?: boolean } = {}) {
  const cfg = loadConfig(f.config, { cwd: f.dir, artifacts: f.artifacts });
  return buildGraph(cfg, opts);
}

describe('graph build on the retail fixture', () => {
  it('numbers nodes in time order and matches DuckDB counts and degrees', async () => {
    fx = retailFixture();
    const r = await build(fx);
    const g = Graph.load(r.dir);
    expect(g.table('customers').rows).toBe(4);
    expect(g.table('articles').rows).toBe(3);
    const tx = g.table('transactions');
    expect(tx.rows).toBe(8);
    const time = tx.time!;
    for (let i = 1; i < time.length; i++) expect(time[i]!).toBeGreaterThanOrEqual(time[i - 1]!);
    expect(time[0]).toBe(Date.parse('2020-01-01T09:00:00Z') / 1000);

    // node id → key, read back from the keys file with DuckDB
    const keys = await duckRows(`SELECT __node AS node, transaction_id FROM '${join(r.dir, r.manifest.tables.transactions!.rows_file)}' ORDER BY node`);
    expect(keys.map((k) => Number(k.transaction_id))).toEqual([3, 1, 2, 4, 5, 6, 7, 8]);

    // degrees of customers<-transactions against a DuckDB group-by over the CSV
    const expected = await duckRows(
      `SELECT c.customer_id AS k, count(t.transaction_id) AS n FROM '${join(fx.dir, 'customers.csv')}' c LEFT JOIN '${join(fx.dir, 'transactions.csv')}' t USING (customer_id) GROUP BY 1`,
    );
    const custKeys = await duckRows(`SELECT __node AS node, customer_id FROM '${join(r.dir, r.manifest.tables.customers!.rows_file)}' ORDER BY node`);
    const rev = g.edges.find((e) => e.name === 'customers<-transactions.customer_id')!;
    for (const row of expected) {
      const node = custKeys.findIndex((k) => k.customer_id === row.k);
      expect(rev.indptr![node + 1]! - rev.indptr![node]!).toBe(Number(row.n));
    }
    // a sample adjacency row: c1's transactions in time order
    const c1 = custKeys.findIndex((k) => k.customer_id === 'c1');
    const nbrs = Array.from(rev.indices!.subarray(rev.indptr![c1]!, rev.indptr![c1 + 1]!));
    expect(nbrs.map((n) => Number(keys[n]!.transaction_id))).toEqual([1, 2, 6, 8]);
    for (let i = 1; i < nbrs.length; i++) expect(time[nbrs[i]!]!).toBeGreaterThanOrEqual(time[nbrs[i - 1]!]!);

    const fk = g.edges.find((e) => e.name === 'transactions.customer_id->customers')!;
    expect(Array.from(fk.parent!).map((p) => custKeys[p]!.customer_id)).toEqual(['c2', 'c1', 'c1', 'c3', 'c3', 'c1', 'c2', 'c1']);
    expect(r.manifest.edges.find((e) => e.name === 'customers<-transactions.customer_id')!.degree).toEqual({ mean: 2, p99: 4, max: 4 });
  });

  it('fits encoders: standardized numerics with NaN for null, vocabularies with null and OOV codes', async () => {
    fx = retailFixture();
    const r = await build(fx);
    const g = Graph.load(r.dir);
    const cust = g.table('customers');
    const age = cust.numeric.find((c) => c.meta.name === 'age')!;
    // fitted on customers some transaction references (c4 has none): c1 and c3 (c2's age is null)
    expect(age.meta.mean).toBeCloseTo((25 + 40) / 2, 6);
    expect(Number.isNaN(age.values[1])).toBe(true); // c2 has no age
    const club = cust.categorical.find((c) => c.meta.name === 'club_member_status')!;
    // PRE-CREATE is held by one fitted customer (c2): below min_frequency 2 it shares the OOV code 1
    expect(club.meta.vocab).toEqual(['ACTIVE']);
    expect(Array.from(club.codes)).toEqual([2, 1, 2, 0]); // c4: null → 0
    // an integer code column by name is categorical; the id-like article key is not a feature
    const roles = Object.fromEntries(r.manifest.schema.tables.transactions!.columns.map((c) => [c.name, c.role]));
    expect(roles).toMatchObject({ sales_channel_id: 'categorical', price: 'numerical', t_dat: 'time', customer_id: 'foreign_key' });
    expect(r.manifest.tables.articles!.categorical.map((c) => c.name)).toContain('product_type_no');
  });

  it('data.min_frequency: 1 gives every fitted value its own code', async () => {
    fx = retailFixture({ config: CONFIG.replace('data:\n', 'data:\n  min_frequency: 1\n') });
    const g = Graph.load((await build(fx)).dir);
    const club = g.table('customers').categorical.find((c) => c.meta.name === 'club_member_status')!;
    expect(club.meta.vocab).toEqual(['ACTIVE', 'PRE-CREATE']);
    expect(Array.from(club.codes)).toEqual([2, 3, 2, 0]);
  });

  it('reuses the cached build and rebuilds when a source changes', async () => {
    fx = retailFixture();
    const a = await build(fx);
    const b = await build(fx);
    expect(b.cached).toBe(true);
    expect(b.dir).toBe(a.dir);
    utimesSync(join(fx.dir, 'transactions.csv'), new Date(), new Date(Date.now() + 5000));
    const c = await build(fx);
    expect(c.cached).toBe(false);
    expect(c.dir).not.toBe(a.dir);
    expect(c.manifest.schema_fingerprint).toBe(a.manifest.schema_fingerprint);
  });

  it('keeps zero-padded keys and hyphenated column names', async () => {
    fx = retailFixture({
      customers: CUSTOMERS.replace('postal_code', 'postal-code'),
      config: CONFIG.replace('customers: { path: customers.csv, primary_key: customer_id }', "customers: { path: customers.csv, primary_key: customer_id, columns: { postal-code: categorical } }"),
    });
    const r = await build(fx);
    expect(r.manifest.tables.customers!.categorical.map((c) => c.name)).toContain('postal-code');
    const keys = await duckRows(`SELECT article_id FROM '${join(r.dir, r.manifest.tables.articles!.rows_file)}' ORDER BY __node`);
    expect(keys.map((k) => k.article_id)).toEqual(['0108775015', '0108775044', '0110065001']);
  });
});

describe('graph build rejects bad input with a clear message and writes nothing', () => {
  const cases: { name: string; overrides: Parameters<typeof retailFixture>[0]; match: RegExp }[] = [
    { name: 'missing file', overrides: { config: CONFIG.replace('articles.csv', 'nope.csv') }, match: /file not found: .*nope\.csv/ },
    { name: 'unknown column', overrides: { config: CONFIG.replace('time_column: t_dat', 'time_column: t_date') }, match: /time column "t_date" is not a column of transactions \(did you mean "t_dat"/ },
    { name: 'duplicate primary key', overrides: { customers: `${CUSTOMERS}c1,50,ACTIVE,p9\n` }, match: /1 duplicate primary key value \(e\.g\. "c1" ×2\)/ },
    { name: 'null primary key', overrides: { customers: `${CUSTOMERS},50,ACTIVE,p9\n` }, match: /1 row has a NULL primary key/ },
    { name: 'unparseable time', overrides: { transactions: `${TRANSACTIONS}9,yesterday,c1,0108775015,0.05,2,0\n` }, match: /1 value does not parse as a timestamp \(e\.g\. "yesterday"\)/ },
    { name: 'empty table', overrides: { articles: 'article_id,product_type_no,colour_group_name\n' }, match: /table articles is empty/ },
    {
      name: 'FK matching no primary key in strict mode',
      overrides: { transactions: `${TRANSACTIONS}9,2020-01-28 10:00:00,c99,0108775015,0.05,2,0\n`, config: CONFIG.replace('data:\n', 'data:\n  strict: true\n') },
      match: /transactions\.customer_id: 1 of 9 rows reference a customers\.customer_id that does not exist \(e\.g\. "c99"\)/,
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      fx = retailFixture(c.overrides);
      const err = await build(fx).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DataError);
      expect((err as DataError).describe()).toMatch(c.match);
      const graphs = join(fx.artifacts, 'graphs');
      expect(existsSync(graphs) ? readdirSync(graphs) : []).toEqual([]);
    });
  }

  it('drops FK values matching no primary key with a warning by default', async () => {
    fx = retailFixture({ transactions: `${TRANSACTIONS}9,2020-01-28 10:00:00,c99,0108775015,0.05,2,0\n` });
    const r = await build(fx);
    expect(r.manifest.warnings.join('\n')).toMatch(/1 of 9 rows reference a customers\.customer_id that does not exist/);
    expect(r.manifest.edges.find((e) => e.name === 'customers<-transactions.customer_id')!.count).toBe(8);
  });

  it('builds a table without a primary key or time column', async () => {
    fx = retailFixture({ config: CONFIG.replace('      primary_key: transaction_id\n      time_column: t_dat\n', '') });
    const r = await build(fx);
    expect(r.manifest.tables.transactions!.rows).toBe(8);
    expect(r.manifest.tables.transactions!.time_file).toBeNull();
    const rows = await duckRows(`SELECT count(*) AS n, count(DISTINCT __node) AS d FROM '${join(r.dir, r.manifest.tables.transactions!.rows_file)}'`);
    expect(rows[0]).toEqual({ n: 8n, d: 8n });
  });
});
