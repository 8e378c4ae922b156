/** `gnnctl datasets synth`: validate the flags, run the generator, summarise what was written. */
import { isAbsolute, relative } from 'node:path';
import { UsageError, suggest } from '../../core/errors.js';
import { generateSynthetic, SYNTH_TABLES, type SynthFormat, type SynthResult } from '../../datasets/synth.js';
import { isSynthSize, SYNTH_SIZE_NAMES } from '../../datasets/sizes.js';
import { isSynthPreset, SYNTH_PRESET_NAMES, SYNTH_PRESETS } from '../../datasets/presets.js';
import { generateRatingsSynthetic, RATINGS_TABLES, type RatingsSynthResult } from '../../datasets/ratings_synth.js';
import type { CommandOutput } from '../run.js';

/** As commander passes them: strings (defaults preset retail, size the preset's, seed "0", format csv), checked here. */
export interface SynthCommandOptions {
  out?: unknown;
  preset?: unknown;
  size?: unknown;
  seed?: unknown;
  format?: unknown;
  json?: boolean;
  quiet?: boolean;
}

const FORMATS: readonly SynthFormat[] = ['csv', 'parquet'];

export async function synthCommand(opts: SynthCommandOptions): Promise<CommandOutput<SynthResult | RatingsSynthResult>> {
  const presetName = String(opts.preset ?? 'retail');
  if (!isSynthPreset(presetName)) {
    throw new UsageError('unknown dataset preset', { where: '--preset', value: opts.preset, hint: suggest(presetName, SYNTH_PRESET_NAMES) });
  }
  const preset = SYNTH_PRESETS[presetName];
  const size = String(opts.size ?? preset.defaultSize);
  if (!isSynthSize(size)) {
    throw new UsageError('unknown dataset size', { where: '--size', value: opts.size, hint: suggest(size, SYNTH_SIZE_NAMES) });
  }
  if (!preset.sizes.includes(size)) {
    throw new UsageError(`preset ${presetName} has no size ${size}`, { where: '--size', value: opts.size, hint: `use one of ${preset.sizes.join(', ')}` });
  }
  const format = String(opts.format ?? 'csv');
  if (!(FORMATS as readonly string[]).includes(format)) {
    throw new UsageError('unknown file format', { where: '--format', value: opts.format, hint: suggest(format, FORMATS) });
  }
  const seed = String(opts.seed ?? '0').trim();
  if (!/^\d+$/.test(seed) || Number(seed) > 0xffffffff) {
    throw new UsageError('the seed must be an integer between 0 and 4294967295', { where: '--seed', value: opts.seed, hint: 'e.g. --seed 42' });
  }
  if (typeof opts.out !== 'string' || opts.out.trim() === '') {
    throw new UsageError('an output folder is required', { where: '--out', value: opts.out, hint: 'e.g. --out datasets/retail' });
  }

  if (preset.schema === 'ratings') {
    const result = await generateRatingsSynthetic({ out: opts.out, preset: presetName, size, seed: Number(seed), format: format as SynthFormat });
    return { result, text: ratingsSummary(result) };
  }
  const result = await generateSynthetic({ out: opts.out, size, seed: Number(seed), format: format as SynthFormat, dateOnly: preset.dateOnly });
  return { result, text: summary(result) };
}

function ratingsSummary(r: RatingsSynthResult): string {
  const fmt = (x: number): string => x.toLocaleString('en-US');
  const width = Math.max(...RATINGS_TABLES.map((t) => fmt(r.rows[t]).length));
  return [
    `wrote preset ${r.preset} (${r.size}, seed ${r.seed}) in ${r.seconds} s`,
    ...RATINGS_TABLES.map((t) => `  ${t.padEnd(13)}${fmt(r.rows[t]).padStart(width)} rows  ${shortPath(r.files[t])}`),
    `  ${r.first_day} .. ${r.last_day}; ${(100 * r.one_sitting_share).toFixed(0)}% of users rated in one sitting only, ${r.cold_users} cold users, ` +
      `ratings per user median ${r.median_user_ratings} / max ${r.max_user_ratings}, ${(100 * r.tie_share).toFixed(0)}% of ratings tie with the user's previous one`,
  ].join('\n');
}

function summary(r: SynthResult): string {
  const fmt = (x: number): string => x.toLocaleString('en-US');
  const width = Math.max(...SYNTH_TABLES.map((t) => fmt(r.rows[t]).length));
  const lines = SYNTH_TABLES.map((t) => `  ${t.padEnd(13)}${fmt(r.rows[t]).padStart(width)} rows  ${shortPath(r.files[t])}`);
  return [
    `wrote ${r.size} synthetic H&M-shaped data (${r.preset === 'retail' ? '' : `preset ${r.preset}, `}seed ${r.seed}) in ${r.seconds} s`,
    ...lines,
    `  ${r.first_day} .. ${r.last_day}; fraud ${(100 * r.fraud_rate).toFixed(2)}% of transactions (${r.fraud_rings} rings, ${r.account_takeovers} account takeovers)`,
  ].join('\n');
}

/** The path relative to the working directory when it is inside it, else as is. */
function shortPath(p: string): string {
  const rel = relative(process.cwd(), p);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : p;
}
