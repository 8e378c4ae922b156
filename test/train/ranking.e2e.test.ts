/**
 * Ranking tasks on the hand-written retail fixture: label lists at the window boundaries worked out by
 * hand, `config validate`'s ranking rules, and the temporal guarantee of the recommender's inputs (the
 * user tree, the item trees and the user's own history never contain an interaction after the anchor,
 * so no label purchase is shown to the model).
 *
 * Rows (BOUNDARY_TRANSACTIONS + rows 12, 13), in time order:
 *   3  01-01 09:00 c2 A15  |  9  01-20 00:00 c4 A01
 *   1  01-01 10:00 c1 A15  |  5  01-20 12:00 c3 A15
 *   2  01-02 11:00 c1 A44  | 12  01-22 10:00 c1 A15
 *   4  01-09 09:00 c3 A01  | 13  01-23 10:00 c1 A15
 *  11  01-13 00:00 c2 A44  |  6  01-25 12:00 c1 A01
 *                          |  7  01-26 08:30 c2 A15
 *                          | 10  01-27 00:00 c4 A44
 *                          |  8  01-27 18:00 c1 A44
 * Anchors T0 = 01-06, V = 01-13, T = 01-20; label windows (A, A + 7d]:
 *   T0: c2 {A44} (row 11 exactly on the end: in), c3 {A01}
 *   V:  c4 {A01} (row 11 exactly on the start: out; row 9 exactly on the end: in)
 *   T:  c1 {A01, A15} (rows 12 and 13 both A15: one item), c2 {A15}, c3 {A15}, c4 {A44} (row 10 on the end: in;
 *       row 9 on the start: out; row 8 after)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, parseConfig, type Config } from '../../src/config/load.js';
import { ConfigError } from '../../src/core/errors.js';
import { setQuiet } from '../../src/core/log.js';
import { buildGraph, type BuildResult } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { DeepModel } from '../../src/model/deep_model.js';
import { popularityCache, userHistories } from '../../src/model/context_gnn.js';
import { groups } from '../../src/train/ranking_trainer.js';
import { Rng } from '../../src/core/rng.js';
import { taskSplit } from '../../src/task/split.js';
import type { Examples } from '../../src/task/task_spec.js';
import { buildTrainingTables } from '../../src/train/examples.js';
import { cooccurrenceTopK, repeatTopK } from '../../src/train/ranking_baselines.js';
import { train } from '../../src/train/trainer.js';
import { BOUNDARY_TRANSACTIONS, CONFIG, configWithTasks, retailFixture, type Fixture } from '../helpers/fixtures.js';
import { nodeKeys } from '../helpers/graph.js';

const A15 = '0108775015';
const A44 = '0108775044';
const A01 = '0110065001';
const RANK_TRANSACTIONS = `${BOUNDARY_TRANSACTIONS}12,2020-01-22 10:00:00,c1,0108775015,0.05,1,0
13,2020-01-23 10:00:00,c1,0108775015,0.05,1,0
`;
const TASKS = {
  next_items: 'PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP 2 FOR EACH customers.customer_id',
  next_items_active: 'PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP 2 FOR EACH customers.customer_id WHERE COUNT(transactions.*, -7, 0, days) > 0',
};

let fx: Fixture;
let cfg: Config;
let built: BuildResult;
let keys: Record<string, string[]>;

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = retailFixture({ transactions: RANK_TRANSACTIONS, config: configWithTasks(TASKS, '{ val_anchor: "2020-01-13", test_anchor: "2020-01-20" }').replace('tasks:', 'model: { channels: 8, layers: 2, num_neighbors: [4, 2], epochs: 1, batch_size: 4 }\ntasks:') });
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  built = await buildGraph(cfg);
  keys = {};
  for (const t of ['customers', 'articles', 'transactions']) keys[t] = await nodeKeys(built.dir, built.manifest, t);
});
afterAll(() => {
  fx.cleanup();
  setQuiet(false);
});

async function tables(task: string) {
  const spec = cfg.taskSpecs[task]!;
  const range = built.manifest.time_range!;
  return buildTrainingTables(built.dir, built.manifest, spec, taskSplit(spec, { min: range[0], max: range[1] }), { seed: 0 });
}

/** Examples as "anchor date customer: items" lines. */
function lines(ex: Examples): string[] {
  const out: string[] = [];
  for (let i = 0; i < ex.nodes.length; i++) {
    const items = Array.from(ex.label_items!.items.subarray(ex.label_items!.offsets[i]!, ex.label_items!.offsets[i + 1]!), (n) => keys.articles![n]!).sort();
    out.push(`${new Date(ex.anchors[i]! * 1000).toISOString().slice(0, 10)} ${keys.customers![ex.nodes[i]!]}: ${items.join(' ')} (${ex.labels[i]})`);
  }
  return out.sort();
}

describe('ranking labels: the distinct items in (anchor, anchor + 7 days]; seeds have at least one', () => {
  it('train, val and test lists match the hand-worked windows, boundaries included', async () => {
    const t = await tables('next_items');
    expect(lines(t.train)).toEqual([`2020-01-06 c2: ${A44} (1)`, `2020-01-06 c3: ${A01} (1)`]);
    expect(lines(t.val)).toEqual([`2020-01-13 c4: ${A01} (1)`]);
    expect(lines(t.test)).toEqual([`2020-01-20 c1: ${A15} ${A01} (2)`, `2020-01-20 c2: ${A15} (1)`, `2020-01-20 c3: ${A15} (1)`, `2020-01-20 c4: ${A44} (1)`].sort());
  });

  it('WHERE filters seeds at the anchor (active in (A − 7d, A]): at T only c4 (row 9)', async () => {
    const t = await tables('next_items_active');
    expect(lines(t.test)).toEqual([`2020-01-20 c4: ${A44} (1)`]);
  });
});

describe('config validate: ranking rules', () => {
  const base = (query: string, extra = '') => `${CONFIG.replace('      foreign_keys: { customer_id: customers, article_id: articles }', `      foreign_keys: { customer_id: customers, article_id: articles }${extra}`)}tasks:\n  t:\n    query: ${JSON.stringify(query)}\n`;
  const problems = (text: string) => {
    try {
      parseConfig(text, '/c.yaml', { cwd: '/d' });
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      return (e as ConfigError).problems.map((p) => `${p.path}: ${p.message} | ${p.hint ?? ''}`);
    }
    throw new Error('expected a ConfigError');
  };

  it('a valid ranking task loads as kind ranking', () => {
    expect(parseConfig(base(TASKS.next_items), '/c.yaml', { cwd: '/d' }).taskSpecs.t!.query.taskType).toBe('ranking');
  });

  it('the listed column must be a foreign key (with a did-you-mean)', () => {
    expect(problems(base('PREDICT LIST_DISTINCT(transactions.price, 0, 7, days) RANK TOP 12 FOR EACH customers.customer_id'))).toEqual([
      expect.stringMatching(/^tasks\.t\.query: LIST_DISTINCT\(transactions\.price, …\): price is not a foreign key of transactions, so there are no items to rank \| rank the rows a foreign key points to/),
    ]);
  });

  it('a malformed ranking query is reported at tasks.<name>.query with its position', () => {
    expect(problems(base('PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) FOR EACH customers.customer_id'))).toEqual([expect.stringMatching(/^tasks\.t\.query: invalid predictive query at position 60: expected RANK TOP k/)]);
  });

  it('a loss that does not fit ranking is refused, naming sampled_softmax', () => {
    expect(problems(base(TASKS.next_items).replace('tasks:', 'model: { loss: bce }\ntasks:'))).toEqual([expect.stringMatching(/^model\.loss: loss bce does not fit task t, a ranking task \| use sampled_softmax/)]);
  });
});

describe('the recommender never sees an interaction after the anchor', () => {
  it('user trees, item trees and histories at every example hold only transactions with time ≤ anchor; label purchases never appear', async () => {
    const r = await train({ cfg, task: 'next_items', backend: 'wasm', epochs: 1 });
    const graph = Graph.load(built.dir);
    const model = DeepModel.load(r.runDir, graph);
    try {
      const t = await tables('next_items');
      const txTime = graph.tables.transactions!.time!;
      const rs = model.spec.ranking!;
      for (const ex of [t.train, t.val, t.test]) {
        for (let i = 0; i < ex.nodes.length; i++) {
          const anchor = ex.anchors[i]!;
          const shown: number[] = [];
          const user = model.sampler.sample(Int32Array.of(ex.nodes[i]!), Float64Array.of(anchor), null);
          model.plan.slots.forEach((s, j) => s.type === 'transactions' && user.slots[j]!.nodes.forEach((n, p) => user.slots[j]!.valid[p] && shown.push(n)));
          const items = Int32Array.from({ length: graph.tables.articles!.rows }, (_, k) => k);
          const itemTrees = model.itemSampler!.sample(items, new Float64Array(items.length).fill(anchor), null);
          model.itemPlan!.slots.forEach((s, j) => s.type === 'transactions' && itemTrees.slots[j]!.nodes.forEach((n, p) => itemTrees.slots[j]!.valid[p] && shown.push(n)));
          expect(shown.length).toBeGreaterThan(0);
          for (const n of shown) expect(txTime[n]!).toBeLessThanOrEqual(anchor);
          const h = userHistories(graph, rs, Int32Array.of(ex.nodes[i]!), [anchor], popularityCache(graph, rs));
          // feature 1 is log(1 + days since the last purchase): never negative, i.e. never after the anchor
          for (let j = 0; j < h.items.length; j++) expect(h.features[j * 4 + 1]!).toBeGreaterThanOrEqual(0);
        }
      }
      // c1 at T (01-20): history is rows 1, 2 (A15, A44) — not its label purchases 12, 13, 6 after the anchor
      const c1 = keys.customers!.indexOf('c1');
      const T = Date.parse('2020-01-20T00:00:00Z') / 1000;
      const h = userHistories(graph, rs, Int32Array.of(c1), [T], popularityCache(graph, rs));
      expect(Array.from(h.items, (n) => keys.articles![n]).sort()).toEqual([A15, A44]);
      expect(Array.from(repeatTopK(graph, rs, Int32Array.of(c1), T, 2), (n) => keys.articles![n])).toEqual([A44, A15]);
      // co-occurrence at T: c1 {A15, A44}, c2 {A44, A15}, c3 {A01}, c4 {A01}: for c3, A01 has no partner
      expect(Array.from(cooccurrenceTopK(graph, rs, Int32Array.of(keys.customers!.indexOf('c3')), T, 2))).toEqual([-1, -1]);
      expect(Array.from(cooccurrenceTopK(graph, rs, Int32Array.of(c1), T, 2), (n) => (n < 0 ? null : keys.articles![n])).sort()).toEqual([A15, A44]);
    } finally {
      model.dispose();
    }
  });
});

describe('groups', () => {
  it('lists each anchor’s examples in example order, over a million examples', () => {
    expect([...groups({ anchors: Float64Array.from([3, 1, 3, 2, 1]) })]).toEqual([
      [3, [0, 2]],
      [1, [1, 4]],
      [2, [3]],
    ]);
    // Two anchors of 600k examples each: the quadratic version never returned on this.
    const anchors = Float64Array.from({ length: 1_200_000 }, (_, i) => (i % 2 ? 7 : 14));
    const g = groups({ anchors });
    expect(g.get(7)!.length).toBe(600_000);
    expect(g.get(14)![599_999]).toBe(1_199_998);
  });
});

describe('cooccurrenceTopK', () => {
  it('equals item-kNN from a plain pair count on random baskets (ties: lower item first)', () => {
    const rng = new Rng(5);
    const nUsers = 300;
    const nItems = 80;
    const nTx = 4000;
    // transactions in time order; per user a time-sorted CSR, as graph build makes it
    const time = Float64Array.from({ length: nTx }, (_, i) => 1000 + i);
    const userOf = Int32Array.from({ length: nTx }, () => rng.int(nUsers));
    const itemOf = Int32Array.from({ length: nTx }, () => Math.min(rng.int(nItems), rng.int(nItems)));
    const indptr = new Int32Array(nUsers + 1);
    for (const u of userOf) indptr[u + 1]!++;
    for (let u = 0; u < nUsers; u++) indptr[u + 1]! += indptr[u]!;
    const fill = indptr.slice(0, nUsers);
    const indices = new Int32Array(nTx);
    for (let t = 0; t < nTx; t++) indices[fill[userOf[t]!]!++] = t;
    const graph = {
      edges: [
        { name: 'u2t', kind: 'rev', indptr, indices },
        { name: 't2i', kind: 'fk', parent: itemOf },
      ],
      tables: { tx: { time, rows: nTx }, items: { rows: nItems } },
    } as unknown as Graph;
    const rs = { user_edge: 'u2t', item_fk_edge: 't2i', fact_table: 'tx', item_table: 'items' } as unknown as Parameters<typeof cooccurrenceTopK>[1];
    const anchor = 1000 + 3000;
    const users = Int32Array.from({ length: nUsers }, (_, u) => u);
    const got = cooccurrenceTopK(graph, rs, users, anchor, 12);

    // The plain version: last 10 distinct items per user, all pair counts, 50 partners per item.
    const basket = (u: number): number[] => {
      const out: number[] = [];
      for (let e = indptr[u + 1]! - 1; e >= indptr[u]! && out.length < 10; e--) {
        const t = indices[e]!;
        if (time[t]! <= anchor && !out.includes(itemOf[t]!)) out.push(itemOf[t]!);
      }
      return out;
    };
    const pairs = new Map<string, number>();
    for (let u = 0; u < nUsers; u++) for (const a of basket(u)) for (const b of basket(u)) if (a !== b) pairs.set(`${a},${b}`, (pairs.get(`${a},${b}`) ?? 0) + 1);
    const partners = Array.from({ length: nItems }, (_, i) =>
      [...pairs]
        .filter(([key]) => Number(key.split(',')[0]) === i)
        .map(([key, n]) => ({ item: Number(key.split(',')[1]), n }))
        .sort((x, y) => y.n - x.n || x.item - y.item)
        .slice(0, 50),
    );
    for (let u = 0; u < nUsers; u++) {
      const score = new Map<number, number>();
      for (const j of basket(u)) for (const { item, n } of partners[j]!) score.set(item, (score.get(item) ?? 0) + n);
      const scores = [...score.values()].sort((a, b) => b - a);
      // The same items up to ties at the cut: compare the scores of the lists.
      const top = Array.from(got.subarray(u * 12, (u + 1) * 12)).filter((i) => i >= 0);
      expect(top.map((i) => score.get(i))).toEqual(scores.slice(0, 12));
    }
  });
});
