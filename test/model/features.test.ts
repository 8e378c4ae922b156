import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { bindFeatures, categoricalSizes, featureSpecFromGraph, numericDim, remapCodes, TIME_FEATURES, writeTimeFeatures } from '../../src/model/features.js';
import { retailFixture, type Fixture } from '../helpers/fixtures.js';
import { nodeKeys } from '../helpers/graph.js';

const DAY = 86400;
let fx: Fixture;
let graph: Graph;
let keys: Record<string, string[]>;

beforeAll(async () => {
  fx = retailFixture();
  const built = await buildGraph(loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts }));
  graph = Graph.load(built.dir);
  keys = { customers: await nodeKeys(built.dir, built.manifest, 'customers'), transactions: await nodeKeys(built.dir, built.manifest, 'transactions') };
});
afterAll(() => fx.cleanup());

describe('FeatureSpec from the graph', () => {
  it('lists each table\'s feature columns minus the excluded ones, and the widths follow from it', () => {
    const spec = featureSpecFromGraph(graph, [{ table: 'transactions', column: 'price', reason: 'test' }]);
    expect(spec.tables.customers).toMatchObject({ numeric: [{ name: 'age' }], has_time: false });
    expect(spec.tables.customers!.categorical.map((c) => c.name)).toContain('club_member_status');
    expect(spec.tables.transactions!.numeric.map((c) => c.name)).not.toContain('price');
    expect(spec.tables.transactions!.has_time).toBe(true);
    // 2 per numeric column (value, null flag), 2 per timestamp column, 8 time features for a timed table
    expect(numericDim(spec.tables.customers!)).toBe(2);
    expect(numericDim({ numeric: [], categorical: [], timestamps: ['x'], has_time: true })).toBe(2 + TIME_FEATURES);
    expect(categoricalSizes({ numeric: [], categorical: [{ name: 'a', vocab: ['x', 'y'] }, { name: 'b', vocab: [] }], timestamps: [], has_time: false })).toEqual([4, 2]);
  });
});

describe('TableFeatures.gather', () => {
  it('customers: standardized age with a null flag; categorical codes offset per column (0 null, 1 OOV)', () => {
    const spec = featureSpecFromGraph(graph, []);
    const f = bindFeatures(graph, spec).customers!;
    const n = graph.table('customers').rows;
    const num = new Float32Array(n * f.num_dim);
    const cat = new Int32Array(n * f.catCount);
    f.gather(Int32Array.from({ length: n }, (_, i) => i), () => 0, null, num, cat);
    const age = spec.tables.customers!.numeric[0]!;
    const c2 = keys.customers!.indexOf('c2');
    const c3 = keys.customers!.indexOf('c3');
    expect(num[c3 * 2]).toBeCloseTo((40 - age.mean) / age.std, 5);
    expect(num[c3 * 2 + 1]).toBe(0);
    expect([num[c2 * 2], num[c2 * 2 + 1]]).toEqual([0, 1]); // c2 has no age
    const club = spec.tables.customers!.categorical.findIndex((c) => c.name === 'club_member_status');
    const c4 = keys.customers!.indexOf('c4');
    expect(cat[c4 * f.catCount + club]! - f.catOffsets[club]!).toBe(0); // c4 has no status
    expect(cat[c3 * f.catCount + club]! - f.catOffsets[club]!).toBe(2 + spec.tables.customers!.categorical[club]!.vocab.indexOf('ACTIVE'));
  });

  it('numeric values are clipped to ±10 standard deviations', () => {
    const spec = featureSpecFromGraph(graph, []);
    spec.tables.customers!.numeric[0] = { name: 'age', mean: 0, std: 1 };
    const f = bindFeatures(graph, spec).customers!;
    const num = new Float32Array(f.num_dim);
    f.gather(Int32Array.of(keys.customers!.indexOf('c3')), () => 0, null, num, new Int32Array(f.catCount));
    expect(num[0]).toBe(10);
  });

  it('transactions: time features of the node seen from the anchor; never negative age', () => {
    const f = bindFeatures(graph, featureSpecFromGraph(graph, [])).transactions!;
    const node = keys.transactions!.indexOf('5'); // 2020-01-20 12:00
    const t = graph.table('transactions').time![node]!;
    expect(t).toBe(Date.parse('2020-01-20T12:00:00Z') / 1000);
    for (const anchor of [t, t + 3.5 * DAY, t - DAY]) {
      const num = new Float32Array(f.num_dim);
      f.gather(Int32Array.of(node), () => anchor, null, num, new Int32Array(f.catCount));
      const time = num.subarray(f.num_dim - TIME_FEATURES);
      const delta = Math.max(0, (anchor - t) / DAY);
      expect(time[0]).toBeCloseTo(Math.log1p(delta) / 5, 6);
      expect(time[1]).toBeCloseTo(delta / 365, 6);
      expect(time[2]).toBeCloseTo(Math.sin((2 * Math.PI * delta) / 7), 5);
      // 12:00 → hour angle π
      expect(time[4]).toBeCloseTo(0, 5);
      expect(time[5]).toBeCloseTo(-1, 5);
    }
    const out = new Float32Array(TIME_FEATURES);
    expect(writeTimeFeatures(out, 0, 0, 0)).toBe(TIME_FEATURES);
  });

  it('rows with valid = 0 are left untouched', () => {
    const f = bindFeatures(graph, featureSpecFromGraph(graph, [])).customers!;
    const num = new Float32Array(2 * f.num_dim).fill(7);
    f.gather(Int32Array.of(0, 1), () => 0, Uint8Array.of(0, 1), num, new Int32Array(2 * f.catCount));
    expect(Array.from(num.subarray(0, f.num_dim))).toEqual(new Array(f.num_dim).fill(7));
  });
});

describe('remapCodes: graph codes → the run\'s vocabulary', () => {
  it('keeps null and OOV, moves known values to the run\'s codes, sends unknown values to OOV', () => {
    // graph vocab [B, A, C] (codes 2, 3, 4); run vocab [A, B]
    expect(Array.from(remapCodes(Int32Array.of(0, 1, 2, 3, 4), ['B', 'A', 'C'], ['A', 'B']))).toEqual([0, 1, 3, 2, 1]);
  });

  it('returns the codes unchanged when the vocabularies are equal', () => {
    const codes = Int32Array.of(0, 2, 3);
    expect(remapCodes(codes, ['A', 'B'], ['A', 'B'])).toBe(codes);
  });
});
