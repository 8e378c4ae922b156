/**
 * `gnnctl datasets synth`: synthetic H&M-shaped tables (customers, articles, transactions) with planted
 * signals that only a graph model fully recovers (see datasets/README.md). Deterministic per seed: the
 * same seed and size give byte-identical files.
 *
 * Every table is written to a temporary sibling and renamed into place, so a killed run leaves no
 * half-written table. Parquet output is the CSV converted by DuckDB with the column types DuckDB's CSV
 * auto-detection gives, so both formats read back identically.
 */
import { round } from '../core/number.js';
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { duckdbMemoryLimit } from '../core/duckdb_memory.js';
import { DataError } from '../core/errors.js';
import { Rng } from '../core/rng.js';
import { tempSibling, writeJsonAtomic } from '../core/atomic.js';
import { info } from '../core/log.js';
import { VERSION } from '../core/version.js';
import { ARTICLE_COLUMNS, generateCatalog, writeArticles } from './catalog.js';
import { CsvSink } from './csv.js';
import { CUSTOMER_COLUMNS, generatePopulation } from './population.js';
import { accountTakeovers, dailyVolume, DEFAULT_SIGNALS, fraudRings, sectionRhythms, sectionTrends } from './signals.js';
import type { SignalParams } from './signal_params.js';
import { SYNTH_DAYS, SYNTH_LAST_DAY, SYNTH_SIZES, type SynthSize } from './sizes.js';
import { dayText, simulateTransactions, TRANSACTION_COLUMNS, type SimulationResult } from './transactions.js';

export type SynthFormat = 'csv' | 'parquet';
export type SynthTable = 'customers' | 'articles' | 'transactions';
export const SYNTH_TABLES: readonly SynthTable[] = ['customers', 'articles', 'transactions'];

/** Column types of each table: what DuckDB's read_csv auto-detects on the CSV, and the Parquet types. */
export const SYNTH_SCHEMAS: Record<SynthTable, readonly (readonly [string, string])[]> = {
  customers: withTypes(CUSTOMER_COLUMNS, { FN: 'DOUBLE', Active: 'DOUBLE', age: 'BIGINT' }),
  articles: withTypes(ARTICLE_COLUMNS, {
    product_type_no: 'BIGINT', colour_group_code: 'BIGINT', department_no: 'BIGINT', index_group_no: 'BIGINT',
    section_no: 'BIGINT', garment_group_no: 'BIGINT',
  }),
  transactions: withTypes(TRANSACTION_COLUMNS, { transaction_id: 'BIGINT', t_dat: 'TIMESTAMP', price: 'DOUBLE', sales_channel_id: 'BIGINT', fraud: 'BIGINT' }),
};

function withTypes(columns: readonly string[], types: Record<string, string>): [string, string][] {
  return columns.map((c) => [c, types[c] ?? 'VARCHAR']);
}

export interface SynthOptions {
  /** output folder (created if missing) */
  out: string;
  size: SynthSize;
  seed: number;
  format: SynthFormat;
  /**
   * Also write `_truth/transactions.csv` (transaction_id, hidden kind 0 legit / 1 takeover / 2 ring, ring
   * id). For calibrating the planted signals only: it is the answer key, never a model input.
   */
  truth?: boolean;
  /** Overrides of the planted-signal strengths (calibration experiments). */
  signals?: Partial<SignalParams>;
  /** t_dat as a date only (preset `retail-dates`): the same simulation, times of day cut off */
  dateOnly?: boolean;
}

export interface SynthResult {
  out: string;
  /** `retail`, or `retail-dates` when t_dat is date-only */
  preset: 'retail' | 'retail-dates';
  size: SynthSize;
  seed: number;
  format: SynthFormat;
  files: Record<SynthTable, string>;
  rows: Record<SynthTable, number>;
  /** first and last simulated day (t_dat's date range) */
  first_day: string;
  last_day: string;
  fraud_rows: number;
  fraud_rate: number;
  fraud_rings: number;
  account_takeovers: number;
  seconds: number;
}

export async function generateSynthetic(opts: SynthOptions): Promise<SynthResult> {
  const t0 = performance.now();
  const target = SYNTH_SIZES[opts.size];
  const out = resolve(opts.out);
  const days = SYNTH_DAYS;
  const lastMs = Date.parse(`${SYNTH_LAST_DAY}T00:00:00Z`);
  const startMs = lastMs - (days - 1) * 86_400_000;
  const firstWeekday = (new Date(startMs).getUTCDay() + 6) % 7;
  const params: SignalParams = { ...DEFAULT_SIGNALS, ...opts.signals };
  try {
    mkdirSync(out, { recursive: true });
  } catch (e) {
    throw new DataError('cannot create the output folder', { where: out, value: (e as Error).message, hint: 'pass a writable --out folder' });
  }

  // Independent streams per component, so tuning one signal does not reshuffle the others.
  const root = new Rng(opts.seed);
  const rngPop = root.fork(1);
  const rngCat = root.fork(2);
  const rngVolume = root.fork(3);
  const rngTrends = root.fork(4);
  const rngRings = root.fork(5);
  const rngTakeovers = root.fork(6);
  const rngSim = root.fork(7);
  const rngRhythms = root.fork(8);

  const files = Object.fromEntries(SYNTH_TABLES.map((t) => [t, join(out, `${t}.${opts.format}`)])) as Record<SynthTable, string>;
  const manifestPath = join(out, 'manifest.json');
  const truthPath = join(out, '_truth', 'transactions.csv');
  const cleanup: string[] = [];
  try {
    info(`synth ${opts.size} (seed ${opts.seed}): customers`);
    const customers = writeCsv(files.customers, cleanup, (sink) => generatePopulation(rngPop, target.customers, days, params, sink));
    const pop = customers.value;
    info(`synth ${opts.size}: articles`);
    const articles = writeCsv(files.articles, cleanup, (sink) => {
      const cat = generateCatalog(rngCat, target.articles, days);
      writeArticles(cat, sink);
      return cat;
    });
    const cat = articles.value;

    const volume = dailyVolume(rngVolume, days, firstWeekday);
    const trends = sectionTrends(rngTrends, cat.nSections, days, params);
    const rhythms = sectionRhythms(rngRhythms, cat.nSections, params);
    const rings = fraudRings(rngRings, pop, cat, days, target.transactions, params);
    const takeovers = accountTakeovers(rngTakeovers, pop, days, target.transactions, params);

    info(`synth ${opts.size}: transactions (~${target.transactions.toLocaleString('en-US')} rows)`);
    const truth = opts.truth ? new CsvSink(track(cleanup, tempSibling(truthPath))) : undefined;
    let transactions: { tmp: string; value: SimulationResult };
    try {
      transactions = writeCsv(files.transactions, cleanup, (sink) =>
        simulateTransactions({ rng: rngSim, pop, cat, days, startMs, targetTransactions: target.transactions, volume, trends, rhythms, rings, takeovers, params, dateOnly: opts.dateOnly }, sink, truth));
      truth?.close();
    } catch (e) {
      truth?.abort();
      throw e;
    }
    const sim = transactions.value;
    const schemas = synthSchemas(opts.dateOnly === true);
    const csvTemps: Record<SynthTable, string> = { customers: customers.tmp, articles: articles.tmp, transactions: transactions.tmp };

    // Publish: the old manifest goes first, so a run killed between the renames below never leaves a
    // manifest that vouches for a mix of old and new tables.
    rmSync(manifestPath, { force: true });
    if (opts.format === 'parquet') {
      info(`synth ${opts.size}: converting to parquet`);
      await convertToParquet(csvTemps, files, schemas, cleanup);
    } else {
      for (const t of SYNTH_TABLES) renameSync(csvTemps[t], files[t]);
    }
    if (truth) renameSync(truth.path, truthPath);

    const rows = { customers: pop.n, articles: cat.n, transactions: sim.rows };
    const preset = opts.dateOnly ? 'retail-dates' : 'retail';
    const result: SynthResult = {
      out, preset, size: opts.size, seed: opts.seed, format: opts.format, files, rows,
      first_day: dayText(startMs, 0), last_day: dayText(startMs, days - 1),
      fraud_rows: sim.fraudRows, fraud_rate: round(sim.fraudRows / sim.rows, 5),
      fraud_rings: rings.count, account_takeovers: takeovers.count,
      seconds: round((performance.now() - t0) / 1000, 2),
    };
    // No timings in the manifest: the whole folder is byte-identical for a given size and seed.
    writeJsonAtomic(manifestPath, {
      kind: 'dataset', generator: 'gnnctl datasets synth', gnnctl_version: VERSION, ...(opts.dateOnly ? { preset } : {}), size: opts.size, seed: opts.seed,
      format: opts.format, first_day: result.first_day, last_day: result.last_day,
      tables: Object.fromEntries(SYNTH_TABLES.map((t) => [t, { file: `${t}.${opts.format}`, rows: rows[t], columns: Object.fromEntries(schemas[t]) }])),
      signals: { fraud_rows: result.fraud_rows, fraud_rate: result.fraud_rate, fraud_rings: rings.count, account_takeovers: takeovers.count, params },
    });
    return result;
  } finally {
    for (const p of cleanup) rmSync(p, { force: true });
  }
}

/**
 * Runs `fill` on a CSV written to a temporary sibling of `target` and returns the temp path (which the
 * caller renames into place, or converts) with fill's value. The temp file is removed on any failure.
 */
export function writeCsv<T>(target: string, cleanup: string[], fill: (sink: CsvSink) => T): { tmp: string; value: T } {
  const tmp = track(cleanup, `${tempSibling(target)}.csv`);
  const sink = new CsvSink(tmp);
  try {
    const value = fill(sink);
    sink.close();
    return { tmp, value };
  } catch (e) {
    sink.abort();
    throw e;
  }
}

/** Registers a temporary path for removal in generateSynthetic's `finally` (a no-op once renamed). */
export function track(cleanup: string[], path: string): string {
  cleanup.push(path);
  return path;
}

/** The column types of each table; with date-only t_dat DuckDB reads that column as DATE. */
export function synthSchemas(dateOnly: boolean): Record<SynthTable, readonly (readonly [string, string])[]> {
  if (!dateOnly) return SYNTH_SCHEMAS;
  return { ...SYNTH_SCHEMAS, transactions: SYNTH_SCHEMAS.transactions.map(([c, ty]) => [c, c === 't_dat' ? 'DATE' : ty] as const) };
}

/** Converts finished CSVs to Parquet with the given column types (one DuckDB thread: byte-identical output). */
export async function convertToParquet<T extends string>(
  csv: Record<T, string>,
  files: Record<T, string>,
  schemas: Record<T, readonly (readonly [string, string])[]>,
  cleanup: string[],
): Promise<void> {
  // The same cap as every stage's DuckDB when the user set one; DuckDB's own default otherwise.
  const memoryLimit = duckdbMemoryLimit();
  const db = await DuckDBInstance.create(':memory:', memoryLimit ? { memory_limit: memoryLimit } : undefined);
  try {
    const conn = await db.connect();
    try {
      // One thread: DuckDB's parallel CSV reader and Parquet writer may cut row groups differently from
      // run to run, and the output must be byte-identical per seed.
      await conn.run('SET threads = 1');
      for (const t of Object.keys(csv) as T[]) {
        const tmp = track(cleanup, `${tempSibling(files[t])}.parquet`);
        const columns = schemas[t].map(([c, ty]) => `'${c}': '${ty}'`).join(', ');
        await conn.run(
          `COPY (SELECT * FROM read_csv(${sqlString(csv[t])}, header = true, columns = {${columns}})) ` +
            `TO ${sqlString(tmp)} (FORMAT parquet, COMPRESSION zstd)`,
        );
        renameSync(tmp, files[t]);
        rmSync(csv[t], { force: true });
      }
    } finally {
      conn.closeSync();
    }
  } finally {
    db.closeSync();
  }
}

function sqlString(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

