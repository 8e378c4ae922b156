/**
 * `predict` on tiny synthetic data: one row per entity existing at the anchor under the table's own key,
 * cold-start entities (no interaction before the anchor) included; shards concatenate to the unsharded
 * file; the AUROC (churn) and MAE (item_sales) computed from the file, read back with DuckDB, against the
 * labels realised after the run's test anchor equal the run's own test figures; the real binary with its
 * flags, --json and bad values. One churn, one item_sales and one fraud run (8 channels, 1 epoch of 3
 * steps) are trained once for the whole file.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { UsageError } from '../../src/core/errors.js';
import { setQuiet } from '../../src/core/log.js';
import { predict, type PredictOptions } from '../../src/predict/predict.js';
import { embed } from '../../src/embed/embed.js';
import { refreshJob } from '../../src/pipeline/refresh.js';
import { auroc, regressionMetrics } from '../../src/task/metrics.js';
import { train, type TrainResult } from '../../src/train/trainer.js';
import { parquetKv, parquetTypes, pipelineConfig, sqlPath, sqlRows } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';
import { ARTICLES, CONFIG, TRANSACTIONS, configWithTasks, retailFixture } from '../helpers/fixtures.js';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'gnnctl.js');
const ITEM_SALES = 'PREDICT SUM(transactions.price, 0, 7, days) FOR EACH articles.article_id';
const DIM = 8;

let fx: SynthFixture;
let cfg: Config;
const runs: Record<'churn' | 'item_sales' | 'fraud', TrainResult> = {} as never;
let out: string;

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = await tinySynth(pipelineConfig().replace('tasks:\n', `tasks:\n  item_sales:\n    query: ${ITEM_SALES}\n    split: { train_anchors: 2 }\n`));
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  runs.churn = await train({ cfg, task: 'churn', backend: 'wasm', skip_baseline: true });
  runs.item_sales = await train({ cfg, task: 'item_sales', backend: 'wasm', skip_baseline: true });
  runs.fraud = await train({ cfg, task: 'fraud', backend: 'wasm', skip_baseline: true });
  out = join(fx.dir, '..', 'out');
  mkdirSync(out);
});
afterAll(() => {
  fx?.cleanup();
  setQuiet(false);
});

function predictTo(name: string, opts: Partial<PredictOptions> & { run: string }) {
  return predict({ cfg, backend: 'wasm', out: join(out, name), ...opts });
}

/** A timestamp as DuckDB's literal. */
function ts(iso: string): string {
  return `TIMESTAMP '${iso.slice(0, 19).replace('T', ' ')}'`;
}

const csv = (table: string) => `read_csv(${sqlPath(join(fx.dir, `${table}.csv`))}, all_varchar = true)`;
const TX = () => `(SELECT customer_id, article_id, CAST(t_dat AS TIMESTAMP) AS t, CAST(price AS DOUBLE) AS price FROM ${csv('transactions')})`;

describe('predictions.parquet holds one row per entity that exists at the anchor', () => {
  it.each([
    { task: 'churn', table: 'customers', key: 'customer_id', prediction: 'probability' },
    { task: 'item_sales', table: 'articles', key: 'article_id', prediction: 'value' },
  ] as const)('$task: the $table keys under $key (VARCHAR), anchor_time, a finite $prediction each; metadata names run, anchor, task, objective', async ({ task, table, key, prediction }) => {
    const anchor = '2020-06-01T00:00:00Z';
    const r = await predictTo(`${task}.parquet`, { run: runs[task].runId, anchorTime: anchor });
    const expected = (await sqlRows(`SELECT "${key}" AS k FROM ${csv(table)}`)).map((x) => x.k as string).sort();
    const rows = await sqlRows(`SELECT "${key}" AS k, prediction AS p, CAST(anchor_time AS VARCHAR) AS a FROM read_parquet(${sqlPath(r.path)})`);
    expect(rows.map((x) => x.k as string).sort()).toEqual(expected);
    expect(r.rows).toBe(expected.length);
    expect(new Set(rows.map((x) => x.a))).toEqual(new Set(['2020-06-01 00:00:00']));
    for (const x of rows) {
      expect(Number.isFinite(x.p as number)).toBe(true);
      if (prediction === 'probability') expect(x.p as number).toBeGreaterThanOrEqual(0), expect(x.p as number).toBeLessThanOrEqual(1);
    }
    expect(await parquetTypes(r.path)).toEqual({ [key]: 'VARCHAR', anchor_time: expect.stringMatching(/^TIMESTAMP/), prediction: 'FLOAT' });
    expect(await parquetKv(r.path)).toMatchObject({
      run_id: runs[task].runId,
      anchor_time: anchor,
      task,
      objective: prediction === 'probability' ? 'binary' : 'regression',
      prediction,
      table,
      key,
      mode: 'exact',
      shard: '',
    });
    expect(r).toMatchObject({ rows: expected.length, task, table, key, prediction, run_id: runs[task].runId, shard: null, with_embeddings: false });
  });

  it('a customer with no transaction before the anchor gets a prediction (cold start), not a missing row', async () => {
    const anchor = '2020-03-01T00:00:00Z';
    const cold = await sqlRows(`SELECT c.customer_id AS k FROM ${csv('customers')} c WHERE NOT EXISTS (SELECT 1 FROM ${TX()} x WHERE x.customer_id = c.customer_id AND x.t <= ${ts(anchor)})`);
    expect(cold.length).toBeGreaterThan(10); // the data starts 2020-02-26: most customers have no history yet
    const r = await predictTo('cold.parquet', { run: runs.churn.runId, anchorTime: anchor });
    const got = await sqlRows(
      `SELECT p.customer_id AS k, p.prediction AS p FROM read_parquet(${sqlPath(r.path)}) p WHERE p.customer_id IN (${cold.map((c) => `'${c.k as string}'`).join(', ')})`,
    );
    expect(got.length).toBe(cold.length);
    for (const x of got) expect(Number.isFinite(x.p as number) && (x.p as number) > 0 && (x.p as number) < 1).toBe(true);
    // Cold-start predictions come from each customer's own columns: not one constant for all of them.
    expect(new Set(got.map((x) => (x.p as number).toFixed(6))).size).toBeGreaterThan(1);
  });
});

describe('an entity table with a time column', () => {
  // Customers with a sign-up time: at 2020-01-10 only c1, c2 and c3 exist (c4 signs up on 2020-01-25).
  const customers = `customer_id,signed_up,age\nc1,2019-12-01 00:00:00,25\nc2,2019-12-15 00:00:00,31\nc3,2020-01-05 12:00:00,40\nc4,2020-01-25 09:00:00,33\n`;
  const tables = `${CONFIG.replace('customers: { path: customers.csv, primary_key: customer_id }', 'customers: { path: customers.csv, primary_key: customer_id, time_column: signed_up }')}model: { channels: 8, categorical_dim: 4, num_neighbors: [4, 2], epochs: 1, batch_size: 4 }\n`;
  it('holds exactly the customers that signed up by the anchor, each with a prediction', async () => {
    const hand = retailFixture({
      customers,
      articles: ARTICLES,
      transactions: TRANSACTIONS,
      config: configWithTasks({ spend: 'PREDICT SUM(transactions.price, 0, 7, days) FOR EACH customers.customer_id' }, '{ val_anchor: "2020-01-13", test_anchor: "2020-01-20", window: 86400 }', tables),
    });
    try {
      const hcfg = loadConfig(hand.config, { cwd: hand.dir, artifacts: hand.artifacts });
      const run = await train({ cfg: hcfg, task: 'spend', backend: 'wasm', skip_baseline: true });
      const keys = async (anchorTime: string) => {
        const r = await predict({ cfg: hcfg, backend: 'wasm', run: run.runId, anchorTime, out: join(hand.dir, `p-${anchorTime.slice(0, 10)}.parquet`) });
        const rows = await sqlRows(`SELECT customer_id AS k, prediction AS p FROM read_parquet(${sqlPath(r.path)}) ORDER BY k`);
        expect(rows.every((x) => Number.isFinite(x.p as number))).toBe(true);
        return rows.map((x) => x.k);
      };
      expect(await keys('2020-01-10T00:00:00Z')).toEqual(['c1', 'c2', 'c3']);
      expect(await keys('2020-01-05T12:00:00Z')).toEqual(['c1', 'c2', 'c3']); // signed up exactly at the anchor: exists
      expect(await keys('2020-01-05T11:59:59Z')).toEqual(['c1', 'c2']);
      expect(await keys('2020-01-31T00:00:00Z')).toEqual(['c1', 'c2', 'c3', 'c4']);
    } finally {
      hand.cleanup();
    }
  });
});

describe('quality figures from the file equal the run\'s test figures', () => {
  it('churn: AUROC of the predictions at the first test anchor against the realised labels (active customers) = the run\'s test AUROC there ± 0.001', async () => {
    const T = runs.churn.metrics.anchors.test;
    const at = runs.churn.metrics.test_by_anchor![0]!;
    expect(at.anchor).toBe(T);
    const r = await predictTo('churn-test.parquet', { run: runs.churn.runId, anchorTime: T });
    // The task: customers active in (T − 7d, T]; label 1 when they buy nothing in (T, T + 7d].
    const rows = await sqlRows(
      `WITH p AS (SELECT customer_id, prediction FROM read_parquet(${sqlPath(r.path)})), tx AS ${TX()} ` +
        `SELECT p.prediction AS p, CASE WHEN (SELECT count(*) FROM tx WHERE tx.customer_id = p.customer_id AND tx.t > ${ts(T)} AND tx.t <= ${ts(T)} + INTERVAL 7 DAY) = 0 THEN 1 ELSE 0 END AS y ` +
        `FROM p WHERE (SELECT count(*) FROM tx WHERE tx.customer_id = p.customer_id AND tx.t > ${ts(T)} - INTERVAL 7 DAY AND tx.t <= ${ts(T)}) > 0`,
    );
    expect(rows.length).toBe(at.n);
    const figure = auroc(rows.map((x) => x.y as number), rows.map((x) => x.p as number));
    expect(Math.abs(figure - (at.metrics as { auroc: number }).auroc)).toBeLessThanOrEqual(0.001);
  });

  it('item_sales: MAE and RMSE of the predictions at the first test anchor against the realised 7-day sales = the run\'s test MAE and RMSE there', async () => {
    const T = runs.item_sales.metrics.anchors.test;
    const at = runs.item_sales.metrics.test_by_anchor![0]!;
    expect(at.anchor).toBe(T);
    const r = await predictTo('sales-test.parquet', { run: runs.item_sales.runId, anchorTime: T });
    const rows = await sqlRows(
      `WITH p AS (SELECT article_id, prediction FROM read_parquet(${sqlPath(r.path)})), tx AS ${TX()} ` +
        `SELECT p.prediction AS p, coalesce((SELECT sum(price) FROM tx WHERE tx.article_id = p.article_id AND tx.t > ${ts(T)} AND tx.t <= ${ts(T)} + INTERVAL 7 DAY), 0) AS y FROM p`,
    );
    expect(rows.length).toBe(at.n);
    const m = regressionMetrics(rows.map((x) => x.y as number), rows.map((x) => x.p as number));
    const run = at.metrics as unknown as { mae: number; rmse: number };
    expect(m.mae).toBeCloseTo(run.mae, 3);
    expect(m.rmse).toBeCloseTo(run.rmse, 3);
  });
});

describe('shards and embeddings', () => {
  it('three shards concatenate to the unsharded file (same keys, same order, same predictions)', async () => {
    const all = await predictTo('all.parquet', { run: runs.churn.runId });
    const parts = [];
    for (let i = 0; i < 3; i++) parts.push((await predictTo(`part-${i}.parquet`, { run: runs.churn.runId, shard: { index: i, count: 3 } })).path);
    const read = (paths: string[]) =>
      sqlRows(`SELECT customer_id AS k, prediction AS p FROM read_parquet([${paths.map(sqlPath).join(', ')}], filename = true, file_row_number = true) ORDER BY filename, file_row_number`);
    const whole = await read([all.path]);
    expect(await read(parts)).toEqual(whole);
    expect(whole.length).toBe(all.rows);
    expect(await parquetKv(parts[1]!)).toMatchObject({ shard: '1/3' });
  });

  it('--with-embeddings adds the embedding column, equal to `embed`\'s vectors for the same run and anchor', async () => {
    const r = await predictTo('with-emb.parquet', { run: runs.churn.runId, withEmbeddings: true, anchorTime: '2020-06-01' });
    const e = await embed({ cfg, backend: 'wasm', run: runs.churn.runId, anchorTime: '2020-06-01', out: join(out, 'emb.parquet') });
    expect(Object.keys(await parquetTypes(r.path))).toEqual(['customer_id', 'anchor_time', 'prediction', 'embedding']);
    const diff = await sqlRows(
      `SELECT count(*)::INTEGER AS n, max(list_max(list_transform(list_zip(p.embedding, e.embedding), z -> abs(z[1] - z[2]))))::DOUBLE AS d ` +
        `FROM read_parquet(${sqlPath(r.path)}) p JOIN read_parquet(${sqlPath(e.path)}) e USING (customer_id)`,
    );
    expect(diff).toEqual([{ n: e.rows, d: 0 }]);
    expect(await parquetKv(r.path)).toMatchObject({ dim: String(DIM) });
  });

  it('with no --out, the file goes under artifacts/predictions/<run>/<anchor>/<table>/ with a manifest', async () => {
    const r = await predict({ cfg, backend: 'wasm', run: runs.churn.runId, anchorTime: '2020-06-01' });
    expect(r.path).toBe(join(fx.artifacts, 'predictions', runs.churn.runId, '20200601T000000Z', 'customers', 'predictions.parquet'));
    expect(readdirSync(join(r.path, '..')).sort()).toEqual(['manifest.json', 'predictions.parquet']);
  });
});

describe('refresh --predict', () => {
  it('with nothing exported, writes each run\'s predictions at the newest time in the data and nothing else', async () => {
    const r = await refreshJob({ cfg, predict: [runs.churn.runId, 'latest:item_sales'], backend: 'wasm', cwd: fx.dir });
    expect(r.model).toBeNull();
    expect(Object.keys(r).sort()).toEqual(['model', 'predictions', 'seconds']);
    const [newest] = await sqlRows(`SELECT strftime(max(CAST(t_dat AS TIMESTAMP)), '%Y-%m-%dT%H:%M:%SZ') AS t FROM ${csv('transactions')}`);
    expect(r.predictions.map((p) => [p.task, p.table, p.anchor_time])).toEqual([
      ['churn', 'customers', newest!.t],
      ['item_sales', 'articles', newest!.t],
    ]);
    for (const p of r.predictions) {
      expect(p.path).toBe(join(fx.artifacts, 'predictions', p.run_id, (newest!.t as string).replace(/[-:]/g, ''), p.table, 'predictions.parquet'));
      expect((await sqlRows(`SELECT count(*)::INTEGER AS n FROM read_parquet(${sqlPath(p.path)})`))[0]!.n).toBe(p.rows);
    }
    expect(existsSync(join(fx.artifacts, 'model_repository'))).toBe(false);
  });

  it('gnnctl refresh --predict (the real binary): --json lists the predictions; a bad --predict run exits non-zero naming it', () => {
    const ok = spawnSync(process.execPath, [BIN, 'refresh', '-c', fx.config, '--predict', runs.churn.runDir, '--artifacts', fx.artifacts, '--backend', 'wasm', '--json'], { cwd: fx.dir, encoding: 'utf8', timeout: 110_000 });
    expect(ok.status, ok.stderr).toBe(0);
    const res = JSON.parse(ok.stdout) as { model: null; predictions: { task: string; rows: number }[] };
    expect(res.model).toBeNull();
    expect(res.predictions).toMatchObject([{ task: 'churn', rows: expect.any(Number) }]);
    const bad = spawnSync(process.execPath, [BIN, 'refresh', '-c', fx.config, '--predict', 'latest:nosuchtask', '--artifacts', fx.artifacts, '--backend', 'wasm', '--json'], { cwd: fx.dir, encoding: 'utf8', timeout: 110_000 });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('nosuchtask');
  });
});

describe('refusals', () => {
  it('a fact-row run (fraud) and a table the run does not predict are usage errors naming the flag', async () => {
    await expect(predictTo('fraud.parquet', { run: runs.fraud.runId })).rejects.toThrow(/fact-row task fraud/);
    await expect(predictTo('articles.parquet', { run: runs.churn.runId, table: 'articles' })).rejects.toSatisfy((e: unknown) => e instanceof UsageError && /--table/.test((e as UsageError).describe()));
    expect(existsSync(join(out, 'fraud.parquet'))).toBe(false);
  });
});

describe('gnnctl predict (the real binary)', () => {
  const run = (args: string[]) => spawnSync(process.execPath, [BIN, ...args], { cwd: fx.dir, encoding: 'utf8', timeout: 110_000, env: { ...process.env, NO_COLOR: '1' } });
  const base = () => ['predict', '-c', fx.config, '-r', runs.item_sales.runDir, '--artifacts', fx.artifacts, '--backend', 'wasm'];

  it.skipIf(!existsSync(join(ROOT, 'dist', 'cli', 'main.js')))('--json prints one result; the file is there with a shard\'s rows', () => {
    const path = join(out, 'cli.parquet');
    const r = run([...base(), '--anchor-time', '2020-06-01T00:00:00Z', '--shard', '0/2', '--with-embeddings', '--workers', '2', '--out', path, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const res = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(res).toMatchObject({ path, table: 'articles', key: 'article_id', task: 'item_sales', objective: 'regression', prediction: 'value', shard: '0/2', with_embeddings: true, anchor_time: '2020-06-01T00:00:00Z', workers: 2 });
    expect(res.rows).toBeGreaterThan(0);
    expect(existsSync(path)).toBe(true);
  });

  it.each([
    ['--shard', '2/2'],
    ['--anchor-time', 'yesterday'],
    ['--mode', 'fast'],
    ['--workers', '0'],
  ])('a bad %s value (%s) exits 2 naming the flag, before any work', (flag, value) => {
    const path = join(out, `bad-${flag.slice(2)}.parquet`);
    const r = run([...base(), flag, value, '--out', path, '--json']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(flag);
    expect(existsSync(path)).toBe(false);
  });

  it('a fact-row run exits 2 naming --run', () => {
    const r = run(['predict', '-c', fx.config, '-r', runs.fraud.runDir, '--artifacts', fx.artifacts, '--backend', 'wasm', '--json']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--run.*fact-row|fact-row[\s\S]*--run/);
  });
});
