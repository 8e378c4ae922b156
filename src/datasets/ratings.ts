/**
 * A second, non-retail schema for `gnnctl datasets synth`: MovieLens-shaped users, items and ratings, made
 * to carry the traits of real interaction logs that the H&M-shaped generator lacks (issue 13):
 *
 * - **bursty sittings**: a user rates many items one after another, seconds to minutes apart, so a user's
 *   whole history is often one sitting, and the most recent k interactions all share one time;
 * - **heavy-tailed activity**: engagement is lognormal (σ 1.1), so a few users rate hundreds of items and
 *   the median user a few dozen;
 * - **cold users**: a share of users rate 1–3 items once and never come back, and users keep joining
 *   until the last day, so every anchor has users with almost no history;
 * - **date-only timestamps** (preset `ratings`): `rated_at` cut to the day, as many public logs ship it,
 *   so a user's sitting is dozens of exact ties;
 * - **a label that depends on tenure and total activity**: the daily return hazard is
 *   `rate · min(e, 8) · (floor + exp(−tenure / τ))`, where e is the user's engagement (what their total
 *   count reveals) and tenure the days since their first rating. The last few events say only "active
 *   recently", which every user seeded by a "rated in the last 14 days" query is.
 *
 * Rows are simulated per user (each user's sittings are independent of others'), then time-sorted with a
 * stable order (generation order breaks ties), so the same seed gives byte-identical files.
 */
import { DataError } from '../core/errors.js';
import { round } from '../core/number.js';
import type { Rng } from '../core/rng.js';
import { CsvSink } from './csv.js';
import { cumulative, geometric, lognormal, searchCumulative } from './random.js';

export const USER_COLUMNS = ['user_id', 'age', 'gender', 'occupation', 'zip_code'] as const;
export const GENRES = [
  'unknown', 'Action', 'Adventure', 'Animation', 'Children', 'Comedy', 'Crime', 'Documentary', 'Drama', 'Fantasy',
  'Film-Noir', 'Horror', 'Musical', 'Mystery', 'Romance', 'Sci-Fi', 'Thriller', 'War', 'Western',
] as const;
export const ITEM_COLUMNS = ['item_id', 'title', 'release_date', ...GENRES] as const;
export const RATING_COLUMNS = ['user_id', 'item_id', 'rating', 'rated_at'] as const;

const OCCUPATIONS = [
  'administrator', 'artist', 'doctor', 'educator', 'engineer', 'entertainment', 'executive', 'healthcare', 'homemaker', 'lawyer',
  'librarian', 'marketing', 'none', 'other', 'programmer', 'retired', 'salesman', 'scientist', 'student', 'technician', 'writer',
];
const OCCUPATION_WEIGHTS = [79, 28, 7, 95, 67, 18, 32, 16, 7, 12, 51, 26, 9, 105, 66, 14, 12, 31, 196, 27, 45];
const GENRE_WEIGHTS = [0.2, 15, 8, 3, 7, 30, 6, 3, 43, 1, 1.5, 5.5, 3.5, 3.5, 14.5, 6, 14.5, 4, 1.5];
const WORDS = ['Night', 'Return', 'Last', 'City', 'Love', 'Dark', 'Star', 'River', 'Game', 'House', 'Summer', 'Secret', 'Blue', 'Wild', 'King', 'Storm', 'Ghost', 'Heart', 'Road', 'Paradise'];
const DAY = 86_400;

/** How users behave: what distinguishes the presets (see the module comment for the hazard). */
export interface RatingsBehaviour {
  /** base daily return rate of an engaged user right after joining */
  returnRate: number;
  /** days over which the novelty of a new user wears off */
  tenureDays: number;
  /** share of the new-user hazard left for old users */
  floor: number;
  /** share of users who rate 1–3 items once and never return */
  coldShare: number;
  /** mean seconds between two ratings of one sitting (exponential, plus 8 s) */
  gapSeconds: number;
  /** mean ratings in a first sitting (scaled by engagement^0.9; MovieLens asked for at least 20) */
  firstSitting: number;
  /** mean ratings in a later sitting (scaled by engagement^0.5) */
  laterSitting: number;
  /** write `rated_at` as a date (YYYY-MM-DD) instead of a timestamp */
  dateOnly: boolean;
}

export interface RatingsSize {
  users: number;
  items: number;
}

export const RATINGS_SIZES: Record<'tiny' | 'small' | 'medium', RatingsSize> = {
  tiny: { users: 1_000, items: 1_700 },
  small: { users: 10_000, items: 4_000 },
  medium: { users: 100_000, items: 10_000 },
};

/** The calendar: 210 days ending on MovieLens-100k's last day. */
export const RATINGS_DAYS = 210;
export const RATINGS_LAST_DAY = '1998-04-22';

export interface RatingsResult {
  rows: { users: number; items: number; ratings: number };
  first_day: string;
  last_day: string;
  /** users with exactly one sitting, and their share of the users who rated at all */
  one_sitting_share: number;
  cold_users: number;
  /** ratings of the most active user / the median user (heavy tail) */
  max_user_ratings: number;
  median_user_ratings: number;
  /** share of ratings whose time equals the previous rating's time of the same user (date-only: most) */
  tie_share: number;
}

/**
 * Writes users, items and ratings CSVs through the given sinks. `size` must be one of RATINGS_SIZES; the
 * caller owns the sinks (temp files, renames).
 */
export function generateRatings(
  rng: { users: Rng; items: Rng; sim: Rng },
  size: RatingsSize,
  b: RatingsBehaviour,
  sinks: { users: CsvSink; items: CsvSink; ratings: CsvSink },
): RatingsResult {
  const lastMs = Date.parse(`${RATINGS_LAST_DAY}T00:00:00Z`);
  const startSec = lastMs / 1000 - (RATINGS_DAYS - 1) * DAY;

  // Users: MovieLens's demographics; none of them drives the hazard (they are noise a model must ignore).
  const nU = size.users;
  const occCum = cumulative(OCCUPATION_WEIGHTS);
  sinks.users.write(`${USER_COLUMNS.join(',')}\n`);
  const zips = Math.max(10, Math.round(nU * 0.8));
  for (let u = 0; u < nU; u++) {
    const age = Math.max(7, Math.min(73, Math.round(rng.users.next() < 0.6 ? 25 + 6 * rng.users.normal() : 42 + 11 * rng.users.normal())));
    const gender = rng.users.next() < 0.71 ? 'M' : 'F';
    const occ = OCCUPATIONS[searchCumulative(occCum, rng.users.next() * occCum[occCum.length - 1]!, 0, OCCUPATIONS.length)]!;
    // Zero-padded US codes and a few Canadian ones, as MovieLens has: a key-like column that is text.
    const zip = rng.users.next() < 0.01 ? `${'ABCEGHJKLMNPRSTVXY'[rng.users.int(18)]}${rng.users.int(10)}${'ABCEGHJKLMNPRSTVWXYZ'[rng.users.int(20)]}${rng.users.int(10)}${'ABCEGHJKLMNPRSTVWXYZ'[rng.users.int(20)]}` : String((rng.users.int(zips) * 7919) % 99999).padStart(5, '0');
    sinks.users.write(`${u + 1},${age},${gender},${occ},${zip}\n`);
  }

  // Items: Zipf popularity over a random rank, 1–3 genres, a release date (mostly the 1990s, 0.1% unknown).
  const nI = size.items;
  const genreCum = cumulative(GENRE_WEIGHTS);
  const weight = new Float64Array(nI);
  const quality = new Float32Array(nI);
  const ranks = rng.items.shuffle(Int32Array.from({ length: nI }, (_, i) => i));
  sinks.items.write(`${ITEM_COLUMNS.join(',')}\n`);
  for (let i = 0; i < nI; i++) {
    weight[i] = 1 / (ranks[i]! + 5);
    quality[i] = rng.items.normal();
    const flags = new Array<number>(GENRES.length).fill(0);
    const k = 1 + (rng.items.next() < 0.45 ? 1 : 0) + (rng.items.next() < 0.15 ? 1 : 0);
    for (let j = 0; j < k; j++) flags[searchCumulative(genreCum, rng.items.next() * genreCum[genreCum.length - 1]!, 0, GENRES.length)] = 1;
    const year = rng.items.next() < 0.8 ? 1990 + rng.items.int(8) : 1930 + rng.items.int(60);
    const release = rng.items.next() < 0.001 ? '' : new Date(Date.UTC(year, rng.items.int(12), 1 + rng.items.int(28))).toISOString().slice(0, 10);
    const title = `${WORDS[rng.items.int(WORDS.length)]} ${WORDS[rng.items.int(WORDS.length)]} (${year})`;
    sinks.items.write(`${i + 1},"${title}",${release},${flags.join(',')}\n`);
  }
  const itemCum = cumulative(weight);
  const itemTotal = itemCum[nI - 1]!;

  // Ratings, per user: join day, engagement, sittings until the end of the calendar.
  const time: number[] = [];
  const user: number[] = [];
  const item: number[] = [];
  const rating: number[] = [];
  const perUser = new Int32Array(nU);
  let oneSitting = 0;
  let cold = 0;
  const sim = rng.sim;
  const seen = new Set<number>();
  for (let u = 0; u < nU; u++) {
    // Sign-ups grow over the calendar (×2 from first to last day): the newest users are always there.
    const join = Math.floor(RATINGS_DAYS * (Math.sqrt(1 + 3 * sim.next()) - 1));
    const e = lognormal(sim, -0.3, 1.1);
    const isCold = sim.next() < b.coldShare;
    const bias = 0.5 * sim.normal();
    seen.clear();
    let sittings = 0;
    const sitting = (day: number, n: number): void => {
      // Evening-heavy start hour; then ratings seconds to minutes apart, as in a sitting.
      const hour = Math.min(23, Math.max(0, Math.round(19 + 4 * sim.normal())));
      let t = startSec + day * DAY + hour * 3600 + sim.int(3600);
      for (let k = 0; k < n; k++) {
        let it = searchCumulative(itemCum, sim.next() * itemTotal, 0, nI);
        for (let tries = 0; seen.has(it) && tries < 8; tries++) it = searchCumulative(itemCum, sim.next() * itemTotal, 0, nI);
        if (seen.has(it)) continue;
        seen.add(it);
        const r = Math.max(1, Math.min(5, Math.round(3.5 + 0.7 * quality[it]! + bias + 0.8 * sim.normal())));
        time.push(t);
        user.push(u);
        item.push(it);
        rating.push(r);
        perUser[u]!++;
        t += 8 + Math.round(-b.gapSeconds * Math.log(1 - sim.next()));
      }
      sittings++;
    };
    if (isCold) {
      cold++;
      sitting(join, 1 + sim.int(3));
    } else {
      sitting(join, Math.min(700, geometric(sim, b.firstSitting * e ** 0.9)));
      const eCap = Math.min(e, 8);
      for (let d = join + 1; d < RATINGS_DAYS; d++) {
        const h = b.returnRate * eCap * (b.floor + Math.exp(-(d - join) / b.tenureDays));
        if (sim.next() < h) sitting(d, Math.min(300, geometric(sim, b.laterSitting * e ** 0.5)));
      }
    }
    if (sittings === 1) oneSitting++;
  }

  // Stable time sort: key = (seconds since start) · 2^26 + row, exact in a double while rows < 2^26.
  const n = time.length;
  if (n >= 2 ** 26) throw new DataError(`the ratings preset produced ${n} rows, more than this generator sorts`, { hint: 'use a smaller --size' });
  const keys = new Float64Array(n);
  for (let k = 0; k < n; k++) keys[k] = (time[k]! - startSec) * 2 ** 26 + k;
  keys.sort();
  sinks.ratings.write(`${RATING_COLUMNS.join(',')}\n`);
  const last = new Float64Array(nU).fill(-1);
  let ties = 0;
  for (let q = 0; q < n; q++) {
    const k = keys[q]! % 2 ** 26;
    const u = user[k]!;
    const t = b.dateOnly ? Math.floor(time[k]! / DAY) * DAY : time[k]!;
    if (last[u] === t) ties++;
    last[u] = t;
    const iso = new Date(t * 1000).toISOString();
    sinks.ratings.write(`${u + 1},${item[k]! + 1},${rating[k]},${b.dateOnly ? iso.slice(0, 10) : `${iso.slice(0, 10)} ${iso.slice(11, 19)}`}\n`);
  }

  const sortedCounts = Array.from(perUser).filter((c) => c > 0).sort((a, c) => a - c);
  const active = sortedCounts.length;
  return {
    rows: { users: nU, items: nI, ratings: n },
    first_day: new Date((startSec) * 1000).toISOString().slice(0, 10),
    last_day: RATINGS_LAST_DAY,
    one_sitting_share: round(oneSitting / Math.max(1, active), 4),
    cold_users: cold,
    max_user_ratings: sortedCounts[active - 1] ?? 0,
    median_user_ratings: sortedCounts[Math.floor(active / 2)] ?? 0,
    tie_share: round(ties / Math.max(1, n), 4),
  };
}
