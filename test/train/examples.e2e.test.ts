/**
 * Training tables on the hand-written retail fixture, against labels worked out by hand.
 *
 * Rows (BOUNDARY_TRANSACTIONS), in time order:
 *   3  01-01 09:00 c2 A15 0.05 fraud      |  9  01-20 00:00 c4 A01 0.10
 *   1  01-01 10:00 c1 A15 0.05            |  5  01-20 12:00 c3 A15 0.04
 *   2  01-02 11:00 c1 A44 0.03            |  6  01-25 12:00 c1 A01 (no price)
 *   4  01-09 09:00 c3 A01 0.02            |  7  01-26 08:30 c2 A15 0.06 fraud
 *  11  01-13 00:00 c2 A44 0.07 fraud      | 10  01-27 00:00 c4 A44 0.20
 *                                         |  8  01-27 18:00 c1 A44 0.01
 * Anchors (explicit split): train T0 = 01-06, val V = 01-13, test T = 01-20; 7-day windows (A, A + 7d]:
 *   T0: rows 4, 11 (11 sits exactly on the end: in)
 *   V:  row 9 (11 sits exactly on the start: out; 9 exactly on the end: in)
 *   T:  rows 5, 6, 7, 10 (9 exactly on the start: out; 10 exactly on the end: in; 8 after)
 * Past windows (A − 7d, A] for WHERE: T0 → rows 3, 1, 2; V → 4, 11 (on the anchor: in); T → 9 (11 on the start: out).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/config/load.js';
import { taskSchema } from '../../src/config/schema.js';
import { ConfigError, NotImplementedError } from '../../src/core/errors.js';
import { buildGraph, type BuildResult } from '../../src/graph/build.js';
import { readF64 } from '../../src/graph/graph.js';
import { taskSplit } from '../../src/task/split.js';
import { buildTrainingTables } from '../../src/train/examples.js';
import type { Examples } from '../../src/task/task_spec.js';
import { BOUNDARY_TRANSACTIONS, configWithTasks, retailFixture, type Fixture } from '../helpers/fixtures.js';
import { nodeKeys } from '../helpers/graph.js';

const A15 = '0108775015';
const A44 = '0108775044';
const A01 = '0110065001';
const ANCHOR = { T0: '2020-01-06T00:00:00Z', V: '2020-01-13T00:00:00Z', T: '2020-01-20T00:00:00Z' } as const;

const TASKS = {
  churn: 'PREDICT COUNT(transactions.*, 0, 7, days) = 0 FOR EACH customers.customer_id WHERE COUNT(transactions.*, -7, 0, days) > 0',
  article_count: 'PREDICT COUNT(transactions.*, 0, 7, days) FOR EACH articles.article_id',
  spend: 'PREDICT SUM(transactions.price, 0, 7, days) FOR EACH customers.customer_id',
  avg_price: 'PREDICT AVG(transactions.price, 0, 7, days) FOR EACH customers.customer_id',
  max_price: 'PREDICT MAX(transactions.price, 0, 7, days) FOR EACH articles.article_id',
  buys: 'PREDICT EXISTS(transactions.*, 0, 7, days) FOR EACH customers.customer_id',
  active_young: "PREDICT COUNT(transactions.*, 0, 7, days) FOR EACH customers.customer_id WHERE customers.club_member_status = 'ACTIVE' AND NOT customers.age > 30",
  lapsed_older:
    "PREDICT COUNT(transactions.*, 0, 7, days) FOR EACH customers.customer_id WHERE (customers.age > 30 OR customers.club_member_status = 'PRE-CREATE') AND NOT EXISTS(transactions.*, -7, 0, days)",
  fraud: 'PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id',
  fraud_store: 'PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id WHERE transactions.sales_channel_id = 2',
  bad_column: 'PREDICT SUM(transactions.prize, 0, 7, days) FOR EACH customers.customer_id',
  other_table_filter: "PREDICT COUNT(transactions.*, 0, 7, days) FOR EACH customers.customer_id WHERE articles.colour_group_name = 'Black'",
  fact_aggregate_filter: 'PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id WHERE COUNT(transactions.*, -7, 0, days) > 0',
};

/** One example as [anchor (ISO or a name from ANCHOR), primary key, label]. */
type Row = [string, string, number];

let fx: Fixture;
let cfg: Config;
let built: BuildResult;
let keys: Record<string, string[]>;

beforeAll(async () => {
  fx = retailFixture({ transactions: BOUNDARY_TRANSACTIONS, config: configWithTasks(TASKS) });
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  built = await buildGraph(cfg);
  keys = {};
  for (const t of ['customers', 'articles', 'transactions']) keys[t] = await nodeKeys(built.dir, built.manifest, t);
});
afterAll(() => fx.cleanup());

async function tables(task: string, maxTrain?: number, seed = 0) {
  const spec = cfg.taskSpecs[task]!;
  const t = maxTrain ? { ...spec, split: { ...spec.split, max_train_examples: maxTrain } } : spec;
  const range = built.manifest.time_range!;
  const split = taskSplit(t, { min: range[0], max: range[1] });
  return buildTrainingTables(built.dir, built.manifest, t, split, { seed });
}

function rows(ex: Examples, table: string): Row[] {
  const out: Row[] = [];
  for (let i = 0; i < ex.nodes.length; i++) {
    out.push([new Date(ex.anchors[i]! * 1000).toISOString().replace('.000Z', 'Z'), keys[table]![ex.nodes[i]!]!, Math.round(ex.labels[i]! * 1e6) / 1e6]);
  }
  return out;
}

function expand(expected: Row[]): Row[] {
  const sorted = expected.map(([a, k, y]): Row => [ANCHOR[a as keyof typeof ANCHOR] ?? a, k, y]);
  return sorted.sort((x, y) => x[0].localeCompare(y[0]) || x[1].localeCompare(y[1]));
}

const sortRows = (r: Row[]): Row[] => [...r].sort((x, y) => x[0].localeCompare(y[0]) || x[1].localeCompare(y[1]));

describe('entity-task labels at explicit anchors match labels computed by hand', () => {
  const cases: { task: keyof typeof TASKS; entity: string; train: Row[]; val: Row[]; test: Row[] }[] = [
    {
      task: 'churn',
      entity: 'customers',
      // only customers active in the past week are examples; label 1 = no transaction next week
      train: [['T0', 'c1', 1], ['T0', 'c2', 0]],
      val: [['V', 'c2', 1], ['V', 'c3', 1]],
      test: [['T', 'c4', 0]],
    },
    {
      task: 'article_count',
      entity: 'articles',
      train: [['T0', A15, 0], ['T0', A44, 1], ['T0', A01, 1]],
      val: [['V', A15, 0], ['V', A44, 0], ['V', A01, 1]],
      test: [['T', A15, 2], ['T', A44, 1], ['T', A01, 1]],
    },
    {
      task: 'spend',
      entity: 'customers',
      // SUM over no rows (or only a NULL price: c1 at T) is 0
      train: [['T0', 'c1', 0], ['T0', 'c2', 0.07], ['T0', 'c3', 0.02], ['T0', 'c4', 0]],
      val: [['V', 'c1', 0], ['V', 'c2', 0], ['V', 'c3', 0], ['V', 'c4', 0.1]],
      test: [['T', 'c1', 0], ['T', 'c2', 0.06], ['T', 'c3', 0.04], ['T', 'c4', 0.2]],
    },
    {
      task: 'avg_price',
      entity: 'customers',
      // AVG over no rows is undefined: those entities are dropped (c1 at T has a row, but its price is NULL)
      train: [['T0', 'c2', 0.07], ['T0', 'c3', 0.02]],
      val: [['V', 'c4', 0.1]],
      test: [['T', 'c2', 0.06], ['T', 'c3', 0.04], ['T', 'c4', 0.2]],
    },
    {
      task: 'max_price',
      entity: 'articles',
      train: [['T0', A44, 0.07], ['T0', A01, 0.02]],
      val: [['V', A01, 0.1]],
      test: [['T', A15, 0.06], ['T', A44, 0.2]],
    },
    {
      task: 'buys',
      entity: 'customers',
      train: [['T0', 'c1', 0], ['T0', 'c2', 1], ['T0', 'c3', 1], ['T0', 'c4', 0]],
      val: [['V', 'c1', 0], ['V', 'c2', 0], ['V', 'c3', 0], ['V', 'c4', 1]],
      test: [['T', 'c1', 1], ['T', 'c2', 1], ['T', 'c3', 1], ['T', 'c4', 1]],
    },
    {
      task: 'active_young',
      entity: 'customers',
      // c1 is the only ACTIVE customer aged ≤ 30 (c3 is 40, c4 has no status, c2 is PRE-CREATE)
      train: [['T0', 'c1', 0]],
      val: [['V', 'c1', 0]],
      test: [['T', 'c1', 1]],
    },
    {
      task: 'lapsed_older',
      entity: 'customers',
      // age > 30 or PRE-CREATE: c2 (age NULL, but PRE-CREATE), c3, c4; minus those active in the past week
      train: [['T0', 'c3', 1], ['T0', 'c4', 0]],
      val: [['V', 'c4', 1]],
      test: [['T', 'c2', 1], ['T', 'c3', 1]],
    },
  ];
  for (const c of cases) {
    it(c.task, async () => {
      const t = await tables(c.task);
      expect(sortRows(rows(t.train, c.entity))).toEqual(expand(c.train));
      expect(sortRows(rows(t.val, c.entity))).toEqual(expand(c.val));
      expect(sortRows(rows(t.test, c.entity))).toEqual(expand(c.test));
    });
  }
});

describe('default anchors (no split given): test = newest time rounded up to midnight − 7 days, then back by the window', () => {
  it('article_count at 2020-01-07 / 01-14 / 01-21 (newest row 01-27 18:00 → 01-28)', async () => {
    const spec = { ...cfg.taskSpecs.article_count!, split: taskSchema.shape.split.parse({}) };
    const range = built.manifest.time_range!;
    const split = taskSplit(spec, { min: range[0], max: range[1] });
    const t = await buildTrainingTables(built.dir, built.manifest, spec, split, { seed: 0 });
    const d = (day: string) => `2020-01-${day}T00:00:00Z`;
    expect(sortRows(rows(t.train, 'articles'))).toEqual(expand([[d('07'), A15, 0], [d('07'), A44, 1], [d('07'), A01, 1]]));
    expect(sortRows(rows(t.val, 'articles'))).toEqual(expand([[d('14'), A15, 1], [d('14'), A44, 0], [d('14'), A01, 1]]));
    expect(sortRows(rows(t.test, 'articles'))).toEqual(expand([[d('21'), A15, 1], [d('21'), A44, 2], [d('21'), A01, 1]]));
  });
});

describe('fact-task labels: each row at its own time, split at the val and test anchors', () => {
  const at = (s: string): string => `2020-01-${s.replace(' ', 'T')}:00Z`;
  const cases: { task: keyof typeof TASKS; train: Row[]; val: Row[]; test: Row[] }[] = [
    {
      task: 'fraud',
      // row 11 sits exactly on the val anchor (train); row 9 exactly on the test anchor (val)
      train: [[at('01 09:00'), '3', 1], [at('01 10:00'), '1', 0], [at('02 11:00'), '2', 0], [at('09 09:00'), '4', 0], [at('13 00:00'), '11', 1]],
      val: [[at('20 00:00'), '9', 0]],
      test: [[at('20 12:00'), '5', 0], [at('25 12:00'), '6', 0], [at('26 08:30'), '7', 1], [at('27 00:00'), '10', 0], [at('27 18:00'), '8', 0]],
    },
    {
      task: 'fraud_store',
      train: [[at('01 09:00'), '3', 1], [at('01 10:00'), '1', 0], [at('09 09:00'), '4', 0]],
      val: [[at('20 00:00'), '9', 0]],
      test: [[at('26 08:30'), '7', 1]],
    },
  ];
  for (const c of cases) {
    it(c.task, async () => {
      const t = await tables(c.task);
      expect(rows(t.train, 'transactions')).toEqual(sortRows(c.train));
      expect(rows(t.val, 'transactions')).toEqual(sortRows(c.val));
      expect(rows(t.test, 'transactions')).toEqual(sortRows(c.test));
    });
  }

  it('fact examples are anchored at their own row time (node time = anchor)', async () => {
    const t = await tables('fraud');
    const time = readF64(join(built.dir, built.manifest.tables.transactions!.time_file!));
    for (const ex of [t.train, t.val, t.test]) for (let i = 0; i < ex.nodes.length; i++) expect(ex.anchors[i]).toBe(time[ex.nodes[i]!]);
  });
});

describe('training-table options and errors', () => {
  const subsample = [0, 1, 2, 3, 4, 5].flatMap((seed) => [1, 3].map((max) => ({ seed, max })));
  it.each(subsample)('max_train_examples $max keeps exactly that many training rows, the same ones every time (seed $seed)', async ({ seed, max }) => {
    const full = await tables('spend', undefined, seed);
    expect(full.train.nodes.length).toBe(4);
    const a = await tables('spend', max, seed);
    const b = await tables('spend', max, seed);
    expect(a.train.nodes.length).toBe(max);
    expect(Array.from(a.train.nodes)).toEqual(Array.from(b.train.nodes));
    // the kept rows are training rows with their own labels
    const all = new Map(rows(full.train, 'customers').map((r) => [`${r[0]}|${r[1]}`, r[2]]));
    for (const r of rows(a.train, 'customers')) expect(all.get(`${r[0]}|${r[1]}`)).toBe(r[2]);
    // val and test are never subsampled
    expect(a.val.nodes.length).toBe(4);
    expect(a.test.nodes.length).toBe(4);
  });

  it('an unknown target column fails with a did-you-mean', async () => {
    await expect(tables('bad_column')).rejects.toThrow(ConfigError);
    await expect(tables('bad_column')).rejects.toThrow(/tasks\.bad_column\.query: transactions\.prize is not a column \(did you mean "price"\?\)/);
  });

  it.each([
    ['other_table_filter', /WHERE on articles\.colour_group_name: only the entity table's own columns \(customers\) can be filtered directly/],
    ['fact_aggregate_filter', /a fact-row task can filter on its own columns only/],
  ] as const)('%s is refused as not implemented', async (task, message) => {
    await expect(tables(task)).rejects.toThrow(NotImplementedError);
    await expect(tables(task)).rejects.toThrow(message);
  });
});
