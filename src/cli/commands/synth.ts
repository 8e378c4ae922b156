/** `gnnctl datasets synth`: validate the flags, run the generator, summarise what was written. */
import { isAbsolute, relative } from 'node:path';
import { UsageError, suggest } from '../../core/errors.js';
import { generateSynthetic, SYNTH_TABLES, type SynthFormat, type SynthResult } from '../../datasets/synth.js';
import { isSynthSize, SYNTH_SIZE_NAMES } from '../../datasets/sizes.js';
import type { CommandOutput } from '../run.js';

/** As commander passes them: strings (defaults size small, seed "0", format csv), checked here. */
export interface SynthCommandOptions {
  out?: unknown;
  size?: unknown;
  seed?: unknown;
  format?: unknown;
  json?: boolean;
  quiet?: boolean;
}

const FORMATS: readonly SynthFormat[] = ['csv', 'parquet'];

export async function synthCommand(opts: SynthCommandOptions): Promise<CommandOutput<SynthResult>> {
  const size = String(opts.size ?? 'small');
  if (!isSynthSize(size)) {
    throw new UsageError('unknown dataset size', { where: '--size', value: opts.size, hint: suggest(size, SYNTH_SIZE_NAMES) });
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

  const result = await generateSynthetic({ out: opts.out, size, seed: Number(seed), format: format as SynthFormat });
  return { result, text: summary(result) };
}

function summary(r: SynthResult): string {
  const fmt = (x: number): string => x.toLocaleString('en-US');
  const width = Math.max(...SYNTH_TABLES.map((t) => fmt(r.rows[t]).length));
  const lines = SYNTH_TABLES.map((t) => `  ${t.padEnd(13)}${fmt(r.rows[t]).padStart(width)} rows  ${shortPath(r.files[t])}`);
  return [
    `wrote ${r.size} synthetic H&M-shaped data (seed ${r.seed}) in ${r.seconds} s`,
    ...lines,
    `  ${r.first_day} .. ${r.last_day}; fraud ${(100 * r.fraud_rate).toFixed(2)}% of transactions (${r.fraud_rings} rings, ${r.account_takeovers} account takeovers)`,
  ].join('\n');
}

/** The path relative to the working directory when it is inside it, else as is. */
function shortPath(p: string): string {
  const rel = relative(process.cwd(), p);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : p;
}
