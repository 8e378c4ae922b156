/**
 * Incremental embedding snapshot (`refresh --incremental`): recomputes only the entities whose receptive
 * field saw a new row since the previous snapshot of the same run and table, and copies every other
 * entity's vector and `anchor_time` (the time its embedding was computed) byte for byte from that snapshot.
 *
 * An entity's embedding at layer L − depth reads rows up to L − depth hops away (its own rows, then their
 * neighbours' rows, …), so a row is "new" when its time is after the previous snapshot's anchor, or when
 * its node did not exist in the previous snapshot's graph; the dirty set is widened hop by hop over every
 * edge of the graph. Anything the comparison cannot vouch for is recomputed: a row changed in place (the
 * previous graph's arrays differ on its prefix), a previous graph that is gone, a key that moved, and a
 * kept embedding older than `maxAgeSeconds` (the distilled model's `max_embedding_offset`). Kept
 * embeddings are as of their own time: inputs that depend on the anchor alone (activity windows, ages)
 * are not refreshed for them — that is the accuracy an incremental refresh trades for time.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as arrow from 'apache-arrow';
import * as pq from 'parquet-wasm/node';
import { writeJsonAtomic } from '../core/atomic.js';
import { lit, q, queryRows, withDuck } from '../data/duck.js';
import { ArtifactError, UsageError } from '../core/errors.js';
import { info } from '../core/log.js';
import { round } from '../core/number.js';
import { Progress } from '../core/progress.js';
import { VERSION } from '../core/version.js';
import { Graph } from '../graph/graph.js';
import { EMBED_LAYOUT, embed, type EmbedOptions, type EmbeddingMetadata } from './embed.js';
import { embedExact } from './layerwise.js';
import { EmbedPool, embedWorkers } from './pool.js';
import { exactDegreeCap, kvMetadata, openSnapshot, readTableKeys, snapshotMetadata, type Snapshot } from './snapshot.js';
import { writeEmbeddings } from './writer.js';

/** The sidecar beside a refreshed snapshot: how it was made and how long a full one took. */
export const REFRESH_RECORD = 'refresh.json';

export interface RefreshRecord {
  kind: 'full' | 'incremental';
  /** seconds this snapshot took */
  seconds: number;
  /** seconds the last full snapshot of this run and table took (null: unknown) */
  full_seconds: number | null;
  recomputed: number;
  kept: number;
}

export interface IncrementalResult {
  table: string;
  path: string;
  run_id: string;
  anchor_time: string;
  dim: number;
  rows: number;
  /** 'full': no usable previous snapshot, or something the comparison cannot vouch for (`full_reason`) */
  kind: 'full' | 'incremental';
  full_reason: string | null;
  previous: { path: string; anchor_time: string } | null;
  recomputed: number;
  kept: number;
  /** recomputed because their kept embedding was older than max_embedding_offset */
  expired: number;
  seconds: number;
  full_seconds: number | null;
  seconds_saved: number | null;
}

/** Records a full snapshot's time beside it, so a later incremental refresh can report what it saved. */
export function recordFullSnapshot(path: string, seconds: number, rows: number): void {
  writeJsonAtomic(join(dirname(path), REFRESH_RECORD), { kind: 'full', seconds, full_seconds: seconds, recomputed: rows, kept: 0 } satisfies RefreshRecord);
}

interface Previous {
  dir: string;
  path: string;
  anchor: number;
  anchorTime: string;
  graphDir: string | null;
  record: RefreshRecord | null;
}

/** The newest unsharded embedding snapshot of a run's table at or before `anchor` (null: none). */
export function previousSnapshot(artifactsDir: string, runId: string, table: string, anchor: number): Previous | null {
  const root = join(artifactsDir, 'embeddings', runId);
  if (!existsSync(root)) return null;
  let best: Previous | null = null;
  for (const stamp of readdirSync(root)) {
    const dir = join(root, stamp, table);
    const mpath = join(dir, 'manifest.json');
    if (!existsSync(mpath)) continue;
    const m = JSON.parse(readFileSync(mpath, 'utf8')) as { anchor_time?: string; shards?: number; files?: string; graph_dir?: string };
    if (!m.anchor_time || (m.shards ?? 1) !== 1 || m.files !== EMBED_LAYOUT.file || !existsSync(join(dir, EMBED_LAYOUT.file))) continue;
    const t = Date.parse(m.anchor_time) / 1000;
    if (!(t <= anchor) || (best && best.anchor >= t)) continue;
    const rpath = join(dir, REFRESH_RECORD);
    const record = existsSync(rpath) ? (JSON.parse(readFileSync(rpath, 'utf8')) as RefreshRecord) : null;
    best = { dir, path: join(dir, EMBED_LAYOUT.file), anchor: t, anchorTime: m.anchor_time, graphDir: m.graph_dir ?? null, record };
  }
  return best;
}

/** An embedding snapshot read back: keys (as text), vectors and per-row anchor_time in microseconds. */
interface OldSnapshot {
  keys: arrow.Vector;
  embeddings: Float32Array;
  anchorMicros: BigInt64Array;
  dim: number;
}

function readOldSnapshot(path: string, key: string): OldSnapshot {
  const table = arrow.tableFromIPC(pq.readParquet(new Uint8Array(readFileSync(path))).intoIPCStream());
  const n = table.numRows;
  const k = table.getChild(key);
  const e = table.getChild('embedding');
  const a = table.getChild('anchor_time');
  if (!k || !e || !a) throw new ArtifactError(`${path} has no ${!k ? key : !e ? 'embedding' : 'anchor_time'} column`, { hint: 'run a full refresh (without --incremental)' });
  const dim = (e.type as arrow.FixedSizeList).listSize;
  const embeddings = new Float32Array(n * dim);
  const anchorMicros = new BigInt64Array(n);
  // Arrow slices a chunk's value buffers (and a list's child) when it slices the chunk: each starts at 0.
  let row = 0;
  for (const d of e.data) {
    embeddings.set((d.children[0]!.values as Float32Array).subarray(0, d.length * dim), row * dim);
    row += d.length;
  }
  row = 0;
  for (const d of a.data) {
    const v = d.values as BigInt64Array | Int32Array;
    anchorMicros.set(v instanceof BigInt64Array ? v.subarray(0, d.length) : new BigInt64Array(v.buffer, v.byteOffset, d.length), row);
    row += d.length;
  }
  return { keys: k, embeddings, anchorMicros, dim };
}

/** A text column's bytes and offsets over all its chunks (null: not text). */
function utf8Bytes(v: arrow.Vector): { offsets: Int32Array; values: Uint8Array } | null {
  if (!arrow.DataType.isUtf8(v.type)) return null;
  const offsets = new Int32Array(v.length + 1);
  const parts: Uint8Array[] = [];
  let row = 0;
  let base = 0;
  for (const d of v.data) {
    const o = d.valueOffsets as Int32Array;
    for (let i = 0; i < d.length; i++) offsets[row + i + 1] = base + o[i + 1]! - o[0]!;
    parts.push((d.values as Uint8Array).subarray(o[0]!, o[d.length]!));
    base += o[d.length]! - o[0]!;
    row += d.length;
  }
  return { offsets, values: Buffer.concat(parts) };
}

/**
 * Per row of the first `n`, whether the previous snapshot held another key there. Text keys are compared
 * as bytes: decoding 100k keys to strings is most of the time of reading the previous snapshot.
 */
function keysDiffer(old: arrow.Vector, now: arrow.Vector, n: number): Uint8Array {
  const out = new Uint8Array(n);
  const a = utf8Bytes(old);
  const b = a ? utf8Bytes(now) : null;
  for (let i = 0; i < n; i++) {
    if (i >= old.length) out[i] = 1;
    else if (a && b) {
      const len = a.offsets[i + 1]! - a.offsets[i]!;
      if (len !== b.offsets[i + 1]! - b.offsets[i]!) out[i] = 1;
      else for (let j = 0; j < len; j++) if (a.values[a.offsets[i]! + j] !== b.values[b.offsets[i]! + j]) { out[i] = 1; break; }
    } else if (String(old.get(i)) !== String(now.get(i))) out[i] = 1;
  }
  return out;
}

function bytesOf(a: ArrayBufferView, elements: number, bytesPer: number): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, elements * bytesPer);
}

/** First table whose rows the previous graph held differently (changed in place, removed, reordered), or null. */
export function changedInPlace(oldGraph: Graph, graph: Graph): string | null {
  for (const [name, t] of Object.entries(graph.tables)) {
    const o = oldGraph.tables[name];
    if (!o) continue;
    const n = o.rows;
    if (t.rows < n) return `${name} lost rows (${n} → ${t.rows})`;
    const same = (x: ArrayBufferView | null, y: ArrayBufferView | null, bytes: number): boolean =>
      x === null || y === null ? x === y : bytesOf(x, n, bytes).equals(bytesOf(y, n, bytes));
    if (!same(o.time, t.time, 8)) return `${name}: rows changed time or order`;
    const cols = <T extends { meta: { name: string } }>(a: T[], b: T[]) => a.length === b.length && a.every((c, i) => c.meta.name === b[i]!.meta.name);
    if (!cols(o.numeric, t.numeric) || !cols(o.categorical, t.categorical)) return `${name}: its columns differ`;
    if (!o.numeric.every((c, i) => same(c.values, t.numeric[i]!.values, 4))) return `${name}: a numeric value changed in place`;
    if (!o.categorical.every((c, i) => same(c.codes, t.categorical[i]!.codes, 4))) return `${name}: a categorical value changed in place`;
    if (o.timestamps.length !== t.timestamps.length || !o.timestamps.every((c, i) => same(c.values, t.timestamps[i]!.values, 8))) return `${name}: a timestamp changed in place`;
  }
  for (const e of graph.edges) {
    if (e.kind !== 'fk') continue;
    const o = oldGraph.edges.find((x) => x.name === e.name);
    if (!o?.parent || !e.parent) return `edge ${e.name} is new`;
    if (!bytesOf(o.parent, o.parent.length, 4).equals(bytesOf(e.parent, o.parent.length, 4))) return `${e.name}: a foreign key changed in place`;
  }
  return null;
}

/**
 * First table without a time column whose keys the previous graph held at other node ids, or null. Node ids
 * of such a table follow the key order, so a new key that sorts between old ones moves every later row
 * (and the foreign keys pointing at them); one that sorts last is appended, and counts as a new node.
 */
export async function movedKeys(oldGraph: Graph, graph: Graph): Promise<string | null> {
  const tables = Object.entries(graph.tables).filter(([name, t]) => !t.time && oldGraph.tables[name] && graph.manifest.schema.tables[name]?.primary_key);
  if (tables.length === 0) return null;
  return withDuck(async ({ conn }) => {
    for (const [name] of tables) {
      const key = q(graph.manifest.schema.tables[name]!.primary_key!.column);
      const file = (g: Graph) => lit(join(g.dir, g.manifest.tables[name]!.rows_file));
      const [first] = await queryRows<{ node: number; was: string; is: string | null }>(
        conn,
        `SELECT o.__node AS node, CAST(o.${key} AS VARCHAR) AS was, CAST(n.${key} AS VARCHAR) AS "is" FROM read_parquet(${file(oldGraph)}) o
         LEFT JOIN read_parquet(${file(graph)}) n USING (__node) WHERE n.${key} IS DISTINCT FROM o.${key} ORDER BY o.__node LIMIT 1`,
      );
      if (first) return `${name} has no time column and a key that sorts between its old ones: node ${first.node} held ${first.was}, now ${first.is ?? '(none)'} (node ids follow the key order, so every later row moved)`;
    }
    return null;
  });
}

/**
 * Per table, the nodes whose embedding `hops` layers up may differ from the previous snapshot's: rows
 * newer than `since` or beyond the previous graph's row counts, then every node with an edge to a dirty
 * node, `hops` times.
 */
export function dirtyNodes(graph: Graph, oldRows: Record<string, number>, since: number, hops: number): Record<string, Uint8Array> {
  let dirty: Record<string, Uint8Array> = {};
  for (const [name, t] of Object.entries(graph.tables)) {
    const d = new Uint8Array(t.rows);
    for (let i = oldRows[name] ?? 0; i < t.rows; i++) d[i] = 1;
    if (t.time) for (let i = 0; i < t.rows; i++) if (t.time[i]! > since) d[i] = 1;
    dirty[name] = d;
  }
  for (let h = 0; h < hops; h++) {
    const next: Record<string, Uint8Array> = Object.fromEntries(Object.entries(dirty).map(([k, v]) => [k, v.slice()]));
    for (const e of graph.edges) {
      const from = next[e.src]!;
      const to = dirty[e.dst]!;
      if (e.kind === 'fk') {
        const p = e.parent!;
        for (let u = 0; u < p.length; u++) if (p[u]! >= 0 && to[p[u]!]) from[u] = 1;
      } else {
        const ptr = e.indptr!;
        const idx = e.indices!;
        for (let u = 0; u + 1 < ptr.length; u++) {
          if (from[u]) continue;
          for (let k = ptr[u]!; k < ptr[u + 1]!; k++) {
            if (to[idx[k]!]) {
              from[u] = 1;
              break;
            }
          }
        }
      }
    }
    dirty = next;
  }
  return dirty;
}

/**
 * The table's snapshot at the newest time, recomputing only what changed since the previous snapshot
 * (see the file comment); a full `embed` when there is none or it cannot be trusted.
 */
export async function embedIncremental(opts: EmbedOptions & { maxAgeSeconds?: number | null }): Promise<IncrementalResult> {
  if (opts.shard || (opts.mode ?? 'exact') !== 'exact') throw new UsageError('an incremental refresh writes one exact snapshot', { where: '--incremental', hint: 'drop --shard / --mode sampled, or refresh without --incremental' });
  const t0 = performance.now();
  const s = await openSnapshot({ ...opts, mode: 'exact' }, EMBED_LAYOUT);
  let fullReason: string | null = null;
  let prev: Previous | null = null;
  try {
    prev = previousSnapshot(opts.cfg.artifactsDir, s.runId, s.table, s.anchor);
    fullReason = prev === null ? 'no previous snapshot' : null;
    if (prev && (!prev.graphDir || !existsSync(join(prev.graphDir, 'manifest.json')))) fullReason = `the previous snapshot's graph ${prev.graphDir ?? '(unrecorded)'} is gone, so changed rows cannot be told apart`;
    if (prev && fullReason === null) {
      const r = await mergeSnapshot(s, opts, prev, t0);
      if (typeof r !== 'string') return r;
      fullReason = r;
    }
  } finally {
    s.model.dispose();
  }
  info(`refresh --incremental ${s.table}: full snapshot (${fullReason})`);
  const r = await embed({ ...opts, mode: 'exact' });
  const seconds = round((performance.now() - t0) / 1000, 3);
  recordFullSnapshot(r.path, seconds, r.rows);
  return {
    table: s.table, path: r.path, run_id: r.run_id, anchor_time: r.anchor_time, dim: r.dim, rows: r.rows, kind: 'full', full_reason: fullReason,
    previous: prev ? { path: prev.path, anchor_time: prev.anchorTime } : null, recomputed: r.rows, kept: 0, expired: 0, seconds, full_seconds: seconds, seconds_saved: null,
  };
}

interface Comparison {
  reason: string | null;
  oldRows: Record<string, number>;
  /** dirty sets by `since` and hop count: every table of a refresh reads them from the same two graphs */
  dirty: Map<string, Record<string, Uint8Array>>;
}

/**
 * The last comparison made, kept for the next table of the same refresh. Graph folders are named by their
 * content's fingerprint, so a comparison of two folders stays true; one slot bounds what it holds (the
 * dirty sets are a byte per node: 2 MB at 2M transactions).
 */
let last: { id: string; comparison: Promise<Comparison> } | null = null;

/**
 * Why the previous graph's rows cannot be trusted as a prefix of today's (null: they can), and its row
 * counts. One comparison serves every table a refresh embeds from the same two graphs.
 */
function compareGraphs(oldDir: string, graph: Graph): Promise<Comparison> {
  const id = `${oldDir}\u0000${graph.dir}`;
  if (last?.id === id) return last.comparison;
  const comparison = (async (): Promise<Comparison> => {
    const oldGraph = oldDir === graph.dir ? graph : Graph.load(oldDir);
    const oldRows = Object.fromEntries(Object.entries(oldGraph.tables).map(([k, t]) => [k, t.rows]));
    const dirty = new Map<string, Record<string, Uint8Array>>();
    if (oldGraph === graph) return { reason: null, oldRows, dirty };
    const keys = await movedKeys(oldGraph, graph);
    if (keys) return { reason: `rows moved: ${keys}`, oldRows, dirty };
    const moved = changedInPlace(oldGraph, graph);
    return { reason: moved ? `rows changed in place: ${moved}` : null, oldRows, dirty };
  })();
  last = { id, comparison };
  comparison.catch(() => {
    if (last?.comparison === comparison) last = null;
  });
  return comparison;
}

/** Writes the merged snapshot; returns why a full one is needed instead, when it is. */
async function mergeSnapshot(s: Snapshot, opts: EmbedOptions & { maxAgeSeconds?: number | null }, prev: Previous, t0: number): Promise<IncrementalResult | string> {
  const C = s.model.spec.channels;
  const { reason, oldRows, dirty: dirtySets } = await compareGraphs(prev.graphDir!, s.graph);
  if (reason) return reason;
  const old = readOldSnapshot(prev.path, s.key);
  if (old.dim !== C) return `the previous snapshot has dimension ${old.dim}, the model ${C}`;
  const hops = s.model.spec.layers - s.depth;
  const since = `${prev.anchor}/${hops}`;
  let sets = dirtySets.get(since);
  if (!sets) dirtySets.set(since, (sets = dirtyNodes(s.graph, oldRows, prev.anchor, hops)));
  const dirty = sets[s.table]!;
  const keys = await readTableKeys(s.graph, s.table, s.key, 0, s.existing, s.path);
  const oldest = opts.maxAgeSeconds != null ? BigInt(Math.round((s.anchor - opts.maxAgeSeconds) * 1e6)) : null;
  const moved = keysDiffer(old.keys, keys, s.existing);
  const recompute: number[] = [];
  let expired = 0;
  for (let i = 0; i < s.existing; i++) {
    if (dirty[i] || moved[i]) recompute.push(i);
    else if (oldest !== null && old.anchorMicros[i]! < oldest) {
      recompute.push(i);
      expired++;
    }
  }
  const fresh = await computeNodes(s, opts, Int32Array.from(recompute));
  const slot = new Int32Array(s.existing).fill(-1);
  recompute.forEach((v, j) => (slot[v] = j));
  const anchorMicros = BigInt(Math.round(s.anchor * 1e6));
  const chunkSize = opts.chunkSize ?? 65536;
  async function* chunks() {
    if (s.existing === 0) yield { keys: keys.slice(0, 0), embeddings: new Float32Array(0), anchorMicros: new BigInt64Array(0) };
    for (let from = 0; from < s.existing; from += chunkSize) {
      const end = Math.min(s.existing, from + chunkSize);
      const emb = new Float32Array((end - from) * C);
      const at = new BigInt64Array(end - from);
      for (let i = from; i < end; i++) {
        const j = slot[i]!;
        if (j >= 0) {
          emb.set(fresh.subarray(j * C, (j + 1) * C), (i - from) * C);
          at[i - from] = anchorMicros;
        } else {
          emb.set(old.embeddings.subarray(i * C, (i + 1) * C), (i - from) * C);
          at[i - from] = old.anchorMicros[i]!;
        }
      }
      yield { keys: keys.slice(from, end), embeddings: emb, anchorMicros: at };
    }
  }
  const meta: EmbeddingMetadata & Record<string, unknown> = { ...snapshotMetadata(s, VERSION), dim: C, incremental_from: prev.anchorTime, recomputed: recompute.length };
  const { rows } = await writeEmbeddings(s.path, chunks(), { keyName: s.key, dim: C, anchorTime: s.anchor, rowGroupSize: chunkSize, metadata: kvMetadata(meta, null) });
  writeJsonAtomic(join(s.outDir, 'manifest.json'), { kind: EMBED_LAYOUT.folder, ...meta, run_dir: s.runDir, graph_dir: s.graphDir, shards: 1, rows_total: s.existing, files: EMBED_LAYOUT.file });
  const seconds = round((performance.now() - t0) / 1000, 3);
  const fullSeconds = prev.record ? prev.record.full_seconds : null;
  writeJsonAtomic(join(s.outDir, REFRESH_RECORD), { kind: 'incremental', seconds, full_seconds: fullSeconds, recomputed: recompute.length, kept: rows - recompute.length } satisfies RefreshRecord);
  info(`refresh --incremental ${s.table}: recomputed ${recompute.length.toLocaleString('en-US')} of ${rows.toLocaleString('en-US')} (since ${prev.anchorTime}), kept ${(rows - recompute.length).toLocaleString('en-US')} in ${seconds}s`);
  return {
    table: s.table, path: s.path, run_id: s.runId, anchor_time: String(meta.anchor_time), dim: C, rows, kind: 'incremental', full_reason: null,
    previous: { path: prev.path, anchor_time: prev.anchorTime }, recomputed: recompute.length, kept: rows - recompute.length, expired, seconds,
    full_seconds: fullSeconds, seconds_saved: fullSeconds !== null ? round(fullSeconds - seconds, 3) : null,
  };
}

/** The exact embeddings of an arbitrary set of the table's nodes ([nodes × channels]), on workers when there are many. */
async function computeNodes(s: Snapshot, opts: EmbedOptions, nodes: Int32Array): Promise<Float32Array> {
  const C = s.model.spec.channels;
  const out = new Float32Array(nodes.length * C);
  if (nodes.length === 0) return out;
  const degreeCap = exactDegreeCap(opts.cfg, s);
  const workers = opts.workers === undefined || opts.workers === 'auto' ? (nodes.length >= 4096 ? embedWorkers('auto', s.backend) : 1) : opts.workers;
  const pool = workers > 1 ? await EmbedPool.start(workers, s.model, opts.backend ?? 'auto') : null;
  const progress = new Progress();
  progress.begin(`embed ${s.table} (incremental)`, nodes.length);
  try {
    const step = opts.chunkSize ?? 65536;
    for (let lo = 0; lo < nodes.length; lo += step) {
      const part = nodes.subarray(lo, Math.min(nodes.length, lo + step));
      const emb = pool ? await pool.exact(s.table, s.depth, part, s.anchor, degreeCap, C) : embedExact(s.model, s.table, s.depth, part, s.anchor, degreeCap);
      for (let i = 0; i < emb.length; i++) {
        if (!Number.isFinite(emb[i])) throw new ArtifactError(`non-finite embedding value for ${s.table} node ${part[Math.floor(i / C)]}`, { hint: 'the model produced NaN/inf; retrain or check the data for extreme values' });
      }
      out.set(emb, lo * C);
      progress.update(lo + part.length);
    }
  } finally {
    await pool?.close();
  }
  progress.end(`embedded ${nodes.length.toLocaleString('en-US')} changed ${s.table}`);
  return out;
}
