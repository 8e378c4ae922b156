/**
 * `predict` on a ranking run: the top k items of every entity that exists at the anchor, exact over the
 * whole catalogue, into Parquet with columns `<entity key>`, `rank` (1…k), `<item key>`, `score` — k rows
 * per entity, best first (fewer only when the catalogue has fewer than k items).
 *
 * The user side h_u comes from `embed`'s snapshot machinery (exact layer-wise by default, sharded the
 * same way); the item side e_i (the GNN over the item's own tree plus its learned vector) is computed once
 * for the catalogue at the same anchor; per chunk of users one fused score matrix and a top-k selection in
 * onnxruntime (`rankCatalogueOnnx` in model/context_gnn.ts), the same formula training evaluated.
 *
 * Beside the file, `item_embeddings.parquet` (or `<out>.item_embeddings.parquet` with --out; written by
 * the unsharded job or shard 0) holds e_i per item at the anchor: the item-side vectors a downstream
 * student scores against with a dot product. The user-side vectors are `gnnctl embed --table <entity>`
 * of the same run and anchor (exactly h_u).
 *
 * Never worse than the simplest method: when the run chose a heuristic (`chosen` in its metrics.json: the
 * best heuristic beat the model on validation MAP@k), its lists are written instead, with the settings
 * training chose (window, column, blend weight, seen items), in the same format; `served_by` says which.
 * `serveModel` (--serve-model) writes the model's lists anyway.
 *
 * When the run decided to exclude seen items (`heuristics.exclude_seen` in its metrics.json,
 * train/ranking_heuristics.ts), a wider list is ranked and each user's items before the anchor are
 * dropped from it, as training evaluated.
 */
import * as arrow from 'apache-arrow';
import { tf } from '../core/tf.js';
import { basename, join } from 'node:path';
import { ArtifactError, UsageError } from '../core/errors.js';
import { info } from '../core/log.js';
import { Progress } from '../core/progress.js';
import { round } from '../core/number.js';
import { VERSION } from '../core/version.js';
import { writeJsonAtomic } from '../core/atomic.js';
import { existsSync, readFileSync } from 'node:fs';
import { seenItems, unseen } from '../train/ranking_affinity.js';
import { interactionCsr } from '../train/ranking_baselines.js';
import { HeuristicLists, recordedParams, SEEN_MARGIN, type HeuristicsRecord, type ServedChoice } from '../train/ranking_heuristics.js';
import { loadReranker, RerankInputs, rerankTopK } from '../train/rerank.js';
import { modelTopN } from '../train/ranking_trainer.js';
import type { RankingBaseline } from '../train/ranking_baselines.js';
import { embedExact } from '../embed/layerwise.js';
import { exactDegreeCap, existingAt, kvMetadata, readTableKeys, representations, snapshotMetadata, type Snapshot, type SnapshotFigures, type SnapshotOptions } from '../embed/snapshot.js';
import { writeColumns, writeEmbeddings } from '../embed/writer.js';
import { catalogueKernel, itemPopularity, popularityCache, rankCatalogueOnnx, userHistories } from '../model/context_gnn.js';
import type { DeepModel } from '../model/deep_model.js';

export interface TopKResult extends SnapshotFigures {
  task: string;
  objective: 'ranking';
  prediction: 'top_k';
  k: number;
  key: string;
  item_table: string;
  item_key: string;
  /** items in the catalogue at the anchor */
  items: number;
  /** e_i per item, or null for shards other than 0 and for lists served by a heuristic */
  item_embeddings: string | null;
  /** what wrote the lists: the deep model, the re-ranker, or the heuristic the run chose because it beat the learned lists on validation */
  served_by: ServedChoice;
  /** why (the run's `chosen_reason`, or that --serve-model asked for the model) */
  served_reason: string;
}

/** The Parquet column of the item key: its own name, or `<items table>_<key>` when it equals the entity key. */
export function itemKeyColumn(entityKey: string, itemTable: string, itemKey: string): string {
  return itemKey === entityKey ? `${itemTable}_${itemKey}` : itemKey;
}

export async function predictTopK(opts: SnapshotOptions & { withEmbeddings?: boolean; serveModel?: boolean }, s: Snapshot, t0: number): Promise<TopKResult> {
  if (opts.withEmbeddings) {
    throw new UsageError(`run ${s.runId} ranks items: its top-k file has k rows per ${s.table} and no embedding column`, {
      where: '--with-embeddings',
      hint: `the user-side vectors are gnnctl embed --table ${s.table} --run ${s.runId} (same anchor); the item-side ones are written beside the predictions (item_embeddings.parquet)`,
    });
  }
  const choice = runChoice(s.runDir);
  if (choice.chosen !== 'model' && !opts.serveModel) {
    info(`predict: serving ${choice.chosen}, the run's choice: ${choice.reason} (--serve-model writes the deep model's lists)`);
    return choice.chosen === 'reranker' ? predictRerankTopK(opts, s, t0, choice.reason) : predictHeuristicTopK(opts, s, t0, choice.chosen, choice.reason);
  }
  const servedReason = choice.chosen === 'model' ? choice.reason : `--serve-model (the run chose ${choice.chosen}: ${choice.reason})`;
  const model = s.model;
  const rs = model.spec.ranking!;
  const C = model.spec.channels;
  const k = rs.top_k;
  const itemPk = s.graph.manifest.schema.tables[rs.item_table]!.primary_key!.column;
  const itemCol = itemKeyColumn(s.key, rs.item_table, itemPk);
  const nItems = existingAt(s.graph, rs.item_table, s.anchor);
  const itemKeys = await readTableKeys(s.graph, rs.item_table, itemPk, 0, nItems, s.path);
  const degreeCap = exactDegreeCap(opts.cfg, s);

  const timing: { computeMs: number; workers?: number } = { computeMs: 0 };
  let t = performance.now();
  const items = itemVectors(model, s, nItems, degreeCap);
  const pop = itemPopularity(s.graph, rs, s.anchor).subarray(0, nItems);
  timing.computeMs += performance.now() - t;

  // The catalogue side [e_i, pop_i] lives in the onnxruntime session for the whole job: every chunk of users
  // is one MatMul + TopK on all cores (compute/catalogue_top_k.ts).
  t = performance.now();
  const exclude = choice.excludeSeen;
  const wide = exclude ? k + SEEN_MARGIN : k;
  const csr = exclude ? interactionCsr(s.graph, rs) : null;
  const kernel = await catalogueKernel(items, pop, nItems, C, wide);
  timing.computeMs += performance.now() - t;

  const meta = { ...snapshotMetadata(s, VERSION), task: s.manifest.task, objective: 'ranking' as const, prediction: 'top_k' as const, k, item_table: rs.item_table, item_key: itemCol, items: nItems };
  const progress = new Progress();
  progress.begin(`predict top ${k} ${rs.item_table} per ${s.table} (${s.mode})`, s.hi - s.lo);
  async function* chunks(): AsyncGenerator<Record<string, arrow.Vector>> {
    for await (const chunk of representations(s, opts, timing, progress)) {
      t = performance.now();
      const n = chunk.keys.length;
      const users = Int32Array.from({ length: n }, (_, i) => chunk.start + i);
      const histories = userHistories(s.graph, rs, users, new Float64Array(n).fill(s.anchor), () => pop);
      const ranked = await rankCatalogueOnnx(model.ranking!, kernel, chunk.embeddings, histories, wide);
      const { ids, scores } = csr ? dropSeen(ranked, users, (u) => seenItems(csr, u, s.anchor), wide, k) : ranked;
      timing.computeMs += performance.now() - t;
      // k rows per user, except past the end of a catalogue smaller than k.
      yield listColumns(s.key, chunk.keys, itemCol, itemKeys, ids, scores, k, nItems);
    }
  }
  let rows: number;
  try {
    ({ rows } = await writeColumns(s.path, chunks(), { rowGroupSize: 65536 * Math.min(k, 16), metadata: kvMetadata(meta, s.shard) }));
  } finally {
    await kernel.release();
  }
  let itemFile: string | null = null;
  if (!opts.shard || opts.shard.index === 0) {
    itemFile = opts.out ? s.path.replace(/(\.parquet)?$/, '.item_embeddings.parquet') : join(s.outDir, 'item_embeddings.parquet');
    async function* one() {
      yield { keys: itemKeys, embeddings: items };
    }
    await writeEmbeddings(itemFile, one(), { keyName: itemPk, dim: C, anchorTime: s.anchor, rowGroupSize: 65536, metadata: kvMetadata({ ...snapshotMetadata(s, VERSION), table: rs.item_table, key: itemPk, dim: C, side: 'item' }, null) });
  }
  const seconds = (performance.now() - t0) / 1000;
  progress.end(`ranked ${(s.hi - s.lo).toLocaleString('en-US')} ${s.table} × ${nItems.toLocaleString('en-US')} ${rs.item_table} in ${seconds.toFixed(1)}s`);
  writeJsonAtomic(join(s.outDir, 'manifest.json'), {
    kind: 'predictions',
    ...meta,
    run_dir: s.runDir,
    graph_dir: s.graphDir,
    shards: opts.shard?.count ?? 1,
    rows_total: s.existing,
    files: opts.shard ? 'part-*.parquet' : basename(s.path),
    item_embeddings: itemFile ? basename(itemFile) : null,
  });
  return topKResult(s, { rows, anchorTime: meta.anchor_time, seconds, computeMs: timing.computeMs, workers: timing.workers ?? 1, task: meta.task, k, itemCol, nItems, itemEmbeddings: itemFile, servedBy: 'model', servedReason });
}

/**
 * The top-k of the heuristic the run chose (`chosen` in its metrics.json), with the settings it chose
 * on validation (`heuristics`), for every entity at the anchor, in the model's file format: no GNN runs
 * and no item embeddings are written. `HeuristicLists` is the implementation training evaluated.
 */
async function predictHeuristicTopK(opts: SnapshotOptions, s: Snapshot, t0: number, name: RankingBaseline, reason: string): Promise<TopKResult> {
  const rs = s.model.spec.ranking!;
  const record = recordedHeuristics(s, name);
  const lists = new HeuristicLists(s.graph, rs, record.exclude_seen.exclude);
  const params = recordedParams(record, name, lists.columns, rs);
  return writeServedLists(opts, s, t0, name, reason, opts.chunkSize ?? 65536, async (users) => lists.rank(params, users, s.anchor));
}

/**
 * The top-k of the run's re-ranker (`chosen: reranker`): the candidates and features training built
 * (`RerankInputs`, with the deep model's lists from the same sampled trees training ranked with), scored by
 * the trees in the run's reranker.json; the score column is the ranker's raw score.
 */
async function predictRerankTopK(opts: SnapshotOptions, s: Snapshot, t0: number, reason: string): Promise<TopKResult> {
  const rs = s.model.spec.ranking!;
  const inputs = new RerankInputs(s.graph, rs, recordedHeuristics(s, 'reranker'), modelTopN(s.model, popularityCache(s.graph, rs)));
  const gbdt = loadReranker(s.runDir, inputs);
  // Each user brings up to RERANK_MAX_CANDIDATES rows of features: smaller chunks bound the memory.
  const chunk = Math.min(opts.chunkSize ?? RERANK_CHUNK, RERANK_CHUNK);
  return writeServedLists(opts, s, t0, 'reranker', reason, chunk, async (users) => {
    const { cand, columns } = await inputs.at(users, s.anchor);
    return rerankTopK(gbdt, cand, columns, users.length, rs.top_k);
  });
}

/** users per chunk of the re-ranker's predict */
const RERANK_CHUNK = 8192;

function recordedHeuristics(s: Snapshot, name: string): HeuristicsRecord {
  const record = readMetrics(s.runDir).heuristics;
  if (!record) throw new ArtifactError(`run ${s.runId} chose ${name} but does not record its settings (heuristics in metrics.json)`, { where: join(s.runDir, 'metrics.json'), hint: 'retrain the run, or serve its deep model with --serve-model' });
  return record;
}

/** Writes the lists `rank` gives each chunk of users, in the model's file format, with the manifest. */
async function writeServedLists(opts: SnapshotOptions, s: Snapshot, t0: number, name: Exclude<ServedChoice, 'model'>, reason: string, chunkSize: number, rank: (users: Int32Array) => Promise<{ ids: Int32Array; scores: Float32Array }>): Promise<TopKResult> {
  const rs = s.model.spec.ranking!;
  const k = rs.top_k;
  const itemPk = s.graph.manifest.schema.tables[rs.item_table]!.primary_key!.column;
  const itemCol = itemKeyColumn(s.key, rs.item_table, itemPk);
  const nItems = existingAt(s.graph, rs.item_table, s.anchor);
  const itemKeys = await readTableKeys(s.graph, rs.item_table, itemPk, 0, nItems, s.path);
  const keys = await readTableKeys(s.graph, s.table, s.key, s.lo, s.hi, s.path);
  const timing = { computeMs: 0 };
  const meta = { ...snapshotMetadata(s, VERSION), task: s.manifest.task, objective: 'ranking' as const, prediction: 'top_k' as const, k, item_table: rs.item_table, item_key: itemCol, items: nItems, served_by: name };
  const progress = new Progress();
  progress.begin(`predict top ${k} ${rs.item_table} per ${s.table} (${name})`, s.hi - s.lo);
  async function* chunks(): AsyncGenerator<Record<string, arrow.Vector>> {
    for (let from = s.lo; from < s.hi || from === s.lo; from += chunkSize) {
      const to = Math.min(s.hi, from + chunkSize);
      const t = performance.now();
      const users = Int32Array.from({ length: to - from }, (_, i) => from + i);
      const { ids, scores } = await rank(users);
      // Items that did not exist at the anchor are never listed (heuristics count only interactions before it).
      const columns = listColumns(s.key, keys.slice(from - s.lo, to - s.lo), itemCol, itemKeys, ids, scores, k, nItems);
      timing.computeMs += performance.now() - t;
      progress.update(to - s.lo);
      yield columns;
      if (to >= s.hi) break;
    }
  }
  const { rows } = await writeColumns(s.path, chunks(), { rowGroupSize: 65536 * Math.min(k, 16), metadata: kvMetadata(meta, s.shard) });
  const seconds = (performance.now() - t0) / 1000;
  progress.end(`listed ${(s.hi - s.lo).toLocaleString('en-US')} ${s.table} × ${nItems.toLocaleString('en-US')} ${rs.item_table} by ${name} in ${seconds.toFixed(1)}s`);
  writeJsonAtomic(join(s.outDir, 'manifest.json'), { kind: 'predictions', ...meta, run_dir: s.runDir, graph_dir: s.graphDir, shards: opts.shard?.count ?? 1, rows_total: s.existing, files: opts.shard ? 'part-*.parquet' : basename(s.path), item_embeddings: null });
  return topKResult(s, { rows, anchorTime: meta.anchor_time, seconds, computeMs: timing.computeMs, workers: 1, task: meta.task, k, itemCol, nItems, itemEmbeddings: null, servedBy: name, servedReason: reason });
}

/** What every way of writing a run's top-k lists reports (the model's lists, a heuristic's, the re-ranker's). */
function topKResult(
  s: Snapshot,
  r: { rows: number; anchorTime: string; seconds: number; computeMs: number; workers: number; task: string; k: number; itemCol: string; nItems: number; itemEmbeddings: string | null; servedBy: ServedChoice; servedReason: string },
): TopKResult {
  return {
    path: s.path,
    rows: r.rows,
    anchor_time: r.anchorTime,
    seconds: round(r.seconds, 3),
    compute_seconds: round(r.computeMs / 1000, 3),
    entities_per_s: Math.round((s.hi - s.lo) / Math.max(1e-9, r.computeMs / 1000)),
    workers: r.workers,
    mode: s.mode,
    table: s.table,
    run_id: s.runId,
    shard: s.shard,
    task: r.task,
    objective: 'ranking',
    prediction: 'top_k',
    k: r.k,
    key: s.key,
    item_table: s.model.spec.ranking!.item_table,
    item_key: r.itemCol,
    items: r.nItems,
    item_embeddings: r.itemEmbeddings,
    served_by: r.servedBy,
    served_reason: r.servedReason,
  };
}

/** The listed entries of [users × k] ids (−1: the list ran out; ids past the catalogue at the anchor dropped): flat index, user row, item. */
/**
 * The file's columns for one chunk of users: `ids`/`scores` hold k slots per user (user-major); a slot is
 * written when it names an item of the catalogue at the anchor (an id in [0, nItems)), so a catalogue smaller
 * than k, or a heuristic with fewer candidates, gives that user fewer rows.
 */
function listColumns(keyName: string, userKeys: arrow.Vector, itemCol: string, itemKeys: arrow.Vector, ids: Int32Array, scores: Float32Array, k: number, nItems: number): Record<string, arrow.Vector> {
  let m = 0;
  for (let i = 0; i < ids.length; i++) if (ids[i]! >= 0 && ids[i]! < nItems) m++;
  const keep = new Int32Array(m);
  const userRows = new Int32Array(m);
  const itemRows = new Int32Array(m);
  for (let i = 0, j = 0; i < ids.length; i++) {
    if (!(ids[i]! >= 0 && ids[i]! < nItems)) continue;
    keep[j] = i;
    userRows[j] = Math.floor(i / k);
    itemRows[j++] = ids[i]!;
  }
  return {
    [keyName]: takeRows(userKeys, userRows),
    rank: arrow.makeVector(Int16Array.from(keep, (i) => (i % k) + 1)),
    [itemCol]: takeRows(itemKeys, itemRows),
    score: arrow.makeVector(Float32Array.from(keep, (i) => scores[i]!)),
  };
}

/** e_i for the catalogue at the snapshot's anchor [N × C]: the item tree (exact or sampled, as asked) plus v_i. */
function itemVectors(model: DeepModel, s: Snapshot, n: number, degreeCap: number): Float32Array {
  const rs = model.spec.ranking!;
  const C = model.spec.channels;
  const nodes = Int32Array.from({ length: n }, (_, i) => i);
  const gnn = s.mode === 'exact' ? embedExact(model, rs.item_table, 0, nodes, s.anchor, degreeCap) : model.embedSampled(rs.item_table, 0, nodes, s.anchor, (s.manifest.seed * 1000003) >>> 0);
  const e = tf.tidy(() => model.ranking!.itemEmbeddings(tf.tensor2d(gnn, [n, C]), nodes));
  const out = e.dataSync() as Float32Array;
  e.dispose();
  return out;
}

/**
 * Rows `rows` of a key column as a new vector of the same type. Text keys are copied as UTF-8 bytes and
 * fixed-width ones as typed arrays: a medium job writes 1.2M rows, and one JS value per row (Vector.get,
 * then vectorFromArray re-encoding each string) had cost more than ranking them. Keys hold no nulls.
 */
export function takeRows(v: arrow.Vector, rows: Int32Array): arrow.Vector {
  const type = v.type as arrow.DataType;
  if (arrow.DataType.isUtf8(type) && v.nullCount === 0) {
    const flat = flatUtf8(v);
    const offsets = new Int32Array(rows.length + 1);
    for (let j = 0; j < rows.length; j++) offsets[j + 1] = offsets[j]! + flat.offsets[rows[j]! + 1]! - flat.offsets[rows[j]!]!;
    const bytes = new Uint8Array(offsets[rows.length]!);
    for (let j = 0; j < rows.length; j++) bytes.set(flat.bytes.subarray(flat.offsets[rows[j]!]!, flat.offsets[rows[j]! + 1]!), offsets[j]!);
    return arrow.makeVector(arrow.makeData({ type: new arrow.Utf8(), length: rows.length, nullCount: 0, valueOffsets: offsets, data: bytes }));
  }
  if ((arrow.DataType.isInt(type) || arrow.DataType.isFloat(type)) && v.nullCount === 0) {
    const values = v.toArray() as Int32Array | BigInt64Array | Float64Array;
    const Ctor = values.constructor as { new (n: number): typeof values };
    const out = new Ctor(rows.length);
    for (let j = 0; j < rows.length; j++) out[j] = values[rows[j]!]!;
    return arrow.makeVector(arrow.makeData({ type, length: rows.length, nullCount: 0, data: out } as Parameters<typeof arrow.makeData>[0]));
  }
  return arrow.vectorFromArray(Array.from(rows, (r) => v.get(r)), type);
}

/** A Utf8 vector's strings as one offsets array and one byte buffer (its chunks joined). */
const flatCache = new WeakMap<arrow.Vector, { offsets: Int32Array; bytes: Uint8Array }>();
function flatUtf8(v: arrow.Vector): { offsets: Int32Array; bytes: Uint8Array } {
  const hit = flatCache.get(v);
  if (hit) return hit;
  const offsets = new Int32Array(v.length + 1);
  let total = 0;
  let row = 0;
  for (const d of v.data) {
    const vo = d.valueOffsets as Int32Array;
    for (let i = 0; i < d.length; i++) offsets[++row] = (total += vo[i + 1]! - vo[i]!);
  }
  const bytes = new Uint8Array(total);
  row = 0;
  for (const d of v.data) {
    const vo = d.valueOffsets as Int32Array;
    const values = d.values as Uint8Array;
    bytes.set(values.subarray(vo[0]!, vo[d.length]!), offsets[row]!);
    row += d.length;
  }
  const flat = { offsets, bytes };
  flatCache.set(v, flat);
  return flat;
}

interface RunMetricsFile {
  heuristics?: HeuristicsRecord;
  chosen?: ServedChoice;
  chosen_reason?: string;
}

function readMetrics(runDir: string): RunMetricsFile {
  const file = join(runDir, 'metrics.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as RunMetricsFile) : {};
}

/**
 * What the run chose to serve and whether its lists skip seen items (`chosen`, `heuristics.exclude_seen`
 * in its metrics.json; a run without them: the model, seen items kept).
 */
function runChoice(runDir: string): { chosen: ServedChoice; reason: string; excludeSeen: boolean } {
  const m = readMetrics(runDir);
  const chosen = m.chosen ?? 'model';
  const reason = m.chosen_reason ?? 'the run records no choice between the model and a heuristic';
  return { chosen, reason, excludeSeen: m.heuristics?.exclude_seen?.exclude === true };
}

/** Each user's first k unseen ids of a wide list, with their scores (−1 / NaN where the list runs out). */
export function dropSeen(r: { ids: Int32Array; scores: Float32Array }, users: Int32Array, seen: (u: number) => Set<number>, wide: number, k: number): { ids: Int32Array; scores: Float32Array } {
  const ids = new Int32Array(users.length * k).fill(-1);
  const scores = new Float32Array(users.length * k).fill(Number.NaN);
  for (let u = 0; u < users.length; u++) {
    const list = r.ids.subarray(u * wide, (u + 1) * wide);
    const kept = unseen(list, seen(users[u]!), k);
    ids.set(kept, u * k);
    for (let j = 0, r0 = 0; j < k && kept[j]! >= 0; j++) {
      while (list[r0] !== kept[j]) r0++;
      scores[u * k + j] = r.scores[u * wide + r0]!;
    }
  }
  return { ids, scores };
}
