/**
 * The no-graph baseline's DuckDB aggregates on the hand-written fixture (see examples.e2e.test.ts for the
 * rows): values worked out by hand, only earlier rows used, the target column never used.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/config/load.js';
import { buildGraph, type BuildResult } from '../../src/graph/build.js';
import { taskSplit } from '../../src/task/split.js';
import { buildTrainingTables } from '../../src/train/examples.js';
import type { Examples } from '../../src/task/task_spec.js';
import { targetExclusions } from '../../src/task/task_spec.js';
import { BOUNDARY_TRANSACTIONS, configWithTasks, retailFixture, type Fixture } from '../helpers/fixtures.js';
import { nodeKeys } from '../helpers/graph.js';

const DAY = 86400;
const TASKS = {
  churn: 'PREDICT COUNT(transactions.*, 0, 7, days) = 0 FOR EACH customers.customer_id',
  spend: 'PREDICT SUM(transactions.price, 0, 7, days) FOR EACH customers.customer_id',
  fraud: 'PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id',
};

let fx: Fixture;
let cfg: Config;
let built: BuildResult;
let keys: Record<string, string[]>;

beforeAll(async () => {
  fx = retailFixture({ transactions: BOUNDARY_TRANSACTIONS, config: configWithTasks(TASKS) });
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  built = await buildGraph(cfg);
  keys = { customers: await nodeKeys(built.dir, built.manifest, 'customers'), transactions: await nodeKeys(built.dir, built.manifest, 'transactions') };
});
afterAll(() => fx.cleanup());

async function baseline(task: keyof typeof TASKS, excluding = targetExclusions(cfg.taskSpecs[task]!)) {
  const spec = cfg.taskSpecs[task]!;
  const range = built.manifest.time_range!;
  const t = await buildTrainingTables(built.dir, built.manifest, spec, taskSplit(spec, { min: range[0], max: range[1] }), {
    seed: 0,
    baselineExcluding: new Set(excluding.map((e) => `${e.table}.${e.column}`)),
  });
  return { tables: t, base: t.baseline! };
}

/** The baseline row of an example, as name → value. */
function row(names: string[], X: Float32Array, ex: Examples, table: string, key: string, anchor?: number): Record<string, number> {
  let i = -1;
  for (let k = 0; k < ex.nodes.length; k++) if (keys[table]![ex.nodes[k]!] === key && (anchor === undefined || ex.anchors[k] === anchor)) i = k;
  expect(i, `example ${key}`).toBeGreaterThanOrEqual(0);
  return Object.fromEntries(names.map((n, c) => [n, X[i * names.length + c]!]));
}

function expectRow(actual: Record<string, number>, expected: Record<string, number>): void {
  expect(Object.keys(actual).sort()).toEqual(Object.keys(expected).sort());
  for (const [k, v] of Object.entries(expected)) expect(actual[k], k).toBeCloseTo(v, 5);
}

describe('entity-task baseline: counts, recency and numeric aggregates over rows up to the anchor', () => {
  const T0 = Date.parse('2020-01-06T00:00:00Z') / 1000;

  it('c1 at 2020-01-06 (rows 1 and 2 before it; nothing after the anchor counts)', async () => {
    const { tables, base } = await baseline('churn');
    const p = 'transactions.customer_id';
    const since = (T0 - Date.parse('2020-01-02T11:00:00Z') / 1000) / DAY;
    expectRow(row(base.names, base.train, tables.train, 'customers', 'c1', T0), {
      [`${p}:log_count_7d`]: Math.log(3),
      [`${p}:log_count_30d`]: Math.log(3),
      [`${p}:log_count_90d`]: Math.log(3),
      [`${p}:log_count_all`]: Math.log(3),
      [`${p}:log_days_since_last`]: Math.log(1 + since),
      [`${p}:never`]: 0,
      [`${p}:price_mean_90d`]: 0.04,
      [`${p}:price_log_sum_30d`]: Math.log(1.08),
      // fraud is a plain numeric column for churn (it is not churn's target)
      [`${p}:fraud_mean_90d`]: 0,
      [`${p}:fraud_log_sum_30d`]: 0,
    });
  });

  it('c4 at 2020-01-06 has no history: zero counts, 365 days since, never = 1', async () => {
    const { tables, base } = await baseline('churn');
    const r = row(base.names, base.train, tables.train, 'customers', 'c4', T0);
    expect(r['transactions.customer_id:log_count_all']).toBe(0);
    expect(r['transactions.customer_id:log_days_since_last']).toBeCloseTo(Math.log(366), 5);
    expect(r['transactions.customer_id:never']).toBe(1);
  });

  it('SUM(transactions.price) as the target: no price aggregate is a baseline feature', async () => {
    const { base } = await baseline('spend');
    expect(base.names.filter((n) => n.includes('price'))).toEqual([]);
    expect(base.names).toContain('transactions.customer_id:fraud_mean_90d');
  });
});

describe('fact-task baseline: per foreign key, the same parent\'s strictly earlier rows', () => {
  it('row 7 (c2 buys 0108775015 on 2020-01-26 08:30): values by hand', async () => {
    const { tables, base } = await baseline('fraud');
    const t7 = Date.parse('2020-01-26T08:30:00Z') / 1000;
    const c = 'transactions.customer_id';
    const a = 'transactions.article_id';
    expectRow(row(base.names, base.test, tables.test, 'transactions', '7'), {
      // c2 before: rows 3 (01-01 09:00) and 11 (01-13 00:00)
      [`${c}:log_prior_1d`]: 0,
      [`${c}:log_prior_7d`]: 0,
      [`${c}:log_prior_30d`]: Math.log(3),
      [`${c}:log_days_since_prev`]: Math.log(1 + (t7 - Date.parse('2020-01-13T00:00:00Z') / 1000) / DAY),
      [`${c}:first`]: 0,
      [`${c}:price_mean_30d`]: 0.06,
      [`${c}:price_log_ratio_to_30d_mean`]: 0,
      // 0108775015 before: rows 3, 1 (01-01) and 5 (01-20 12:00)
      [`${a}:log_prior_1d`]: 0,
      [`${a}:log_prior_7d`]: Math.log(2),
      [`${a}:log_prior_30d`]: Math.log(4),
      [`${a}:log_days_since_prev`]: Math.log(1 + (t7 - Date.parse('2020-01-20T12:00:00Z') / 1000) / DAY),
      [`${a}:first`]: 0,
      [`${a}:price_mean_30d`]: (0.05 + 0.05 + 0.04) / 3,
      [`${a}:price_log_ratio_to_30d_mean`]: Math.log(0.06 / ((0.05 + 0.05 + 0.04) / 3)),
    });
  });

  it('the first row of a customer has no prior rows (first = 1)', async () => {
    const { tables, base } = await baseline('fraud');
    const r = row(base.names, base.train, tables.train, 'transactions', '3');
    expect(r['transactions.customer_id:first']).toBe(1);
    expect(r['transactions.customer_id:log_prior_30d']).toBe(0);
  });

  it('the target column transactions.fraud is never a feature; without the exclusion it would be', async () => {
    expect((await baseline('fraud')).base.names.filter((n) => n.includes('fraud'))).toEqual([]);
    expect((await baseline('fraud', [])).base.names.filter((n) => n.includes('fraud')).length).toBeGreaterThan(0);
  });
});
