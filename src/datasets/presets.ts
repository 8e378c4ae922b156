/**
 * Presets of `gnnctl datasets synth --preset NAME`: which schema is written and with which realism traits
 * (issue 13). `retail` is the bundled H&M-shaped default; the others reproduce traits of real logs under
 * which a graph model has failed against its no-graph baseline, so the quality matrix can keep them.
 */
import type { RatingsBehaviour } from './ratings.js';
import type { SynthSize } from './sizes.js';

export type SynthPresetName = 'retail' | 'retail-dates' | 'bursty' | 'ratings';

export interface SynthPreset {
  name: SynthPresetName;
  schema: 'retail' | 'ratings';
  /** one line for --help and the README */
  description: string;
  /** the size when --size is not given */
  defaultSize: SynthSize;
  /** sizes this preset can write */
  sizes: readonly SynthSize[];
  /** retail: write t_dat as a date (H&M's own format) */
  dateOnly?: boolean;
  /** ratings: how users behave */
  behaviour?: RatingsBehaviour;
  /** the config under configs/ that reads this preset's default output folder */
  config: string;
}

export const SYNTH_PRESETS: Record<SynthPresetName, SynthPreset> = {
  retail: {
    name: 'retail',
    schema: 'retail',
    description: 'H&M-shaped customers/articles/transactions with planted multi-hop signals (the bundled default)',
    defaultSize: 'small',
    sizes: ['tiny', 'small', 'medium', 'large'],
    config: 'configs/retail.yaml',
  },
  'retail-dates': {
    name: 'retail-dates',
    schema: 'retail',
    description: 'the retail data with t_dat cut to the day, as the real H&M file has it: every visit is a block of exact ties',
    defaultSize: 'small',
    sizes: ['tiny', 'small', 'medium', 'large'],
    dateOnly: true,
    config: 'configs/retail_dates.yaml',
  },
  bursty: {
    name: 'bursty',
    schema: 'ratings',
    description:
      'MovieLens-shaped users/items/ratings, ~1,000 users: bursty sittings seconds to minutes apart (half the users rate in one sitting only), heavy-tailed activity, cold users; churn depends on tenure and total activity',
    defaultSize: 'tiny',
    sizes: ['tiny', 'small', 'medium'],
    behaviour: { returnRate: 0.05, tenureDays: 10, floor: 0.1, coldShare: 0.15, gapSeconds: 45, firstSitting: 40, laterSitting: 6, dateOnly: false },
    config: 'configs/bursty.yaml',
  },
  ratings: {
    name: 'ratings',
    schema: 'ratings',
    description: 'the users/items/ratings schema with date-only rated_at (many ties) and users who come back over weeks; genre flags and release dates on items',
    defaultSize: 'tiny',
    sizes: ['tiny', 'small', 'medium'],
    behaviour: { returnRate: 0.12, tenureDays: 30, floor: 0.2, coldShare: 0.1, gapSeconds: 60, firstSitting: 25, laterSitting: 8, dateOnly: true },
    config: 'configs/ratings.yaml',
  },
};

export const SYNTH_PRESET_NAMES = Object.keys(SYNTH_PRESETS) as SynthPresetName[];

export function isSynthPreset(s: string): s is SynthPresetName {
  return Object.prototype.hasOwnProperty.call(SYNTH_PRESETS, s);
}
