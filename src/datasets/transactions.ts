/**
 * The day-by-day simulation that writes the `transactions` table. Memory is bounded by one day of rows
 * (typed arrays, reused) plus per-customer state, so H&M scale (31.8M rows) streams to disk.
 *
 * Each day, every customer who has joined visits with probability
 *   rate × Σ_prefs weight · trend(section, day) × volume(day) × cycle(last visit's section, days since it)
 *   × (dormantRate while dormant);
 * a visit is a basket of items from the customer's sections, mostly in their price tier, with repeat
 * purchases of recent articles. Fraud rings and account takeovers add their rows; a few ordinary rows are
 * labelled fraud for no visible reason. The day's rows are sorted by time of day (a stable counting sort
 * over seconds) and written with increasing transaction ids.
 */
import type { Rng } from '../core/rng.js';
import { ArticleSampler, PRICE_POINTS, PRICE_SCALE, type Catalog } from './catalog.js';
import type { CsvSink } from './csv.js';
import { PREFS, type Population } from './population.js';
import { cumulative, geometric, searchCumulative } from './random.js';
import { RHYTHM_DAYS, type AccountTakeovers, type DailyVolume, type FraudRings, type SectionRhythms, type SectionTrends } from './signals.js';
import type { SignalParams } from './signal_params.js';

export const TRANSACTION_COLUMNS = ['transaction_id', 't_dat', 'customer_id', 'article_id', 'price', 'sales_channel_id', 'fraud'] as const;

/** Hidden row kinds, written only to the calibration truth file. */
export const RowKind = { legit: 0, takeover: 1, ring: 2 } as const;

/** Discount levels (share of the list price); index 0 is full price. */
const DISCOUNTS = [1, 0.9, 0.7, 0.5, 0.3];
/** Discount mix on ordinary days and on sale days (cumulative over DISCOUNTS). */
const DISCOUNT_CUM_NORMAL = cumulative([0.9, 0.06, 0.03, 0.01, 0]);
const DISCOUNT_CUM_SALE = cumulative([0.5, 0.05, 0.25, 0.15, 0.05]);
/** Probability that an item re-buys one of the customer's last REPEAT_MEMORY articles. */
const REPEAT_PROB = 0.12;
const REPEAT_MEMORY = 4;
/** Probability that a basket item stays in the section of the basket's first item. */
const SAME_SECTION_PROB = 0.6;
/** Probability that an item comes from the customer's own price tier (when the section has stock there). */
const TIER_LOYALTY = 0.6;

/** Hour-of-day weights: stores open 10–21; online peaks in the evening. */
const STORE_HOURS = cumulative([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.5, 0.8, 1, 1, 1, 1.1, 1.2, 1.2, 1.1, 0.9, 0.5, 0, 0, 0]);
const ONLINE_HOURS = cumulative([0.15, 0.08, 0.05, 0.04, 0.05, 0.1, 0.3, 0.6, 0.8, 0.9, 1, 1, 1, 1, 1, 1, 1.1, 1.2, 1.4, 1.6, 1.7, 1.5, 1, 0.5]);

export interface SimulationInput {
  rng: Rng;
  pop: Population;
  cat: Catalog;
  days: number;
  /** UTC milliseconds of day 0, 00:00 */
  startMs: number;
  targetTransactions: number;
  volume: DailyVolume;
  trends: SectionTrends;
  rhythms: SectionRhythms;
  rings: FraudRings;
  takeovers: AccountTakeovers;
  params: SignalParams;
  /** write t_dat as a date only (preset retail-dates): the simulation is unchanged, the times are cut */
  dateOnly?: boolean;
}

export interface SimulationResult {
  rows: number;
  fraudRows: number;
  /** rows per hidden kind: legit, takeover, ring */
  kindRows: [number, number, number];
  /** fraud-labelled rows per hidden kind (legit ones are the unexplained fraud) */
  kindFraud: [number, number, number];
  /** largest number of rows simulated on one day */
  maxDayRows: number;
  /** rate factor measured in the burn-in that brings the row count to the target */
  scale: number;
}

/** One day of rows in growable typed arrays (reused across days). */
class DayRows {
  n = 0;
  sec = new Int32Array(1 << 14);
  cust = new Int32Array(1 << 14);
  art = new Int32Array(1 << 14);
  price = new Uint16Array(1 << 14);
  chan = new Uint8Array(1 << 14);
  fraud = new Uint8Array(1 << 14);
  kind = new Uint8Array(1 << 14);
  ring = new Int32Array(1 << 14);

  push(sec: number, cust: number, art: number, price: number, chan: number, fraud: number, kind: number, ring: number): void {
    if (this.n === this.sec.length) this.grow();
    const i = this.n++;
    this.sec[i] = sec;
    this.cust[i] = cust;
    this.art[i] = art;
    this.price[i] = price;
    this.chan[i] = chan;
    this.fraud[i] = fraud;
    this.kind[i] = kind;
    this.ring[i] = ring;
  }

  private grow(): void {
    const cap = this.sec.length * 2;
    const g = <T extends Int32Array | Uint16Array | Uint8Array>(a: T, make: (n: number) => T): T => {
      const b = make(cap);
      b.set(a);
      return b;
    };
    this.sec = g(this.sec, (n) => new Int32Array(n));
    this.cust = g(this.cust, (n) => new Int32Array(n));
    this.art = g(this.art, (n) => new Int32Array(n));
    this.price = g(this.price, (n) => new Uint16Array(n));
    this.chan = g(this.chan, (n) => new Uint8Array(n));
    this.fraud = g(this.fraud, (n) => new Uint8Array(n));
    this.kind = g(this.kind, (n) => new Uint8Array(n));
    this.ring = g(this.ring, (n) => new Int32Array(n));
  }
}

const SECONDS_PER_DAY = 86_400;
/**
 * Unwritten days simulated before day 0 so that the first written weeks already have settled return
 * cycles, dormancy spells and repeat-purchase memories, and the row count is on target.
 */
const BURN_IN_DAYS = 70;
/** Volume factor of a burn-in day: the mean weekday factor, no sales. */
const WEEKDAY_BURN_IN = 1;

/**
 * Runs the simulation, writing the transactions table (header included) to `sink` and, when given, the
 * hidden kind of each row to `truth` (`transaction_id,kind,ring`; for calibration only, never an input).
 */
export function simulateTransactions(input: SimulationInput, sink: CsvSink, truth?: CsvSink): SimulationResult {
  const { rng, pop, cat, days, volume, trends, rhythms, rings, takeovers, params: p } = input;
  const n = pop.n;
  const nSections = cat.nSections;
  const sampler = new ArticleSampler(cat);
  const rows = new DayRows();
  const result: SimulationResult = { rows: 0, fraudRows: 0, kindRows: [0, 0, 0], kindFraud: [0, 0, 0], maxDayRows: 0, scale: 1 };

  // Text pieces, built once: a row is a concatenation of these.
  const hms = Array.from({ length: SECONDS_PER_DAY }, (_, s) => `${pad2(Math.floor(s / 3600))}:${pad2(Math.floor(s / 60) % 60)}:${pad2(s % 60)}`);
  const priceText = PRICE_POINTS.flatMap((sek) => DISCOUNTS.map((d) => String((sek * d) / PRICE_SCALE)));
  const nDisc = DISCOUNTS.length;

  const expected = expectedOrdinaryRows(input);
  let scale = expected.rateFactor / meanRhythm(rhythms);
  const dormant = new Uint8Array(n);
  const nextSwitch = new Int16Array(n);
  // Day and starting section of each customer's last visit: the return cycle runs from it.
  const lastVisit = new Int16Array(n);
  const lastSection = new Uint8Array(n);
  const dormantShare = p.dormantSpellDays / (p.activeSpellDays + p.dormantSpellDays);
  for (let i = 0; i < n; i++) {
    dormant[i] = rng.next() < dormantShare ? 1 : 0;
    nextSwitch[i] = -BURN_IN_DAYS + geometric(rng, dormant[i] ? p.dormantSpellDays : p.activeSpellDays);
    lastSection[i] = pop.prefSection[i * PREFS]!;
    // Customers from before the window start at a random point of their cycle; newcomers at its peak.
    const peak = Math.round(rhythms.peak[lastSection[i]!]!);
    lastVisit[i] = pop.joinDay[i]! < 0 ? -BURN_IN_DAYS - rng.int(2 * peak + 1) : pop.joinDay[i]! - peak;
  }
  // The last REPEAT_MEMORY articles each customer bought (a ring buffer; memoryCount = total inserted).
  const memory = new Int32Array(n * REPEAT_MEMORY);
  const memoryCount = new Uint32Array(n);
  const trendToday = new Float32Array(nSections);
  const counts = new Int32Array(SECONDS_PER_DAY + 1);
  let order = new Int32Array(rows.sec.length);
  let takeoverNext = 0;
  let burstNext = 0;
  let activeBursts: number[] = [];
  const ringBuys = new Uint8Array(rings.memberIds.length);
  let nextId = 1;
  let burnExpected = 0;
  let burnRealized = 0;
  let burnDays = 0;

  sink.write(`${TRANSACTION_COLUMNS.join(',')}\n`);
  truth?.write('transaction_id,kind,ring\n');

  // Burn-in days (d < 0) are simulated but not written: they settle the return cycles, dormancy spells
  // and repeat-purchase memories, and measure the factor that brings the row count to the size's target.
  for (let d = -BURN_IN_DAYS; d < days; d++) {
    const burnIn = d < 0;
    const day = Math.max(0, d);
    rows.n = 0;
    sampler.setDay(d);
    for (let s = 0; s < nSections; s++) trendToday[s] = trends.value[s * days + day]!;
    const discountCum = !burnIn && volume.sale[d] ? DISCOUNT_CUM_SALE : DISCOUNT_CUM_NORMAL;
    const g = (burnIn ? WEEKDAY_BURN_IN : volume.factor[d]!) * scale;

    // Ordinary shopping.
    for (let i = 0; i < n; i++) {
      if (pop.joinDay[i]! > d) continue;
      if (d >= nextSwitch[i]!) {
        dormant[i] = dormant[i] ? 0 : 1;
        nextSwitch[i] = d + geometric(rng, dormant[i] ? p.dormantSpellDays : p.activeSpellDays);
      }
      const o = i * PREFS;
      const w0 = pop.prefWeight[o]! * trendToday[pop.prefSection[o]!]!;
      const w1 = pop.prefWeight[o + 1]! * trendToday[pop.prefSection[o + 1]!]!;
      const w2 = pop.prefWeight[o + 2]! * trendToday[pop.prefSection[o + 2]!]!;
      const mix = w0 + w1 + w2;
      const since = Math.min(d - lastVisit[i]!, RHYTHM_DAYS - 1);
      const v = pop.rate[i]! * mix * g * rhythms.table[lastSection[i]! * RHYTHM_DAYS + since]! * (dormant[i] ? p.dormantRate : 1);
      if (rng.next() >= v) continue;

      const online = rng.next() < pop.online[i]!;
      const chan = online ? 2 : 1;
      const hours = online ? ONLINE_HOURS : STORE_HOURS;
      const hour = searchCumulative(hours, rng.next() * hours[23]!, 0, 24);
      let sec = hour * 3600 + rng.int(3600);
      const items = geometric(rng, pop.basketMean[i]!);
      let s = pickPref(pop, o, w0, w1, rng.next() * mix);
      lastVisit[i] = d;
      lastSection[i] = s;
      for (let j = 0; j < items; j++) {
        if (j > 0 && rng.next() >= SAME_SECTION_PROB) s = pickPref(pop, o, w0, w1, rng.next() * mix);
        let a: number;
        const mc = memoryCount[i]!;
        if (mc > 0 && rng.next() < REPEAT_PROB) {
          a = memory[i * REPEAT_MEMORY + rng.int(Math.min(mc, REPEAT_MEMORY))]!;
        } else {
          a = sampler.sample(rng, s, pop.tier[i]!, TIER_LOYALTY);
          if (a < 0) continue;
          memory[i * REPEAT_MEMORY + (mc % REPEAT_MEMORY)] = a;
          memoryCount[i] = mc + 1;
        }
        const disc = searchCumulative(discountCum, rng.next(), 0, nDisc);
        // Unexplained fraud leans online and to the night: the weak own-row signal.
        const pf = p.randomFraudShare * (online ? 1.3 : 0.3) * (hour < 6 ? 3 : 1);
        const fraud = rng.next() < pf ? 1 : 0;
        rows.push(sec, i, a, cat.pricePoint[a]! * nDisc + disc, chan, fraud, RowKind.legit, -1);
        if (j + 1 < items) sec = Math.min(SECONDS_PER_DAY - 1, sec + 5 + rng.int(90));
      }
    }

    // Weekly, move the rate factor toward expected / realized rows. Strongly in the burn-in, gently inside
    // the window (where the expected count already follows the trends and sales, so this only keeps the
    // total on target and never cancels a planted movement).
    burnExpected += burnIn ? expected.burnInDay : expected.perDay[d]!;
    burnRealized += rows.n;
    if (++burnDays % 7 === 0) {
      const ratio = burnExpected / Math.max(1, burnRealized);
      scale *= burnIn ? Math.min(2, Math.max(0.5, ratio ** 0.7)) : Math.min(1.2, Math.max(0.83, ratio ** 0.5));
      burnExpected = 0;
      burnRealized = 0;
    }
    if (burnIn) {
      continue;
    }

    // Fraud rings: bursts that started by today join the active list (their members' counts reset).
    while (burstNext < rings.bursts && rings.burstStart[burstNext]! <= d) {
      const r = rings.burstRing[burstNext]!;
      ringBuys.fill(0, rings.memberStart[r]!, rings.memberStart[r + 1]!);
      activeBursts.push(burstNext++);
    }
    activeBursts = activeBursts.filter((b) => rings.burstEnd[b]! > d);
    for (const b of activeBursts) {
      const r = rings.burstRing[b]!;
      const tLo = rings.targetStart[b]!;
      const nT = rings.targetStart[b + 1]! - tLo;
      for (let m = rings.memberStart[r]!; m < rings.memberStart[r + 1]!; m++) {
        const c = rings.memberIds[m]!;
        if (pop.joinDay[c]! > d || ringBuys[m]! >= nT || rng.next() >= p.ringDailyBuy) continue;
        // Each target at most once per member and burst; the ring item hides in an ordinary-looking visit
        // (the member's usual channel, hours and basket size, with ordinary items around it).
        const target = rings.targetIds[tLo + ((m + ringBuys[m]!) % nT)]!;
        ringBuys[m]!++;
        const online = rng.next() < pop.online[c]!;
        const hours = online ? ONLINE_HOURS : STORE_HOURS;
        let sec = searchCumulative(hours, rng.next() * hours[23]!, 0, 24) * 3600 + rng.int(3600);
        // Size-biased basket (the sum of two geometric sizes, minus one): a random ordinary row sits in a
        // basket drawn in proportion to its size, so a ring row's basket must be drawn the same way, or
        // "how many items came before it in this visit" would give it away.
        const items = geometric(rng, pop.basketMean[c]!) + geometric(rng, pop.basketMean[c]!) - 1;
        const ringPos = rng.int(items);
        const o = c * PREFS;
        for (let j = 0; j < items; j++) {
          if (j === ringPos) {
            const fraud = rng.next() < p.ringFraudProb ? 1 : 0;
            rows.push(sec, c, target, cat.pricePoint[target]! * nDisc + searchCumulative(discountCum, rng.next(), 0, nDisc), online ? 2 : 1, fraud, RowKind.ring, r);
          } else {
            const a = sampler.sample(rng, pickPref(pop, o, pop.prefWeight[o]!, pop.prefWeight[o + 1]!, rng.next()), pop.tier[c]!, TIER_LOYALTY);
            if (a >= 0) rows.push(sec, c, a, cat.pricePoint[a]! * nDisc + searchCumulative(discountCum, rng.next(), 0, nDisc), online ? 2 : 1, 0, RowKind.legit, -1);
          }
          sec = Math.min(SECONDS_PER_DAY - 1, sec + 5 + rng.int(90));
        }
      }
    }

    // Account takeovers: expensive items (top two price tiers) in quick succession at full price, more
    // often online and at night than the victim's own visits.
    while (takeoverNext < takeovers.count && takeovers.day[takeoverNext]! === d) {
      const c = takeovers.customer[takeoverNext]!;
      const items = takeovers.items[takeoverNext]!;
      takeoverNext++;
      const online = rng.next() < p.atoOnline;
      const hours = online ? ONLINE_HOURS : STORE_HOURS;
      const hour = online && rng.next() < p.atoNight ? rng.int(6) : searchCumulative(hours, rng.next() * hours[23]!, 0, 24);
      let sec = hour * 3600 + rng.int(3600);
      for (let j = 0; j < items; j++) {
        const a = sampler.sample(rng, sampler.sampleSection(rng), rng.next() < 0.55 ? 3 : 2, 0.9);
        if (a < 0) continue;
        const fraud = rng.next() < p.atoFraudProb ? 1 : 0;
        rows.push(sec, c, a, cat.pricePoint[a]! * nDisc, online ? 2 : 1, fraud, RowKind.takeover, -1);
        sec = Math.min(SECONDS_PER_DAY - 1, sec + 30 + rng.int(1200));
      }
    }

    // Stable counting sort of the day's rows by second: file order = time order, ties in generation order.
    const dayN = rows.n;
    if (order.length < dayN) order = new Int32Array(rows.sec.length);
    counts.fill(0);
    for (let k = 0; k < dayN; k++) counts[rows.sec[k]! + 1]!++;
    for (let t = 1; t <= SECONDS_PER_DAY; t++) counts[t]! += counts[t - 1]!;
    for (let k = 0; k < dayN; k++) order[counts[rows.sec[k]!]!++] = k;

    const prefix = input.dateOnly ? dayText(input.startMs, d) : `${dayText(input.startMs, d)} `;
    for (let q = 0; q < dayN; q++) {
      const k = order[q]!;
      const fraud = rows.fraud[k]!;
      const kind = rows.kind[k] as 0 | 1 | 2;
      sink.write(`${nextId},${prefix}${input.dateOnly ? '' : hms[rows.sec[k]!]},${pop.ids[rows.cust[k]!]},${cat.ids[rows.art[k]!]},${priceText[rows.price[k]!]},${rows.chan[k]},${fraud}\n`);
      truth?.write(`${nextId},${kind},${rows.ring[k]}\n`);
      nextId++;
      result.kindRows[kind]++;
      result.kindFraud[kind] += fraud;
      result.fraudRows += fraud;
    }
    result.rows += dayN;
    result.scale = scale;
    result.maxDayRows = Math.max(result.maxDayRows, dayN);
  }
  return result;
}

/** The section of a basket item: u is uniform in [0, w0 + w1 + w2). */
function pickPref(pop: Population, o: number, w0: number, w1: number, u: number): number {
  return pop.prefSection[o + (u < w0 ? 0 : u < w0 + w1 ? 1 : 2)]!;
}

/**
 * Expected ordinary rows per day if every customer's return-cycle multiplier were 1:
 * volume(d) × Σ_customers rate × basket × Σ_prefs weight × trend(d) × E[activity], computed per section
 * from join-day deltas (O(customers + days × sections), not customers × days), already scaled to the
 * size's target. The burn-in measures how far the return cycles move the real count from it.
 */
function expectedOrdinaryRows(input: SimulationInput): { rateFactor: number; burnInDay: number; perDay: Float64Array } {
  const { pop, cat, days, volume, trends, params: p } = input;
  const S = cat.nSections;
  const delta = new Float64Array((days + 1) * S);
  for (let i = 0; i < pop.n; i++) {
    const j0 = Math.max(0, pop.joinDay[i]!);
    const base = pop.rate[i]! * pop.basketMean[i]!;
    for (let k = 0; k < PREFS; k++) delta[j0 * S + pop.prefSection[i * PREFS + k]!]! += base * pop.prefWeight[i * PREFS + k]!;
  }
  const w = new Float64Array(S);
  const perDay = new Float64Array(days);
  let total = 0;
  for (let d = 0; d < days; d++) {
    let day = 0;
    for (let s = 0; s < S; s++) {
      w[s]! += delta[d * S + s]!;
      day += w[s]! * trends.value[s * days + d]!;
    }
    perDay[d] = volume.factor[d]! * day;
    total += perDay[d]!;
  }
  const activity = (p.activeSpellDays + p.dormantSpellDays * p.dormantRate) / (p.activeSpellDays + p.dormantSpellDays);
  const target = input.targetTransactions * (1 - p.atoShare - p.ringShare);
  // perDay[d] · k is the target's share of day d; k / activity turns it into a factor on every rate.
  const k = target / total;
  const burnInDay = (perDay[0]! / volume.factor[0]!) * WEEKDAY_BURN_IN * k;
  for (let d = 0; d < days; d++) perDay[d] = perDay[d]! * k;
  return { rateFactor: k / activity, burnInDay, perDay };
}

/** Mean return-cycle multiplier over each section's first two cycles: the starting guess of the rate factor. */
function meanRhythm(rhythms: SectionRhythms): number {
  let sum = 0;
  const S = rhythms.peak.length;
  for (let s = 0; s < S; s++) {
    const R = Math.min(RHYTHM_DAYS - 1, Math.max(2, Math.round(2 * rhythms.peak[s]!)));
    let m = 0;
    for (let r = 1; r <= R; r++) m += rhythms.table[s * RHYTHM_DAYS + r]!;
    sum += m / R;
  }
  return sum / S;
}

function pad2(x: number): string {
  return x < 10 ? `0${x}` : String(x);
}

/** 'YYYY-MM-DD' of day `d` after the UTC start. */
export function dayText(startMs: number, d: number): string {
  return new Date(startMs + d * SECONDS_PER_DAY * 1000).toISOString().slice(0, 10);
}
