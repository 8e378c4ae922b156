/**
 * `gnnctl datasets synth --preset`: the realism presets through the real binary (flags, --json, bad
 * values), the schemas DuckDB reads back, and the traits each preset promises (bursty sittings, heavy
 * tails, cold users, date-only ties, a churn label driven by total activity).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { ratingsSchemas, RATINGS_TABLES } from '../../src/datasets/ratings_synth.js';
import { synthSchemas, SYNTH_TABLES } from '../../src/datasets/synth.js';

const ROOT = join(import.meta.dirname, '..', '..');
const tmp = mkdtempSync(join(tmpdir(), 'gnnctl-presets-'));
let db: DuckDBInstance;
let conn: DuckDBConnection;

function gnnctl(...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(ROOT, 'bin', 'gnnctl.js'), ...args], { cwd: tmp, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function rows(sql: string): Promise<Record<string, unknown>[]> {
  return (await conn.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[];
}

beforeAll(async () => {
  db = await DuckDBInstance.create(':memory:');
  conn = await db.connect();
});

afterAll(() => {
  conn?.closeSync();
  db?.closeSync();
  rmSync(tmp, { recursive: true, force: true });
});

describe('--preset bursty', () => {
  let result: Record<string, unknown>;
  const out = join(tmp, 'bursty');

  beforeAll(() => {
    const r = gnnctl('datasets', 'synth', '--preset', 'bursty', '--out', out, '--seed', '3', '--json');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    result = JSON.parse(r.stdout);
  });

  it('reports the preset, its default tiny size and the realism figures in --json', () => {
    expect(result).toMatchObject({ preset: 'bursty', size: 'tiny', seed: 3, format: 'csv', rows: { users: 1000, items: 1700 } });
    expect(Object.keys(result.files as object)).toEqual([...RATINGS_TABLES]);
    // Half the users or more rate in one sitting only; a few rate hundreds of items, the median a few dozen.
    expect(result.one_sitting_share).toBeGreaterThan(0.4);
    expect(result.cold_users).toBeGreaterThan(50);
    expect(result.max_user_ratings as number).toBeGreaterThan(10 * (result.median_user_ratings as number));
    expect(result.tie_share).toBeLessThan(0.05);
  });

  it.each(RATINGS_TABLES)('%s reads back with the documented types', async (table) => {
    const described = await rows(`DESCRIBE SELECT * FROM read_csv('${join(out, `${table}.csv`)}')`);
    expect(described.map((r) => [r.column_name, r.column_type])).toEqual(ratingsSchemas(false)[table].map(([c, t]) => [c, t]));
  });

  it('sittings are bursts: most consecutive ratings of a user are minutes apart', async () => {
    const [r] = await rows(`SELECT
        avg((gap <= 600)::INT) AS within_10_minutes,
        avg((gap >= 86400)::INT) AS days_apart
      FROM (SELECT epoch(rated_at) - lag(epoch(rated_at)) OVER (PARTITION BY user_id ORDER BY rated_at) AS gap FROM read_csv('${join(out, 'ratings.csv')}'))
      WHERE gap IS NOT NULL`);
    expect(r!.within_10_minutes).toBeGreaterThan(0.9);
    expect(r!.days_apart).toBeLessThan(0.05);
  });

  it('churn of recently active users falls with their total activity (the label the preset plants)', async () => {
    // Pooled over four 14-day anchors: P(no rating in the next 14 days) for users active in the last 14,
    // among the more active half (by ratings so far) and the less active half.
    const [r] = await rows(`WITH r AS (SELECT user_id u, epoch(rated_at) t FROM read_csv('${join(out, 'ratings.csv')}')),
      a AS (SELECT epoch(TIMESTAMP '1998-01-02') + k * 14 * 86400 AS anchor FROM range(4) t(k)),
      ex AS (SELECT a.anchor, r.u, count(*) FILTER (WHERE r.t <= a.anchor) AS n,
               count(*) FILTER (WHERE r.t > a.anchor - 14 * 86400 AND r.t <= a.anchor) AS recent,
               (count(*) FILTER (WHERE r.t > a.anchor AND r.t <= a.anchor + 14 * 86400) = 0)::INT AS churn
             FROM a JOIN r ON true GROUP BY a.anchor, r.u HAVING recent > 0),
      m AS (SELECT median(n) AS med FROM ex)
      SELECT avg(churn) FILTER (WHERE n > med) AS active, avg(churn) FILTER (WHERE n <= med) AS light FROM ex, m`);
    expect((r!.light as number) - (r!.active as number)).toBeGreaterThan(0.1);
  });

  it('the same seed gives byte-identical files', () => {
    const again = join(tmp, 'bursty-again');
    expect(gnnctl('datasets', 'synth', '--preset', 'bursty', '--out', again, '--seed', '3', '--quiet').code).toBe(0);
    for (const f of ['users.csv', 'items.csv', 'ratings.csv', 'manifest.json']) {
      expect(readFileSync(join(again, f)).equals(readFileSync(join(out, f)))).toBe(true);
    }
  });
});

describe('--preset ratings', () => {
  it('writes date-only rated_at (DATE in Parquet too) with most of a sitting tied, genre flags and release dates', async () => {
    const out = join(tmp, 'ratings');
    const r = gnnctl('datasets', 'synth', '--preset', 'ratings', '--out', out, '--format', 'parquet', '--json');
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout);
    expect(result).toMatchObject({ preset: 'ratings', size: 'tiny', format: 'parquet' });
    expect(result.tie_share).toBeGreaterThan(0.5);
    for (const t of RATINGS_TABLES) {
      const described = await rows(`DESCRIBE SELECT * FROM '${join(out, `${t}.parquet`)}'`);
      expect(described.map((x) => [x.column_name, x.column_type])).toEqual(ratingsSchemas(true)[t].map(([c, ty]) => [c, ty]));
    }
    const [g] = await rows(`SELECT min(Drama + Comedy + Action + Thriller + Romance + Adventure + "Sci-Fi" + Children + Crime + War + Horror + Musical + Mystery + Animation + Documentary + Western + "Film-Noir" + Fantasy + "unknown") AS min_genres,
      count(*) FILTER (WHERE release_date IS NULL) AS no_release FROM '${join(out, 'items.parquet')}'`);
    expect(Number(g!.min_genres)).toBeGreaterThanOrEqual(1);
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({ kind: 'dataset', preset: 'ratings', tables: { ratings: { columns: { rated_at: 'DATE' } } } });
  });
});

describe('--preset retail-dates', () => {
  it('is the retail simulation with t_dat cut to the day', async () => {
    const dates = join(tmp, 'retail-dates');
    const plain = join(tmp, 'retail');
    const r = gnnctl('datasets', 'synth', '--preset', 'retail-dates', '--size', 'tiny', '--out', dates, '--json');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ preset: 'retail-dates', size: 'tiny' });
    expect(gnnctl('datasets', 'synth', '--size', 'tiny', '--out', plain, '--quiet').code).toBe(0);
    const described = await rows(`DESCRIBE SELECT * FROM read_csv('${join(dates, 'transactions.csv')}')`);
    expect(described.map((x) => [x.column_name, x.column_type])).toEqual(synthSchemas(true).transactions.map(([c, t]) => [c, t]));
    // Same rows, same order; only the time of day is gone.
    const [d] = await rows(`SELECT count(*) AS n, count(*) FILTER (WHERE a.t_dat <> b.t_dat::DATE OR a.customer_id <> b.customer_id OR a.price <> b.price) AS differ
      FROM read_csv('${join(dates, 'transactions.csv')}') a POSITIONAL JOIN read_csv('${join(plain, 'transactions.csv')}') b`);
    expect(Number(d!.n)).toBeGreaterThan(5000);
    expect(Number(d!.differ)).toBe(0);
    for (const t of SYNTH_TABLES.filter((x) => x !== 'transactions')) {
      expect(readFileSync(join(dates, `${t}.csv`)).equals(readFileSync(join(plain, `${t}.csv`)))).toBe(true);
    }
  });
});

describe('bad values', () => {
  it.each([
    ['an unknown preset', ['--preset', 'burst'], { where: '--preset', value: 'burst', hint: 'did you mean "bursty"?' }],
    ['a size the preset does not have', ['--preset', 'bursty', '--size', 'large'], { where: '--size', message: 'preset bursty has no size large' }],
  ])('%s exits 2 with a --json error naming the flag, and writes nothing', (_name, flags, error) => {
    const r = gnnctl('datasets', 'synth', '--out', join(tmp, 'bad'), ...flags, '--json');
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toMatchObject({ error: 'UsageError', exit_code: 2, ...error });
    expect(existsSync(join(tmp, 'bad'))).toBe(false);
  });

  it('without --json the message goes to stderr', () => {
    const r = gnnctl('datasets', 'synth', '--out', join(tmp, 'bad'), '--preset', 'retail-day');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--preset: unknown dataset preset \(got "retail-day"\)[\s\S]*did you mean "retail-dates"/);
  });
});
