/**
 * Relational aggregates (src/graph/aggregates.ts): the planned features, their values against a
 * hand computation from the CSV, the `max` cap, and the leakage properties — appending rows dated after
 * the anchors changes no aggregate of an example at or before them, and rows dated exactly at an
 * example's time (a fact row's same-second siblings) are never read.
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { buildGraph } from '../../src/graph/build.js';
import { computeAggregates, planAggregates, type AggregatePlan } from '../../src/graph/aggregates.js';
import { formatFeatureListing } from '../../src/graph/inspect.js';
import { treeFeatureListing } from '../../src/train/tree_features.js';
import { readColumns, withDuck } from '../../src/data/duck.js';
import type { GraphManifest } from '../../src/artifacts/graph_manifest.js';
import { nodeKeys } from '../helpers/graph.js';
import { appendFutureRows, copyFixture, synthConfig, tinySynth, type SynthFixture } from '../helpers/synth.js';

const T = '2020-07-15T00:00:00Z';
const T_S = Date.parse(T) / 1000;
const DAY = 86400;
const CONFIG = synthConfig('', `  fit_until: "${T}"\n`);

interface Side {
  dir: string;
  manifest: GraphManifest;
  ids: Record<string, Map<string, number>>;
}

let before: SynthFixture;
let after: SynthFixture;
let A: Side;
let B: Side;
let ties: SynthFixture;
let C: Side;
/** transaction keys given a sibling at the same second by the same customer (and the siblings' keys) */
const tied: string[] = [];

async function side(fx: SynthFixture): Promise<Side> {
  const built = await buildGraph(loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts }));
  const ids: Record<string, Map<string, number>> = {};
  for (const t of ['customers', 'transactions']) ids[t] = new Map((await nodeKeys(built.dir, built.manifest, t)).map((k, i) => [k, i]));
  return { dir: built.dir, manifest: built.manifest, ids };
}

beforeAll(async () => {
  before = await tinySynth(CONFIG);
  after = copyFixture(before, 'data-with-future');
  appendFutureRows(after.dir, T, { transactions: 600, customers: 25, articles: 10, seed: 3, days: 60 });
  A = await side(before);
  B = await side(after);
  ties = copyFixture(before, 'data-with-ties');
  appendTies(ties.dir);
  C = await side(ties);
});
afterAll(() => before?.cleanup());

/** Gives 30 transactions before T a sibling: same customer and second, another article and price. */
function appendTies(dir: string): void {
  const lines = readFileSync(join(dir, 'transactions.csv'), 'utf8').trimEnd().split('\n').slice(1);
  let id = Math.max(...lines.map((l) => Number(l.split(',')[0]))) + 1;
  const picks = lines.filter((l) => Date.parse(`${l.split(',')[1]!.replace(' ', 'T')}Z`) / 1000 < T_S).filter((_, i) => i % 97 === 5).slice(0, 30);
  const added = picks.map((l, i) => {
    const f = l.split(',');
    const other = lines[(i * 131 + 7) % lines.length]!.split(',');
    tied.push(f[0]!, String(id));
    return [String(id++), f[1], f[2], other[3], String(Number(f[4]) * 3 + 1), f[5], f[6]].join(',');
  });
  appendFileSync(join(dir, 'transactions.csv'), `${added.join('\n')}\n`);
}

/** Values equal up to float summation order (window frames sum in whichever order DuckDB's segment tree holds), NaN where NaN. */
function expectSameAggregates(got: Map<string, number[]>, want: Map<string, number[]>): void {
  expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
  for (const [k, w] of want) {
    const g = got.get(k)!;
    expect(g.length).toBe(w.length);
    w.forEach((x, i) => {
      if (Number.isNaN(x)) expect(g[i], `${k}[${i}]`).toBeNaN();
      else expect(Math.abs(g[i]! - x), `${k}[${i}]: ${g[i]} vs ${x}`).toBeLessThanOrEqual(1e-12 * Math.max(1, Math.abs(x)));
    });
  }
}

/** Aggregates of (key, anchor) examples, keyed `key@anchor` → values (NaN kept). */
async function aggregatesOf(s: Side, plan: AggregatePlan, table: string, examples: [string, number][]): Promise<Map<string, number[]>> {
  return withDuck(async ({ conn }) => {
    const values = examples.map(([k, a]) => `(${a}, ${s.ids[table]!.get(k)!})`).join(', ');
    await conn.run(`CREATE TEMP TABLE examples AS SELECT * FROM (VALUES ${values}) v(anchor, node)`);
    const r = await computeAggregates(conn, s.dir, s.manifest, plan);
    const keyOf = new Map([...s.ids[table]!].map(([k, id]) => [id, k]));
    const out = new Map<string, number[]>();
    for (let i = 0; i < r.rows; i++) out.set(`${keyOf.get(r.node[i]!)}@${r.anchor[i]}`, r.columns.map((c) => c[i]!));
    return out;
  });
}

function customerExamples(): [string, number][] {
  const keys = [...A.ids.customers!.keys()];
  return keys.slice(0, 60).map((k, i): [string, number] => [k, [T_S, T_S - 10 * DAY, T_S - 45 * DAY][i % 3]!]);
}

describe('relational aggregates', () => {
  it('plans counts, recency, numeric windows, category shares and two-hop features, each with a reason', () => {
    const plan = planAggregates(A.manifest, 'customers', 'entity', { max: 10_000 });
    const names = plan.features.map((f) => f.name);
    expect(plan.features.length).toBe(plan.candidates);
    for (const n of [
      'transactions.customer_id:count_7d',
      'transactions.customer_id:count_all',
      'transactions.customer_id:days_since_last',
      'transactions.customer_id:price_mean_30d',
      'transactions.customer_id:price_sum_365d',
      'transactions.customer_id:price_last',
    ]) {
      expect(names).toContain(n);
    }
    expect(names.some((n) => n.startsWith('transactions.customer_id:sales_channel_id=') || n.includes('_share_'))).toBe(true);
    expect(names.some((n) => n.startsWith('transactions.customer_id->articles:'))).toBe(true);
    expect(new Set(names).size).toBe(names.length);
    for (const f of plan.features) expect(f.reason.length).toBeGreaterThan(20);
  });

  it('caps the count at max, keeping counts and recency first', () => {
    const plan = planAggregates(A.manifest, 'customers', 'entity', { max: 3 });
    expect(plan.candidates).toBeGreaterThan(3);
    expect(plan.features.map((f) => f.name)).toEqual(['transactions.customer_id:count_30d', 'transactions.customer_id:count_all', 'transactions.customer_id:days_since_last']);
  });

  it('computes values from rows strictly before the anchor (checked against the CSV)', async () => {
    // price as a target's history (a task predicting spend): its last-5 mean too
    const plan = planAggregates(A.manifest, 'customers', 'entity', { max: 10_000, history: new Set(['transactions.price']) });
    expect(plan.features.find((f) => f.name === 'transactions.customer_id:price_mean_last5')!.reason).toMatch(/^target history: /);
    const examples = customerExamples();
    const got = await aggregatesOf(A, plan, 'customers', examples);
    const tx = readFileSync(join(before.dir, 'transactions.csv'), 'utf8')
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((l) => l.split(','))
      .map((f) => ({ t: Date.parse(`${f[1]!.replace(' ', 'T')}Z`) / 1000, customer: f[2]!, price: Number(f[4]) }));
    const idx = (n: string): number => plan.features.findIndex((f) => f.name === `transactions.customer_id:${n}`);
    let withHistory = 0;
    let lastFive = 0;
    for (const [key, anchor] of examples) {
      const v = got.get(`${key}@${anchor}`)!;
      const rows = tx.filter((r) => r.customer === key && r.t < anchor);
      const recent = rows.filter((r) => r.t >= anchor - 30 * DAY);
      expect(v[idx('count_all')]).toBe(rows.length);
      expect(v[idx('count_30d')]).toBe(recent.length);
      if (recent.length) expect(v[idx('price_mean_30d')]!).toBeCloseTo(recent.reduce((s, r) => s + r.price, 0) / recent.length, 9);
      else expect(v[idx('price_mean_30d')]).toBeNaN();
      if (rows.length) {
        withHistory++;
        const last = Math.max(...rows.map((r) => r.t));
        expect(v[idx('days_since_last')]!).toBeCloseTo((anchor - last) / DAY, 9);
        const byTime = [...rows].sort((a, b) => a.t - b.t);
        const five = byTime.slice(-5);
        // a tie at the 5th latest time is ordered by row, which the CSV parse here does not track
        if (byTime.length <= 5 || byTime[byTime.length - 6]!.t < five[0]!.t) {
          lastFive++;
          expect(v[idx('price_mean_last5')]!).toBeCloseTo(five.reduce((s, r) => s + r.price, 0) / five.length, 9);
        }
      } else expect(v[idx('days_since_last')]).toBeNaN();
    }
    expect(withHistory).toBeGreaterThan(10);
    expect(lastFive).toBeGreaterThan(10);
  });

  it('appending rows dated after the anchors changes no aggregate (entity and fact-row examples)', async () => {
    const entity = planAggregates(A.manifest, 'customers', 'entity', { max: 10_000, history: new Set(['transactions.price']) });
    const ex = customerExamples();
    expectSameAggregates(await aggregatesOf(B, entity, 'customers', ex), await aggregatesOf(A, entity, 'customers', ex));

    // Fact rows at their own time, the newest before T included; the task's label column is never read.
    const fact = planAggregates(A.manifest, 'transactions', 'fact', { max: 10_000, excluded: new Set(['transactions.fraud']) });
    expect(fact.features.some((f) => f.name.includes('fraud'))).toBe(false);
    expect(fact.features.some((f) => f.name.startsWith('transactions.customer_id->transactions.customer_id:'))).toBe(true);
    const txKeys = [...A.ids.transactions!.keys()];
    const [t] = await withDuck(async ({ conn }) =>
      readColumns(conn, `SELECT __t::DOUBLE FROM read_parquet('${join(A.dir, A.manifest.tables.transactions!.rows_file)}') ORDER BY __node`, txKeys.length, ['f64']),
    );
    const times = Array.from(t!);
    const visible = times.findIndex((t) => t > T_S);
    const fx: [string, number][] = Array.from({ length: 40 }, (_, i) => visible - 1 - i * 37).map((n) => [txKeys[n]!, times[n]!]);
    const fa = await aggregatesOf(A, fact, 'transactions', fx);
    expectSameAggregates(await aggregatesOf(B, fact, 'transactions', fx), fa);
    expect([...fa.values()].some((v) => v.some((x) => x > 0))).toBe(true);
  });

  it("reads no row dated exactly at the example time: a fact row's same-second siblings, a transaction at an entity anchor", async () => {
    const tx = readFileSync(join(ties.dir, 'transactions.csv'), 'utf8')
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((l) => l.split(','))
      .map((f) => ({ id: f[0]!, t: Date.parse(`${f[1]!.replace(' ', 'T')}Z`) / 1000, customer: f[2]!, price: Number(f[4]) }));
    const byId = new Map(tx.map((r) => [r.id, r]));
    const strictly = (customer: string, t: number) => tx.filter((r) => r.customer === customer && r.t < t);

    const fact = planAggregates(C.manifest, 'transactions', 'fact', { max: 10_000, excluded: new Set(['transactions.fraud']) });
    const f = (n: string): number => fact.features.findIndex((x) => x.name === `transactions.customer_id->transactions.customer_id:${n}`);
    const fx = tied.map((id): [string, number] => [id, byId.get(id)!.t]);
    const got = await aggregatesOf(C, fact, 'transactions', fx);
    for (const [id, t] of fx) {
      const r = byId.get(id)!;
      // The tie is real: the row and its sibling share the customer and the second.
      expect(tx.filter((x) => x.customer === r.customer && x.t === t).length).toBeGreaterThanOrEqual(2);
      const rows = strictly(r.customer, t);
      const v = got.get(`${id}@${t}`)!;
      expect(v[f('count_all')]).toBe(rows.length);
      expect(v[f('price_sum_all')]!).toBeCloseTo(rows.reduce((s, x) => s + x.price, 0), 9);
      if (rows.length) expect(v[f('days_since_last')]!).toBeGreaterThan(0);
      else expect(v[f('days_since_last')]).toBeNaN();
    }

    const entity = planAggregates(C.manifest, 'customers', 'entity', { max: 10_000 });
    const e = (n: string): number => entity.features.findIndex((x) => x.name === `transactions.customer_id:${n}`);
    const ex = [...new Map(fx.map(([id, t]) => [byId.get(id)!.customer, t])).entries()];
    const eg = await aggregatesOf(C, entity, 'customers', ex);
    for (const [customer, t] of ex) {
      const rows = strictly(customer, t);
      expect(eg.get(`${customer}@${t}`)![e('count_all')]).toBe(rows.length);
      expect(eg.get(`${customer}@${t}`)![e('price_sum_all')]!).toBeCloseTo(rows.reduce((s, x) => s + x.price, 0), 9);
    }
  });

  it('lists the tree inputs of a task for graph inspect --features: every kept aggregate with its reason, and what features.max left out in the order it would take them back', () => {
    const config = join(before.dir, 'features-max.yaml');
    writeFileSync(config, synthConfig('tasks:\n  fraud:\n    query: PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id\nfeatures: { max: 5 }\n', `  fit_until: "${T}"\n`));
    const task = loadConfig(config, { cwd: before.dir }).taskSpecs.fraud!;
    const listing = treeFeatureListing(A.manifest, task);
    const all = planAggregates(A.manifest, 'transactions', 'fact', { max: 10_000, excluded: new Set(['transactions.fraud']) });
    expect(listing.max).toBe(5);
    expect(listing.candidates).toBe(all.candidates);
    expect(listing.aggregates.map((a) => a.name)).toEqual(planAggregates(A.manifest, 'transactions', 'fact', { max: 5, excluded: new Set(['transactions.fraud']) }).features.map((f) => f.name));
    expect(listing.left_out.length).toBe(all.candidates - 5);
    // The first left out is the one a cap of 6 adds.
    const six = planAggregates(A.manifest, 'transactions', 'fact', { max: 6, excluded: new Set(['transactions.fraud']) }).features.map((f) => f.name);
    expect(six.filter((n) => !listing.aggregates.some((a) => a.name === n))).toEqual([listing.left_out[0]!.name]);
    for (const a of listing.aggregates) {
      expect(a.name.startsWith(`${a.path}:`)).toBe(true);
      expect(['count', 'since']).toContain(a.function);
      expect(a.reason.length).toBeGreaterThan(20);
    }
    expect([...listing.aggregates, ...listing.left_out].some((a) => a.name.includes('fraud'))).toBe(false);
    const text = formatFeatureListing(listing);
    expect(text).toContain(`5 of ${all.candidates} aggregates (features.max 5: ${all.candidates - 5} left out)`);
    for (const a of listing.aggregates) expect(text).toContain(a.reason);
    expect(text).toContain(`    ${listing.left_out[0]!.name}`);
  });
});
