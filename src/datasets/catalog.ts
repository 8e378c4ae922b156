/**
 * The synthetic article catalog (the `articles` table) and the structure the simulation samples articles
 * from. Articles come in products (1–5 colour variants sharing a 7-digit product code), products belong to
 * a section, a product group/type, a department and a price tier. Popularity is Zipf-like over a random
 * ranking, times a launch curve for products released inside the simulated window.
 */
import type { Rng } from '../core/rng.js';
import { csvField, type CsvSink } from './csv.js';
import { cumulative, pick, lognormal, searchCumulative, uniform } from './random.js';
import { COLOURS, GARMENT_GROUPS, INDEXES, KIND_GROUPS, NAME_STYLES, NAME_WORDS, PRODUCT_GROUPS, SECTIONS } from './taxonomy.js';

/** H&M-like list prices in SEK. Prices in the table are SEK / PRICE_SCALE, which gives H&M's 0.005–0.5 look. */
export const PRICE_POINTS: readonly number[] = [29, 49, 59, 79, 99, 119, 149, 179, 199, 249, 299, 349, 399, 449, 499, 599, 699, 799, 999, 1199, 1499, 1999, 2499];
export const PRICE_SCALE = 5900;
/** Price tiers scale a product group's base price; a customer mostly shops in one tier. */
export const TIER_FACTORS: readonly number[] = [0.55, 1.0, 1.8, 3.2];
export const TIER_SHARES: readonly number[] = [0.3, 0.35, 0.25, 0.1];
export const N_TIERS = TIER_FACTORS.length;

export const ARTICLE_COLUMNS = [
  'article_id', 'product_code', 'prod_name', 'product_type_no', 'product_type_name', 'product_group_name',
  'colour_group_code', 'colour_group_name', 'department_no', 'department_name', 'index_code', 'index_name',
  'index_group_no', 'index_group_name', 'section_no', 'section_name', 'garment_group_no', 'garment_group_name',
] as const;

export interface Catalog {
  n: number;
  /** number of sections (SECTIONS.length) */
  nSections: number;
  /** article_id, ascending (older products have lower codes, as in H&M) */
  ids: string[];
  section: Uint8Array;
  tier: Uint8Array;
  /** index into PRICE_POINTS */
  pricePoint: Uint8Array;
  /** day the product launched (negative: before the window) */
  releaseDay: Int16Array;
  /** launch-boost decay time in days */
  launchTau: Float32Array;
  /** Zipf weight from the article's popularity rank */
  baseWeight: Float64Array;
  /** popularity rank, 0 = most popular */
  rank: Int32Array;
  /** articles sorted by (section, tier); the sampling order */
  order: Int32Array;
  /** start of (section s, tier t) in `order` at s * N_TIERS + t; length nSections * N_TIERS + 1 */
  bucketStart: Int32Array;
  /** one CSV line per article (without newline), in `ids` order */
  csvLines: string[];
}

/** How many articles a product has (colour variants), H&M-like: most have one or two. */
const VARIANT_WEIGHTS = [0.45, 0.25, 0.15, 0.1, 0.05];
/** Share of products already on sale before the window starts (the rest launch inside it). */
const OLD_CATALOG_SHARE = 0.65;
/** Zipf exponent and rank offset: the top article gets ~1.4% of all purchases at `medium` scale. */
const ZIPF_EXPONENT = 1.0;
const ZIPF_OFFSET = 10;

const GROUP_SHORT: Record<string, string> = {
  'Garment Upper body': 'Jersey', 'Garment Lower body': 'Trousers', 'Garment Full body': 'Dresses', Underwear: 'Lingerie',
  Nightwear: 'Nightwear', 'Socks & Tights': 'Tights', Swimwear: 'Swimwear', Accessories: 'Accessories', Bags: 'Bags',
  Shoes: 'Shoes', Cosmetic: 'Beauty', Unknown: 'Special Offers',
};

export function generateCatalog(rng: Rng, nArticles: number, days: number): Catalog {
  const nSections = SECTIONS.length;
  const sectionSizes = SECTIONS.map((s) => s.size);
  const colourWeights = COLOURS.map((c) => c[2]);

  // Products first (generation order), then sorted by launch day so that codes increase with age.
  interface Product { section: number; group: number; type: number; garment: number; dept: number; tier: number; pricePoint: number; release: number; tau: number; name: string; variants: number }
  const products: Product[] = [];
  const depts = new Map<string, { index: number; no: number; name: string }>();
  const usedDeptNos = new Set<number>();
  let articleCount = 0;
  while (articleCount < nArticles) {
    const section = pick(rng, sectionSizes);
    const sec = SECTIONS[section]!;
    const kindGroups = KIND_GROUPS[sec.kind];
    const group = kindGroups[pick(rng, kindGroups.map((g) => g[1]))]![0];
    const pg = PRODUCT_GROUPS[group]!;
    const type = rng.int(pg.types.length);
    // A few products end up in H&M's catch-all "Special Offers" garment group.
    const garment = rng.next() < 0.03 ? GARMENT_GROUPS.findIndex((g) => g[1] === 'Special Offers') : pg.types[type]![2];
    const deptKey = `${section}/${group}`;
    if (!depts.has(deptKey)) {
      let no: number;
      do no = 1000 + rng.int(9000); while (usedDeptNos.has(no));
      usedDeptNos.add(no);
      const prefix = sec.name.split(' ')[0]!;
      depts.set(deptKey, { index: depts.size, no, name: `${prefix} ${GROUP_SHORT[pg.name] ?? pg.name}` });
    }
    const tier = pick(rng, TIER_SHARES);
    const listPrice = pg.basePrice * TIER_FACTORS[tier]! * lognormal(rng, 0, 0.15);
    const variants = Math.min(1 + pick(rng, VARIANT_WEIGHTS), nArticles - articleCount);
    const release = rng.next() < OLD_CATALOG_SHARE ? -1 - rng.int(400) : rng.int(days);
    const typeName = pg.types[type]![1];
    const name = `${NAME_WORDS[rng.int(NAME_WORDS.length)]} ${NAME_STYLES[rng.int(NAME_STYLES.length)]} ${typeName === 'Unknown' ? 'Item' : typeName.split('/')[0]}`;
    products.push({ section, group, type, garment, dept: depts.get(deptKey)!.index, tier, pricePoint: nearestPricePoint(listPrice), release, tau: uniform(rng, 10, 40), name, variants });
    articleCount += variants;
  }
  const deptList = [...depts.values()];
  const productOrder = products.map((_, i) => i).sort((a, b) => products[a]!.release - products[b]!.release || a - b);

  // Ascending distinct 6-digit codes behind H&M's leading zero ("0108775").
  const gap = Math.max(2, Math.floor(800_000 / products.length));
  const n = articleCount;
  const cat: Catalog = {
    n, nSections, ids: new Array<string>(n), section: new Uint8Array(n), tier: new Uint8Array(n), pricePoint: new Uint8Array(n),
    releaseDay: new Int16Array(n), launchTau: new Float32Array(n), baseWeight: new Float64Array(n), rank: new Int32Array(n),
    order: new Int32Array(n), bucketStart: new Int32Array(nSections * N_TIERS + 1), csvLines: new Array<string>(n),
  };
  let code = 100_000;
  let a = 0;
  for (const pi of productOrder) {
    const p = products[pi]!;
    code += 1 + rng.int(2 * gap - 1);
    const productCode = `0${code}`;
    const sec = SECTIONS[p.section]!;
    const idx = INDEXES[sec.index]!;
    const pg = PRODUCT_GROUPS[p.group]!;
    const [typeNo, typeName] = pg.types[p.type]!;
    const dept = deptList[p.dept]!;
    const [ggNo, ggName] = GARMENT_GROUPS[p.garment]!;
    const shared = [csvField(p.name), typeNo, csvField(typeName), csvField(pg.name)].join(',');
    const tail = [dept.no, csvField(dept.name), idx.code, csvField(idx.name), idx.groupNo, csvField(idx.groupName), sec.no, csvField(sec.name), ggNo, csvField(ggName)].join(',');
    // Variant suffixes ascend ("001", "002", "015"): distinct colours, usually starting at 001.
    let suffix = 0;
    const colours = new Set<number>();
    for (let v = 0; v < p.variants; v++) {
      suffix += v === 0 ? 1 + (rng.next() < 0.8 ? 0 : rng.int(5)) : 1 + rng.int(12);
      let colour: number;
      do colour = pick(rng, colourWeights); while (colours.has(colour) && colours.size < COLOURS.length);
      colours.add(colour);
      const id = `${productCode}${String(suffix).padStart(3, '0')}`;
      const [colNo, colName] = COLOURS[colour]!;
      cat.ids[a] = id;
      cat.section[a] = p.section;
      cat.tier[a] = p.tier;
      cat.pricePoint[a] = p.pricePoint;
      cat.releaseDay[a] = p.release;
      cat.launchTau[a] = p.tau;
      cat.csvLines[a] = `${id},${productCode},${shared},${colNo},${csvField(colName)},${tail}`;
      a++;
    }
  }

  // Popularity: a random ranking with Zipf weights, so a few articles take a large share of sales.
  const ranks = rng.shuffle(Int32Array.from({ length: n }, (_, i) => i));
  for (let i = 0; i < n; i++) {
    cat.rank[i] = ranks[i]!;
    cat.baseWeight[i] = Math.pow(ranks[i]! + ZIPF_OFFSET, -ZIPF_EXPONENT);
  }

  // Sampling order: a counting sort by (section, tier) bucket.
  const counts = new Int32Array(nSections * N_TIERS + 1);
  for (let i = 0; i < n; i++) counts[cat.section[i]! * N_TIERS + cat.tier[i]! + 1]!++;
  for (let b = 1; b < counts.length; b++) counts[b]! += counts[b - 1]!;
  cat.bucketStart.set(counts);
  const fill = counts.slice();
  for (let i = 0; i < n; i++) cat.order[fill[cat.section[i]! * N_TIERS + cat.tier[i]!]!++] = i;
  return cat;
}

function nearestPricePoint(sek: number): number {
  let best = 0;
  for (let i = 1; i < PRICE_POINTS.length; i++) if (Math.abs(PRICE_POINTS[i]! - sek) < Math.abs(PRICE_POINTS[best]! - sek)) best = i;
  return best;
}

/** Writes the `articles` table (header included), in article_id order. */
export function writeArticles(cat: Catalog, sink: CsvSink): void {
  sink.write(`${ARTICLE_COLUMNS.join(',')}\n`);
  for (const line of cat.csvLines) sink.write(`${line}\n`);
}

/**
 * Today's article weights, cumulative within each section in `order`, so that one binary search samples
 * an article from a (section, tier) bucket or from a whole section. Rebuilt once per simulated day.
 */
export class ArticleSampler {
  readonly cum: Float64Array;
  /** today's total weight per section */
  readonly sectionTotal: Float64Array;
  private sectionCum: Float64Array;

  constructor(private readonly cat: Catalog) {
    this.cum = new Float64Array(cat.n);
    this.sectionTotal = new Float64Array(cat.nSections);
    this.sectionCum = new Float64Array(cat.nSections);
  }

  /** Launch curve: nothing before release, a boost that decays to a plateau after it. */
  static launchFactor(age: number, tau: number): number {
    return age < 0 ? 0 : 0.6 + 2.4 * Math.exp(-age / tau);
  }

  setDay(day: number): void {
    const { cat, cum } = this;
    for (let s = 0; s < cat.nSections; s++) {
      let acc = 0;
      const end = cat.bucketStart[(s + 1) * N_TIERS]!;
      for (let k = cat.bucketStart[s * N_TIERS]!; k < end; k++) {
        const a = cat.order[k]!;
        acc += cat.baseWeight[a]! * ArticleSampler.launchFactor(day - cat.releaseDay[a]!, cat.launchTau[a]!);
        cum[k] = acc;
      }
      this.sectionTotal[s] = acc;
    }
    this.sectionCum = cumulative(this.sectionTotal);
  }

  /**
   * An article of section `s`: from tier `tier` with probability `tierLoyalty` (when that bucket has stock
   * today), otherwise from the whole section by popularity. Falls back to any section when `s` has
   * nothing on sale yet. Returns -1 only when nothing at all is on sale.
   */
  sample(rng: Rng, s: number, tier: number, tierLoyalty: number): number {
    const { cat, cum } = this;
    if (this.sectionTotal[s]! <= 0) {
      const total = this.sectionCum[this.sectionCum.length - 1]!;
      if (total <= 0) return -1;
      s = searchCumulative(this.sectionCum, rng.next() * total, 0, this.sectionCum.length);
    }
    const secStart = cat.bucketStart[s * N_TIERS]!;
    let lo = secStart;
    let hi = cat.bucketStart[(s + 1) * N_TIERS]!;
    if (rng.next() < tierLoyalty) {
      const bLo = cat.bucketStart[s * N_TIERS + tier]!;
      const bHi = cat.bucketStart[s * N_TIERS + tier + 1]!;
      const base = bLo === secStart ? 0 : cum[bLo - 1]!;
      if (bHi > bLo && cum[bHi - 1]! > base) {
        lo = bLo;
        hi = bHi;
      }
    }
    const base = lo === secStart ? 0 : cum[lo - 1]!;
    const u = base + rng.next() * (cum[hi - 1]! - base);
    return cat.order[searchCumulative(cum, u, lo, hi)]!;
  }

  /** A section drawn by today's total popularity. */
  sampleSection(rng: Rng): number {
    const total = this.sectionCum[this.sectionCum.length - 1]!;
    return searchCumulative(this.sectionCum, rng.next() * total, 0, this.sectionCum.length);
  }
}
