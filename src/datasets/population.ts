/**
 * The synthetic customers: the `customers` table (H&M's columns and null rates) and the hidden behaviour
 * the simulation drives them with: a heavy-tailed visit rate, basket size, channel habit, price tier and a
 * preference over at most three sections. Everything is a typed array indexed by customer.
 */
import type { Rng } from '../core/rng.js';
import { CsvSink } from './csv.js';
import { hexId, lognormal, pick, uniform } from './random.js';
import { INDEXES, SECTIONS } from './taxonomy.js';
import { TIER_SHARES } from './catalog.js';
import type { SignalParams } from './signal_params.js';

export const CUSTOMER_COLUMNS = ['customer_id', 'FN', 'Active', 'club_member_status', 'fashion_news_frequency', 'age', 'postal_code'] as const;

/** joinDay of customers who were already customers before the window (and its burn-in) began. */
export const JOINED_BEFORE = -10_000;

/** Sections a customer shops in; the first holds most of the attention. */
export const PREFS = 3;

export interface Population {
  n: number;
  /** customer_id (64 hex), ascending as in H&M's customers.csv */
  ids: string[];
  /** relative visit rate (heavy-tailed, mean ≈ 1; scaled to the size's transaction target later) */
  rate: Float32Array;
  /** mean items per visit */
  basketMean: Float32Array;
  /** probability that a visit is online (sales_channel_id 2) */
  online: Float32Array;
  tier: Uint8Array;
  /** PREFS section indexes per customer */
  prefSection: Uint8Array;
  /** PREFS weights per customer, summing to 1 */
  prefWeight: Float32Array;
  /** first day the customer can buy (≤ 0: a customer from before the window) */
  joinDay: Int16Array;
}

const CLUB = ['ACTIVE', 'PRE-CREATE', 'LEFT CLUB'];
/** Index-group preference (Ladieswear, Divided, Menswear, Baby/Children, Sport) by age band, H&M-like. */
const GROUP_BY_AGE: Record<'young' | 'parent' | 'older', readonly number[]> = {
  young: [0.3, 0.4, 0.15, 0.05, 0.1],
  parent: [0.35, 0.05, 0.15, 0.35, 0.1],
  older: [0.55, 0.05, 0.2, 0.1, 0.1],
};
const GROUP_NOS = [1, 2, 3, 4, 26];

/**
 * Draws `n` customers and writes the `customers` table to `sink` as it goes (header included), so the
 * table's text is never held in memory at H&M scale.
 */
export function generatePopulation(rng: Rng, n: number, days: number, p: SignalParams, sink: CsvSink): Population {
  // Random 256-bit ids, sorted like H&M's file; behaviour is drawn per position afterwards.
  const ids = Array.from({ length: n }, () => hexId(rng));
  ids.sort();
  // Postal codes: id-like and high-cardinality, one code shared by ~7% of customers (H&M has such a code).
  const nCodes = Math.max(4, Math.round(n / 4));
  const codes = Array.from({ length: nCodes }, () => hexId(rng));

  const pop: Population = {
    n, ids, rate: new Float32Array(n), basketMean: new Float32Array(n), online: new Float32Array(n), tier: new Uint8Array(n),
    prefSection: new Uint8Array(n * PREFS), prefWeight: new Float32Array(n * PREFS), joinDay: new Int16Array(n),
  };
  sink.write(`${CUSTOMER_COLUMNS.join(',')}\n`);
  const sectionsByGroup = GROUP_NOS.map((g) => SECTIONS.map((s, i) => (INDEXES[s.index]!.groupNo === g ? i : -1)).filter((i) => i >= 0));
  const sectionSizes = SECTIONS.map((s) => s.size);
  const groupSizes = sectionsByGroup.map((own) => own.map((s) => sectionSizes[s]!));
  const sigma = p.customerRateSigma;

  for (let i = 0; i < n; i++) {
    // H&M-like nulls: FN ~65%, Active ~66%, age ~1%, fashion_news_frequency ~1%, club status ~0.4%.
    const fn = rng.next() < 0.35;
    const active = fn ? rng.next() < 0.97 : rng.next() < 0.01;
    const u = rng.next();
    const club = u < 0.0044 ? '' : u < 0.0044 + 0.068 ? CLUB[1] : u < 0.0044 + 0.068 + 0.0004 ? CLUB[2] : CLUB[0];
    const f = rng.next();
    const fnf = f < 0.012 ? '' : fn ? (f < 0.95 ? 'Regularly' : f < 0.953 ? 'Monthly' : 'NONE') : f < 0.995 ? 'NONE' : 'Regularly';
    const ageNull = rng.next() < 0.0116;
    const age = rng.next() < 0.55 ? 24 + 4 * rng.normal() : 50 + 11 * rng.normal();
    const ageInt = Math.min(99, Math.max(16, Math.round(age)));
    const postal = rng.next() < 0.07 ? 0 : 1 + Math.floor((nCodes - 1) * rng.next() ** 2);
    sink.write(`${ids[i]},${fn ? '1.0' : ''},${active ? '1.0' : ''},${club},${fnf},${ageNull ? '' : ageInt},${codes[postal]}\n`);

    // Behaviour. Newsletter readers shop a little more often (a weak own-row signal, as in retail).
    pop.rate[i] = lognormal(rng, -0.5 * sigma * sigma, sigma) * (fnf === 'Regularly' ? 1.25 : 1);
    pop.basketMean[i] = 1 + 2.2 * lognormal(rng, -0.18, 0.6);
    pop.online[i] = Math.min(0.98, Math.max(0.02, 0.7 + 0.28 * rng.normal()));
    pop.tier[i] = pick(rng, TIER_SHARES);
    const band = ageInt < 30 ? 'young' : ageInt < 45 ? 'parent' : 'older';
    const group = pick(rng, GROUP_BY_AGE[band]);
    const own = sectionsByGroup[group]!;
    const o = i * PREFS;
    pop.prefSection[o] = own[pick(rng, groupSizes[group]!)]!;
    for (let k = 1; k < PREFS; k++) {
      pop.prefSection[o + k] = rng.next() < 0.5 ? own[pick(rng, groupSizes[group]!)]! : pick(rng, sectionSizes);
    }
    const w0 = uniform(rng, p.primaryPref[0], p.primaryPref[1]);
    const w1 = (1 - w0) * uniform(rng, 0.5, 0.8);
    pop.prefWeight[o] = w0;
    pop.prefWeight[o + 1] = w1;
    pop.prefWeight[o + 2] = 1 - w0 - w1;
    pop.joinDay[i] = rng.next() < 0.75 ? JOINED_BEFORE : rng.int(days);
  }
  return pop;
}
