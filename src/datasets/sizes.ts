/** Dataset sizes of `gnnctl datasets synth`: row targets per table. `large` is the Kaggle H&M scale. */
export const SYNTH_SIZES = {
  tiny: { customers: 500, articles: 200, transactions: 10_000 },
  small: { customers: 10_000, articles: 2_000, transactions: 200_000 },
  medium: { customers: 100_000, articles: 10_000, transactions: 2_000_000 },
  large: { customers: 1_371_980, articles: 105_542, transactions: 31_788_324 },
} as const;

export type SynthSize = keyof typeof SYNTH_SIZES;
export const SYNTH_SIZE_NAMES = Object.keys(SYNTH_SIZES) as SynthSize[];

export function isSynthSize(s: string): s is SynthSize {
  return Object.prototype.hasOwnProperty.call(SYNTH_SIZES, s);
}

/** The simulated calendar: 30 weeks ending on H&M's last day of data (2020-09-22), day 0 first. */
export const SYNTH_DAYS = 210;
export const SYNTH_LAST_DAY = '2020-09-22';
