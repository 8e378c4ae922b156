/**
 * The distilled model's training data against hand-built tables: RTI element lists (exact rows, most
 * recent first, truncation, the real_time_offset boundary, other parents never, −1 where there is no
 * history), checked by hand on the retail fixture and against a brute-force reference on a generated one;
 * and which embedding snapshot an example reads, at the offset boundaries, for snapshots computed in
 * memory (`computedEmbeddings`) and read from files (`fileEmbeddings`).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, parseHopPath, type Config } from '../../src/config/load.js';
import type { HopPath } from '../../src/task/task_spec.js';
import { EmbedPool } from '../../src/embed/pool.js';
import { computedEmbeddings, denseValues, embeddingFiles, fileEmbeddings, gridAnchor, rtiElements } from '../../src/distill/data.js';
import { embedExact, tableDepth } from '../../src/embed/layerwise.js';
import { ArtifactError, DataError } from '../../src/core/errors.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import type { DeepModel } from '../../src/model/deep_model.js';
import { setQuiet } from '../../src/core/log.js';
import { Rng } from '../../src/core/rng.js';
import { randomDeepModel } from '../helpers/deep_model.js';
import { CONFIG, retailFixture, type Fixture } from '../helpers/fixtures.js';
import { nodeKeys } from '../helpers/graph.js';
import { RTI_PATH, maxAbsDiff, sqlPath, sqlRows } from '../helpers/pipeline.js';

const HOUR = 3600;
const DAY = 86400;
const ts = (s: string): number => Date.parse(`${s.replace(' ', 'T')}Z`) / 1000;

// Customers get a creation time, so "an entity created after the snapshot" exists (c4).
const CUSTOMERS = `customer_id,age,club_member_status,postal_code,created
c1,25,ACTIVE,p1,2019-12-01 00:00:00
c2,,PRE-CREATE,p2,2019-12-15 00:00:00
c3,40,ACTIVE,p3,2020-01-01 00:00:00
c4,33,,p4,2020-01-04 01:00:00
`;

// c1's rows straddle the boundaries: t5 − 1 h is exactly t6, and t4 is one second before it; t10 ties t5.
// c99 matches no customer (its FK is dropped): that row has no parent and so no history. c2's two rows 7
// and 12 tie: most recent first puts the higher node (ties are numbered by primary key) first.
const TRANSACTIONS = `transaction_id,t_dat,customer_id,article_id,price,sales_channel_id,fraud
1,2020-01-01 10:00:00,c1,0108775015,0.05,2,0
2,2020-01-02 10:00:00,c1,0108775044,0.03,1,0
3,2020-01-03 10:00:00,c1,0110065001,0.02,2,0
4,2020-01-03 10:59:59,c1,0108775015,0.04,1,0
5,2020-01-03 12:00:00,c1,0108775044,0.06,2,1
6,2020-01-03 11:00:00,c1,0110065001,0.01,1,0
7,2020-01-02 12:00:00,c2,0108775015,0.05,2,0
8,2020-01-05 12:00:00,c2,0108775044,0.07,1,1
9,2020-01-03 08:00:00,c3,0110065001,0.02,2,0
10,2020-01-03 12:00:00,c1,0108775015,0.03,1,0
11,2020-01-04 09:00:00,c99,0108775015,0.03,1,0
12,2020-01-02 12:00:00,c2,0110065001,0.02,2,0
`;

/** Expected RTI elements (transaction ids, most recent first, untruncated) per fact row, per real_time_offset. */
const EXPECTED: Record<string, Record<number, number[]>> = {
  // offset 0: strictly before t, so the tie 5/10 never sees the other
  '0': { 1: [], 2: [1], 3: [2, 1], 4: [3, 2, 1], 5: [6, 4, 3, 2, 1], 6: [4, 3, 2, 1], 7: [], 8: [12, 7], 9: [], 10: [6, 4, 3, 2, 1], 11: [], 12: [] },
  // 1 hour: row 5's cut-off 11:00 excludes 6 (exactly at it) and keeps 4 (one second earlier); row 3's cut 09:00 drops nothing new
  '3600': { 1: [], 2: [1], 3: [2, 1], 4: [2, 1], 5: [4, 3, 2, 1], 6: [2, 1], 7: [], 8: [12, 7], 9: [], 10: [4, 3, 2, 1], 11: [], 12: [] },
  // 1 day: row 3's cut-off is exactly row 2's time
  '86400': { 1: [], 2: [], 3: [1], 4: [2, 1], 5: [2, 1], 6: [2, 1], 7: [], 8: [12, 7], 9: [], 10: [2, 1], 11: [], 12: [] },
};

let fx: Fixture;
let cfg: Config;
let graph: Graph;
/** transaction node → transaction_id */
let txId: number[];
let scratch: string;

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = retailFixture({
    customers: CUSTOMERS,
    transactions: TRANSACTIONS,
    config: CONFIG.replace('customers: { path: customers.csv, primary_key: customer_id }', 'customers: { path: customers.csv, primary_key: customer_id, time_column: created }'),
  });
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  graph = Graph.load((await buildGraph(cfg)).dir);
  txId = (await nodeKeys(graph.dir, graph.manifest, 'transactions')).map(Number);
  scratch = mkdtempSync(join(tmpdir(), 'gnnctl-distill-data-'));
});
afterAll(() => {
  fx?.cleanup();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  setQuiet(false);
});

function hop(maxLength: number, c: Config = cfg): HopPath {
  const h = parseHopPath(RTI_PATH, maxLength, c.data.tables);
  if (typeof h === 'string') throw new Error(h);
  return h;
}

/** rtiElements for the given fact nodes, as transaction ids per row (−1 slots dropped after checking they trail). */
async function rtiIds(maxLength: number, offset: number, nodes: Int32Array, ids: number[] = txId, g: Graph = graph, c: Config = cfg): Promise<number[][]> {
  const out = await rtiElements(g, hop(maxLength, c), nodes, offset);
  expect(out.length).toBe(nodes.length * maxLength);
  return Array.from(nodes, (_, i) => {
    const row = Array.from(out.subarray(i * maxLength, (i + 1) * maxLength));
    const n = row.indexOf(-1) < 0 ? maxLength : row.indexOf(-1);
    expect(row.slice(n).every((v) => v === -1), `padding trails in row ${i}`).toBe(true);
    return row.slice(0, n).map((v) => ids[v]!);
  });
}

describe('rtiElements on a hand-built graph', () => {
  const cases = [0, 3600, 86400].flatMap((offset) => [1, 2, 3, 8].map((maxLength) => ({ offset, maxLength })));
  it.each(cases)('real_time_offset $offset s, maxLength $maxLength: exact rows, most recent first, truncated', async ({ offset, maxLength }) => {
    const all = Int32Array.from({ length: txId.length }, (_, i) => i);
    const got = await rtiIds(maxLength, offset, all);
    const expected = txId.map((id) => EXPECTED[String(offset)]![id]!.slice(0, maxLength));
    expect(Object.fromEntries(txId.map((id, i) => [id, got[i]]))).toEqual(Object.fromEntries(txId.map((id, i) => [id, expected[i]])));
  });

  it('nothing at or after t − real_time_offset: the element exactly at the cut-off is out, one second earlier is in', async () => {
    const node = (id: number) => txId.indexOf(id);
    const [row5] = await rtiIds(8, HOUR, Int32Array.of(node(5)));
    expect(row5).not.toContain(6); // 11:00:00 = t5 − 1 h
    expect(row5![0]).toBe(4); // 10:59:59
  });

  it('a subset of fact rows gets the same lists as the whole table; rows in between are not examples', async () => {
    const nodes = Int32Array.of(txId.indexOf(2), txId.indexOf(8), txId.indexOf(11)).sort();
    const got = await rtiIds(8, HOUR, nodes);
    expect(got).toEqual(Array.from(nodes, (v) => EXPECTED['3600']![txId[v]!]!));
  });

  it('no examples: an empty result', async () => {
    expect((await rtiElements(graph, hop(4), new Int32Array(0), 0)).length).toBe(0);
  });
});

describe('rtiElements against a brute-force reference on a generated table', () => {
  // 400 transactions of 12 customers (and one unknown) at times on a coarse grid, so ties are common.
  let gen: { fx: Fixture; cfg: Config; graph: Graph; ids: number[] };
  beforeAll(async () => {
    const rng = new Rng(11);
    const customers = ['customer_id,age', ...Array.from({ length: 12 }, (_, i) => `k${i},${20 + i}`)].join('\n');
    const t0 = ts('2020-01-01 00:00:00');
    const rows = Array.from({ length: 400 }, (_, i) => {
      const t = new Date((t0 + rng.int(200) * 30 * 60) * 1000).toISOString().slice(0, 19).replace('T', ' ');
      const c = rng.next() < 0.03 ? 'nobody' : `k${rng.int(12)}`;
      return `${i + 1},${t},${c},0108775015,${(rng.next() * 0.1).toFixed(4)},1,0`;
    });
    const f = retailFixture({ customers: `${customers}\n`, transactions: `transaction_id,t_dat,customer_id,article_id,price,sales_channel_id,fraud\n${rows.join('\n')}\n` });
    const c = loadConfig(f.config, { cwd: f.dir, artifacts: f.artifacts });
    const g = Graph.load((await buildGraph(c)).dir);
    gen = { fx: f, cfg: c, graph: g, ids: (await nodeKeys(g.dir, g.manifest, 'transactions')).map(Number) };
  });
  afterAll(() => gen?.fx.cleanup());

  /** Same parent, time < t − offset, most recent first (ties: the higher node first), at most N. */
  function reference(g: Graph, offset: number, N: number): number[][] {
    const parent = g.edges.find((e) => e.name === 'transactions.customer_id->customers')!.parent!;
    const t = g.table('transactions').time!;
    return Array.from({ length: t.length }, (_, x) => {
      if (parent[x]! < 0) return [];
      const els: number[] = [];
      for (let v = 0; v < t.length; v++) if (parent[v] === parent[x] && t[v]! < t[x]! - offset) els.push(v);
      return els.sort((a, b) => t[b]! - t[a]! || b - a).slice(0, N);
    });
  }

  it.each([
    { offset: 0, max_length: 5 },
    { offset: 1800, max_length: 5 },
    { offset: 7200, max_length: 32 },
  ])('real_time_offset $offset s, max_length $max_length: every row equals the reference', async ({ offset, max_length: maxLength }) => {
    const nodes = Int32Array.from({ length: gen.ids.length }, (_, i) => i);
    const got = await rtiIds(maxLength, offset, nodes, gen.ids, gen.graph, gen.cfg);
    const ref = reference(gen.graph, offset, maxLength).map((r) => r.map((v) => gen.ids[v]!));
    expect(got).toEqual(ref);
    expect(got.filter((r) => r.length === 0).length).toBeGreaterThan(0);
    expect(got.filter((r) => r.length === Math.min(maxLength, 5)).length).toBeGreaterThan(0);
  });
});

describe('gridAnchor', () => {
  it.each([
    { t: ts('2020-01-03 00:00:00'), cadence: DAY, expected: ts('2020-01-03 00:00:00') },
    { t: ts('2020-01-03 23:59:59'), cadence: DAY, expected: ts('2020-01-03 00:00:00') },
    { t: ts('2020-01-02 23:59:59'), cadence: DAY, expected: ts('2020-01-02 00:00:00') },
    { t: ts('2020-01-03 07:30:00'), cadence: 6 * HOUR, expected: ts('2020-01-03 06:00:00') },
  ])('t $t, cadence $cadence → $expected (multiples of the cadence since the epoch)', ({ t, cadence, expected }) => {
    expect(gridAnchor(t, cadence)).toBe(expected);
  });
});

describe('computedEmbeddings: the grid snapshot an example reads', () => {
  // min 12 h, daily grid: example t reads a = ⌊(t − 12 h) / day⌋ · day when a ≥ t − max (30 h here, so
  // the max boundary falls between grid points; 2 days where a case needs an older snapshot).
  const D = ts('2020-01-03 00:00:00');
  const cases = [
    { name: 'snapshot exactly at t − min_offset is used', customer: 'c1', t: D + 12 * HOUR, max: 30 * HOUR, anchor: D },
    { name: 'one second earlier, the newer snapshot is not used', customer: 'c1', t: D + 12 * HOUR - 1, max: 2 * DAY, anchor: D - DAY },
    { name: 'snapshot exactly at t − max_offset is used', customer: 'c1', t: D + 30 * HOUR, max: 30 * HOUR, anchor: D },
    { name: 'snapshot older than t − max_offset: missing', customer: 'c1', t: D + 30 * HOUR + 1, max: 30 * HOUR, anchor: null },
    { name: 'entity created one hour after the snapshot: missing', customer: 'c4', t: D + DAY + 23 * HOUR, max: 30 * HOUR, anchor: null },
    { name: 'entity created before the snapshot', customer: 'c4', t: D + 2 * DAY + 12 * HOUR, max: 30 * HOUR, anchor: D + 2 * DAY },
    { name: 'entity created exactly at the snapshot', customer: 'c3', t: ts('2020-01-01 12:00:00'), max: 30 * HOUR, anchor: ts('2020-01-01 00:00:00') },
    { name: 'no parent: missing', customer: null, t: D + 12 * HOUR, max: 30 * HOUR, anchor: null },
  ];
  const offsets = (max: number) => ({ min: 12 * HOUR, max, cadence: DAY });
  let model: DeepModel;
  let customers: string[];
  beforeAll(async () => {
    model = randomDeepModel(graph, 'transactions', [1, 4]);
    customers = await nodeKeys(graph.dir, graph.manifest, 'customers');
  });
  afterAll(() => model?.dispose());

  it.each(cases)('$name', async ({ customer, t, max, anchor }) => {
    const p = customer === null ? -1 : customers.indexOf(customer);
    const r = await computedEmbeddings(model, Int32Array.of(p), Float64Array.of(t), 'customers', offsets(max), 1000);
    const C = model.spec.channels;
    if (anchor === null) {
      expect(Array.from(r.missing)).toEqual([1]);
      expect(Array.from(denseValues(r))).toEqual(new Array(C).fill(0));
      expect(r.anchors).toEqual([]);
      return;
    }
    expect(Array.from(r.missing)).toEqual([0]);
    expect(r.anchors).toEqual([anchor]);
    const depth = tableDepth(model, 'customers')!;
    expect(maxAbsDiff(denseValues(r), embedExact(model, 'customers', depth, Int32Array.of(p), anchor, 1000))).toBeLessThanOrEqual(1e-6);
  });

  it('the snapshots differ, so the checks above tell them apart (c1 before and after its 2020-01-02 and -03 rows)', () => {
    const p = Int32Array.of(customers.indexOf('c1'));
    const depth = tableDepth(model, 'customers')!;
    const [a, b, c] = [D - DAY, D, D + DAY].map((anchor) => embedExact(model, 'customers', depth, p, anchor, 1000));
    expect(maxAbsDiff(a!, b!)).toBeGreaterThan(1e-4);
    expect(maxAbsDiff(b!, c!)).toBeGreaterThan(1e-4);
  });

  it('many examples (max 30 h): each reads its own snapshot, one snapshot per anchor used', async () => {
    const same = cases.filter((c) => c.max === 30 * HOUR);
    const p = Int32Array.from(same, (c) => (c.customer === null ? -1 : customers.indexOf(c.customer)));
    const times = Float64Array.from(same, (c) => c.t);
    const r = await computedEmbeddings(model, p, times, 'customers', offsets(30 * HOUR), 1000);
    expect(Array.from(r.missing)).toEqual(same.map((c) => (c.anchor === null ? 1 : 0)));
    expect(r.anchors).toEqual([...new Set(same.flatMap((c) => (c.anchor === null ? [] : [c.anchor])))].sort((x, y) => x - y));
    const C = model.spec.channels;
    const depth = tableDepth(model, 'customers')!;
    same.forEach((c, i) => {
      if (c.anchor === null) return;
      expect(maxAbsDiff(r.values.subarray(i * C, (i + 1) * C), embedExact(model, 'customers', depth, Int32Array.of(p[i]!), c.anchor, 1000)), c.name).toBeLessThanOrEqual(1e-6);
    });
  });

  it.each([{ chunkSize: 1 }, { chunkSize: 2 }, { chunkSize: 16384 }])(
    'as-of pairs in chunks of $chunkSize equal the rows of the full daily snapshot (every fact row, customers and articles, 2-day max)',
    async ({ chunkSize }) => {
      const C = model.spec.channels;
      const rows = graph.table('transactions').rows;
      const nodes = Int32Array.from({ length: rows }, (_, i) => i);
      const times = Float64Array.from(graph.table('transactions').time!);
      const o = offsets(2 * DAY);
      for (const [target, column] of [['customers', 'customer_id'], ['articles', 'article_id']] as const) {
        const fk = graph.edges.find((e) => e.kind === 'fk' && e.src === 'transactions' && e.meta.column === column)!.parent!;
        const parents = Int32Array.from(nodes, (v) => fk[v]!);
        const r = await computedEmbeddings(model, parents, times, target, o, 1000, { chunkSize });
        const depth = tableDepth(model, target)!;
        const entityTime = graph.table(target).time;
        let checked = 0;
        for (const a of r.anchors) {
          // What a daily `embed` at anchor a computes: every entity existing at a, in one pass.
          const existing = Int32Array.from({ length: graph.table(target).rows }, (_, v) => v).filter((v) => !entityTime || entityTime[v]! <= a);
          const full = embedExact(model, target, depth, existing, a, 1000);
          for (let i = 0; i < rows; i++) {
            if (r.missing[i] || Math.floor((times[i]! - o.min) / DAY) * DAY !== a) continue;
            const k = existing.indexOf(parents[i]!);
            expect(Array.from(r.values.subarray(i * C, (i + 1) * C)), `${target} of row ${i} at ${a}`).toEqual(Array.from(full.subarray(k * C, (k + 1) * C)));
            checked++;
          }
        }
        expect(checked).toBe(rows - r.missing.reduce((x, m) => x + m, 0));
        expect(checked).toBeGreaterThan(5);
      }
    },
  );

  it('over an embed pool (two workers, chunks in flight) the pairs are the single-thread ones, bit for bit', async () => {
    const rows = graph.table('transactions').rows;
    const times = Float64Array.from(graph.table('transactions').time!);
    const fk = graph.edges.find((e) => e.kind === 'fk' && e.src === 'transactions' && e.meta.column === 'customer_id')!.parent!;
    const parents = Int32Array.from({ length: rows }, (_, v) => fk[v]!);
    const pool = await EmbedPool.start(2, model, 'wasm');
    expect(pool).not.toBeNull();
    try {
      const one = await computedEmbeddings(model, parents, times, 'customers', offsets(2 * DAY), 1000, { chunkSize: 2 });
      const two = await computedEmbeddings(model, parents, times, 'customers', offsets(2 * DAY), 1000, { chunkSize: 2, pool });
      expect(two.anchors).toEqual(one.anchors);
      expect(Array.from(two.missing)).toEqual(Array.from(one.missing));
      expect(one.anchors.length).toBeGreaterThan(3);
      expect(Array.from(denseValues(two))).toEqual(Array.from(denseValues(one)));
    } finally {
      await pool!.close();
    }
  });

  it('a target the model does not reach above its input layer is an ArtifactError', async () => {
    const shallow = randomDeepModel(graph, 'transactions', [1]);
    try {
      await expect(computedEmbeddings(shallow, Int32Array.of(0), Float64Array.of(D), 'customers', offsets(30 * HOUR), 1000)).rejects.toThrow(ArtifactError);
    } finally {
      shallow.dispose();
    }
  });
});

describe('fileEmbeddings: the snapshot file an example reads', () => {
  // Fact row 5 (c1, 2020-01-03 12:00); min 12 h, max 2 days. A snapshot's vectors hold [its index, 0.5].
  const offsets = { min: 12 * HOUR, max: 2 * DAY };
  const t5 = ts('2020-01-03 12:00:00');
  const cases = [
    { name: 'snapshot exactly at t − min_offset is used', snapshots: [{ at: t5 - 12 * HOUR, keys: ['c1', 'c2'] }], expected: 0 },
    { name: 'a newer snapshot (one second after t − min_offset) is not used', snapshots: [{ at: t5 - 12 * HOUR, keys: ['c1'] }, { at: t5 - 12 * HOUR + 1, keys: ['c1'] }], expected: 0 },
    { name: 'the newest usable of several', snapshots: [{ at: t5 - 40 * HOUR, keys: ['c1'] }, { at: t5 - 13 * HOUR, keys: ['c1'] }, { at: t5 - 20 * HOUR, keys: ['c1'] }], expected: 1 },
    { name: 'snapshot exactly at t − max_offset is used', snapshots: [{ at: t5 - 2 * DAY, keys: ['c1'] }], expected: 0 },
    { name: 'snapshot one second older than t − max_offset: missing', snapshots: [{ at: t5 - 2 * DAY - 1, keys: ['c1'] }], expected: null },
    { name: 'only newer snapshots: missing', snapshots: [{ at: t5 - 12 * HOUR + 1, keys: ['c1'] }, { at: t5, keys: ['c1'] }], expected: null },
    { name: 'entity created after the snapshot (not in it): missing', snapshots: [{ at: t5 - 12 * HOUR, keys: ['c2', 'c3'] }], expected: null },
  ];

  let n = 0;
  /** One Parquet file per snapshot: key, embedding [index, 0.5], anchor_time, as `embed` writes them. */
  async function writeSnapshots(snapshots: { at: number; keys: string[] }[], dim = 2): Promise<string[]> {
    const files: string[] = [];
    for (const [i, s] of snapshots.entries()) {
      const file = join(scratch, `snap-${n++}.parquet`);
      const vec = `[${[i, 0.5, 0, 0].slice(0, dim).join(', ')}]::FLOAT[]`;
      const values = s.keys.map((k) => `('${k}', ${vec}, make_timestamp(${s.at * 1e6}::BIGINT))`).join(', ');
      await sqlRows(`COPY (SELECT * FROM (VALUES ${values}) v(customer_id, embedding, anchor_time)) TO ${sqlPath(file)} (FORMAT parquet)`);
      files.push(file);
    }
    return files;
  }

  it.each(cases)('$name', async ({ snapshots, expected }) => {
    const files = await writeSnapshots(snapshots);
    const row5 = Int32Array.of(txId.indexOf(5));
    const r = await fileEmbeddings(graph, files, 'transactions', 'customer_id', 'customer_id', row5, offsets, 2);
    if (expected === null) {
      expect(Array.from(r.missing)).toEqual([1]);
      expect(Array.from(r.values)).toEqual([0, 0]);
    } else {
      expect(Array.from(r.missing)).toEqual([0]);
      expect(Array.from(r.values)).toEqual([expected, 0.5]);
    }
    expect(r.anchors).toEqual([...new Set(snapshots.map((s) => s.at))].sort((a, b) => a - b));
  });

  it('every fact row at once: each reads the newest snapshot within its own window; rows without a parent are missing', async () => {
    const daily = [-1, 0, 1, 2, 3].map((d) => ({ at: ts('2020-01-02 00:00:00') + d * DAY, keys: ['c1', 'c2', 'c3', 'c4'] }));
    const files = await writeSnapshots(daily);
    const nodes = Int32Array.from({ length: txId.length }, (_, i) => i);
    const r = await fileEmbeddings(graph, files, 'transactions', 'customer_id', 'customer_id', nodes, offsets, 2);
    const t = graph.table('transactions').time!;
    const parent = graph.edges.find((e) => e.name === 'transactions.customer_id->customers')!.parent!;
    nodes.forEach((v) => {
      const usable = daily.map((s, i) => ({ ...s, i })).filter((s) => s.at <= t[v]! - offsets.min && s.at >= t[v]! - offsets.max);
      const want = parent[v]! < 0 || usable.length === 0 ? null : usable.at(-1)!.i;
      expect({ id: txId[v], missing: r.missing[v], first: want === null ? 0 : r.values[v * 2] }).toEqual({ id: txId[v], missing: want === null ? 1 : 0, first: want ?? 0 });
    });
  });

  it('files of another dimension: ArtifactError naming both', async () => {
    const files = await writeSnapshots([{ at: t5 - 12 * HOUR, keys: ['c1'] }], 3);
    const err = await fileEmbeddings(graph, files, 'transactions', 'customer_id', 'customer_id', Int32Array.of(0), offsets, 2).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArtifactError);
    expect((err as Error).message).toMatch(/dimension 3, the base run 2/);
  });

  it('files without the key column: DataError', async () => {
    const files = await writeSnapshots([{ at: t5 - 12 * HOUR, keys: ['c1'] }]);
    const err = await fileEmbeddings(graph, files, 'transactions', 'article_id', 'article_id', Int32Array.of(0), offsets, 2).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DataError);
    expect((err as Error).message).toMatch(/lack a "article_id" or "embedding" column/);
  });

  it('embeddingFiles: a file, a folder of snapshot folders (sorted, dot-files skipped), a glob; a missing path is a DataError', async () => {
    const dir = mkdtempSync(join(scratch, 'tree-'));
    const files = await writeSnapshots([{ at: t5, keys: ['c1'] }]);
    const { cpSync, mkdirSync, writeFileSync } = await import('node:fs');
    for (const sub of ['20200103', '20200102']) {
      mkdirSync(join(dir, sub, 'customers'), { recursive: true });
      cpSync(files[0]!, join(dir, sub, 'customers', 'embeddings.parquet'));
    }
    writeFileSync(join(dir, '20200102', 'customers', '.tmp-embeddings.parquet-1-ab'), 'partial');
    writeFileSync(join(dir, '20200102', 'customers', 'manifest.json'), '{}');
    expect(embeddingFiles(files[0]!)).toEqual([files[0]]);
    expect(embeddingFiles(dir)).toEqual(['20200102', '20200103'].map((s) => join(dir, s, 'customers', 'embeddings.parquet')));
    expect(embeddingFiles(join(dir, '*', 'customers', '*.parquet'))).toEqual([join(dir, '*', 'customers', '*.parquet')]);
    expect(() => embeddingFiles(join(dir, 'nope'))).toThrow(DataError);
    expect(existsSync(dir)).toBe(true);
  });
});
