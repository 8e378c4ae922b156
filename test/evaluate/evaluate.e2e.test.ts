/**
 * Issue 32's cases on tiny synthetic data with a dimension table of future-dated rows (campaigns planned a
 * year past the last transaction, as F1's race calendar runs past its last result): anchors come from the
 * target table, so churn trains with non-empty val/test sets at many test anchors and defined metrics
 * with intervals; `evaluate` at the run's test anchors reproduces its test metrics exactly; the AUROC
 * DuckDB computes from `predict` files and the query's labels equals `evaluate`'s; `predict --anchor-time
 * latest` is the last transaction's time; `train_from` limits a per-row task's training rows; a gate on an
 * undefined AUROC exits 4 naming why (the real binary). One churn and one fraud run (1 epoch, 3 steps).
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { isoSeconds } from '../../src/core/duration.js';
import { setQuiet, takeWarnings } from '../../src/core/log.js';
import { evaluate } from '../../src/evaluate/evaluate.js';
import { predict } from '../../src/predict/predict.js';
import { train, type TrainResult } from '../../src/train/trainer.js';
import { sqlPath, sqlRows } from '../helpers/pipeline.js';
import { copyFixture, tinySynth, type SynthFixture } from '../helpers/synth.js';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'gnnctl.js');
const DAY = 86400;

const CONFIG = `name: evaluate
data:
  tables:
    customers: { path: customers.csv, primary_key: customer_id }
    articles: { path: articles.csv, primary_key: article_id }
    transactions:
      path: transactions.csv
      primary_key: transaction_id
      time_column: t_dat
      foreign_keys: { customer_id: customers, article_id: articles }
    campaigns:
      path: campaigns.csv
      primary_key: campaign_id
      time_column: starts_at
      foreign_keys: { article_id: articles }
tasks:
  churn:
    query: PREDICT COUNT(transactions.*, 0, 7, days) = 0 FOR EACH customers.customer_id WHERE COUNT(transactions.*, -7, 0, days) > 0
    split: { train_anchors: 3 }
  fraud:
    query: PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id
    split: { train_from: "2020-08-01" }
model: { channels: 8, categorical_dim: 4, num_neighbors: [6, 3], epochs: 1, batch_size: 64, max_steps_per_epoch: 3 }
`;

let fx: SynthFixture;
let cfg: Config;
let churn: TrainResult;
let fraud: TrainResult;
let churnWarnings: string[];
/** the newest transaction (epoch seconds) */
let lastTx: number;

const csv = (dir: string, table: string) => `read_csv(${sqlPath(join(dir, `${table}.csv`))}, all_varchar = true)`;
const TX = (dir: string) => `(SELECT transaction_id, customer_id, CAST(t_dat AS TIMESTAMP) AS t, CAST(fraud AS INTEGER) AS fraud FROM ${csv(dir, 'transactions')})`;
const ts = (iso: string) => `TIMESTAMP '${iso.slice(0, 19).replace('T', ' ')}'`;

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = await tinySynth(CONFIG);
  // Campaigns planned monthly up to June 2021: nine months past the last transaction (2020-09-22).
  const articles = readFileSync(join(fx.dir, 'articles.csv'), 'utf8').trim().split('\n').slice(1).map((l) => l.split(',')[0]!);
  const rows = Array.from({ length: 16 }, (_, i) => `${i + 1},${articles[i % articles.length]},2020-${String(3 + (i % 10)).padStart(2, '0')}-01,${(i * 37) % 100}`);
  rows.push('17,' + articles[0] + ',2021-06-01,50');
  writeFileSync(join(fx.dir, 'campaigns.csv'), ['campaign_id,article_id,starts_at,budget', ...rows].join('\n') + '\n');
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  lastTx = Date.parse(String((await sqlRows(`SELECT strftime(max(t), '%Y-%m-%dT%H:%M:%SZ') AS m FROM ${TX(fx.dir)}`))[0]!.m)) / 1000;
  takeWarnings();
  churn = await train({ cfg, task: 'churn', backend: 'wasm', skip_baseline: true });
  churnWarnings = takeWarnings();
  fraud = await train({ cfg, task: 'fraud', backend: 'wasm', skip_baseline: true });
}, 600_000);
afterAll(() => {
  fx?.cleanup();
  setQuiet(false);
});

describe('a dimension table with future-dated rows does not move the anchors', () => {
  it('churn: many test anchors one window apart, the last window ending at the last transaction\'s midnight, every split non-empty', () => {
    const m = churn.metrics;
    const test = m.anchors.test_anchors.map((a) => Date.parse(a) / 1000);
    expect(test.length).toBeGreaterThanOrEqual(10);
    for (let i = 1; i < test.length; i++) expect(test[i]! - test[i - 1]!).toBe(7 * DAY);
    expect(test[test.length - 1]! + 7 * DAY).toBe(Math.ceil(lastTx / DAY) * DAY);
    expect(m.counts.train).toBeGreaterThan(0);
    expect(m.counts.val).toBeGreaterThan(0);
    expect(m.counts.test).toBeGreaterThan(0);
    const auroc = (m.test as { auroc: number }).auroc;
    expect(Number.isFinite(auroc)).toBe(true);
  });

  it('every test metric has a 95% interval holding it, and each test anchor its own metrics', () => {
    const m = churn.metrics;
    const auroc = (m.test as { auroc: number }).auroc;
    const [lo, hi] = m.intervals!.test.auroc!;
    expect(lo).toBeLessThanOrEqual(auroc);
    expect(hi).toBeGreaterThanOrEqual(auroc);
    expect(m.test_by_anchor!.map((a) => a.anchor)).toEqual(m.anchors.test_anchors);
    expect(m.test_by_anchor!.reduce((s, a) => s + a.n, 0)).toBe(m.counts.test);
  });

  it('few training examples are warned about with the count', () => {
    expect(churn.metrics.counts.train).toBeLessThan(1000);
    expect(churnWarnings.join('\n')).toContain(`only ${churn.metrics.counts.train.toLocaleString('en-US')} training examples (fewer than 1,000)`);
  });
});

describe('evaluate', () => {
  it('at the run\'s own test anchors reproduces its test metrics exactly', async () => {
    const r = await evaluate({ cfg, run: churn.runId, choice: null, backend: 'wasm' });
    expect(r.anchors).toEqual(churn.metrics.anchors.test_anchors);
    expect(r.metrics).toEqual(churn.metrics.test);
    expect(r.by_anchor).toEqual(churn.metrics.test_by_anchor);
    expect(JSON.parse(readFileSync(r.path, 'utf8')).metrics).toEqual(JSON.parse(JSON.stringify(churn.metrics.test)));
  });

  it('--from/--to steps one window at a time while the window ends by --to', async () => {
    const r = await evaluate({ cfg, run: churn.runId, choice: { from: '2020-06-02', to: '2020-06-24' }, backend: 'wasm' });
    expect(r.anchors).toEqual(['2020-06-02T00:00:00Z', '2020-06-09T00:00:00Z', '2020-06-16T00:00:00Z']);
    expect(r.by_anchor.map((a) => a.anchor)).toEqual(r.anchors);
  });

  it('the AUROC DuckDB computes from predict\'s file and the query\'s labels equals evaluate\'s at that anchor', async () => {
    const T = churn.metrics.anchors.test_anchors[0]!;
    const e = await evaluate({ cfg, run: churn.runId, choice: { anchors: [T] }, backend: 'wasm' });
    const p = await predict({ cfg, run: churn.runId, anchorTime: T, backend: 'wasm', out: join(fx.dir, '..', 'churn-T.parquet') });
    // customers active in (T − 7d, T]; label 1 when they buy nothing in (T, T + 7d]; AUROC by Mann-Whitney with tied ranks averaged
    const rows = await sqlRows(
      `WITH tx AS ${TX(fx.dir)}, ` +
        `active AS (SELECT DISTINCT customer_id FROM tx WHERE t > ${ts(T)} - INTERVAL 7 DAY AND t <= ${ts(T)}), ` +
        `next AS (SELECT DISTINCT customer_id FROM tx WHERE t > ${ts(T)} AND t <= ${ts(T)} + INTERVAL 7 DAY), ` +
        `xy AS (SELECT p.prediction AS p, CASE WHEN n.customer_id IS NULL THEN 1 ELSE 0 END AS y FROM read_parquet(${sqlPath(p.path)}) p JOIN active a ON a.customer_id = CAST(p.customer_id AS VARCHAR) LEFT JOIN next n ON n.customer_id = a.customer_id), ` +
        `ranked AS (SELECT y, rank() OVER (ORDER BY p) + (count(*) OVER (PARTITION BY p) - 1) / 2.0 AS r FROM xy) ` +
        `SELECT count(*) AS n, (sum(r) FILTER (WHERE y = 1) - count(*) FILTER (WHERE y = 1) * (count(*) FILTER (WHERE y = 1) + 1) / 2.0) / (count(*) FILTER (WHERE y = 1) * count(*) FILTER (WHERE y = 0)) AS auroc FROM ranked`,
    );
    expect(Number(rows[0]!.n)).toBe((e.metrics as { n: number }).n);
    // predict scores exactly (every neighbour), the run's evaluation samples: equal on this data up to float noise
    expect(Math.abs(Number(rows[0]!.auroc) - (e.metrics as { auroc: number }).auroc)).toBeLessThanOrEqual(0.001);
  });

  it('predict --anchor-time latest scores at the last transaction, not at the last campaign', async () => {
    const p = await predict({ cfg, run: churn.runId, backend: 'wasm', out: join(fx.dir, '..', 'churn-latest.parquet') });
    expect(p.anchor_time).toBe(isoSeconds(lastTx));
  });
});

describe('train_from limits a per-row task', () => {
  it('fraud trains on the rows from train_from up to the val timestamp only', async () => {
    const val = fraud.metrics.anchors.val;
    const rows = await sqlRows(`SELECT count(*) AS n, count(*) FILTER (WHERE t >= TIMESTAMP '2020-08-01') AS from_n FROM ${TX(fx.dir)} WHERE t <= ${ts(val)}`);
    expect(fraud.metrics.counts.train).toBe(Number(rows[0]!.from_n));
    expect(fraud.metrics.counts.train).toBeLessThan(Number(rows[0]!.n));
  });
});

describe('a gate on an undefined metric', () => {
  it('exits 4 naming why: every active customer buys again, so the test set has no positive (churn) example', async () => {
    const copy = copyFixture(fx, 'no-churn');
    try {
      const T = churn.metrics.anchors.test_anchors[0]!;
      const active = await sqlRows(`SELECT DISTINCT customer_id FROM ${TX(copy.dir)} WHERE t > ${ts(T)} - INTERVAL 7 DAY AND t <= ${ts(T)}`);
      const article = readFileSync(join(copy.dir, 'articles.csv'), 'utf8').split('\n')[1]!.split(',')[0]!;
      const day = isoSeconds(Date.parse(T) / 1000 + DAY).slice(0, 10);
      appendFileSync(join(copy.dir, 'transactions.csv'), active.map((r, i) => `${900000 + i},${day} 12:00:00,${r.customer_id},${article},0.05,2,0\n`).join(''));
      const r = spawnSync(process.execPath, [BIN, 'evaluate', '--config', copy.config, '--artifacts', fx.artifacts, '--run', churn.runId, '--anchors', T, '--backend', 'wasm', '--fail-under', 'test.auroc=0.6', '--json'], {
        cwd: copy.dir,
        encoding: 'utf8',
        timeout: 240_000,
      });
      expect(r.status, r.stderr).toBe(4);
      expect(r.stderr).toMatch(/test\.auroc is undefined \(no positive examples among \d+; bar 0\.6\)/);
    } finally {
      copy.cleanup();
    }
  }, 300_000);
});
