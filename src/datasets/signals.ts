/**
 * The planted signals of the synthetic data, drawn up front (before any transaction) so the simulation
 * only reads them. datasets/README.md explains each one and why a graph model is needed to recover it.
 *
 * - Daily volume: weekday seasonality, sale events, day-to-day noise.
 * - Return cycles: after a visit, a customer's visit hazard follows a curve set by the section the visit
 *   started in, so the kind of articles bought tells when the customer is due back.
 * - Section trends: each section's popularity multiplier over time (slow drifts, sudden collapses and
 *   rises). A customer's visit rate is scaled by the trends of the sections they prefer, which drives churn.
 * - Fraud rings: small groups of colluding customers who buy the same few unpopular articles in bursts.
 * - Account takeovers: short episodes of expensive, mostly online, often night-time purchases on a victim's
 *   account.
 */
import type { Rng } from '../core/rng.js';
import type { Catalog } from './catalog.js';
import type { Population } from './population.js';
import type { SignalParams } from './signal_params.js';
import { cumulative, geometric, searchCumulative, uniform } from './random.js';

/** Tunable strengths of the planted signals (the calibrated defaults are in DEFAULT_SIGNALS). */

export const DEFAULT_SIGNALS: SignalParams = {
  customerRateSigma: 0.5,
  primaryPref: [0.8, 0.95],
  rhythmPeak: [7, 90],
  rhythmAmplitude: 15,
  rhythmFloor: [0.05, 0.15],
  rhythmAfterPeak: 0.3,
  trendBase: 1.0,
  trendDrift: 1.5,
  collapseProb: 0.5,
  collapseDepth: [1.5, 3],
  riseProb: 0.25,
  riseHeight: [0.6, 1.1],
  trendRampDays: 4,
  activeSpellDays: 40,
  dormantSpellDays: 15,
  dormantRate: 0.2,
  atoShare: 0.019,
  ringShare: 0.011,
  randomFraudShare: 0.003,
  ringMembers: [8, 20],
  ringArticles: [1, 3],
  ringDailyBuy: 0.3,
  ringFraudProb: 0.85,
  atoFraudProb: 0.95,
  atoOnline: 0.85,
  atoNight: 0.3,
};

/** Weekday multipliers, Monday first (weekends are busier, as in retail). */
const WEEKDAY = [0.9, 0.85, 0.9, 0.95, 1.1, 1.3, 1.0];

export interface DailyVolume {
  /** multiplier on every customer's visit rate */
  factor: Float32Array;
  /** 1 on sale days (more discounts, more visits) */
  sale: Uint8Array;
}

/** `firstWeekday`: weekday of day 0, Monday = 0. */
export function dailyVolume(rng: Rng, days: number, firstWeekday: number): DailyVolume {
  const factor = new Float32Array(days);
  const sale = new Uint8Array(days);
  // Two to four sale events of 3–7 days with 1.5–2.2× traffic: the bursts in H&M's daily volume.
  const events = 2 + rng.int(3);
  for (let e = 0; e < events; e++) {
    const start = rng.int(days - 7);
    const len = 3 + rng.int(5);
    for (let d = start; d < Math.min(days, start + len); d++) sale[d] = 1;
  }
  for (let d = 0; d < days; d++) {
    const noise = Math.exp(0.08 * rng.normal());
    factor[d] = WEEKDAY[(firstWeekday + d) % 7]! * noise * (sale[d] ? uniform(rng, 1.5, 2.2) : 1);
  }
  return { factor, sale };
}

export interface SectionTrends {
  nSections: number;
  days: number;
  /** multiplier of section s on day d at s * days + d */
  value: Float32Array;
  /** day of each section's collapse or rise (-1: none), for the README and calibration */
  collapseDay: Int16Array;
  riseDay: Int16Array;
}

/**
 * Each section's popularity multiplier exp(level(d)): a persistent level and a linear drift, plus at most
 * one collapse and one rise that ramp in over a few days and persist. Collapses and rises fall anywhere in the window, so a
 * model has to read the current state from recent transactions, not from calendar time.
 */
export function sectionTrends(rng: Rng, nSections: number, days: number, p: SignalParams): SectionTrends {
  const value = new Float32Array(nSections * days);
  const collapseDay = new Int16Array(nSections).fill(-1);
  const riseDay = new Int16Array(nSections).fill(-1);
  for (let s = 0; s < nSections; s++) {
    const base = p.trendBase * rng.normal();
    const drift = p.trendDrift * rng.normal();
    let cDay = -1;
    let cDepth = 0;
    let rDay = -1;
    let rHeight = 0;
    if (rng.next() < p.collapseProb) {
      cDay = 14 + rng.int(days - 14);
      cDepth = uniform(rng, p.collapseDepth[0], p.collapseDepth[1]);
    }
    if (rng.next() < p.riseProb) {
      rDay = 14 + rng.int(days - 14);
      rHeight = uniform(rng, p.riseHeight[0], p.riseHeight[1]);
    }
    collapseDay[s] = cDay;
    riseDay[s] = rDay;
    for (let d = 0; d < days; d++) {
      let level = base + drift * (d / days - 0.5);
      if (cDay >= 0) level -= cDepth * ramp((d - cDay) / p.trendRampDays);
      if (rDay >= 0) level += rHeight * ramp((d - rDay) / p.trendRampDays);
      value[s * days + d] = Math.exp(level);
    }
  }
  return { nSections, days, value, collapseDay, riseDay };
}

/** Days after a visit covered by the return-cycle table; later days use the last entry (the floor). */
export const RHYTHM_DAYS = 128;

export interface SectionRhythms {
  /** peak return day per section */
  peak: Float32Array;
  /** return-hazard multiplier of section s, r days after a visit, at s * RHYTHM_DAYS + min(r, RHYTHM_DAYS - 1) */
  table: Float32Array;
}

/**
 * Return cycles: after a visit whose basket started in section s, the customer's visit hazard follows
 * floor + amplitude · exp(-½((r − peak)/width)²) over the days r since that visit. Sections differ in
 * their peak (replenishment of basics every few weeks, impulse buys that come back within days), so
 * the kind of articles a customer last bought tells when they will be back; their recency alone does not.
 */
export function sectionRhythms(rng: Rng, nSections: number, p: SignalParams): SectionRhythms {
  const peak = new Float32Array(nSections);
  const table = new Float32Array(nSections * RHYTHM_DAYS);
  for (let s = 0; s < nSections; s++) {
    const P = Math.exp(uniform(rng, Math.log(p.rhythmPeak[0]), Math.log(p.rhythmPeak[1])));
    const width = 0.25 * P + 1;
    const floor = uniform(rng, p.rhythmFloor[0], p.rhythmFloor[1]);
    peak[s] = P;
    for (let r = 1; r < RHYTHM_DAYS; r++) {
      const bump = Math.exp(-0.5 * ((r - P) / width) ** 2);
      table[s * RHYTHM_DAYS + r] = floor + p.rhythmAmplitude * (r <= P ? bump : p.rhythmAfterPeak + (1 - p.rhythmAfterPeak) * bump);
    }
  }
  return { peak, table };
}

function ramp(x: number): number {
  return x <= 0 ? 0 : x >= 1 ? 1 : x;
}

export interface FraudRings {
  count: number;
  /** members of ring r: memberIds[memberStart[r] .. memberStart[r + 1]) */
  memberStart: Int32Array;
  memberIds: Int32Array;
  /** ring of each customer (-1: none) */
  ringOf: Int32Array;
  /** bursts, sorted by start day; burst b belongs to ring burstRing[b] and runs [burstStart, burstEnd) */
  bursts: number;
  burstRing: Int32Array;
  burstStart: Int16Array;
  burstEnd: Int16Array;
  /** target articles of burst b: targetIds[targetStart[b] .. targetStart[b + 1]) */
  targetStart: Int32Array;
  targetIds: Int32Array;
  /** expected number of ring purchases (what the ring count was sized for) */
  expectedPurchases: number;
}

/**
 * Rings: persistent groups of colluding customers (alive for 8–20 weeks) that alternate bursts of 3–10
 * days with quiet spells of 4–14 days. Each burst targets a fresh handful of unpopular articles (rank in
 * the lower 60% of popularity), and each member buys each target at most once per burst, inside an
 * ordinary-looking visit. So nothing in a member's own rows repeats or stands out; what stands out is on the article's
 * side (many distinct buyers in days where there are usually none) and in the member's history of
 * buying such articles, which persists across bursts. Rings are added until the expected number of ring
 * purchases reaches ringShare of the target.
 */
export function fraudRings(rng: Rng, pop: Population, cat: Catalog, days: number, targetTxns: number, p: SignalParams): FraudRings {
  const memberStart: number[] = [0];
  const members: number[] = [];
  const ringOf = new Int32Array(pop.n).fill(-1);
  const bursts: { ring: number; start: number; end: number; targets: number[] }[] = [];
  const tail = Array.from({ length: cat.n }, (_, i) => i).filter((i) => cat.rank[i]! >= 0.4 * cat.n);
  const wanted = p.ringShare * targetTxns;
  // Members are drawn in proportion to their visit rate, like the customers behind ordinary rows, so
  // their activity level gives nothing away.
  const rateCum = cumulative(pop.rate);
  let expected = 0;
  let r = 0;
  // Never more ring members than a tenth of the customers (tiny sizes hit this, not the share).
  while ((expected < wanted || r < 2) && members.length < pop.n / 10) {
    const start = rng.int(days + 56) - 56;
    const end = Math.min(days, start + 56 + rng.int(85));
    const size = p.ringMembers[0] + rng.int(p.ringMembers[1] - p.ringMembers[0] + 1);
    const first = members.length;
    for (let k = 0, tries = 0; k < size && tries < 50 * size; tries++) {
      const c = searchCumulative(rateCum, rng.next() * rateCum[pop.n - 1]!, 0, pop.n);
      if (ringOf[c]! >= 0 || pop.joinDay[c]! > Math.max(0, start)) continue;
      ringOf[c] = r;
      members.push(c);
      k++;
    }
    const nMembers = members.length - first;
    let d = Math.max(0, start);
    let on = rng.next() < 0.5;
    while (d < end) {
      const len = on ? 3 + rng.int(8) : 4 + rng.int(11);
      if (on) {
        const bEnd = Math.min(end, d + len);
        const nT = p.ringArticles[0] + rng.int(p.ringArticles[1] - p.ringArticles[0] + 1);
        const targets = new Set<number>();
        for (let tries = 0; targets.size < nT && tries < 1000; tries++) {
          const a = tail[rng.int(tail.length)]!;
          if (cat.releaseDay[a]! <= d) targets.add(a);
        }
        bursts.push({ ring: r, start: d, end: bEnd, targets: [...targets] });
        // A member buys on a burst day with probability ringDailyBuy, each target at most once.
        expected += nMembers * Math.min(targets.size, (bEnd - d) * p.ringDailyBuy);
      }
      d += len;
      on = !on;
    }
    memberStart.push(members.length);
    r++;
  }
  bursts.sort((a, b) => a.start - b.start || a.ring - b.ring);
  const targetStart = new Int32Array(bursts.length + 1);
  const targetIds: number[] = [];
  bursts.forEach((b, i) => {
    targetIds.push(...b.targets);
    targetStart[i + 1] = targetIds.length;
  });
  return {
    count: r, memberStart: Int32Array.from(memberStart), memberIds: Int32Array.from(members), ringOf,
    bursts: bursts.length, burstRing: Int32Array.from(bursts, (b) => b.ring), burstStart: Int16Array.from(bursts, (b) => b.start),
    burstEnd: Int16Array.from(bursts, (b) => b.end), targetStart, targetIds: Int32Array.from(targetIds), expectedPurchases: expected,
  };
}

export interface AccountTakeovers {
  count: number;
  /** sorted by day */
  day: Int16Array;
  customer: Int32Array;
  items: Uint8Array;
}

/**
 * Account takeovers: a victim (drawn in proportion to their visit rate, so they usually have a purchase
 * history to compare against) suffers a burst of 1–10 expensive purchases within hours, at least two
 * weeks after they became a customer.
 */
export function accountTakeovers(rng: Rng, pop: Population, days: number, targetTxns: number, p: SignalParams): AccountTakeovers {
  const meanItems = 3;
  const count = Math.max(4, Math.round(p.atoShare * targetTxns / meanItems));
  const cum = cumulative(pop.rate);
  const acc = cum[pop.n - 1]!;
  const day = new Int16Array(count);
  const customer = new Int32Array(count);
  const items = new Uint8Array(count);
  for (let e = 0; e < count; e++) {
    const d = 14 + rng.int(days - 14);
    let c: number;
    do c = searchCumulative(cum, rng.next() * acc, 0, pop.n); while (pop.joinDay[c]! + 14 > d);
    day[e] = d;
    customer[e] = c;
    items[e] = Math.min(10, geometric(rng, meanItems));
  }
  const order = Array.from({ length: count }, (_, e) => e).sort((a, b) => day[a]! - day[b]! || a - b);
  return { count, day: Int16Array.from(order, (e) => day[e]!), customer: Int32Array.from(order, (e) => customer[e]!), items: Uint8Array.from(order, (e) => items[e]!) };
}
