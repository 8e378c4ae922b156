/**
 * `gnnctl datasets synth` at the tiny size: determinism, the H&M schema as DuckDB reads it back, key
 * shapes, referential integrity, nulls, fraud rate, Parquet output and the command's flag checks.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { generateSynthetic, SYNTH_SCHEMAS, SYNTH_TABLES, type SynthResult } from '../../src/datasets/synth.js';
import { SYNTH_SIZES } from '../../src/datasets/sizes.js';
import { synthCommand } from '../../src/cli/commands/synth.js';
import { UsageError } from '../../src/core/errors.js';
import { setQuiet } from '../../src/core/log.js';

const root = mkdtempSync(join(tmpdir(), 'gnnctl-synth-'));
let db: DuckDBInstance;
let conn: DuckDBConnection;
let csv: SynthResult;

async function rows(sql: string): Promise<Record<string, unknown>[]> {
  return (await conn.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[];
}
async function one(sql: string): Promise<Record<string, unknown>> {
  return (await rows(sql))[0]!;
}
const bytes = (dir: string, file: string): Buffer => readFileSync(join(dir, file));

beforeAll(async () => {
  setQuiet(true);
  csv = await generateSynthetic({ out: join(root, 'a'), size: 'tiny', seed: 7, format: 'csv', truth: true });
  db = await DuckDBInstance.create(':memory:');
  conn = await db.connect();
  for (const t of SYNTH_TABLES) await conn.run(`CREATE VIEW ${t} AS SELECT * FROM read_csv('${csv.files[t]}')`);
});

afterAll(() => {
  conn?.closeSync();
  db?.closeSync();
  rmSync(root, { recursive: true, force: true });
});

describe('determinism', () => {
  it('same seed gives byte-identical files, a different seed different ones', async () => {
    const again = await generateSynthetic({ out: join(root, 'b'), size: 'tiny', seed: 7, format: 'csv' });
    for (const t of SYNTH_TABLES) expect(bytes(again.out, `${t}.csv`).equals(bytes(csv.out, `${t}.csv`))).toBe(true);
    expect(bytes(again.out, 'manifest.json').equals(bytes(csv.out, 'manifest.json'))).toBe(true);
    const other = await generateSynthetic({ out: join(root, 'c'), size: 'tiny', seed: 8, format: 'csv' });
    for (const t of SYNTH_TABLES) expect(bytes(other.out, `${t}.csv`).equals(bytes(csv.out, `${t}.csv`))).toBe(false);
  });
});

describe('schema as DuckDB auto-detects it', () => {
  it.each(SYNTH_TABLES)('%s has the H&M column names and types', async (table) => {
    const described = await rows(`DESCRIBE ${table}`);
    expect(described.map((r) => [r.column_name, r.column_type])).toEqual(SYNTH_SCHEMAS[table]);
  });

  it('keys look like H&M keys', async () => {
    const r = await one(`SELECT
        bool_and(regexp_full_match(article_id, '0[0-9]{9}')) AS article_ok,
        bool_and(product_code = left(article_id, 7)) AS product_ok,
        count(DISTINCT article_id) = count(*) AS article_unique
      FROM articles`);
    expect(r).toEqual({ article_ok: true, product_ok: true, article_unique: true });
    const c = await one(`SELECT
        bool_and(regexp_full_match(customer_id, '[0-9a-f]{64}')) AS id_ok,
        bool_and(regexp_full_match(postal_code, '[0-9a-f]{64}')) AS postal_ok,
        count(DISTINCT customer_id) = count(*) AS id_unique,
        count(DISTINCT postal_code) > 50 AS postal_high_cardinality
      FROM customers`);
    expect(c).toEqual({ id_ok: true, postal_ok: true, id_unique: true, postal_high_cardinality: true });
  });

  it('transactions are time-sorted, with times of day and increasing ids', async () => {
    const r = await one(`SELECT
        bool_and(transaction_id = prev_id + 1) AS ids_increase,
        bool_and(t_dat >= prev_t) AS sorted,
        count(*) FILTER (WHERE t_dat::TIME <> TIME '00:00:00') > 0.9 * count(*) AS has_times,
        min(t_dat)::DATE::VARCHAR AS first, max(t_dat)::DATE::VARCHAR AS last,
        min(price) > 0 AND max(price) < 0.6 AS price_ok,
        bool_and(sales_channel_id IN (1, 2)) AND count(DISTINCT sales_channel_id) = 2 AS channels_ok,
        bool_and(fraud IN (0, 1)) AS fraud_binary
      FROM (SELECT *, lag(transaction_id, 1, 0) OVER w AS prev_id, lag(t_dat, 1, t_dat) OVER w AS prev_t
            FROM transactions WINDOW w AS (ORDER BY transaction_id))`);
    expect(r).toEqual({ ids_increase: true, sorted: true, has_times: true, first: csv.first_day, last: '2020-09-22', price_ok: true, channels_ok: true, fraud_binary: true });
  });
});

describe('contents', () => {
  it('row counts are near the size targets', async () => {
    const target = SYNTH_SIZES.tiny;
    const r = await one(`SELECT (SELECT count(*) FROM customers) AS c, (SELECT count(*) FROM articles) AS a, (SELECT count(*) FROM transactions) AS t`);
    expect(Number(r.c)).toBe(target.customers);
    expect(Number(r.a)).toBe(target.articles);
    expect(Math.abs(Number(r.t) / target.transactions - 1)).toBeLessThan(0.15);
    expect(csv.rows).toEqual({ customers: Number(r.c), articles: Number(r.a), transactions: Number(r.t) });
  });

  it('every transaction points at an existing customer and article', async () => {
    const r = await one(`SELECT
        count(*) FILTER (WHERE c.customer_id IS NULL) AS missing_customers,
        count(*) FILTER (WHERE a.article_id IS NULL) AS missing_articles
      FROM transactions t LEFT JOIN customers c USING (customer_id) LEFT JOIN articles a USING (article_id)`);
    expect(r).toEqual({ missing_customers: 0n, missing_articles: 0n });
  });

  it('customers have H&M-like nulls and values', async () => {
    const r = await one(`SELECT
        avg((FN IS NULL)::INT) AS fn_null, avg((Active IS NULL)::INT) AS active_null,
        count(*) FILTER (WHERE age IS NULL) AS age_null, count(*) FILTER (WHERE fashion_news_frequency IS NULL) AS fnf_null,
        bool_and(FN = 1.0 OR FN IS NULL) AND bool_and(Active = 1.0 OR Active IS NULL) AS flags_ok,
        bool_and(club_member_status IN ('ACTIVE', 'PRE-CREATE', 'LEFT CLUB') OR club_member_status IS NULL) AS club_ok,
        bool_and(fashion_news_frequency IN ('NONE', 'Regularly', 'Monthly') OR fashion_news_frequency IS NULL) AS fnf_ok,
        min(age) >= 16 AND max(age) <= 99 AS age_ok
      FROM customers`);
    expect(Number(r.fn_null)).toBeGreaterThan(0.55);
    expect(Number(r.fn_null)).toBeLessThan(0.75);
    expect(Number(r.active_null)).toBeGreaterThan(0.55);
    expect(Number(r.age_null)).toBeGreaterThan(0);
    expect(Number(r.fnf_null)).toBeGreaterThan(0);
    expect(r).toMatchObject({ flags_ok: true, club_ok: true, fnf_ok: true, age_ok: true });
  });

  it('fraud is a few percent, from both hidden mechanisms', async () => {
    const r = await one(`SELECT avg(fraud) AS rate, sum(fraud) AS n FROM transactions`);
    expect(Number(r.rate)).toBeGreaterThan(0.01);
    expect(Number(r.rate)).toBeLessThan(0.08);
    expect(Number(r.n)).toBe(csv.fraud_rows);
    // The answer key (calibration only) lines up with the table and holds both takeovers and rings.
    const k = await rows(`SELECT kind, count(*) AS n, sum(fraud) AS fraud
      FROM read_csv('${join(csv.out, '_truth', 'transactions.csv')}') JOIN transactions USING (transaction_id) GROUP BY kind ORDER BY kind`);
    expect(k.map((x) => Number(x.kind))).toEqual([0, 1, 2]);
    expect(k.reduce((s, x) => s + Number(x.n), 0)).toBe(csv.rows.transactions);
    expect(Number(k[1]!.fraud)).toBeGreaterThan(0);
    expect(Number(k[2]!.fraud)).toBeGreaterThan(0);
  });

  it('article popularity is skewed and customers repeat purchases', async () => {
    const r = await one(`SELECT max(n) AS top, median(n) AS med FROM (SELECT count(*) AS n FROM transactions GROUP BY article_id)`);
    expect(Number(r.top)).toBeGreaterThan(10 * Number(r.med));
    const rep = await one(`SELECT count(*) AS n FROM (SELECT customer_id, article_id FROM transactions GROUP BY 1, 2 HAVING count(*) > 1)`);
    expect(Number(rep.n)).toBeGreaterThan(0);
  });

  it('leaves no temporary files behind', () => {
    const names = readdirSync(csv.out);
    expect(names.filter((n) => n.startsWith('.tmp-'))).toEqual([]);
    expect(names.sort()).toEqual(['_truth', 'articles.csv', 'customers.csv', 'manifest.json', 'transactions.csv']);
  });
});

describe('parquet output', () => {
  it('reads back with the same types and rows as the CSV, deterministically', async () => {
    const pq = await generateSynthetic({ out: join(root, 'p'), size: 'tiny', seed: 7, format: 'parquet' });
    for (const t of SYNTH_TABLES) {
      const described = await rows(`DESCRIBE SELECT * FROM read_parquet('${pq.files[t]}')`);
      expect(described.map((r) => [r.column_name, r.column_type])).toEqual(SYNTH_SCHEMAS[t]);
      const diff = await one(`SELECT count(*) AS n FROM (
          (SELECT * FROM read_parquet('${pq.files[t]}') EXCEPT ALL SELECT * FROM ${t})
          UNION ALL (SELECT * FROM ${t} EXCEPT ALL SELECT * FROM read_parquet('${pq.files[t]}')))`);
      expect(Number(diff.n)).toBe(0);
    }
    expect(readdirSync(pq.out).sort()).toEqual(['articles.parquet', 'customers.parquet', 'manifest.json', 'transactions.parquet']);
    const again = await generateSynthetic({ out: join(root, 'q'), size: 'tiny', seed: 7, format: 'parquet' });
    for (const t of SYNTH_TABLES) expect(bytes(again.out, `${t}.parquet`).equals(bytes(pq.out, `${t}.parquet`))).toBe(true);
  });
});

describe('synthCommand', () => {
  it('returns the result and a summary', async () => {
    const out = await synthCommand({ out: join(root, 'cmd'), size: 'tiny', seed: '3', format: 'csv' });
    expect((out.result as SynthResult).rows.customers).toBe(SYNTH_SIZES.tiny.customers);
    expect(out.result.seed).toBe(3);
    expect(out.text).toContain('transactions');
  });

  it.each([
    ['size', { size: 'huge' }],
    ['seed (not a number)', { seed: 'abc' }],
    ['seed (negative)', { seed: '-1' }],
    ['seed (too large)', { seed: '4294967296' }],
    ['format', { format: 'json' }],
  ])('rejects a bad %s with a UsageError', async (_name, bad) => {
    await expect(synthCommand({ out: join(root, 'bad'), size: 'tiny', seed: '0', format: 'csv', ...bad })).rejects.toBeInstanceOf(UsageError);
  });
});
