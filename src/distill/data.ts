/**
 * The distilled model's training data, computed in DuckDB: for each fact row, its last N interactions on
 * each hop path (window function + ASOF join, never a per-row JS loop), and its entities' embeddings as of
 * the newest snapshot inside [t − max_embedding_offset, t − min_embedding_offset] (ASOF join over the
 * snapshot files, or snapshots computed in memory on a fixed grid).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { HopPath } from '../task/task_spec.js';
import { lit, q, queryRows, queryValue, readColumns, withDuck, type TypedOut } from '../data/duck.js';
import type { DuckDBConnection } from '@duckdb/node-api';
import { embedExact, tableDepth } from '../embed/layerwise.js';
import type { EmbedPool } from '../embed/pool.js';
import { ArtifactError, DataError } from '../core/errors.js';
import type { Graph } from '../graph/graph.js';
import { rowsPath } from '../artifacts/graph_manifest.js';
import type { DeepModel } from '../model/deep_model.js';
import { info } from '../core/log.js';
import type { Progress } from '../core/progress.js';
import { sharedArray } from '../core/shared_memory.js';

/**
 * RTI element node ids per example, most recent first: [examples × maxLength], −1 where there is none.
 * Examples are the fact rows `nodes`; elements are child rows sharing the fact row's parent with
 * time < t − offset.
 */
export async function rtiElements(graph: Graph, hop: HopPath, nodes: Int32Array, offset: number): Promise<Int32Array> {
  const N = hop.max_length;
  const out = sharedArray(Int32Array, nodes.length * N).fill(-1);
  if (nodes.length === 0) return out;
  let lo = nodes[0]!;
  let hi = nodes[0]!;
  for (const v of nodes) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  const m = graph.manifest;
  const childFk = q(`__fk_${hop.child_column}`);
  const factFk = q(`__fk_${hop.fact_column}`);
  await withDuck(async ({ conn }) => {
    await conn.run(
      `CREATE TEMP TABLE c AS SELECT __node AS node, __t AS t, ${childFk} AS k, row_number() OVER (PARTITION BY ${childFk} ORDER BY __t, __node) AS rn ` +
        `FROM read_parquet(${lit(rowsPath(graph.dir, m, hop.child_table))}) WHERE ${childFk} IS NOT NULL`,
    );
    await conn.run(
      `CREATE TEMP TABLE f AS SELECT __node AS ex, __t - ${offset} AS cut, ${factFk} AS k FROM read_parquet(${lit(rowsPath(graph.dir, m, hop.fact_table))}) ` +
        `WHERE __node >= ${lo} AND __node <= ${hi} AND ${factFk} IS NOT NULL`,
    );
    // The newest element strictly before the cut-off, then the N rows of the same parent ending there. The
    // ASOF join matches one (parent, time) pair, so elements sharing the newest time count as one row
    // holding the highest rank (ASOF picks an arbitrary row among ties, which would drop the others).
    await conn.run('CREATE TEMP TABLE p AS SELECT f.ex, f.k, c.rn AS last FROM f ASOF JOIN (SELECT k, t, max(rn) AS rn FROM c GROUP BY k, t) c ON f.k = c.k AND f.cut > c.t');
    const sql = `SELECT p.ex, (p.last - c.rn)::INTEGER AS pos, c.node FROM p JOIN c ON c.k = p.k AND c.rn > p.last - ${N} AND c.rn <= p.last`;
    const n = Number(await queryValue(conn, `SELECT count(*) FROM (${sql})`));
    const [ex, pos, el] = (await readColumns(conn, sql, n, ['i32', 'i32', 'i32'])) as Int32Array[];
    // Example node → row in `nodes`.
    const rowOf = new Int32Array(hi - lo + 1).fill(-1);
    nodes.forEach((v, i) => (rowOf[v - lo] = i));
    for (let i = 0; i < n; i++) {
      const r = rowOf[ex![i]! - lo]!;
      if (r >= 0) out[r * N + pos![i]!] = el![i]!;
    }
  });
  return out;
}

/**
 * RTI element node ids for entity-task examples (entity node, anchor), most recent first:
 * [examples × maxLength], −1 where there is none. Elements are the entity's own child rows (the path
 * `entity.pk->child.fk`) with time < anchor − offset, read from the graph's time-sorted reverse CSR.
 */
export function entityRtiElements(graph: Graph, hop: HopPath, nodes: Int32Array, anchors: Float64Array, offset: number): Int32Array {
  const N = hop.max_length;
  const out = sharedArray(Int32Array, nodes.length * N).fill(-1);
  const rev = graph.edges.find((e) => e.kind === 'rev' && e.src === hop.parent_table && e.dst === hop.child_table && e.meta.column === hop.child_column);
  if (!rev) throw new ArtifactError(`the graph has no edge ${hop.parent_table}<-${hop.child_table}.${hop.child_column} for the hop path ${hop.text}`, { hint: 'rebuild the graph (gnnctl graph build --force)' });
  const indptr = rev.indptr!;
  const indices = rev.indices!;
  const time = graph.table(hop.child_table).time!;
  for (let i = 0; i < nodes.length; i++) {
    const v = nodes[i]!;
    const cut = anchors[i]! - offset;
    let lo = indptr[v]!;
    let hi = indptr[v + 1]!;
    const start = lo;
    // First child at or after the cut-off: the elements are the ones before it (strictly earlier).
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (time[indices[mid]!]! < cut) lo = mid + 1;
      else hi = mid;
    }
    for (let j = 0; j < N && lo - 1 - j >= start; j++) out[i * N + j] = indices[lo - 1 - j]!;
  }
  return out;
}

/** What the student reads of an example's vector: one row at a time. */
export interface ExampleVectors {
  readonly length: number;
  subarray(begin: number, end: number): Float32Array;
}

export interface EntityEmbeddings {
  /** [examples × dim]: dense from files, a view over distinct pairs when computed */
  values: ExampleVectors;
  /** 1 where no usable embedding exists (the model uses its learned fallback) */
  missing: Float32Array;
  /** snapshot anchors used (epoch seconds) */
  anchors: number[];
}

/** chunks `computedEmbeddings` keeps in flight on an embed pool */
const IN_FLIGHT = 4;

/** Snapshot anchors on a fixed grid: multiples of the cadence since the epoch (midnight-aligned for whole days). */
export function gridAnchor(t: number, cadence: number): number {
  return Math.floor(t / cadence) * cadence;
}

/**
 * As-of embeddings computed in memory with the base run's model, for exactly the (entity, snapshot) pairs
 * the examples read: example i uses the grid snapshot a = grid(t_i − min_offset), valid when
 * a ≥ t_i − max_offset and the entity existed at a. A daily `embed` would compute every entity at every
 * anchor (112 full passes for sixteen weeks of rows); here each anchor embeds only the distinct entities
 * its examples need, in chunks of at most `chunkSize` entities (exact layer-wise inference, so a vector
 * does not depend on which other entities share its chunk: it equals the full snapshot's row, a tested
 * property). Vectors are stored once per distinct pair, not per example (`index`), so memory follows the
 * pairs, and a progress line with an ETA counts them. With `pool` (embed/pool.ts) each chunk is split over
 * its worker threads — the same numbers, as exact mode does not depend on the chunk — so both cores
 * work: on one thread the fraud student's 1.45M pairs at `large` take 7 minutes.
 */
export async function computedEmbeddings(
  model: DeepModel,
  parents: Int32Array,
  times: Float64Array,
  target: string,
  offsets: { min: number; max: number; cadence: number },
  degreeCap: number,
  opts: { chunkSize?: number; progress?: Progress; pool?: EmbedPool | null } = {},
): Promise<EntityEmbeddings> {
  const depth = tableDepth(model, target);
  if (depth === null) {
    throw new ArtifactError(`the base model has no representation of ${target}, so it cannot provide its embeddings`, {
      hint: 'choose a base task whose model reaches that table (it must appear above the input layer of its tree)',
    });
  }
  const C = model.spec.channels;
  const n = parents.length;
  const entityTime = model.graph.table(target).time;
  // Each example's snapshot, then the distinct (anchor, entity) pairs sorted by anchor and entity.
  const anchorOf = new Float64Array(n).fill(NaN);
  for (let i = 0; i < n; i++) {
    const p = parents[i]!;
    if (p < 0) continue;
    const a = gridAnchor(times[i]! - offsets.min, offsets.cadence);
    if (a < times[i]! - offsets.max) continue;
    if (entityTime && entityTime[p]! > a) continue;
    anchorOf[i] = a;
  }
  const used = Int32Array.from({ length: n }, (_, i) => i).filter((i) => !Number.isNaN(anchorOf[i]!));
  used.sort((x, y) => anchorOf[x]! - anchorOf[y]! || parents[x]! - parents[y]!);
  const index = new Int32Array(n).fill(-1);
  const pairAnchor: number[] = [];
  const pairEntity: number[] = [];
  for (const i of used) {
    const k = pairAnchor.length - 1;
    if (k < 0 || pairAnchor[k] !== anchorOf[i] || pairEntity[k] !== parents[i]) {
      pairAnchor.push(anchorOf[i]!);
      pairEntity.push(parents[i]!);
    }
    index[i] = pairAnchor.length - 1;
  }
  const P = pairAnchor.length;
  const table = sharedArray(Float32Array, P * C);
  const chunkSize = opts.chunkSize ?? 16384;
  const progress = opts.progress;
  progress?.begin(`distill: ${target} embeddings`, P);
  const anchors: number[] = [];
  // With a pool, a few chunks are in flight at once, so a worker goes on to the next small snapshot (a
  // training day holds ~1,000 entities) without waiting for the other's part of this one.
  const inFlight: Promise<void>[] = [];
  let done = 0;
  for (let s = 0; s < P; ) {
    const a = pairAnchor[s]!;
    anchors.push(a);
    let e = s;
    while (e < P && pairAnchor[e] === a) e++;
    // One anchor's entities, chunk by chunk (they are sorted, so each chunk is ascending and distinct).
    for (let c = s; c < e; c += chunkSize) {
      const stop = Math.min(e, c + chunkSize);
      const nodes = Int32Array.from(pairEntity.slice(c, stop));
      const snapshot = anchors.length;
      const store = (emb: Float32Array): void => {
        table.set(emb, c * C);
        progress?.update((done += stop - c), `snapshot ${snapshot}`);
      };
      if (!opts.pool) store(embedExact(model, target, depth, nodes, a, degreeCap));
      else {
        inFlight.push(opts.pool.exact(target, depth, nodes, a, degreeCap, C).then(store));
        if (inFlight.length >= IN_FLIGHT) await inFlight.shift();
      }
    }
    s = e;
  }
  await Promise.all(inFlight);
  const missing = new Float32Array(n);
  for (let i = 0; i < n; i++) missing[i] = index[i]! < 0 ? 1 : 0;
  const summary = `distill: ${P.toLocaleString('en-US')} (${target}, snapshot) pairs over ${anchors.length} snapshots computed (${used.length} of ${n} examples have one)`;
  if (progress) progress.end(summary);
  else info(summary);
  return { values: new PairValues(table, index, C), missing, anchors };
}

/**
 * Example → vector view over a table of distinct (entity, snapshot) pairs: `subarray(i·dim, (i+1)·dim)`
 * is example i's vector (zeros when it has none), as on a dense [examples × dim] array, without the copy.
 */
export class PairValues {
  private readonly zeros: Float32Array;
  constructor(readonly table: Float32Array, readonly index: Int32Array, readonly dim: number) {
    this.zeros = new Float32Array(dim);
  }
  get length(): number {
    return this.index.length * this.dim;
  }
  /** Example i's vector (the begin offset must be a multiple of dim). */
  subarray(begin: number, end: number): Float32Array {
    const i = begin / this.dim;
    const k = this.index[i]!;
    if (end - begin !== this.dim || !Number.isInteger(i)) throw new RangeError('PairValues.subarray reads one example vector at a time');
    return k < 0 ? this.zeros : this.table.subarray(k * this.dim, (k + 1) * this.dim);
  }
  /** The dense [examples × dim] array (tests, small data). */
  dense(): Float32Array {
    const out = new Float32Array(this.length);
    for (let i = 0; i < this.index.length; i++) out.set(this.subarray(i * this.dim, (i + 1) * this.dim), i * this.dim);
    return out;
  }
}

/** The Parquet files of `--embeddings PATH|DIR` (a file, a folder of snapshots, or a glob). */
export function embeddingFiles(path: string): string[] {
  if (/[*?[]/.test(path)) return [path];
  if (!existsSync(path)) throw new DataError(`embeddings not found: ${path}`, { where: '--embeddings', hint: 'pass a file, a folder of snapshot folders, or a glob' });
  if (statSync(path).isFile()) return [path];
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir)) {
      if (e.startsWith('.')) continue;
      const p = join(dir, e);
      if (statSync(p).isDirectory()) walk(p);
      else if (/\.parquet$/.test(e)) files.push(p);
    }
  };
  walk(path);
  if (!files.length) throw new DataError(`no .parquet files under ${path}`, { where: '--embeddings' });
  return files.sort();
}

/**
 * Embeddings from snapshot files (key, embedding, anchor_time): ASOF join of each example's key and time
 * (t − min_offset) with the snapshots, rejected when older than t − max_offset.
 */
export async function fileEmbeddings(
  graph: Graph,
  files: string[],
  factTable: string,
  keyColumn: string,
  targetKey: string,
  nodes: Int32Array,
  offsets: { min: number; max: number },
  dim: number,
): Promise<EntityEmbeddings & { values: Float32Array }> {
  const n = nodes.length;
  const values = sharedArray(Float32Array, n * dim);
  const missing = new Float32Array(n).fill(1);
  if (n === 0) return { values, missing, anchors: [] };
  return withDuck(async ({ conn }) => {
    await loadSnapshots(conn, files, targetKey, dim, 'pass files written by `gnnctl embed` for the embedded table');
    await conn.run(
      `CREATE TEMP TABLE f AS SELECT __node AS ex, __t AS t, CAST(${q(keyColumn)} AS VARCHAR) AS k FROM read_parquet(${lit(rowsPath(graph.dir, graph.manifest, factTable))}) ` +
        `WHERE __node >= ${nodes[0]} AND __node <= ${nodes[n - 1]}`,
    );
    const { count, ex, arrays } = await asofSnapshots(conn, offsets, dim);
    const rowOf = new Map<number, number>();
    nodes.forEach((v, i) => rowOf.set(v, i));
    const anchorsSeen = (await queryRows<{ a: number }>(conn, 'SELECT DISTINCT a FROM e ORDER BY a')).map((r) => r.a);
    for (let i = 0; i < count; i++) {
      const r = rowOf.get(ex[i]!);
      if (r === undefined) continue;
      for (let j = 0; j < dim; j++) values[r * dim + j] = (arrays[j + 1] as Float32Array)[i]!;
      missing[r] = 0;
    }
    return { values, missing, anchors: anchorsSeen };
  });
}

/** An EntityEmbeddings' values as a dense [examples × dim] array. */
export function denseValues(e: EntityEmbeddings): Float32Array {
  return e.values instanceof Float32Array ? e.values : (e.values as PairValues).dense();
}

/**
 * Embeddings from snapshot files for entity-task examples (entity node, anchor): the entity's own key
 * ASOF-joined with the snapshots at anchor − min_offset, rejected when older than anchor − max_offset —
 * the rule `fileEmbeddings` applies to fact rows, with the example's anchor as its time. The examples go
 * to DuckDB through an appender (one row each), since an entity appears once per anchor.
 */
export async function entityFileEmbeddings(
  graph: Graph,
  files: string[],
  table: string,
  keyColumn: string,
  nodes: Int32Array,
  anchors: Float64Array,
  offsets: { min: number; max: number },
  dim: number,
): Promise<EntityEmbeddings & { values: Float32Array }> {
  const n = nodes.length;
  const values = sharedArray(Float32Array, n * dim);
  const missing = new Float32Array(n).fill(1);
  if (n === 0) return { values, missing, anchors: [] };
  return withDuck(async ({ conn }) => {
    await loadSnapshots(conn, files, keyColumn, dim, `pass files written by \`gnnctl embed --table ${table}\``);
    await conn.run('CREATE TEMP TABLE x (ex INTEGER, node INTEGER, t DOUBLE)');
    const app = await conn.createAppender('x');
    try {
      for (let i = 0; i < n; i++) {
        app.appendInteger(i);
        app.appendInteger(nodes[i]!);
        app.appendDouble(anchors[i]!);
        app.endRow();
      }
      app.flushSync();
    } finally {
      app.closeSync();
    }
    await conn.run(
      `CREATE TEMP TABLE f AS SELECT x.ex, x.t, CAST(r.${q(keyColumn)} AS VARCHAR) AS k FROM x JOIN read_parquet(${lit(rowsPath(graph.dir, graph.manifest, table))}) r ON r.__node = x.node`,
    );
    const { count, ex, arrays } = await asofSnapshots(conn, offsets, dim);
    for (let i = 0; i < count; i++) {
      const r = ex[i]!;
      for (let j = 0; j < dim; j++) values[r * dim + j] = (arrays[j + 1] as Float32Array)[i]!;
      missing[r] = 0;
    }
    const anchorsSeen = (await queryRows<{ a: number }>(conn, 'SELECT DISTINCT a FROM e ORDER BY a')).map((r) => r.a);
    return { values, missing, anchors: anchorsSeen };
  });
}

/**
 * Loads snapshot files (key, embedding, anchor_time) into temp table `e` (k VARCHAR, embedding, a seconds),
 * checking the key column and that every vector has the base run's dimension.
 */
async function loadSnapshots(conn: DuckDBConnection, files: string[], keyColumn: string, dim: number, hint: string): Promise<void> {
  const list = `[${files.map(lit).join(', ')}]`;
  const cols = await queryRows<{ name: string }>(conn, `SELECT column_name AS name FROM (DESCRIBE SELECT * FROM read_parquet(${list}, union_by_name = true))`);
  if (!cols.some((c) => c.name === keyColumn) || !cols.some((c) => c.name === 'embedding')) {
    throw new DataError(`the embedding files lack a "${keyColumn}" or "embedding" column`, { where: files[0], hint });
  }
  await conn.run(`CREATE TEMP TABLE e AS SELECT CAST(${q(keyColumn)} AS VARCHAR) AS k, embedding, epoch_us(anchor_time) / 1e6 AS a FROM read_parquet(${list}, union_by_name = true)`);
  const dims = await queryRows<{ d: number }>(conn, 'SELECT DISTINCT len(embedding)::INTEGER AS d FROM e');
  if (dims.length !== 1 || dims[0]!.d !== dim) {
    throw new ArtifactError(`the embedding files have dimension ${dims.map((x) => x.d).join('/')}, the base run ${dim}`, { where: files[0], hint: 'use embeddings written with the base run' });
  }
}

/**
 * ASOF join of examples `f` (ex, t, k) with snapshots `e`: the newest snapshot at or before t − min, rejected
 * when older than t − max. Returns the matched example ids and one column per embedding dimension.
 */
async function asofSnapshots(conn: DuckDBConnection, offsets: { min: number; max: number }, dim: number): Promise<{ count: number; ex: Int32Array; arrays: TypedOut[] }> {
  const sql =
    `SELECT f.ex, ${Array.from({ length: dim }, (_, j) => `e.embedding[${j + 1}]::DOUBLE`).join(', ')} ` +
    `FROM f ASOF JOIN e ON f.k = e.k AND f.t - ${offsets.min} >= e.a WHERE e.a >= f.t - ${offsets.max} ORDER BY f.ex`;
  const count = Number(await queryValue(conn, `SELECT count(*) FROM (${sql})`));
  const arrays = await readColumns(conn, sql, count, ['i32', ...Array.from({ length: dim }, () => 'f32' as const)]);
  return { count, ex: arrays[0] as Int32Array, arrays };
}
