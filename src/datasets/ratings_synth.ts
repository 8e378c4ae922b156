/**
 * Writes a ratings-schema preset (`bursty`, `ratings`) to a folder: users, items and ratings tables,
 * atomically (temp siblings renamed into place, the old manifest removed first), CSV or Parquet, and a
 * `manifest.json` without timings, so the same preset, size and seed give byte-identical folders.
 */
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DataError, UsageError } from '../core/errors.js';
import { writeJsonAtomic } from '../core/atomic.js';
import { info } from '../core/log.js';
import { Rng } from '../core/rng.js';
import { VERSION } from '../core/version.js';
import { SYNTH_PRESETS, type SynthPresetName } from './presets.js';
import { generateRatings, GENRES, ITEM_COLUMNS, RATING_COLUMNS, RATINGS_SIZES, USER_COLUMNS, type RatingsResult } from './ratings.js';
import type { SynthSize } from './sizes.js';
import { convertToParquet, writeCsv, type SynthFormat } from './synth.js';

export type RatingsTable = 'users' | 'items' | 'ratings';
export const RATINGS_TABLES: readonly RatingsTable[] = ['users', 'items', 'ratings'];

/** Column types as DuckDB's read_csv auto-detects them (and the Parquet types). */
export function ratingsSchemas(dateOnly: boolean): Record<RatingsTable, readonly (readonly [string, string])[]> {
  const typed = (cols: readonly string[], types: Record<string, string>): [string, string][] => cols.map((c) => [c, types[c] ?? 'VARCHAR']);
  return {
    users: typed(USER_COLUMNS, { user_id: 'BIGINT', age: 'BIGINT' }),
    items: typed(ITEM_COLUMNS, { item_id: 'BIGINT', release_date: 'DATE', ...Object.fromEntries(GENRES.map((g) => [g, 'BIGINT'])) }),
    ratings: typed(RATING_COLUMNS, { user_id: 'BIGINT', item_id: 'BIGINT', rating: 'BIGINT', rated_at: dateOnly ? 'DATE' : 'TIMESTAMP' }),
  };
}

export interface RatingsSynthOptions {
  out: string;
  preset: SynthPresetName;
  size: SynthSize;
  seed: number;
  format: SynthFormat;
}

export interface RatingsSynthResult extends RatingsResult {
  out: string;
  preset: SynthPresetName;
  size: SynthSize;
  seed: number;
  format: SynthFormat;
  files: Record<RatingsTable, string>;
  seconds: number;
}

export async function generateRatingsSynthetic(opts: RatingsSynthOptions): Promise<RatingsSynthResult> {
  const t0 = performance.now();
  const preset = SYNTH_PRESETS[opts.preset];
  if (preset.schema !== 'ratings' || !preset.behaviour) throw new Error(`preset ${opts.preset} is not a ratings preset`);
  if (!(opts.size in RATINGS_SIZES)) {
    throw new UsageError(`preset ${opts.preset} has no size ${opts.size}`, { where: '--size', value: opts.size, hint: `use one of ${preset.sizes.join(', ')}` });
  }
  const size = RATINGS_SIZES[opts.size as keyof typeof RATINGS_SIZES];
  const behaviour = preset.behaviour;
  const out = resolve(opts.out);
  try {
    mkdirSync(out, { recursive: true });
  } catch (e) {
    throw new DataError('cannot create the output folder', { where: out, value: (e as Error).message, hint: 'pass a writable --out folder' });
  }
  const root = new Rng(opts.seed);
  const rng = { users: root.fork(11), items: root.fork(12), sim: root.fork(13) };
  const files = Object.fromEntries(RATINGS_TABLES.map((t) => [t, join(out, `${t}.${opts.format}`)])) as Record<RatingsTable, string>;
  const manifestPath = join(out, 'manifest.json');
  const schemas = ratingsSchemas(behaviour.dateOnly);
  const cleanup: string[] = [];
  try {
    info(`synth preset ${opts.preset} ${opts.size} (seed ${opts.seed})`);
    // The generator writes three tables from one simulation: users and items go to their temps first,
    // ratings to a third; writeCsv nests so every temp is removed on failure.
    let stats!: RatingsResult;
    let tmpUsers = '';
    let tmpItems = '';
    const ratings = writeCsv(files.ratings, cleanup, (rSink) => {
      const users = writeCsv(files.users, cleanup, (uSink) => {
        const items = writeCsv(files.items, cleanup, (iSink) => {
          stats = generateRatings(rng, size, behaviour, { users: uSink, items: iSink, ratings: rSink });
        });
        tmpItems = items.tmp;
      });
      tmpUsers = users.tmp;
    });
    const temps: Record<RatingsTable, string> = { users: tmpUsers, items: tmpItems, ratings: ratings.tmp };
    rmSync(manifestPath, { force: true });
    if (opts.format === 'parquet') await convertToParquet(temps, files, schemas, cleanup);
    else for (const t of RATINGS_TABLES) renameSync(temps[t], files[t]);

    const result: RatingsSynthResult = {
      out, preset: opts.preset, size: opts.size, seed: opts.seed, format: opts.format, files, ...stats,
      seconds: Math.round((performance.now() - t0) / 10) / 100,
    };
    writeJsonAtomic(manifestPath, {
      kind: 'dataset', generator: 'gnnctl datasets synth', gnnctl_version: VERSION, preset: opts.preset, size: opts.size, seed: opts.seed,
      format: opts.format, first_day: stats.first_day, last_day: stats.last_day,
      tables: Object.fromEntries(RATINGS_TABLES.map((t) => [t, { file: `${t}.${opts.format}`, rows: stats.rows[t], columns: Object.fromEntries(schemas[t]) }])),
      realism: {
        one_sitting_share: stats.one_sitting_share, cold_users: stats.cold_users, max_user_ratings: stats.max_user_ratings,
        median_user_ratings: stats.median_user_ratings, tie_share: stats.tie_share, behaviour,
      },
    });
    return result;
  } finally {
    for (const p of cleanup) rmSync(p, { force: true });
  }
}
