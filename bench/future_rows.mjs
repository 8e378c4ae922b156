#!/usr/bin/env node
/**
 * The frozen-encoders property at scale: train a churn run (a short one, not timed), embed every customer
 * at a past anchor t in exact and sampled mode, append transactions dated after t to a copy of the data
 * (new and old customers and articles, prices far outside the fitted range), rebuild the graph (refitted
 * statistics, a later fit_until), embed at t again with the same run, and print the largest |Δ| over
 * all embedding values (0 = byte-identical) with the timings.
 *
 *   npm run build && node bench/future_rows.mjs --size small|medium [--anchor 2020-08-01] [--rows 200000]
 */
import { appendFileSync, cpSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { arg, benchConfig, CACHE, dataset, peakRssMb } from './common.mjs';

const size = arg('size', 'small');
const anchor = arg('anchor', '2020-08-01T00:00:00Z');
const source = await dataset(size);
const data = join(CACHE, `future-rows-${size}`);
rmSync(data, { recursive: true, force: true });
cpSync(source, data, { recursive: true });
const { loadConfig } = await import('../dist/config/load.js');
const { embed } = await import('../dist/embed/embed.js');
const { train } = await import('../dist/train/trainer.js');
const { setQuiet } = await import('../dist/core/log.js');
const { DuckDBInstance } = await import('@duckdb/node-api');
setQuiet(true);

const cfgPath = benchConfig(`${size}-future`, data);
const cfg = loadConfig(cfgPath);
cfg.taskSpecs.churn.model = { ...cfg.taskSpecs.churn.model, max_steps_per_epoch: 30 };
const run = (await train({ cfg, task: 'churn', epochs: 1, skip_baseline: true })).runId;

async function embedAll(tag) {
  const out = {};
  for (const mode of ['exact', 'sampled']) {
    const r = await embed({ cfg: loadConfig(cfgPath), run, table: 'customers', anchorTime: anchor, mode, out: join(data, `${tag}-${mode}.parquet`) });
    out[mode] = { seconds: r.seconds, rows: r.rows };
  }
  return out;
}
const before = await embedAll('before');

// Future rows: ids after the largest, times after t, interleaved with existing rows after t.
const txPath = join(data, 'transactions.csv');
const lines = readFileSync(txPath, 'utf8').trimEnd().split('\n');
const header = lines[0].split(',');
const col = (name) => header.indexOf(name);
const n = Number(arg('rows', String(Math.round(lines.length * 0.1))));
let seed = 7;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const sample = () => lines[1 + Math.floor(rand() * (lines.length - 1))].split(',');
const maxId = lines.slice(1).reduce((m, l) => Math.max(m, Number(l.split(',')[col('transaction_id')])), 0);
const t0 = Date.parse(anchor);
const rows = [];
for (let k = 0; k < n; k++) {
  const f = sample();
  f[col('transaction_id')] = String(maxId + 1 + k);
  f[col('t_dat')] = new Date(t0 + 1000 + Math.floor(rand() * 80 * 86400_000)).toISOString().slice(0, 19).replace('T', ' ');
  f[col('price')] = (Number(f[col('price')]) * 20).toFixed(6);
  rows.push(f.join(','));
}
appendFileSync(txPath, `${rows.join('\n')}\n`);
const after = await embedAll('after');

const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();
const diff = {};
for (const mode of ['exact', 'sampled']) {
  const r = await conn.runAndReadAll(
    `SELECT count(*)::INT AS n, coalesce(max(list_max(list_transform(list_zip(a.embedding, b.embedding), p -> abs(p[1] - p[2])))), 0)::DOUBLE AS d
     FROM '${join(data, `before-${mode}.parquet`)}' a JOIN '${join(data, `after-${mode}.parquet`)}' b USING (customer_id)`,
  );
  const row = r.getRowObjects()[0];
  diff[mode] = { compared: row.n, max_abs_diff: row.d };
}
console.log(JSON.stringify({ bench: 'future rows', size, run, anchor, appended_rows: n, before, after, diff, peak_rss_mb: peakRssMb() }));
if (!existsSync(join(data, 'before-exact.parquet'))) process.exitCode = 1;
rmSync(data, { recursive: true, force: true });
