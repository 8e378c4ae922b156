/**
 * Temporal correctness (docs/architecture.md): nothing with a timestamp after an example's anchor may influence its
 * input, and the label never becomes an input. Proven on tiny synthetic data by appending future
 * rows (new customers and articles too) and checking that nothing a seed at or before T sees changes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/config/load.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { buildBatchArrays } from '../../src/model/batch.js';
import { bindFeatures, featureSpecFromGraph, type FeatureSpec } from '../../src/model/features.js';
import { buildPlan, type Plan } from '../../src/model/plan.js';
import { TemporalSampler, type SampledBatch, type SamplingMethod } from '../../src/model/sampler.js';
import { targetExclusions } from '../../src/task/task_spec.js';
import { Rng } from '../../src/core/rng.js';
import { nodeKeys } from '../helpers/graph.js';
import { appendFutureRows, copyFixture, synthConfig, tinySynth, type FutureRows, type SynthFixture } from '../helpers/synth.js';

const T = '2020-07-15T00:00:00Z';
const T_S = Date.parse(T) / 1000;
const DAY = 86400;

const CONFIG = synthConfig(
  `tasks:
  churn:
    query: PREDICT COUNT(transactions.*, 0, 7, days) = 0 FOR EACH customers.customer_id WHERE COUNT(transactions.*, -7, 0, days) > 0
  spend:
    query: PREDICT SUM(transactions.price, 0, 7, days) FOR EACH customers.customer_id
  fraud:
    query: PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id
`,
  // Statistics fitted up to T: what a model trained with anchors ≤ T would use.
  `  fit_until: "${T}"\n`,
);

interface Side {
  cfg: Config;
  graph: Graph;
  keys: Record<string, string[]>;
  /** key → node id per table */
  ids: Record<string, Map<string, number>>;
}

let before: SynthFixture;
let after: SynthFixture;
let future: FutureRows;
let A: Side;
let B: Side;

async function side(fx: SynthFixture): Promise<Side> {
  const cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  const built = await buildGraph(cfg);
  const graph = Graph.load(built.dir);
  const keys: Record<string, string[]> = {};
  const ids: Record<string, Map<string, number>> = {};
  for (const t of ['customers', 'articles', 'transactions']) {
    keys[t] = await nodeKeys(built.dir, built.manifest, t);
    ids[t] = new Map(keys[t]!.map((k, i) => [k, i]));
  }
  return { cfg, graph, keys, ids };
}

beforeAll(async () => {
  before = await tinySynth(CONFIG);
  after = copyFixture(before, 'data-with-future');
  // 600 rows over the 60 days after T: they interleave with the existing rows after T
  future = appendFutureRows(after.dir, T, { transactions: 600, customers: 25, articles: 10, seed: 3, days: 60 });
  A = await side(before);
  B = await side(after);
});
afterAll(() => before?.cleanup());

/** Seeds at or before T as primary keys: customers at several anchors, transactions at their own time. */
function seedSets(): { root: string; keys: string[]; anchors: number[] }[] {
  const rng = new Rng(99);
  const cust = A.keys.customers!;
  const custKeys: string[] = [];
  const custAnchors: number[] = [];
  for (let i = 0; i < 96; i++) {
    custKeys.push(cust[rng.int(cust.length)]!);
    custAnchors.push([T_S, T_S - 10 * DAY, T_S - 45 * DAY][i % 3]!);
  }
  const time = A.graph.table('transactions').time!;
  const visible = time.findIndex((t) => t > T_S);
  const txKeys: string[] = [];
  const txAnchors: number[] = [];
  for (let i = 0; i < 96; i++) {
    const node = i < 8 ? visible - 1 - i : rng.int(visible); // the newest rows before T, then random ones
    txKeys.push(A.keys.transactions![node]!);
    txAnchors.push(time[node]!);
  }
  return [
    { root: 'customers', keys: custKeys, anchors: custAnchors },
    { root: 'transactions', keys: txKeys, anchors: txAnchors },
  ];
}

function sample(s: Side, plan: Plan, method: SamplingMethod, keys: string[], anchors: number[]): SampledBatch {
  const seeds = Int32Array.from(keys, (k) => s.ids[plan.root]!.get(k)!);
  return new TemporalSampler(s.graph, plan, method).sample(seeds, Float64Array.from(anchors), new Rng(2024));
}

/** Sampled trees as keys: per slot, the key at each position ('' where nothing was sampled). */
function asKeys(s: Side, plan: Plan, batch: SampledBatch): string[][] {
  return plan.slots.map((slot) => {
    const sl = batch.slots[slot.index]!;
    return Array.from(sl.nodes, (n, i) => (sl.valid[i] ? s.keys[slot.type]![n]! : ''));
  });
}

describe('appending rows after T changes nothing a seed at or before T sees', () => {
  it('the appended data really is there: more rows, new keys, new categorical values', () => {
    expect(B.graph.table('transactions').rows).toBe(A.graph.table('transactions').rows + 600);
    expect(B.graph.table('customers').rows).toBe(A.graph.table('customers').rows + 25);
    expect(B.ids.articles!.has(future.articles[0]!)).toBe(true);
    // The new colour exists in the data, but only on articles first bought after T: it is no vocabulary
    // entry (statistics are fitted on entities seen up to fit_until) and encodes as out-of-vocabulary.
    const colour = B.graph.table('articles').categorical.find((c) => c.meta.name === 'colour_group_name')!;
    expect(colour.meta.vocab).not.toContain('Ultraviolet');
    expect(colour.codes[B.ids.articles!.get(future.articles[0]!)!]).toBe(1);
    // some appended rows fall between old rows after T, and some are bought by old customers
    const timeB = B.graph.table('transactions').time!;
    const newIds = future.transactions.map((k) => B.ids.transactions!.get(k)!);
    expect(Math.min(...newIds)).toBeLessThan(A.graph.table('transactions').rows);
    expect(newIds.every((i) => timeB[i]! > T_S)).toBe(true);
  });

  it('node ids of rows at or before T are unchanged (ids are time-ordered); only later ids move', () => {
    const timeA = A.graph.table('transactions').time!;
    const timeB = B.graph.table('transactions').time!;
    const k = timeA.findIndex((t) => t > T_S);
    expect(k).toBeGreaterThan(1000);
    expect(B.keys.transactions!.slice(0, k)).toEqual(A.keys.transactions!.slice(0, k));
    expect(Array.from(timeB.subarray(0, k))).toEqual(Array.from(timeA.subarray(0, k)));
    expect(timeB[k]!).toBeGreaterThan(T_S);
    // customers and articles have no time column: ids follow the primary key, so a new key shifts them;
    // everything below compares sampled nodes by key for that reason.
    expect(B.keys.customers).not.toEqual(A.keys.customers);
  });

  const methods: SamplingMethod[] = ['last', 'uniform'];
  const roots = ['customers', 'transactions'] as const;
  for (const method of methods) {
    for (const root of roots) {
      it(`sampling ${method}, root ${root}: the same nodes in the same order, with identical features`, () => {
        const set = seedSets().find((s) => s.root === root)!;
        const fanouts = root === 'customers' ? [8, 4] : [1, 8];
        const planA = buildPlan(A.graph, root, fanouts);
        const planB = buildPlan(B.graph, root, fanouts);
        expect(planB).toEqual(planA);
        const sa = sample(A, planA, method, set.keys, set.anchors);
        const sb = sample(B, planB, method, set.keys, set.anchors);
        const ka = asKeys(A, planA, sa);
        const kb = asKeys(B, planB, sb);
        expect(kb).toEqual(ka);
        // the trees are not trivially empty
        expect(ka.slice(1).flat().filter(Boolean).length).toBeGreaterThan(set.keys.length);

        // features through the run's saved encoders (as embed and fine-tuning apply them to a newer graph)
        const spec: FeatureSpec = featureSpecFromGraph(A.graph, []);
        const fa = buildBatchArrays(planA, sa, bindFeatures(A.graph, spec));
        const fb = buildBatchArrays(planB, sb, bindFeatures(B.graph, spec));
        for (const type of Object.keys(fa.types)) {
          expect(fb.types[type]!.rows).toBe(fa.types[type]!.rows);
          expect(Array.from(fb.types[type]!.num)).toEqual(Array.from(fa.types[type]!.num));
          expect(Array.from(fb.types[type]!.cat)).toEqual(Array.from(fa.types[type]!.cat));
        }
        expect(fb.positions.map((p) => Array.from(p))).toEqual(fa.positions.map((p) => Array.from(p)));
        for (const k of ['childIndex', 'weights', 'masks', 'degrees'] as const) {
          expect(fb[k].map((x) => (x ? Array.from(x) : null))).toEqual(fa[k].map((x) => (x ? Array.from(x) : null)));
        }
      });
    }
  }

  it('statistics fitted on the graph up to T are the same with the future rows (time-stamped tables)', () => {
    const specA = featureSpecFromGraph(A.graph, []);
    const specB = featureSpecFromGraph(B.graph, []);
    expect(specB.tables.transactions).toEqual(specA.tables.transactions);
  });

  // Customers and articles have no time column: their statistics are fitted on the entities that
  // time-stamped rows up to fit_until reference, so entities first seen after T change nothing.
  it('statistics of tables without a time column ignore entities added after T', () => {
    const specA = featureSpecFromGraph(A.graph, []);
    const specB = featureSpecFromGraph(B.graph, []);
    expect(specB.tables.customers).toEqual(specA.tables.customers);
  });
});

describe('no sampled neighbour is newer than its seed\'s anchor', () => {
  const cases = (['last', 'uniform'] as const).flatMap((method) => (['customers', 'articles', 'transactions'] as const).map((root) => ({ method, root })));
  it.each(cases)('$method sampling from $root over random seeds and anchors (3 hops)', ({ method, root }) => {
    const g = A.graph;
    const [lo, hi] = g.manifest.time_range!;
    const rng = new Rng(7);
    const n = 1500;
    const rows = g.table(root).rows;
    const rootTime = g.table(root).time;
    const seeds = new Int32Array(n);
    const anchors = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      seeds[i] = rng.int(rows);
      // a timed root exists only from its own time on: its anchor is its time or later
      const from = rootTime ? rootTime[seeds[i]!]! : lo;
      anchors[i] = rng.next() < 0.3 ? from : from + rng.next() * (hi + DAY - from);
    }
    const plan = buildPlan(g, root, [6, 4, 2]);
    const batch = new TemporalSampler(g, plan, method).sample(seeds, anchors, new Rng(1));
    let checked = 0;
    let violations = 0;
    for (const slot of plan.slots) {
      const time = g.table(slot.type).time;
      if (!time) continue;
      const s = batch.slots[slot.index]!;
      for (let i = 0; i < s.nodes.length; i++) {
        if (!s.valid[i]) continue;
        checked++;
        if (time[s.nodes[i]!]! > anchors[Math.floor(i / slot.width)]!) violations++;
      }
    }
    expect(checked).toBeGreaterThan(n);
    expect(violations).toBe(0);
  });
});

describe('the label never becomes an input', () => {
  it('fraud (fact target): transactions.fraud is in the graph but in no FeatureSpec table', () => {
    const g = A.graph;
    const cols = (t: string) => [...g.table(t).numeric.map((c) => c.meta.name), ...g.table(t).categorical.map((c) => c.meta.name)];
    expect(cols('transactions')).toContain('fraud');
    const task = A.cfg.taskSpecs.fraud!;
    const excl = targetExclusions(task);
    expect(excl).toEqual([{ table: 'transactions', column: 'fraud', reason: 'target of task fraud' }]);
    const spec = featureSpecFromGraph(g, excl);
    for (const [name, t] of Object.entries(spec.tables)) {
      const used = [...t.numeric.map((c) => c.name), ...t.categorical.map((c) => c.name), ...t.timestamps];
      expect(used, name).not.toContain('fraud');
    }
    expect(spec.excluded).toEqual(excl);
  });

  // Its values before the anchor are the customer's history; the label rows lie after the anchor, where no
  // sampled neighbour is (above). test/task/target_history.e2e.test.ts trains on a label that is a future
  // row's value and scores chance.
  it('SUM(transactions.price) (aggregate target): the aggregated column is history, read only through rows up to the anchor', () => {
    const excl = targetExclusions(A.cfg.taskSpecs.spend!);
    expect(excl).toMatchObject([{ table: 'transactions', column: 'price', history: true }]);
    const spec = featureSpecFromGraph(A.graph, excl);
    expect(spec.tables.transactions!.numeric.map((c) => c.name)).toContain('price');
    expect(spec.excluded).toEqual([]);
  });

  it('COUNT(transactions.*) aggregates no column: nothing to exclude', () => {
    expect(targetExclusions(A.cfg.taskSpecs.churn!)).toEqual([]);
  });
});
